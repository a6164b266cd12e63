"""Visual question answering: prompt rendering and scoring shared by every VQA-type task."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

from loguru import logger
from PIL import Image

from pathbind import render_template
from pathbind_metrics import choice_letters, parse_choice, parse_yes_no
from pathbind_metrics.aggregations import ABLATION_METRICS, BASE_METRICS
from pathbind_tasks.common.conditions import visual_for
from pathbind_tasks.common.failures import no_answer_reason, scoring_failure
from pathbind_tasks.common.messages import UserTurn


def doc_to_visual(doc: dict[str, Any]) -> list[Image.Image]:
    """The item's image as its condition presents it (none in the text-only condition)."""
    if doc.get("condition") == "text":
        return []
    return visual_for(doc, doc["image"].convert("RGB"))


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """Render the task's template (``template`` in lmms_eval_specific_kwargs, ``thinking`` toggles <think>)."""
    kwargs = lmms_eval_specific_kwargs or {}
    variables: dict[str, Any] = {"question": doc["question"], "thinking": bool(kwargs.get("thinking", False))}
    if doc.get("options") is not None:
        variables["choices"] = list(zip(choice_letters(len(doc["options"])), doc["options"], strict=True))
    return render_template(kwargs.get("template", "mcq"), **variables)


# What lmms-eval's chat backends receive: the same images and prompt as the simple ones, as one user turn.
doc_to_messages = UserTurn(doc_to_visual, doc_to_text)


def _judge_choice(doc: dict[str, Any], text: str) -> tuple[str | None, str]:
    letters = choice_letters(len(doc["options"]))
    reference = str(doc["answer"]).strip().upper()
    if reference not in letters:
        raise ValueError(f"field 'answer' is {doc['answer']!r}, not one of the option letters {', '.join(letters)}")
    return parse_choice(text, list(doc["options"])), reference


def _judge_yes_no(doc: dict[str, Any], text: str) -> tuple[str | None, str]:
    reference = str(doc["answer"]).strip().lower()
    if reference not in ("yes", "no"):
        raise ValueError(f"field 'answer' is {doc['answer']!r}, not yes or no")
    return parse_yes_no(text), reference


Judge = Callable[[dict[str, Any], str], tuple[str | None, str]]


def calling_task(max_depth: int = 8) -> str | None:
    """The name of the lmms-eval task whose ``process_results`` called us, or None outside lmms-eval.

    lmms-eval passes a task's process_results only the document and the answers; the task is the ``self`` of
    its caller, ``ConfigurableTask.process_results``. Aggregations receive only the records, so the record
    carries the name, for warnings that must say which task lacks a condition.
    """
    frame: FrameType | None = sys._getframe(1).f_back  # the caller of the process_results that called us
    for _ in range(max_depth):
        if frame is None:
            return None
        owner: Any = frame.f_locals.get("self")
        if type(owner).__module__.startswith("lmms_eval") and isinstance(getattr(owner, "task_name", None), str):
            return owner.task_name
        frame = frame.f_back
    return None


def scorer(judge: Judge, metrics: tuple[str, ...]) -> Callable[[dict[str, Any], list[str]], dict[str, Any]]:
    """A ``process_results`` that scores one answer into a record emitted under each of ``metrics``.

    Total by design: lmms-eval retries a raising process_results, so an unparseable answer, a backend's
    failure marker or a malformed document becomes an invalid record (wrong, with a reason), never an exception.
    """

    def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
        record: dict[str, Any] = {"task": calling_task(), "id": str(doc.get("id")),
                                  "condition": doc.get("condition", "image"),
                                  "dimension": doc.get("dimension"), "source": doc.get("source"),
                                  "image_from": doc.get("image_from"), "accounting": doc.get("accounting")}
        try:
            if doc.get("image_error") and record["condition"] != "text":
                raise ValueError(doc["image_error"])
            text = results[0] if results else ""
            parsed, reference = judge(doc, text)
            failure = no_answer_reason(text)
            parsed = None if failure else parsed
            record.update(reference=reference, parsed=parsed, valid=parsed is not None, correct=parsed == reference,
                          reason=failure or ("" if parsed is not None else "unparseable answer"))
        except Exception as exc:  # a malformed document is scored invalid, never fatal
            reason = scoring_failure(exc)
            logger.warning(f"doc {record['id']}: cannot score ({reason})")
            record.update(reference=None, parsed=None, valid=False, correct=False, reason=reason)
        return dict.fromkeys(metrics, record)

    return process_results


process_mcq_results = scorer(_judge_choice, BASE_METRICS)
process_yes_no_results = scorer(_judge_yes_no, BASE_METRICS)
process_mcq_ablation_results = scorer(_judge_choice, ABLATION_METRICS)
process_yes_no_ablation_results = scorer(_judge_yes_no, ABLATION_METRICS)
