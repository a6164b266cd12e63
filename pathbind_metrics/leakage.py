"""Train/test leakage: case and site overlap, each test slide's leak partition, and metrics split by it."""

from __future__ import annotations

import math
from collections.abc import Collection, Container, Iterable, Mapping, Sequence

import numpy as np

from pathbind_metrics.resampling import cluster_codes, cluster_totals, resampled
from pathbind_metrics.tcga import parse_barcode

PATIENT, SITE, CLEAN = "patient-leaked", "site-leaked", "clean"
PARTITIONS = (PATIENT, SITE, CLEAN)


def cases_and_sites(ids: Iterable[str]) -> tuple[set[str], set[str]]:
    """Distinct TCGA cases and tissue source sites of ``ids``; ids without a barcode add nothing.

    Examples
    --------
    >>> cases, sites = cases_and_sites(["TCGA-BH-A0BS-01Z-00-DX1", "TCGA-BH-A0BS-01Z-00-DX2", "TCGA-A2-A0CM", "x"])
    >>> sorted(cases), sorted(sites)
    (['TCGA-A2-A0CM', 'TCGA-BH-A0BS'], ['A2', 'BH'])
    """
    cases: set[str] = set()
    sites: set[str] = set()
    for text in ids:
        barcode = parse_barcode(text)
        if barcode is not None:
            cases.add(barcode.case)
            sites.add(barcode.tss)
    return cases, sites


def overlap(train_cases: Container[str], train_tss: Container[str], test_cases: Collection[str],
            test_tss: Collection[str]) -> dict[str, float]:
    """Case- and site-level overlap: ``rho_case = |C_test ∩ C_train| / |C_test|``, ``rho_tss`` likewise.

    Best (a zero-shot test set) is 0 for both; ``rho_case = 1`` means every test patient was trained on.
    NaN when the test set has no TCGA case.

    Examples
    --------
    >>> shared = overlap({"TCGA-BH-A0BS"}, {"BH"}, {"TCGA-BH-A0BS", "TCGA-BH-A0C0", "TCGA-A2-A0CM"}, {"BH", "A2"})
    >>> round(shared["rho_case"], 3), shared["rho_tss"], shared["n_test_cases"]
    (0.333, 0.5, 3)
    """
    shared_cases = sum(1 for case in test_cases if case in train_cases)
    shared_tss = sum(1 for tss in test_tss if tss in train_tss)
    return {"rho_case": shared_cases / len(test_cases) if test_cases else float("nan"),
            "rho_tss": shared_tss / len(test_tss) if test_tss else float("nan"),
            "n_test_cases": len(test_cases), "n_test_tss": len(test_tss),
            "n_shared_cases": shared_cases, "n_shared_tss": shared_tss}


def leak_partition(case: str, tss: str, train_cases: Container[str], train_tss: Container[str]) -> str:
    """``patient-leaked`` if the case was trained on, else ``site-leaked`` if its TSS was, else ``clean``.

    Examples
    --------
    >>> leak_partition("TCGA-BH-A0C0", "BH", {"TCGA-BH-A0BS"}, {"BH"})
    'site-leaked'
    """
    if case in train_cases:
        return PATIENT
    return SITE if tss in train_tss else CLEAN


