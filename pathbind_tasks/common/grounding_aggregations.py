"""Grounding: the task-level aggregations over the item records (:mod:`pathbind_tasks.common.grounding_records`):
they average the finite values and count the reasons a measure was lost."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from pathbind_metrics import resampling as rs
from pathbind_tasks.common.clusters import cluster_keys
from pathbind_tasks.common.grounding_records import Q_DEFAULT, Q_SWEEP, REGION

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
