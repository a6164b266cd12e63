"""The paper's linear probes on frozen slide embeddings: TSS detection (macro AUROC) and patient re-identification."""

from __future__ import annotations

import sys
import time
import warnings
from typing import Any

import numpy as np

TEST_FRACTION = 0.3
# Held-out patients a site needs for the AUROC interval: with fewer, a resample of them hardly varies, and on noise
# the interval left out 0.5 in 3 of 6 seeds (one site of 3 slides, 1 held out).
MIN_HELD_OUT_UNITS = 4
WIDE_BELOW_UNITS = 8  # fewer held-out patients in a site than this: the interval says it is wide, and why
MAX_ITER = 2000
SPLIT = "by patient within site: round(30%) of each site's patients held out with all their slides"
PROGRESS_SECONDS = 15
# Independent random streams of one --seed: adding a use of randomness does not shift the others.
SPLIT_STREAM, BOOTSTRAP_STREAM, PERMUTATION_STREAM = 1, 2, 6  # (3-5: similarity)


def class_holdout(labels: np.ndarray, seed: int, test_fraction: float = TEST_FRACTION,
                  units: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A stratified 70/30 split made within every class: round(30%) of each class's ``units`` (default: each slide
    its own), at least one and never all, go to the test set with all their slides (sorted index arrays). Every
    class has ≥ 2 units.

    The TSS probe splits by patient within site (``units`` the patients), so a patient's sibling slides, which
    look alike, never straddle the split: split by slide, the probe would recognise the patient and read it as the
    site. Re-identification must split by slide. scikit-learn's StratifiedShuffleSplit allots test slides to
    classes from the overall 30% and refuses a test set smaller than the number of classes, which
    re-identification over patients with two slides always has; split per class, every class is both trained on
    and tested.
    """
    rng = np.random.default_rng((seed, SPLIT_STREAM))
    units = np.arange(len(labels)) if units is None else units
    test: list[np.ndarray] = []
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label)
        names = rng.permutation(np.unique(units[members]))
        count = min(len(names) - 1, max(1, round(test_fraction * len(names))))
        test.append(members[np.isin(units[members], names[:count])])
    test_index = np.sort(np.concatenate(test))
    return np.setdiff1d(np.arange(len(labels)), test_index), test_index


def fit_probe(vectors: np.ndarray, labels: np.ndarray, seed: int) -> Any:
    """A multinomial logistic-regression probe on standardised features (scaled on the training slides only)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=MAX_ITER, random_state=seed))
    with warnings.catch_warnings():  # re-identification has more classes than half its slides by design
        warnings.filterwarnings("ignore", message="The number of unique classes is greater than 50%")
        return probe.fit(vectors, labels)


def macro_auroc(truth: np.ndarray, probabilities: np.ndarray, classes: np.ndarray) -> float:
    """One-vs-rest AUROC averaged over classes (scikit-learn); two classes: the binary AUROC, which it equals."""
    from sklearn.metrics import roc_auc_score

    if len(classes) == 2:
        return float(roc_auc_score(truth == classes[1], probabilities[:, 1]))
    return float(roc_auc_score(truth, probabilities, multi_class="ovr", average="macro", labels=classes))


