"""Visual question answering: prompt rendering and scoring shared by every VQA-type task."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loguru import logger
from PIL import Image

from pathbind import render_template
from pathbind_metrics import choice_letters, parse_choice, parse_yes_no
from pathbind_metrics.aggregations import ABLATION_METRICS, BASE_METRICS
from pathbind_tasks.common.conditions import visual_for
from pathbind_tasks.common.failures import no_answer_reason, scoring_failure
from pathbind_tasks.common.harness import task_name
from pathbind_tasks.common.images import rgb_image
from pathbind_tasks.common.messages import UserTurn
from pathbind_tasks.common.raw import letter_answer

MAX_OPTIONS = 26  # one letter A-Z each


def doc_to_visual(doc: dict[str, Any]) -> list[Image.Image]:
    """The item's image as its condition presents it (none in the text-only condition)."""
    if doc.get("condition") == "text":
        return []
    return visual_for(doc, rgb_image(doc["image"]))


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """Render the task's template (``template`` in lmms_eval_specific_kwargs, ``thinking`` toggles <think>).

    Total, as lmms-eval builds every prompt before any answer: options that cannot be lettered are not shown
    (the item is scored invalid). The question keeps its line breaks (case vignettes have paragraphs); each
    option is one line, so an option text cannot add an option line of its own.
    """
    kwargs = lmms_eval_specific_kwargs or {}
    variables: dict[str, Any] = {"question": str(doc.get("question") or "").strip(),
                                 "thinking": bool(kwargs.get("thinking", False))}
    if doc.get("options") is not None:
        options = [] if options_problem(doc["options"]) else one_line_options(doc["options"])
        variables["choices"] = list(zip(choice_letters(len(options)), options, strict=True))
    return render_template(kwargs.get("template", "mcq"), **variables)


def one_line_options(options: list[Any]) -> list[str]:
    """Option texts with every run of whitespace, line breaks included, collapsed to one space."""
    return [" ".join(str(option).split()) for option in options]


def options_problem(options: Any) -> str:
    """Why ``options`` cannot be asked as lettered choices, or "" when they can."""
    if not isinstance(options, list | tuple):
        return f"field 'options': {options!r:.80} is a {type(options).__name__}, not a list of option texts"
    if not options:
        return "field 'options': empty"
    if len(options) > MAX_OPTIONS:
        return f"field 'options': {len(options)} options, more than the {MAX_OPTIONS} letters A-Z"
    empty = [letter for letter, text in zip(choice_letters(len(options)), one_line_options(list(options)),
                                            strict=True) if not text]
    return f"field 'options': option {', '.join(empty)} empty" if empty else ""


# What lmms-eval's chat backends receive: the same images and prompt as the simple ones, as one user turn.
doc_to_messages = UserTurn(doc_to_visual, doc_to_text)


def _judge_choice(doc: dict[str, Any], text: str) -> tuple[str | None, str]:
    problem = options_problem(doc["options"])
    if problem:
        raise ValueError(problem)
    options = one_line_options(list(doc["options"]))
    reference = letter_answer(doc["answer"], len(options))  # the converters' rule: "c", "(C)", "C) text"
    if reference is None:
        letters = ", ".join(choice_letters(len(options)))
        raise ValueError(f"field 'answer' is {doc['answer']!r}, not one of the option letters {letters}")
    return parse_choice(text, options), reference


def _judge_yes_no(doc: dict[str, Any], text: str) -> tuple[str | None, str]:
    reference = str(doc["answer"]).strip().lower()
    if reference not in ("yes", "no"):
        raise ValueError(f"field 'answer' is {doc['answer']!r}, not yes or no")
    return parse_yes_no(text), reference


Judge = Callable[[dict[str, Any], str], tuple[str | None, str]]


def scorer(judge: Judge, metrics: tuple[str, ...]) -> Callable[[dict[str, Any], list[str]], dict[str, Any]]:
    """A ``process_results`` that scores one answer into a record emitted under each of ``metrics``.

    Total by design: lmms-eval retries a raising process_results, so an unparseable answer, a backend's
    failure marker or a malformed document becomes an invalid record (wrong, with a reason), never an exception.
    """

    def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
        record: dict[str, Any] = {"task": task_name(),  # aggregations get only records: warnings name it
                                  "id": str(doc.get("id")),
                                  "condition": doc.get("condition", "image"),
                                  "dimension": doc.get("dimension"), "source": doc.get("source"),
                                  "image_from": doc.get("image_from"), "accounting": doc.get("accounting")}
        try:
            if doc.get("doc_error"):
                raise ValueError(doc["doc_error"])
            if doc.get("image_error") and record["condition"] != "text":
                raise ValueError(doc["image_error"])
            text = results[0] if results else ""
            parsed, reference = judge(doc, text)
            if not str(doc.get("question") or "").strip():
                raise ValueError("field 'question': empty")
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
