"""Path-VQA as published on the hub (``image, question, answer``): its yes/no questions in the task schema.

``image`` holds the images (the hub's parquet), or file names in the data folder (a ``test.json`` of paths), each
read by the image-path rule (:mod:`pathbind_tasks.common.image_paths`): a name resolves in the data folder, never
in the working folder, and one that leaves it is never read.
"""

from __future__ import annotations

from typing import Any

import datasets

from pathbind.layout import Layout
from pathbind_tasks.common.accounting import drop
from pathbind_tasks.common.image_paths import task_images
from pathbind_tasks.common.raw import (
    YES_NO_FEATURES,
    require,
    schema_docs,
    text_or_empty,
    text_problem,
    with_doc_error,
    yes_no,
)
from pathbind_tasks.common.vqa import condition_sets, vqa_docs

DATASET = "Path-VQA"
COLUMNS = ("image", "question", "answer")
FEATURES = with_doc_error(YES_NO_FEATURES)
# The test split as one parquet file (images embedded) or a JSON/CSV file of file names, or a save_to_disk copy.
LAYOUT = Layout(data=("test.parquet",), readme="pathbind_tasks/path_vqa/README.md")


def convert(dataset: datasets.Dataset) -> datasets.Dataset:
    """Keep the items answered yes or no (the closed-ended half); ids are ``path_vqa-<split>-<row>``. A question or
    answer that is not text is a fault of the data (dropped with its field and type), not an open-ended item."""
    require(dataset.column_names, COLUMNS, dataset=DATASET, folder="path_vqa")
    rows = dataset.select_columns(["question", "answer"]).to_list()
    problems = [text_problem(row, ("question", "answer")) for row in rows]
    answers = [yes_no(row["answer"]) for row in rows]
    keep = [i for i, (answer, problem) in enumerate(zip(answers, problems, strict=True)) if answer or problem]
    drop("open-ended (answer is not yes or no)", len(dataset) - len(keep), selection=True)
    prefix = f"path_vqa-{dataset.split}-" if dataset.split else "path_vqa-"
    columns: dict[str, list[Any]] = {
        "id": [f"{prefix}{i}" for i in keep], "question": [text_or_empty(rows[i]["question"]) for i in keep],
        "answer": [answers[i] or "" for i in keep], "dimension": [None] * len(keep),
        "source": [DATASET] * len(keep), "doc_error": [problems[i] for i in keep]}
    return schema_docs(dataset, keep, columns, FEATURES, task_images())


full, image_only, ablation = condition_sets(convert)
paraphrase = vqa_docs("paraphrase", convert)
