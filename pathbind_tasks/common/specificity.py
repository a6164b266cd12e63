"""The PathVG expression specificity judge (PathBind Appendix B.2, D.3): a text-only Specific/Vague verdict per item.

One document per PathVG expression (the paper's 3,048), with the grounding tasks' ids (``testA-<bbox_id>-<k>``),
so the ids ``pathbind filter --specificity`` keeps select the same items there. An expression that is not a
non-empty text is a fault of the data, dropped and counted in ``accounting`` (``pathbind_tasks.pathvg.utils``).
"""

from __future__ import annotations

from typing import Any

from pathbind import render_template
from pathbind_metrics.parsing import Judgement, parse_specificity
from pathbind_tasks.common.failures import no_answer_reason
from pathbind_tasks.common.harness import task_name
from pathbind_tasks.common.messages import UserTurn
from pathbind_tasks.common.metrics import names


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    """No image: the judge reads the expression alone."""
    return []


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """The Figure D.7 prompt for the document's expression, on one line (its line breaks cannot add lines)."""
    return render_template("specificity", expression=" ".join(str(doc.get("expression") or "").split()))


doc_to_messages = UserTurn(doc_to_visual, doc_to_text)


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    """The judge's verdict on one expression, emitted under every metric of its kind; an item that cannot be judged,
    a backend failure or an unparseable answer is an invalid judgement (``judgement`` None) with its reason."""
    text = str(results[0]) if results else ""
    problem = no_answer_reason(text)
    judgement = Judgement(None, problem) if problem else parse_specificity(text)
    record = {"task": task_name(), "id": str(doc.get("id")), "split": doc.get("split"),
              "expression": doc.get("expression"), "judgement": judgement.label, "valid": judgement.label is not None,
              "reason": judgement.reason}
    return dict.fromkeys(names("specificity"), record)
