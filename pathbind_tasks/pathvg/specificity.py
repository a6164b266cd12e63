"""The PathVG expression specificity judge (PathBind Appendix B.2, D.3): a text-only Specific/Vague verdict per item.

One document per PathVG expression (the paper's 3,048), with the grounding tasks' ids (``testA-<bbox_id>-<k>``),
so the ids ``pathbind filter --specificity`` keeps select the same items there. An expression that is not a
non-empty text is a fault of the data, dropped and counted in ``accounting`` (``pathbind_tasks.pathvg.utils``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from loguru import logger

from pathbind import render_template
from pathbind_metrics.parsing import SPECIFICITY_LABELS, Judgement, parse_specificity
from pathbind_tasks.common.failures import no_answer_reason
from pathbind_tasks.common.harness import task_name
from pathbind_tasks.common.messages import UserTurn

METRICS = ("specific_rate", "invalid_rate", "judgements", "accounting")  # no name inside another (group matching)


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    """No image: the judge reads the expression alone."""
    return []


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """The Figure D.7 prompt for the document's expression, on one line (its line breaks cannot add lines)."""
    return render_template("specificity", expression=" ".join(str(doc.get("expression") or "").split()))


doc_to_messages = UserTurn(doc_to_visual, doc_to_text)


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    """The judge's verdict on one expression, emitted under every metric; an item that cannot be judged, a backend
    failure or an unparseable answer is an invalid judgement (``judgement`` None) with its reason."""
    text = str(results[0]) if results else ""
    problem = no_answer_reason(text)
    judgement = Judgement(None, problem) if problem else parse_specificity(text)
    record = {"task": task_name(), "id": str(doc.get("id")), "split": doc.get("split"),
              "expression": doc.get("expression"), "judgement": judgement.label, "valid": judgement.label is not None,
              "reason": judgement.reason}
    return dict.fromkeys(METRICS, record)


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