def tss_detection(vectors: np.ndarray, sites: np.ndarray, min_slides: int, seed: int, n_resamples: int,
                  cases: np.ndarray | None = None) -> dict[str, Any]:
    """Which tissue source site a slide comes from: probe on the sites with ≥ ``min_slides`` slides and ≥ 2
    patients (``cases``; default: each slide its own), split by patient within each site. The interval resamples
    the held-out patients within each site."""
    patients = cases if cases is not None else np.arange(len(sites)).astype(str)
    names, counts = np.unique(sites, return_counts=True)
    several = np.array([len(np.unique(patients[sites == name])) >= 2 for name in names], dtype=bool)
    kept_sites = names[(counts >= min_slides) & several]
    kept = np.isin(sites, kept_sites)
    result: dict[str, Any] = {"min_slides": min_slides, "split": SPLIT, "n_sites": len(kept_sites),
                              "n_slides": int(kept.sum()), "dropped_sites": int(len(names) - len(kept_sites)),
                              "dropped_single_patient_sites": int((~several).sum()),
                              "dropped_slides": int((~kept).sum()), "auroc_macro": float("nan"),
                              "auroc_macro_ci95": [float("nan")] * 2, "n_train": 0, "n_test": 0}
    if len(kept_sites) < 2:
        result["undefined"] = f"needs 2 sites with ≥ {min_slides} slides and ≥ 2 patients, found {len(kept_sites)}"
        return result
    x, y, units = vectors[kept], sites[kept], patients[kept]
    train, test = class_holdout(y, seed, units=units)
    probe = fit_probe(x[train], y[train], seed)
    probabilities = probe.predict_proba(x[test])
    classes = probe.classes_
    result |= {"n_train": len(train), "n_test": len(test),
               "auroc_macro": macro_auroc(y[test], probabilities, classes),
               "auroc_permutation_p": auroc_permutation_p(y[test], probabilities, classes, units[test], seed,
                                                          n_resamples)}
    few = {str(site): n for site in classes if (n := len(set(units[test][y[test] == site]))) < MIN_HELD_OUT_UNITS}
    if few:  # a resample of one or two patients is always the same few slides: its spread is not the uncertainty
        result["interval_undefined"] = (
            f"{len(few)} site(s) with fewer than {MIN_HELD_OUT_UNITS} held-out patients (e.g. "
            + ", ".join(f"{site}: {n}" for site, n in list(few.items())[:5]) + "); an interval needs at least "
            f"{MIN_HELD_OUT_UNITS} in every site: raise --min-slides (30% of a site's patients are held out)")
        return result
    result["auroc_macro_ci95"] = _auroc_interval(y[test], probabilities, classes, units[test], seed, n_resamples)
    fewest = min(len(set(units[test][y[test] == site])) for site in classes)
    if fewest < WIDE_BELOW_UNITS:
        result["interval_note"] = (
            f"wide: its t has {fewest - 1} degrees of freedom ({fewest} held-out patients in the smallest site); "
            f"the permutation test of the same AUROC (p = {result['auroc_permutation_p']:.2g}) has more power")
    return result


def auroc_permutation_p(truth: np.ndarray, probabilities: np.ndarray, classes: np.ndarray, units: np.ndarray,
                        seed: int, n_permutations: int) -> float:
    """One-sided permutation p that the held-out macro AUROC, the probe fixed, is no better than chance: the
    held-out patients' sites permuted among them (a patient's slides keep one site; each site keeps its number of
    patients), so under the null of embeddings without site signal every assignment is equally likely. Valid
    whatever the number of held-out patients, where the bootstrap interval's t has few degrees of freedom.

    Each class's AUROC is the Mann–Whitney count of its scores' ranks (ties at half, as scikit-learn's), so the
    ranks are computed once and every permutation is a sum."""
    from scipy.stats import rankdata

    rng = np.random.default_rng((seed, PERMUTATION_STREAM))
    patients, slide_patient = np.unique(units, return_inverse=True)
    patient_site = np.empty(len(patients), dtype=truth.dtype)
    patient_site[slide_patient] = truth
    ranks = np.column_stack([rankdata(probabilities[:, k]) for k in range(len(classes))])

    def macro(labels: np.ndarray) -> np.ndarray:  # (permutations, slides) of site labels -> their macro AUROCs
        total = np.zeros(len(labels))
        for k, site in enumerate(classes):
            positive = labels == site
            count = positive.sum(axis=1)
            total += (positive @ ranks[:, k] - count * (count + 1) / 2) / (count * (len(truth) - count))
        return total / len(classes)

    observed = float(macro(truth[None])[0])
    extreme = 0
    for start in range(0, n_permutations, 100):  # 100 permutations at a time: memory stays 100 × slides
        drawn = np.stack([rng.permutation(patient_site) for _ in range(min(100, n_permutations - start))])
        extreme += int(np.count_nonzero(macro(drawn[:, slide_patient]) >= observed - 1e-12))
    return (extreme + 1) / (n_permutations + 1)


