"""Visual question answering: documents, prompt rendering and scoring shared by every VQA task.

A document's ``answer_format`` (``mcq`` or ``yesno``) picks its template and its answer parser together; its
``condition_set`` (see ``CONDITION_SETS``) is its metric kind, ``vqa_<condition set>``, which picks the metrics its
record is emitted under, so one metric_list serves every variant. ``process_docs`` sets both.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import datasets
from loguru import logger
from PIL import Image

from pathbind import render_template
from pathbind.faults import Fault
from pathbind_metrics import choice_letters, parse_choice, parse_yes_no
from pathbind_tasks.common.accounting import FAULT, faults_column
from pathbind_tasks.common.columns import with_column
from pathbind_tasks.common.conditions import CONDITION_SETS, Converter, visual_for, with_conditions
from pathbind_tasks.common.failures import no_answer_reason, scoring_failure
from pathbind_tasks.common.harness import task_name
from pathbind_tasks.common.image_paths import confine, task_images
from pathbind_tasks.common.images import rgb_image
from pathbind_tasks.common.messages import UserTurn
from pathbind_tasks.common.metrics import names
from pathbind_tasks.common.raw import BadField, DataFault, letter_answer, shown_text
from pathbind_tasks.common.repeats import every_response

MAX_OPTIONS = 26  # one letter A-Z each
ADDED = ("answer_format", "condition_set")  # columns process_docs computes
CHECKED = ("question", "options", "answer", "answer_format")  # an item's fields whose data can be at fault


def answer_format(options: Iterable[Any]) -> str:
    """``mcq`` when any document has options, else ``yesno``: the template and the parser. A yes/no set written
    with pandas beside MCQ sets may carry an ``options`` column of nulls: that is not an MCQ set."""
    return "mcq" if any(value is not None for value in options) else "yesno"


def vqa_docs(condition_set: str, convert: Converter | None = None) -> Converter:
    """A ``process_docs``: ``convert`` the raw rows to the task schema (none for data already in it), record each
    document's answer format and condition set, then one document per condition of the set."""
    if condition_set not in CONDITION_SETS:
        raise ValueError(f"unknown condition set {condition_set!r}; known: {', '.join(CONDITION_SETS)}")

    def tagged(dataset: datasets.Dataset) -> datasets.Dataset:
        docs, refused = (convert(dataset), None) if convert else confine(dataset, task_images())
        docs = docs.remove_columns([name for name in ADDED if name in docs.column_names])
        fmt = answer_format(docs["options"] if "options" in docs.column_names else [])
        docs = with_column(with_column(docs, "answer_format", [fmt] * len(docs)), "condition_set",
                           [condition_set] * len(docs))
        return with_item_checks(docs, refused)

    return with_conditions(CONDITION_SETS[condition_set], tagged)


def with_item_checks(docs: datasets.Dataset, refused: Sequence[Fault | None] | None = None) -> datasets.Dataset:
    """``docs`` with ``doc_error``: the fault that keeps an item's data from being scored (a converter's finding, an
    image path refused (``refused``, one per row), an empty question, markup in a question or option, options that
    cannot be lettered, a reference that is not an answer of its format), for ``without_faults``."""
    fields = [name for name in (*CHECKED, "doc_error") if name in docs.column_names]
    rows = docs.select_columns(fields).to_list()
    faults = [Fault.read(row.get("doc_error")) or path or item_problem(row)
              for row, path in zip(rows, refused or [None] * len(rows), strict=True)]
    if "doc_error" in docs.column_names:
        docs = docs.remove_columns("doc_error")
    return with_column(docs, "doc_error", faults_column(faults), FAULT)


def item_problem(doc: dict[str, Any]) -> Fault | None:
    """Why the data of one item cannot be scored, whatever the model answers (None when it can): its question, then
    its options and reference (the judge of its format raises on those)."""
    try:
        JUDGES[format_of(doc)](doc, "")
        if format_of(doc) == "mcq":
            for option in doc["options"]:
                shown_text(option, "options")
    except DataFault as exc:
        return question_problem(doc) or exc.fault
    except (KeyError, ValueError) as exc:
        return question_problem(doc) or Fault(scoring_failure(exc))
    return question_problem(doc)


