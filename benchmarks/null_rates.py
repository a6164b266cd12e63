"""Null rejection rates (and power) of the tests that must not see what is not there, on simulated data with a known
truth, each with its Monte Carlo error (binomial standard error of the rate over the simulated data sets).

- ``swap_own_image``: the share of swapped items shown their own image (questions sharing an image: 20 images × 6
  questions, 10 × 10); must be 0.
- ``faithfulness``: ``attn_amim > attn_amim_null`` (box-placement null) at α = 0.05, with attention and causal maps
  that ignore the box but favour the image centre and boxes placed uniformly (30 and 100 items): the null rate,
  ≈ 0.05; with maps concentrated in the box (the positive control): the power.
- ``audit_features``: on embeddings without site signal (4 sites × 10 patients, 1, 2 or 3 slides a patient, sibling
  slides alike): how often the TSS AUROC interval covers 0.5 (≈ 0.95), and the same-site vs cross-site similarity
  test and the probe's permutation test (held-out patients' sites permuted) reject (≈ 0.05); with a planted site
  signal (strong, and weak: ``WEAK_SIGNAL``), how often the interval lies above 0.5 and each test rejects.

Run: PYTHONPATH=. python benchmarks/null_rates.py [--reps 100] [--seed 0]; prints one JSON line. ``null_rates(reps,
seed)`` returns the same dict, to combine with other benchmarks.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

import numpy as np

ALPHA = 0.05
GRID, SIDE = 8, 256


def rate(hits: list[bool] | np.ndarray) -> dict[str, float]:
    """The share of ``hits`` and its Monte Carlo standard error."""
    values = np.asarray(hits, dtype=float)
    share = float(values.mean()) if values.size else math.nan
    return {"rate": share, "mc_se": math.sqrt(share * (1 - share) / values.size) if values.size else math.nan,
            "n": int(values.size)}


# ------------------------------------------------------------------------------------------------ swaps

def swap_own_image(images: int, per_image: int, seed: int) -> float:
    """The share of swap_same and swap_cross partners on the item's own image, questions spread over 3 subsets."""
    from pathbind_tasks.common.conditions import swap_partners

    rng = np.random.default_rng(seed)
    clusters = [f"image={i}" for i in range(images) for _ in range(per_image)]
    keys = [f"D{k}" for k in rng.integers(0, 3, len(clusters))]
    drawn = [p for same in (True, False) for p in zip(clusters, swap_partners(keys, clusters, same=same, seed=seed),
                                                       strict=True)]
    return float(np.mean([p is not None and clusters[p] == own for own, p in drawn]))


# ------------------------------------------------------------------------------------------ faithfulness

def _centre_map(rng: np.random.Generator) -> np.ndarray:
    """A map that ignores the box: a bump at the image centre, with noise."""
    centre = (np.arange(GRID) + 0.5) / GRID - 0.5
    bump = np.exp(-(centre[:, None] ** 2 + centre[None, :] ** 2) / (2 * 0.2 ** 2))
    return bump * rng.lognormal(0, 0.3, (GRID, GRID))


def faithfulness_records(n_items: int, *, grounded: bool, rng: np.random.Generator) -> list[dict[str, Any]]:
    """Records of ``n_items`` items (each on its own image) through ``item_record``: boxes of 25–50% of each side
    placed uniformly; attention and the causal map centre-biased, plus a bump in the box when ``grounded``."""
    from pathbind_metrics import faithfulness as fm
    from pathbind_tasks.common import faithfulness_records as fr

    records = []
    for item in range(n_items):
        w, h = rng.uniform(0.25, 0.5, 2) * SIDE
        x, y = rng.uniform(0, SIDE - w), rng.uniform(0, SIDE - h)
        box = [x, y, x + w, y + h]
        inside = fm.box_coverage(box, (SIDE, SIDE), GRID)
        attention, causal = _centre_map(rng), _centre_map(rng)
        if grounded:
            attention, causal = attention + 2 * inside, causal + 2 * inside
        patches = np.column_stack([-causal.ravel(), np.full(GRID * GRID, -1.0)])  # margin drop = causal map
        record = fr.item_record(np.array([0.0, -1.0]), patches, attention, np.array([0.0, -1.0]), {}, reference=0,
                                box=box, image_size=(SIDE, SIDE), seed=item)
        records.append({**record, "id": str(item), "cluster": f"image={item}", "group": "all"})
    return records


