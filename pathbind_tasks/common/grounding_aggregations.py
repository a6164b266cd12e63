"""Grounding: the task-level aggregations over the item records (:mod:`pathbind_tasks.common.grounding_records`):
they average the finite values and count the reasons a measure was lost."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from pathbind_metrics import resampling as rs
from pathbind_metrics.pairs import paired_delta
from pathbind_tasks.common.clusters import cluster_keys
from pathbind_tasks.common.grounding_records import CONTROL_Q, CONTROL_SETS, Q_DEFAULT, Q_SWEEP, REGION

CONTROL_BOXES = ("shifted", "far", "random_size")  # seed 004's shifted, random far and random-size boxes

# Reported metric -> record field (names chosen so that none is a substring of another).
HEADLINE = {"attn_iou": "iou", "attn_precision": "precision", "attn_recall": "recall", "eff_support": "eff_support",
            "cross_query_r": "cross_query_r", "pixel_ap": "pixel_ap"}


def headline_value(records: list[dict[str, Any]], field: str) -> float:
    """Mean over the items where ``field`` (at q=0.2 for region measures) is finite; NaN when none is."""
    values = _finite(records, field)
    return float(values.mean()) if values.size else math.nan


def cluster_intervals(records: list[dict[str, Any]], *, level: float = 0.95) -> dict[str, dict[str, Any]]:
    """Cluster interval of each headline metric over its scorable items (:mod:`pathbind_metrics.resampling`; the
    task's cluster: by default the image, whose expressions are not independent)."""
    keys, cluster = cluster_keys(records)
    intervals = {}
    for metric, field in HEADLINE.items():
        intervals[metric] = rs.mean_interval(_field(records, field), keys, cluster=cluster, level=level)
    return intervals


def q_sweep(records: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """IoU, precision and recall of the middle-third map at each threshold q."""
    return {str(q): {name: _mean([r[name][str(q)] for r in records]) for name in REGION} for q in Q_SWEEP}


def layer_sweep(records: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """IoU, precision and recall at q=0.2 for each layer set the model returned (shallow / mid / deep / all)."""
    names = sorted({name for r in records for name in r["layers"]})
    return {name: {m: _mean([r["layers"][name][m] for r in records if name in r["layers"]]) for m in REGION}
            for name in names}


def overlap_controls(records: list[dict[str, Any]], *, n_permutations: int = 10000, seed: int = 0) -> dict[str, Any]:
    """Seed 004's controlled overlap, tested: per layer set (the middle third, then the nine ninths of the decoder)
    the mean IoU of the top-10% attention mask with the true box and with each control box, and per control the
    paired change true − control over the items (:func:`pathbind_metrics.pairs.paired_delta`: a two-sided sign-flip
    test flipping the task's clusters, its 95% interval, the clusters and design effect), p Holm-adjusted across
    every test of every layer set (``holm_family``). Attention that points at the box scores above every control."""
    keys, cluster = cluster_keys(records)
    found = [name for name in CONTROL_SETS if any(name in r.get("overlap_controls", {}) for r in records)]
    groups: dict[str, dict[str, Any]] = {}
    for name in found:
        entries = [r.get("overlap_controls", {}).get(name, {}) for r in records]
        values = {kind: np.asarray([e.get(kind, math.nan) for e in entries], dtype=float)
                  for kind in ("true", *CONTROL_BOXES)}
        layers: list[int] = next((e["layers"] for e in entries if e.get("layers")), [])
        groups[name] = {"layers": layers, **{kind: _mean(list(v)) for kind, v in values.items()},
                        "tests": {kind: paired_delta(values["true"] - values[kind], keys, cluster=cluster,
                                                     n_permutations=n_permutations, seed=seed)
                                  for kind in CONTROL_BOXES}}
    tests = [test for group in groups.values() for test in group["tests"].values()]
    for test, adjusted in zip(tests, rs.holm([test["p"] for test in tests]), strict=True):
        test["p_holm"] = adjusted
    family = f"the {len(tests)} tests of {len(groups)} layer sets × {len(CONTROL_BOXES)} control boxes"
    return {"q": CONTROL_Q, "measure": "iou", "groups": groups, "holm_family": family}


def lost_items(records: list[dict[str, Any]]) -> dict[str, Any]:
    """How many items were scored, and per measure and reason how many could not be."""
    counts = Counter(f"{measure}: {reason}" for r in records for measure, reason in r["lost"].items())
    counts.update(f"diagnostic: {note}" for r in records for note in r.get("diagnostics", ()))
    return {"items": len(records), "scored": sum(1 for r in records if math.isfinite(r["iou"][str(Q_DEFAULT)])),
            **dict(sorted(counts.items()))}


def _field(records: list[dict[str, Any]], field: str) -> np.ndarray:
    return np.asarray([r[field][str(Q_DEFAULT)] if field in REGION else r[field] for r in records], dtype=float)


def _finite(records: list[dict[str, Any]], field: str) -> np.ndarray:
    values = _field(records, field)
    return values[np.isfinite(values)]


def _mean(values: list[float]) -> float:
    array = np.asarray(values, dtype=float)
    array = array[np.isfinite(array)]
    return float(array.mean()) if array.size else math.nan
