"""PathView aggregations over the per-item records of :mod:`pathbind_tasks.common.pathview`, in percent like every
PathBind rate (the paper's Dice 0.073 is 7.3 here; MAE in objects). Sums are exact (``math.fsum``), so any split
of the items over processes gives the same value.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from pathbind_metrics import pathview
from pathbind_metrics import resampling as rs
from pathbind_tasks.common.clusters import cluster_keys

Records = Sequence[Mapping]


def _percent(values: list[float]) -> float:
    return 100.0 * math.fsum(values) / len(values) if values else math.nan


def _answered(record: Mapping) -> bool:
    return record["outcome"] == "answered"


def dice(records: Records) -> float:
    """Mean Dice of the predicted and true box unions; refused and invalid items score 0."""
    return _percent([float(r["dice"]) if _answered(r) else 0.0 for r in records])


def accuracy(records: Records) -> float:
    """Percentage of items answered with the reference option."""
    return _percent([1.0 if _answered(r) and r["correct"] else 0.0 for r in records])


def mae(records: Records) -> float:
    """Mean absolute counting error over the items answered with a number (refusals and invalids left out)."""
    answered = sorted((r for r in records if _answered(r)), key=lambda r: r["id"])
    return pathview.mean_absolute_error([r["parsed"] for r in answered], [r["reference"] for r in answered])


def macro_f1(records: Records) -> float:
    """Macro-F1 over the reference and predicted classes; a refused or invalid answer is a wrong prediction,
    a malformed item (no reference class) is left out."""
    scored = sorted((r for r in records if r["reference"] is not None), key=lambda r: r["id"])
    return 100.0 * pathview.macro_f1([r["reference"] for r in scored],
                                     [r["parsed"] if _answered(r) else None for r in scored])


def entity_recall(records: Records) -> float:
    """Mean over items of the fraction of reference entities the answer names; refused and invalid items score 0."""
    return _percent([float(r["recall"]) if _answered(r) else 0.0 for r in records])


def refusal_rate(records: Records) -> float:
    """Percentage of items refused for lack of evidence: the safe refusal rate (``srr``) on traps and the false
    refusal rate on answerable items."""
    return _percent([1.0 if r["outcome"] == "refused" else 0.0 for r in records])


def invalid_rate(records: Records) -> float:
    """Percentage of items whose answer could not be read or whose document is malformed."""
    return _percent([1.0 if r["outcome"] == "invalid" else 0.0 for r in records])


# ---------------------------------------------------------------------------------------------- intervals

def _rate(value: Callable[[Mapping], float]) -> Callable[[Records], tuple[np.ndarray, rs.Statistic]]:
    """Columns (value, 1) of every item and the percentage statistic of their mean."""
    return lambda records: (np.array([[value(r), 1.0] for r in records]).reshape(-1, 2), rs.mean_of(0, 1, 100.0))


def _mae_columns(records: Records) -> tuple[np.ndarray, rs.Statistic]:
    """(absolute error, 1) of an answered item, (0, 0) of another: the mean over answered items only."""
    rows = [[float(abs(r["parsed"] - r["reference"])), 1.0] if _answered(r) else [0.0, 0.0] for r in records]
    return np.array(rows).reshape(-1, 2), rs.mean_of(0, 1)


def _f1_columns(records: Records) -> tuple[np.ndarray, rs.Statistic]:
    """Per class (TP, FP, FN) indicators of each item, and macro-F1 (percent) over the classes a draw has, as
    :func:`macro_f1` scores the classes of its items."""
    scored = [r for r in records if r["reference"] is not None]
    predicted = [r["parsed"] if _answered(r) else None for r in scored]
    classes = [c for c in dict.fromkeys([*(r["reference"] for r in scored), *predicted]) if c is not None]
    rows = [[x for c in classes for x in (t == c and p == c, t != c and p == c, t == c and p != c)]
            for t, p in zip((r["reference"] for r in scored), predicted, strict=True)]

    def statistic(sums: np.ndarray) -> np.ndarray:
        tp, fp, fn = sums[..., 0::3], sums[..., 1::3], sums[..., 2::3]
        present = tp + fp + fn > 0
        f1 = np.divide(2 * tp, 2 * tp + fp + fn, out=np.zeros_like(tp), where=present)
        return 100.0 * f1.sum(axis=-1) / np.maximum(present.sum(axis=-1), 1)

    return np.array(rows, dtype=float).reshape(len(rows), 3 * len(classes)), statistic


_REFUSED = _rate(lambda r: 1.0 if r["outcome"] == "refused" else 0.0)
PROPORTIONS = ("accuracy", "srr", "false_refusal_rate")  # rates of yes/no outcomes: a proportion's interval
# The headline of each kind (by the "kind" its records carry) and its refusal rate, as the metrics above define them.
INTERVALS: dict[str, dict[str, Callable[[Records], tuple[np.ndarray, rs.Statistic]]]] = {
    "pathview_grounding": {"dice": _rate(lambda r: float(r["dice"]) if _answered(r) else 0.0)},
    "pathview_choice": {"accuracy": _rate(lambda r: 1.0 if _answered(r) and r["correct"] else 0.0)},
    "pathview_bins": {"macro_f1": _f1_columns},
    "pathview_count": {"mae": _mae_columns},
    "pathview_description": {"entity_recall": _rate(lambda r: float(r["recall"]) if _answered(r) else 0.0)},
    "pathview_trap": {"srr": _REFUSED},
}


def ci95(records: Records) -> dict[str, Any]:
    """95% cluster intervals (:mod:`pathbind_metrics.resampling`) of the task's headline and its refusal
    rate (``srr`` on traps, ``false_refusal_rate`` elsewhere), resampling the task's clusters (by default the
    images; PathView asks several questions of one slide or region)."""
    ordered = sorted(records, key=lambda r: str(r["id"]))
    kinds = {str(r.get("kind")) for r in ordered}
    measures = dict(INTERVALS.get(kinds.pop(), {})) if len(kinds) == 1 else {}
    if measures and "srr" not in measures:
        measures["false_refusal_rate"] = _REFUSED
    intervals = {}
    for name, columns_of in measures.items():
        kept = [r for r in ordered if name != "macro_f1" or r["reference"] is not None]
        keys, cluster = cluster_keys(kept)
        columns, statistic = columns_of(kept)
        proportion = 100.0 if name in PROPORTIONS else None
        bounds = (0.0, math.inf if name == "mae" else 100.0)
        intervals[name] = rs.cluster_interval(statistic, columns, keys, cluster=cluster, proportion=proportion,
                                              bounds=bounds)
    return intervals
