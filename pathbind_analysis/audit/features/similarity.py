"""Cosine similarity of ℓ2-normalised slide embeddings for same-case, same-site and cross-site pairs, and its plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

GROUPS = {"same_case": "same patient (sibling slides)", "same_tss": "same site, different patient",
          "cross_tss": "different sites"}
PAIR_STREAM, BOOTSTRAP_STREAM, PERMUTATION_STREAM = 3, 4, 5  # random streams of --seed (see probes)
TESTS = {"cross_tss<same_tss": "the patients' sites permuted (a patient's slides move together; each site keeps its "
                               "number of patients)",
         "same_tss<same_case": "the slides permuted among the patients of their site (each patient keeps its number "
                               "of slides)"}


def pair_similarities(vectors: np.ndarray, sites: np.ndarray, cases: np.ndarray, max_pairs: int, seed: int,
                      n_resamples: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Summary per group (mean with a 95% bootstrap interval over its pairs, quartiles, excess over the cross-site
    mean), one-sided permutation tests of cross < same site < same case (:func:`permutation_p`, ``n_resamples``
    permutations) and each group's similarities.

    A group with more than ``max_pairs`` pairs is sampled (uniformly, without replacement): cross-site pairs always
    are on a real cohort, as in the paper (n=20,000).
    """
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    rng = np.random.default_rng((seed, PAIR_STREAM))
    totals, pairs = {}, {}
    for name, groups, differ in (("same_case", cases, None), ("same_tss", sites, cases)):
        totals[name], pairs[name] = _within_sample(groups, differ, max_pairs, rng)
    totals["cross_tss"], pairs["cross_tss"] = _cross_pairs(sites, max_pairs, rng)
    values = {name: np.einsum("ij,ij->i", unit[p[:, 0]], unit[p[:, 1]]) for name, p in pairs.items()}
    baseline = float(values["cross_tss"].mean()) if len(values["cross_tss"]) else float("nan")
    boot = np.random.default_rng((seed, BOOTSTRAP_STREAM))
    summary: dict[str, Any] = {"max_pairs": max_pairs, "groups": {}}
    for name, found in values.items():
        summary["groups"][name] = {"pairs_total": totals[name], "pairs_used": len(found), **_describe(found, boot,
                                   n_resamples), "excess_over_cross_tss": _mean(found) - baseline}
    summary["permutation_p"] = permutation_p(unit, sites, cases, n_resamples, seed)
    summary["permuted"] = TESTS
    return summary, values


def permutation_p(unit: np.ndarray, sites: np.ndarray, cases: np.ndarray, n_permutations: int,
                  seed: int) -> dict[str, float]:
    """One-sided permutation p-values that the mean cosine similarity (over all pairs of slides, ``unit`` the
    ℓ2-normalised embeddings) of cross-site pairs is below that of same-site pairs of different patients, and that
    below that of sibling slides. The unit permuted is what the null makes exchangeable (:data:`TESTS`), never the
    pair: pairs sharing a slide or a patient are not independent, and a pair-level test (Mann-Whitney U) rejected
    on embeddings without site signal. NaN where a group has no pair.
    """
    site_codes = np.unique(sites, return_inverse=True)[1]
    case_codes = np.unique(cases, return_inverse=True)[1]
    patient_codes = np.unique(np.column_stack([site_codes, case_codes]), axis=0, return_inverse=True)[1].ravel()
    patient_site = np.zeros(patient_codes.max() + 1 if len(patient_codes) else 0, dtype=np.intp)
    patient_site[patient_codes] = site_codes
    rng = np.random.default_rng((seed, PERMUTATION_STREAM))
    patients = _sums(unit, patient_codes)

    def site_contrast(assigned: np.ndarray) -> float:  # same site (other patient) minus cross-site mean
        sites_ = _sums(patients, assigned)
        same = _mean_pairs(sites_, patients)
        cross = _mean_pairs(_sums(sites_, np.zeros(len(sites_[1]), dtype=np.intp)), sites_)
        return same - cross

    def sibling_contrast(assigned: np.ndarray) -> float:  # same patient minus same site (other patient) mean
        grouped = _sums(unit, assigned)
        return _mean_pairs(grouped, _sums(unit, np.arange(len(unit)))) - _mean_pairs(_sums(grouped, patient_site),
                                                                                   grouped)

    within_site = [np.flatnonzero(site_codes == s) for s in range(site_codes.max() + 1 if len(site_codes) else 0)]

    def shuffled_within_site() -> np.ndarray:
        assigned = patient_codes.copy()
        for members in within_site:
            assigned[members] = assigned[rng.permutation(members)]
        return assigned

    return {"cross_tss<same_tss": _p_greater(site_contrast, patient_site, lambda: rng.permutation(patient_site),
                                             n_permutations),
            "same_tss<same_case": _p_greater(sibling_contrast, patient_codes, shuffled_within_site, n_permutations)}