def question_problem(doc: dict[str, Any]) -> Fault | None:
    """Why the item's question cannot be asked (None when it can): not text, empty, or holding markup."""
    try:
        return None if shown_text(doc.get("question"), "question").strip() else Fault("field 'question' is empty")
    except BadField as exc:
        return exc.fault


def condition_sets(convert: Converter | None = None) -> tuple[Converter, Converter, Converter]:
    """The ``process_docs`` of the full, image-only and ablation variants of one data source (``vqa_docs(
    "paraphrase", convert)`` gives its paraphrase variant)."""
    full, image_only, ablation = (vqa_docs(name, convert) for name in ("full", "image_only", "ablation"))
    return full, image_only, ablation


def doc_to_visual(doc: dict[str, Any]) -> list[Image.Image]:
    """The item's image as its condition presents it (none in the text-only condition)."""
    if doc.get("condition") == "text":
        return []
    return visual_for(doc, rgb_image(doc["image"]))


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """Render the template of the document's answer format (``thinking`` in lmms_eval_specific_kwargs toggles
    <think>).

    Total, as lmms-eval builds every prompt before any answer: options that cannot be lettered are not shown
    (the item is scored invalid). The question keeps its line breaks (case vignettes have paragraphs); each
    option is one line, so an option text cannot add an option line of its own.
    """
    kwargs = lmms_eval_specific_kwargs or {}
    variables: dict[str, Any] = {"question": str(doc.get("question") or "").strip(),
                                 "thinking": bool(kwargs.get("thinking", False))}
    if format_of(doc) == "mcq":  # an MCQ item whose options cannot be lettered is shown none (and scored invalid)
        raw = doc.get("options")
        options = one_line_options(raw) if raw is not None and not options_problem(raw) else []
        variables["choices"] = list(zip(choice_letters(len(options)), options, strict=True))
    return render_template(format_of(doc), **variables)


def format_of(doc: dict[str, Any]) -> str:
    """The document's ``answer_format``; one that did not come through ``vqa_docs`` (a third party's task) has
    the format of its fields."""
    return str(doc.get("answer_format") or answer_format([doc.get("options")]))


def one_line_options(options: list[Any]) -> list[str]:
    """Option texts with every run of whitespace, line breaks included, collapsed to one space."""
    return [" ".join(str(option).split()) for option in options]


def options_problem(options: Any) -> Fault | None:
    """Why ``options`` cannot be asked as lettered choices, or None when they can."""
    if not isinstance(options, list | tuple):
        return BadField("options", f"is a {type(options).__name__}, not a list of option texts", options).fault
    if not options:
        return Fault("field 'options' is empty")
    if len(options) > MAX_OPTIONS:
        return Fault(f"field 'options' has more options than the {MAX_OPTIONS} letters A-Z", f"{len(options)} options")
    empty = [letter for letter, text in zip(choice_letters(len(options)), one_line_options(list(options)),
                                            strict=True) if not text]
    return Fault("field 'options' has an empty option", f"option {', '.join(empty)}") if empty else None


# What lmms-eval's chat backends receive: the same images and prompt as the simple ones, as one user turn.
doc_to_messages = UserTurn(doc_to_visual, doc_to_text)


def _judge_choice(doc: dict[str, Any], text: str) -> tuple[str | None, str]:
    problem = options_problem(doc["options"])
    if problem:
        raise DataFault(problem)
    options = one_line_options(list(doc["options"]))
    reference = letter_answer(doc["answer"], len(options))  # the converters' rule: "c", "(C)", "C) text"
    if reference is None:
        letters = ", ".join(choice_letters(len(options)))
        raise BadField("answer", "is not one of the option letters", detail=f"{doc['answer']!r:.80}; letters {letters}")
    return parse_choice(text, options), reference


