"""The specificity judge's aggregations over its per-expression records (:mod:`pathbind_tasks.common.specificity`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from loguru import logger

from pathbind_metrics.parsing import SPECIFICITY_LABELS


def judgements(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``{"items", "Specific", "Vague", "invalid": {reason: count}}`` of one judge on one task (logged if invalid)."""
    labels = Counter(record["judgement"] for record in records)
    invalid = Counter(record["reason"] for record in records if record["judgement"] is None)
    if invalid:
        task = records[0].get("task") or "?"
        reasons = ", ".join(f"{reason}: {n}" for reason, n in invalid.most_common())
        logger.warning(f"task {task}: {labels[None]} of {len(records)} judgements are invalid ({reasons}); "
                       "`pathbind filter --specificity` excludes those items")
    return {"items": len(records), **{label: labels[label] for label in SPECIFICITY_LABELS},
            "invalid": dict(sorted(invalid.items()))}


def specific_rate(records: Sequence[dict[str, Any]]) -> float:
    """Percent of the items judged Specific (an invalid judgement is not Specific: that item is not kept)."""
    return _percent(records, lambda record: record["judgement"] == "Specific")


def invalid_rate(records: Sequence[dict[str, Any]]) -> float:
    """Percent of the items whose judgement is invalid (reasons under ``judgements``)."""
    return _percent(records, lambda record: record["judgement"] is None)


def _percent(records: Sequence[dict[str, Any]], hit: Callable[[dict[str, Any]], bool]) -> float:
    return 100.0 * sum(map(hit, records)) / len(records) if records else float("nan")