def _sums(rows: np.ndarray | tuple, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the sum of each group's rows, their count); ``rows`` an array or an earlier (sums, counts)."""
    values, counts = rows if isinstance(rows, tuple) else (rows, np.ones(len(rows)))
    from scipy.sparse import csr_matrix

    groups = int(codes.max()) + 1 if len(codes) else 0
    membership = csr_matrix((np.ones(len(codes)), (codes, np.arange(len(codes)))), shape=(groups, len(codes)))
    return membership @ values, np.bincount(codes, weights=counts, minlength=groups)


def _mean_pairs(outer: tuple[np.ndarray, np.ndarray], inner: tuple[np.ndarray, np.ndarray]) -> float:
    """Mean inner product over the ordered pairs of slides within one ``outer`` group but not within one ``inner``
    group (inner groups nested in outer ones), from the groups' summed vectors and counts."""
    pairs = float((outer[1] ** 2).sum() - (inner[1] ** 2).sum())
    total = float((outer[0] ** 2).sum() - (inner[0] ** 2).sum())
    return total / pairs if pairs > 0 else float("nan")


def _p_greater(statistic: Any, observed_labels: np.ndarray, permuted_labels: Any, n_permutations: int) -> float:
    observed = statistic(observed_labels)
    if observed != observed:
        return float("nan")
    slack = 1e-12 * max(1.0, abs(observed))  # a permutation equal up to rounding counts as extreme
    extreme = sum(statistic(permuted_labels()) >= observed - slack for _ in range(n_permutations))
    return (extreme + 1) / (n_permutations + 1)


def write_similarity_plot(values: dict[str, np.ndarray], path: Path, title: str) -> None:
    """Overlaid densities of the three groups with their means marked."""
    from matplotlib.figure import Figure  # no pyplot: no GUI backend, no global state

    figure = Figure(figsize=(6.5, 4), layout="constrained")
    ax = figure.subplots()
    present = np.concatenate([*values.values(), np.zeros(0)])
    bins = np.linspace(present.min(), present.max(), 50).tolist() if len(present) else 10
    for (name, found), colour in zip(values.items(), ("tab:red", "tab:orange", "tab:blue"), strict=True):
        if not len(found):
            continue
        ax.hist(found, bins=bins, density=True, histtype="stepfilled", alpha=0.35, color=colour,
                label=f"{GROUPS[name]} (n={len(found):,}, mean {found.mean():.3f})")
        ax.axvline(found.mean(), color=colour, linestyle="--", linewidth=1)
    ax.set_xlabel("cosine similarity of ℓ2-normalised slide embeddings")
    ax.set_ylabel("density")
    ax.set_title(title)
    ax.legend(fontsize=8)
    figure.savefig(path, dpi=150)


def _within_sample(groups: np.ndarray, differ: np.ndarray | None, max_pairs: int,
                   rng: np.random.Generator) -> tuple[int, np.ndarray]:
    """(how many pairs share a ``groups`` value, with different ``differ`` values; all of them, or ``max_pairs``
    drawn uniformly without replacement). The count is arithmetic and the draw never lists the pairs: one site
    holding 6,000 slides has 18 million pairs, which would take gigabytes to build."""
    order = np.argsort(groups, kind="stable")
    starts = np.unique(groups[order], return_index=True)[1] if len(order) else np.zeros(0, np.int64)
    sizes = np.diff(np.append(starts, len(order))).astype(np.int64)
    within = sizes * (sizes - 1) // 2
    same = sum(_pairs_of(differ[m]) for m in np.split(order, starts[1:])) if differ is not None and len(order) else 0
    total = int(within.sum() - same)
    # Few enough to list (exact, and no rejection loop near the total). Listing is also the way when most pairs
    # of a group share a patient and few do not (one patient holding most of a site's slides): rare, and slow to
    # draw by rejection.
    if total <= 4 * max_pairs:
        return total, _sample(_within(groups, differ), max_pairs, rng)
    chosen: set[tuple[int, int]] = set()
    while len(chosen) < max_pairs:  # a group by its pair count, then two members: uniform over all pairs
        group = rng.choice(len(sizes), size=2 * max_pairs, p=within / within.sum())
        a = rng.integers(0, sizes[group])
        b = rng.integers(0, sizes[group] - 1)
        b += b >= a  # a second, different member
        for i, j in zip(order[starts[group] + a].tolist(), order[starts[group] + b].tolist(), strict=True):
            if (differ is None or differ[i] != differ[j]) and len(chosen) < max_pairs:
                chosen.add((min(i, j), max(i, j)))
    return total, np.array(sorted(chosen), dtype=np.int64)


def _pairs_of(labels: np.ndarray) -> int:
    _, counts = np.unique(labels, return_counts=True)
    return int((counts * (counts - 1) // 2).sum())


def _within(groups: np.ndarray, differ: np.ndarray | None = None) -> np.ndarray:
    """Every pair (i < j) of slides sharing a ``groups`` value (and with different ``differ`` values), K×2."""
    members: dict[str, list[int]] = {}
    for index, value in enumerate(groups.tolist()):
        members.setdefault(value, []).append(index)
    found = [np.zeros((0, 2), dtype=np.int64)]
    for indices in members.values():
        first, second = np.triu_indices(len(indices), 1)
        pairs = np.asarray(indices, dtype=np.int64)[np.column_stack([first, second])]
        found.append(pairs if differ is None else pairs[differ[pairs[:, 0]] != differ[pairs[:, 1]]])
    return np.concatenate(found)


def _cross_pairs(sites: np.ndarray, max_pairs: int, rng: np.random.Generator) -> tuple[int, np.ndarray]:
    """(how many cross-site pairs there are, all of them or ``max_pairs`` drawn without replacement). Drawn
    directly (a slide by its number of partners at other sites, then one of them), not by rejection, which never
    ends when one site holds nearly every slide."""
    _, site_of, counts = np.unique(sites, return_inverse=True, return_counts=True)
    total = int((counts.sum() ** 2 - (counts ** 2).sum()) // 2)
    if total <= 4 * max_pairs:
        found = [(i, j) for i in range(len(sites)) for j in np.flatnonzero(sites[i + 1:] != sites[i]) + i + 1]
        return total, _sample(np.array(found, dtype=np.int64).reshape(-1, 2), max_pairs, rng)
    order = np.argsort(site_of, kind="stable")
    start = np.concatenate(([0], np.cumsum(counts)[:-1]))
    partners = len(sites) - counts[site_of]
    chosen: set[tuple[int, int]] = set()
    while len(chosen) < max_pairs:
        first = rng.choice(len(sites), size=2 * max_pairs, p=partners / partners.sum())
        site = site_of[first]
        rank = rng.integers(0, partners[first])  # among the slides of the other sites, in site order
        rank += (rank >= start[site]) * counts[site]
        for i, j in zip(first.tolist(), order[rank].tolist(), strict=True):
            if len(chosen) < max_pairs:
                chosen.add((min(i, j), max(i, j)))
    return total, np.array(sorted(chosen), dtype=np.int64)


def _sample(pairs: np.ndarray, max_pairs: int, rng: np.random.Generator) -> np.ndarray:
    if len(pairs) <= max_pairs:
        return pairs
    return pairs[np.sort(rng.choice(len(pairs), size=max_pairs, replace=False))]


def _describe(values: np.ndarray, rng: np.random.Generator, n_resamples: int) -> dict[str, Any]:
    if not len(values):
        return {"mean": float("nan"), "mean_ci95": [float("nan")] * 2, "quartiles": [float("nan")] * 3}
    means = [values[rng.integers(0, len(values), len(values))].mean() for _ in range(n_resamples)]
    return {"mean": _mean(values), "mean_ci95": np.percentile(means, [2.5, 97.5]).tolist(),
            "quartiles": np.percentile(values, [25, 50, 75]).tolist()}


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if len(values) else float("nan")