def _judge_yes_no(doc: dict[str, Any], text: str) -> tuple[str | None, str]:
    reference = str(doc["answer"]).strip().lower()
    if reference not in ("yes", "no"):
        raise BadField("answer", "is not yes or no", doc["answer"])
    return parse_yes_no(text), reference


JUDGES: dict[str, Callable[[dict[str, Any], str], tuple[str | None, str]]] = {
    "mcq": _judge_choice, "yesno": _judge_yes_no}


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    """Score one answer, by the parser of the document's answer format, into a record emitted under each metric
    of its condition set (``full`` for a document that did not come through ``vqa_docs``). Under lmms-eval's
    ``--repeats N`` the N answers come as one list (:class:`pathbind_tasks.common.repeats.EveryResponse`): the first
    is scored as the answer, and the record keeps how each of the N was scored, for the ``repeats`` metric.

    Total by design: lmms-eval retries a raising process_results, so an unparseable answer, a backend's
    failure marker or a malformed document becomes an invalid record (wrong, with a reason), never an exception.
    """
    item, cluster = str(doc.get("id")), doc.get("cluster")
    record: dict[str, Any] = {"task": task_name(),  # aggregations get only records: warnings name it
                              "id": item, "cluster": cluster, "condition": doc.get("condition", "image"),
                              "dimension": doc.get("dimension"), "source": doc.get("source"),
                              # a document without them shows its own image (a condition set without swaps)
                              "image_from": doc.get("image_from", item),
                              "cluster_from": doc.get("cluster_from", cluster)}
    if doc.get("paraphrase"):  # the rule that reworded the question (the paraphrase condition set)
        record["paraphrase"] = doc["paraphrase"]
    answers = every_response(results)
    record.update(_scored(doc, answers[0] if answers else "", record["id"]))
    if len(answers) > 1:
        record["repeats"] = [{key: scored[key] for key in ("parsed", "valid", "correct")}
                             for scored in (_scored(doc, answer, record["id"]) for answer in answers)]
    # Interned: an item's conditions, and the items of one image, share their ids, keys and answers in memory.
    record = {key: sys.intern(value) if isinstance(value, str) else value for key, value in record.items()}
    return dict.fromkeys(names(f"vqa_{doc.get('condition_set') or 'full'}"), record)


def _scored(doc: dict[str, Any], text: str, item: str) -> dict[str, Any]:
    try:
        if format_of(doc) not in JUDGES:
            raise ValueError(f"field 'answer_format': {format_of(doc)!r} is not one of {', '.join(JUDGES)}")
        problem = question_problem(doc)  # only a document that did not come through vqa_docs can have one
        if problem:
            raise ValueError(str(problem))
        parsed, reference = JUDGES[format_of(doc)](doc, text)  # raises on options or a reference at fault
        failure = no_answer_reason(text)
        parsed = None if failure else parsed
        return {"reference": reference, "parsed": parsed, "valid": parsed is not None, "correct": parsed == reference,
                "reason": failure or ("" if parsed is not None else "unparseable answer"),
                "n_options": option_count(doc)}
    except Exception as exc:  # a malformed document is scored invalid, never fatal
        reason = scoring_failure(exc)
        logger.warning(f"doc {item}: cannot score ({reason})")
        return {"reference": None, "parsed": None, "valid": False, "correct": False, "reason": reason,
                "n_options": None}


def option_count(doc: dict[str, Any]) -> int:
    """How many answers the item offers: its options, or yes and no. A uniform guess is right 1 / this often (the
    chance row of the paper's tables averages it over each column's items: MedXpert-Path's five options give 20%)."""
    return len(doc["options"]) if format_of(doc) == "mcq" else 2


# Ready-made process_docs for data already in the task schema (as the demo and PATHBIND_DATA copies are).
full, image_only, ablation = condition_sets()
paraphrase = vqa_docs("paraphrase")
