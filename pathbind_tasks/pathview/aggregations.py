"""PathView aggregations over the per-item records of :mod:`pathbind_tasks.pathview.scoring`, in percent like every
PathBind rate (the paper's Dice 0.073 is 7.3 here; MAE in objects). Sums are exact (``math.fsum``), so any split
of the items over processes gives the same value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pathbind_metrics import pathview

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
