"""Leakage split inside an lmms-eval run: a task's accuracy by leak status against ``PATHBIND_LEAKAGE_TRAIN``."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Mapping
from typing import Any

from pathbind_analysis.audit.leakage.census import Census
from pathbind_analysis.audit.leakage.inventory import InventoryError, parse_source
from pathbind_metrics.leakage import CLEAN, PATIENT, SITE, cases_and_sites, leak_partition, overlap, stratified_metric
from pathbind_metrics.tcga import classify

TRAIN_ENV = "PATHBIND_LEAKAGE_TRAIN"
KEYS = ("leaked", "site", "clean", "gap", "gap_ci_low", "gap_ci_high", "gap_design_effect", "n_leaked", "n_site",
        "n_clean", "n_excluded", "rho_case", "rho_tss")


def leakage_split(records: list[Mapping[str, Any]]) -> dict[str, float | str]:
    """Accuracy (%) of patient-leaked, site-leaked and clean items, and the gap leaked − clean (points).

    An lmms-eval ``aggregation``: each per-document value is a record ``{"slide_id": str, "correct": bool}``.
    The training inventory is ``PATHBIND_LEAKAGE_TRAIN=NAME=FILE[:column]``, several joined by ``;`` (their
    union: what a model trained on all of them has seen). The gap's 95% CI resamples cases (a patient's items are
    not independent; :func:`~pathbind_metrics.leakage.stratified_metric`), since lmms-eval computes none for custom
    aggregations; ``gap_design_effect`` says how much wider that is than resampling items, and ``gap_warning`` why
    the interval is less certain or wide (few cases in a partition, one case dominating), or "". Items without a
    TCGA barcode are counted in ``n_excluded``. Without a usable inventory every figure is NaN and ``reason`` says
    why; never raises.
    """
    spec = os.environ.get(TRAIN_ENV, "").strip()
    if not spec:
        return _undefined(f"no training inventory: set {TRAIN_ENV}=NAME=FILE[:column] (several joined by ';')")
    try:
        train_cases, train_tss = _train_sets(spec)
    except (InventoryError, OSError) as exc:
        return _undefined(str(exc))  # names the variable, the inventory and the file
    records = [record if isinstance(record, Mapping) else {} for record in records]  # a bad one is excluded
    ids = [str(record.get("slide_id") or "") for record in records]
    correct = [100.0 * value if isinstance(value := record.get("correct"), bool | int | float) else math.nan
               for record in records]
    partitions, cases = [], []
    for text in ids:
        kind, barcode, _ = classify(text)
        partitions.append(leak_partition(barcode.case, barcode.tss, train_cases, train_tss) if barcode else kind)
        cases.append(barcode.case if barcode else text)
    table = stratified_metric(correct, partitions, clusters=cases, proportion=100.0)
    shared = overlap(train_cases, train_tss, *cases_and_sites(ids))
    return {"leaked": table[PATIENT]["mean"], "site": table[SITE]["mean"], "clean": table[CLEAN]["mean"],
            "gap": table["gap"]["mean"], "gap_ci_low": table["gap"]["ci_low"], "gap_ci_high": table["gap"]["ci_high"],
            "gap_design_effect": table["gap"]["design_effect"], "gap_warning": table["gap"]["warning"],
            "n_leaked": table[PATIENT]["n"], "n_site": table[SITE]["n"], "n_clean": table[CLEAN]["n"],
            "n_excluded": table["excluded"]["n"], "rho_case": shared["rho_case"], "rho_tss": shared["rho_tss"]}


@functools.lru_cache(maxsize=4)  # every task of a run aggregates against the same inventory: read it once
def _train_sets(spec: str) -> tuple[frozenset[str], frozenset[str]]:
    census = Census("train", "in-run", progress=None)
    census.read([parse_source(part.strip(), TRAIN_ENV) for part in spec.split(";") if part.strip()])
    return frozenset(census.cases), frozenset(census.tss)


def _undefined(reason: str) -> dict[str, float | str]:
    return {**dict.fromkeys(KEYS, math.nan), "gap_warning": "", "reason": reason}