def faithfulness_rejects(n_items: int, *, grounded: bool, seed: int, n_permutations: int = 999) -> bool:
    """Does ``attn_amim > attn_amim_null`` reject at ``ALPHA`` on one simulated data set?"""
    from pathbind_tasks.common import faithfulness_aggregations as fa

    records = faithfulness_records(n_items, grounded=grounded, rng=np.random.default_rng(seed))
    tests = fa.permutation_tests(records, n_permutations=n_permutations, seed=seed)
    return bool(tests["attn_amim>attn_amim_null"]["p"] < ALPHA)


# ---------------------------------------------------------------------------------------------- audit-features

AUDIT_SITES, AUDIT_PATIENTS, AUDIT_DIM = 4, 15, 16
PLANTED_SIGNAL, WEAK_SIGNAL = 0.5, 0.15  # the site centroid's weight in a patient's vector


def audit_cohort(slides_per_patient: int, site_signal: float,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(embeddings, sites, patients): 4 sites × 15 patients × ``slides_per_patient`` slides; a slide is its
    patient's vector plus a smaller slide noise (sibling slides alike), plus ``site_signal`` × its site's centroid."""
    vectors, sites, cases = [], [], []
    for site in range(AUDIT_SITES):
        centroid = rng.normal(0, 1, AUDIT_DIM)
        for patient in range(AUDIT_PATIENTS):
            own = rng.normal(0, 1, AUDIT_DIM) + site_signal * centroid
            for _ in range(slides_per_patient):
                vectors.append(own + rng.normal(0, 0.5, AUDIT_DIM))
                sites.append(f"S{site}")
                cases.append(f"S{site}-P{patient}")
    return np.asarray(vectors), np.asarray(sites), np.asarray(cases)


def audit_run(slides_per_patient: int, site_signal: float, seed: int, n_resamples: int = 100) -> dict[str, Any]:
    """The TSS AUROC interval and the site similarity test of ``pathbind audit-features`` on one cohort."""
    from pathbind_analysis.audit.features.probes import tss_detection
    from pathbind_analysis.audit.features.similarity import permutation_p

    vectors, sites, cases = audit_cohort(slides_per_patient, site_signal, np.random.default_rng(seed))
    tss = tss_detection(vectors, sites, 2, seed, n_resamples, cases)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    p = permutation_p(unit, sites, cases, n_resamples, seed)["cross_tss<same_tss"]
    low, high = tss["auroc_macro_ci95"]
    return {"defined": bool(np.isfinite(low)), "covers_half": bool(low <= 0.5 <= high), "above_half": bool(low > 0.5),
            "rejects": bool(p < ALPHA), "probe_rejects": bool(tss["auroc_permutation_p"] < ALPHA)}


def audit_rates(seeds: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in (1, 2, 3):
        runs = [audit_run(k, 0.0, s) for s in seeds]
        defined = [r for r in runs if r["defined"]]
        out[f"no_signal_{k}_slides_per_patient"] = {
            "auroc_interval_covers_half": rate([r["covers_half"] for r in defined]),
            "interval_refused": sum(not r["defined"] for r in runs),
            "similarity_test_rejects": rate([r["rejects"] for r in runs]),
            "probe_permutation_test_rejects": rate([r["probe_rejects"] for r in runs])}
    for name, signal in (("planted", PLANTED_SIGNAL), ("weak", WEAK_SIGNAL)):
        planted = [audit_run(2, signal, s) for s in seeds]
        out[f"{name}_signal_2_slides_per_patient"] = {
            "auroc_interval_above_half": rate([r["above_half"] for r in planted]),
            "similarity_test_rejects": rate([r["rejects"] for r in planted]),
            "probe_permutation_test_rejects": rate([r["probe_rejects"] for r in planted])}
    return out


# ------------------------------------------------------------------------------------------------ driver

def null_rates(reps: int = 20, seed: int = 0) -> dict[str, Any]:
    """Every rate above from ``reps`` simulated data sets per setting."""
    seeds = [seed * 100_003 + rep for rep in range(reps)]
    out: dict[str, Any] = {"benchmark": "null_rates", "reps": reps, "seed": seed, "alpha": ALPHA}
    out["swap_own_image"] = {f"{i}x{q}": swap_own_image(i, q, seed) for i, q in ((20, 6), (10, 10))}
    out["faithfulness"] = {
        **{f"centre_biased_null_{n}_items": rate([faithfulness_rejects(n, grounded=False, seed=s) for s in seeds])
           for n in (30, 100)},
        "positive_control_power_30_items": rate([faithfulness_rejects(30, grounded=True, seed=s) for s in seeds])}
    out["audit_features"] = audit_rates(seeds)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=20, help="simulated data sets per setting")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(null_rates(args.reps, args.seed)))


if __name__ == "__main__":
    main()
