"""Train/test leakage: case and site overlap, each test slide's leak partition, and metrics split by it."""

from __future__ import annotations

import math
from collections.abc import Collection, Container, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from pathbind_metrics.resampling import mean_interval, mover
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
                      clusters: Sequence[str] | None = None, proportion: float | None = None, level: float = 0.95,
                      leaked: str = PATIENT, clean: str = CLEAN) -> dict[str, dict[str, Any]]:
    """Mean of a per-item metric in each leak partition, and the gap ``leaked - clean``, with cluster intervals.

    Each partition's interval resamples its clusters (the items of one case are not independent), as every
    interval of :mod:`pathbind_metrics.resampling` does, and holds its level on few or unequal cases: the
    Korn–Graubard interval of a ``proportion`` (the values are 0 or this: 1, or 100 for percentages), else the
    cluster jackknife's. The gap's interval combines the two partitions' (MOVER: their cases are disjoint, so the
    two are independent). A positive gap means the model does better on what it was trained on (best: 0).

    Parameters
    ----------
    values : array of float
        One metric value per item (1/0 for correct/wrong). NaN values are left out.
    partitions : sequence of str
        Each item's partition; items outside :data:`PARTITIONS` (ids of unknown provenance, malformed
        barcodes) are left out. Left-out items are counted as ``excluded``.
    clusters : sequence of str, optional
        Each item's cluster (its TCGA case); default: every item its own.
    proportion, level
        The value of a correct item where the metric is a proportion (default: none), and interval coverage.
    leaked, clean
        The partitions whose difference is the gap (default: patient-leaked − clean, as in the paper).

    Returns
    -------
    dict
        ``{partition: {"n", "clusters", "mean", "ci_low", "ci_high", "warning"}}`` for each of :data:`PARTITIONS`,
        plus ``"gap": {"mean", "ci_low", "ci_high", "design_effect", "warning"}`` and ``"excluded": {"n"}``.
        ``warning`` says why an interval is less certain or wide (few cases, one case dominating); an empty
        partition has a NaN mean and interval, a partition of one case a NaN interval, and so has a gap that
        involves it.

    Examples
    --------
    >>> table = stratified_metric([1, 1, 0, 1, 0, 0], ["patient-leaked"] * 3 + ["clean"] * 3, proportion=1)
    >>> round(table["gap"]["mean"], 3), table["clean"]["n"], table["site-leaked"]["n"]
    (0.333, 3, 0)
    """
    array = np.asarray(values, dtype=float)
    labels = np.asarray(partitions, dtype=object)
    # Without clusters each item is its own, keyed by nothing but its value: the intervals ignore item order.
    keys = np.asarray([str(k) for k in clusters] if clusters is not None else [""] * array.size, dtype=object)
    if not array.shape == labels.shape == keys.shape:
        raise ValueError(f"values, partitions and clusters differ in length: {array.size} vs {labels.size} vs "
                         f"{keys.size}")
    usable = ~np.isnan(array)
    table: dict[str, dict[str, Any]] = {}
    found: dict[str, dict[str, Any]] = {}
    strata: dict[str, np.ndarray] = {}
    for name in PARTITIONS:
        mask = usable & (labels == name)
        order = np.lexsort((array[mask], keys[mask]))  # sorted: the same sums whatever the items' order (ranks)
        strata[name], stratum_keys = array[mask][order], keys[mask][order]
        found[name] = mean_interval(strata[name], list(stratum_keys) if clusters is not None else
                                    list(range(order.size)), cluster="case", proportion=proportion, level=level)
        table[name] = {"n": int(mask.sum()), "clusters": found[name]["clusters"],
                       "mean": float(strata[name].mean()) if mask.any() else math.nan,
                       "ci_low": found[name]["low"], "ci_high": found[name]["high"],
                       "warning": found[name]["warning"]}
    first, second = table[leaked], table[clean]
    low, high = mover([first["mean"], second["mean"]], [(first["ci_low"], first["ci_high"]),
                                                       (second["ci_low"], second["ci_high"])])
    # The design effect of the gap: the two partitions' clustered variances over their items' (Kish).
    items = [strata[name].var(ddof=1) / strata[name].size if strata[name].size > 1 else math.nan
             for name in (leaked, clean)]
    clustered = [found[name]["design_effect"] * v if v > 0 else 0.0 for name, v in zip((leaked, clean), items,
                                                                                      strict=True)]
    warnings = [f"{name}: {table[name]['warning']}" for name in (leaked, clean) if table[name]["warning"]]
    table["gap"] = {"mean": first["mean"] - second["mean"], "ci_low": low, "ci_high": high,
                    "design_effect": _kish(sum(clustered), sum(items)), "warning": "; ".join(warnings)}
    table["excluded"] = {"n": int(array.size - sum(table[name]["n"] for name in PARTITIONS))}
    return table


def _kish(clustered: float, items: float) -> float:
    return float(clustered / items) if items > 0 else math.nan


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