def patient_reid(vectors: np.ndarray, cases: np.ndarray, seed: int, n_resamples: int) -> dict[str, Any]:
    """Which patient a held-out slide belongs to, among the patients with ≥ 2 slides: top-1 accuracy vs 1/#patients."""
    from sklearn.metrics import accuracy_score

    names, counts = np.unique(cases, return_counts=True)
    kept = np.isin(cases, names[counts >= 2])
    patients = int((counts >= 2).sum())
    result: dict[str, Any] = {"n_patients": patients, "n_slides": int(kept.sum()),
                              "dropped_single_slide_patients": int((counts < 2).sum()),
                              "top1": float("nan"), "top1_ci95": [float("nan")] * 2,
                              "chance": 1 / patients if patients else float("nan"),
                              "multiple_of_chance": float("nan"), "n_train": 0, "n_test": 0}
    if patients < 2:
        result["undefined"] = f"needs 2 patients with ≥ 2 slides, found {patients}"
        return result
    x, y = vectors[kept], cases[kept]
    train, test = class_holdout(y, seed)
    predicted = fit_probe(x[train], y[train], seed).predict(x[test])
    correct = (predicted == y[test]).astype(float)
    top1 = float(accuracy_score(y[test], predicted))
    resampled = _bootstrap_indices(len(test), seed, n_resamples)
    interval = np.percentile(correct[resampled].mean(axis=1), [2.5, 97.5]).tolist()
    result |= {"n_train": len(train), "n_test": len(test), "top1": top1, "top1_ci95": interval,
               "multiple_of_chance": top1 * patients}
    return result


def _auroc_interval(truth: np.ndarray, probabilities: np.ndarray, classes: np.ndarray, units: np.ndarray, seed: int,
                    n_resamples: int) -> list[float]:
    """95% interval of the macro AUROC, the probe fixed: the estimate ± Student's t (for the smallest site's
    held-out patients, minus one) × the standard deviation of the AUROC over test sets resampled by patient within
    each site (every site stays present, a patient's slides drawn together). Not a percentile interval: with 4-6
    held-out patients a site's resamples hardly vary, and the percentile interval covered 0.5 on noise in only 83%
    of seeds; the t factor (3.2 for 4 patients, 2.0 for 60) restores the nominal rate. Clipped to [0, 1]."""
    rng = np.random.default_rng((seed, BOOTSTRAP_STREAM))
    members = [[np.flatnonzero((truth == label) & (units == unit)) for unit in np.unique(units[truth == label])]
               for label in classes]
    scores, reported = [], time.monotonic()
    for done in range(1, n_resamples + 1):
        rows = np.concatenate([site[k] for site in members for k in rng.integers(0, len(site), len(site))])
        scores.append(macro_auroc(truth[rows], probabilities[rows], classes))
        if time.monotonic() - reported > PROGRESS_SECONDS:  # hundreds of sites take minutes
            print(f"audit-features: AUROC bootstrap {done:,}/{n_resamples:,}", file=sys.stderr, flush=True)
            reported = time.monotonic()
    from scipy.stats import t as student

    fewest = min(len(site) for site in members)
    half = float(student.ppf(0.975, fewest - 1) * np.std(scores, ddof=1))
    estimate = macro_auroc(truth, probabilities, classes)
    return [max(0.0, estimate - half), min(1.0, estimate + half)]


def _bootstrap_indices(count: int, seed: int, n_resamples: int) -> np.ndarray:
    """``n_resamples`` × ``count`` test positions drawn with replacement."""
    return np.random.default_rng((seed, BOOTSTRAP_STREAM)).integers(0, count, size=(n_resamples, count))
