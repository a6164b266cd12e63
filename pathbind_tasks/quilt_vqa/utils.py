"""Quilt-VQA as published on the hub (``image, question, answer, answer_type, context``): its closed-ended
(yes/no) questions in the task schema.

A closed-ended ``answer`` is a sentence ("No, there is no necrosis in this field."); the release's own
evaluation reads the label from a ``yes_no_answer`` field. That field is used when the data has it, else
the yes/no that opens the answer sentence.
"""

from __future__ import annotations

import re
from typing import Any

import datasets

from pathbind_tasks.common.accounting import drop
from pathbind_tasks.common.raw import YES_NO_FEATURES, embedded_docs, report_unmapped, require, yes_no
from pathbind_tasks.common.vqa import condition_sets

DATASET = "Quilt-VQA"
COLUMNS = ("image", "question", "answer", "answer_type")
CLOSED = "CLOSED"
_OPENING = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)


def closed_label(answer: Any, yes_no_answer: Any = None) -> str | None:
    """"yes"/"no" for a closed-ended item: its ``yes_no_answer`` if given, else the answer's opening word."""
    if yes_no_answer is not None:
        return yes_no(yes_no_answer)
    match = _OPENING.match("" if answer is None else str(answer))
    return match.group(1).lower() if match else None


def convert(dataset: datasets.Dataset) -> datasets.Dataset:
    """Keep the CLOSED items; one whose label is not yes/no keeps its raw answer (scored invalid)."""
    require(dataset.column_names, COLUMNS, dataset=DATASET, folder="quilt_vqa")
    keep = [row for row, kind in enumerate(dataset["answer_type"]) if str(kind).strip().upper() == CLOSED]
    drop(f"answer_type is not {CLOSED}", len(dataset) - len(keep))
    raw_answers, questions = dataset["answer"], dataset["question"]
    labels = dataset["yes_no_answer"] if "yes_no_answer" in dataset.column_names else [None] * len(dataset)
    answers = [closed_label(raw_answers[row], labels[row]) for row in keep]
    report_unmapped(answers, dataset=DATASET)
    columns = {"id": [f"quilt_vqa-{row}" for row in keep], "question": [questions[row] for row in keep],
               "answer": [answer or str(raw_answers[row]) for row, answer in zip(keep, answers, strict=True)],
               "dimension": [None] * len(keep), "source": [DATASET] * len(keep)}
    return embedded_docs(dataset, keep, columns, YES_NO_FEATURES)


full, image_only, ablation = condition_sets(convert)