def stratified_metric(values: Sequence[float] | np.ndarray, partitions: Sequence[str], *,
                      clusters: Sequence[str] | None = None, n_resamples: int = 2000, seed: int = 0,
                      level: float = 0.95, leaked: str = PATIENT, clean: str = CLEAN) -> dict[str, dict[str, float]]:
    """Mean of a per-item metric in each leak partition, and the gap ``leaked - clean``, with bootstrap CIs.

    Percentile bootstrap over clusters (the items of one case are not independent), resampled within each
    partition independently (:mod:`pathbind_metrics.resampling`: a resample draws as many clusters as the
    partition has, a mean is a ratio of totals); the result depends on the seed and the items, not on their order.
    A positive gap means the model does better on what it was trained on (best: 0).

    Parameters
    ----------
    values : array of float
        One metric value per item (1/0 for correct/wrong). NaN values are left out.
    partitions : sequence of str
        Each item's partition; items outside :data:`PARTITIONS` (ids of unknown provenance, malformed
        barcodes) are left out. Left-out items are counted as ``excluded``.
    clusters : sequence of str, optional
        Each item's cluster (its TCGA case); default: every item its own.
    n_resamples, seed, level
        Bootstrap resamples, generator seed and interval coverage.
    leaked, clean
        The partitions whose difference is the gap (default: patient-leaked − clean, as in the paper).

    Returns
    -------
    dict
        ``{partition: {"n", "clusters", "mean", "ci_low", "ci_high"}}`` for each of :data:`PARTITIONS`, plus
        ``"gap": {"mean", "ci_low", "ci_high", "design_effect"}`` and ``"excluded": {"n"}``. An empty partition
        has a NaN mean and interval, a partition of one cluster a NaN interval, and so has a gap that involves
        it.

    Examples
    --------
    >>> table = stratified_metric([1, 1, 0, 1, 0, 0], ["patient-leaked"] * 3 + ["clean"] * 3, seed=0)
    >>> round(table["gap"]["mean"], 3), table["clean"]["n"], table["site-leaked"]["n"]
    (0.333, 3, 0)
    """
    array = np.asarray(values, dtype=float)
    labels = np.asarray(partitions, dtype=object)
    # Without clusters each item is its own, keyed by nothing but its value: the CIs ignore item order.
    keys = np.asarray([str(k) for k in clusters] if clusters is not None else [""] * array.size, dtype=object)
    if not array.shape == labels.shape == keys.shape:
        raise ValueError(f"values, partitions and clusters differ in length: {array.size} vs {labels.size} vs "
                         f"{keys.size}")
    usable = ~np.isnan(array)
    table: dict[str, dict[str, float]] = {}
    clustered: dict[str, np.ndarray] = {}
    itemwise: dict[str, np.ndarray] = {}
    for stream, name in enumerate(PARTITIONS):  # each partition its own stream: every CI depends on the seed only
        mask = usable & (labels == name)
        order = np.lexsort((array[mask], keys[mask]))  # sorted: the CIs ignore item order (ranks, shuffles)
        stratum, stratum_keys = array[mask][order], keys[mask][order]
        codes = cluster_codes(list(stratum_keys)) if clusters is not None else np.arange(stratum.size)
        totals = cluster_totals(np.column_stack([stratum, np.ones(stratum.size)]), codes)
        clustered[name] = _resampled_means(totals, n_resamples, (seed, stream))
        itemwise[name] = _resampled_means(np.column_stack([stratum, np.ones(stratum.size)]), n_resamples,
                                          (seed, stream))
        mean = float(stratum.mean()) if stratum.size else float("nan")
        table[name] = {"n": int(stratum.size), "clusters": len(totals), "mean": mean,
                       **_interval(clustered[name], level)}
    gap = table[leaked]["mean"] - table[clean]["mean"]
    gaps, item_gaps = clustered[leaked] - clustered[clean], itemwise[leaked] - itemwise[clean]
    effect = float(np.var(gaps) / np.var(item_gaps)) if np.isfinite(gaps).all() and np.var(item_gaps) > 0 else math.nan
    table["gap"] = {"mean": gap, **_interval(gaps, level), "design_effect": effect}
    table["excluded"] = {"n": int(array.size - sum(table[name]["n"] for name in PARTITIONS))}
    return table


def _resampled_means(totals: np.ndarray, n_resamples: int, seed: tuple[int, int]) -> np.ndarray:
    if len(totals) < 2:  # one case cannot show how cases vary: no interval, rather than a point
        return np.full(n_resamples, np.nan)
    return resampled(lambda sums: sums[..., 0] / sums[..., 1], totals, n_resamples, seed)


def _interval(estimates: np.ndarray, level: float) -> dict[str, float]:
    if np.isnan(estimates).any():
        return {"ci_low": float("nan"), "ci_high": float("nan")}
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(estimates, [tail, 100 - tail])
    return {"ci_low": float(low), "ci_high": float(high)}


def site_folds(site_sizes: Mapping[str, int], folds: int = 0) -> dict[str, int]:
    """Each site's fold (0, 1, …) in a site-disjoint split: every slide of a site lies in one fold, so no tissue
    source site straddles a train/test boundary (leave-site-out cross-validation).

    ``folds=0`` gives every site its own fold (leave-one-site-out). Otherwise the sites, largest first (ties by
    name), each join the fold with the fewest slides so far (ties: the lowest fold), so the folds' sizes differ by at
    most the largest site's. Deterministic: it depends on the sizes alone.

    Examples
    --------
    >>> site_folds({"A2": 5, "BH": 4, "E2": 3, "AR": 1}, folds=2)
    {'A2': 0, 'BH': 1, 'E2': 1, 'AR': 0}
    >>> site_folds({"A2": 5, "BH": 4})
    {'A2': 0, 'BH': 1}
    """
    ordered = sorted(site_sizes, key=lambda site: (-site_sizes[site], site))
    if folds == 0:
        return {site: fold for fold, site in enumerate(ordered)}
    if not 1 <= folds <= len(ordered):
        raise ValueError(f"{folds} folds of {len(ordered)} sites: each fold needs a site of its own (at most "
                         f"{len(ordered)} folds; 0 for one fold per site)")
    sizes = [0] * folds
    assigned = {}
    for site in ordered:
        fold = min(range(folds), key=lambda f: (sizes[f], f))
        assigned[site] = fold
        sizes[fold] += site_sizes[site]
    return {site: assigned[site] for site in site_sizes}
