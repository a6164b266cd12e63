"""Path-VQA as published on the hub (``image, question, answer``): its yes/no questions in the task schema."""

from __future__ import annotations

import datasets

from pathbind_tasks.common.accounting import drop
from pathbind_tasks.common.layout import Layout
from pathbind_tasks.common.raw import YES_NO_FEATURES, embedded_docs, require, yes_no
from pathbind_tasks.common.vqa import condition_sets

DATASET = "Path-VQA"
COLUMNS = ("image", "question", "answer")
# The test split as one parquet file (images embedded), or a save_to_disk copy.
LAYOUT = Layout(data=("test.parquet",), readme="pathbind_tasks/path_vqa/README.md")


def convert(dataset: datasets.Dataset) -> datasets.Dataset:
    """Keep the items answered yes or no (the closed-ended half); ids are ``path_vqa-<split>-<row>``."""
    require(dataset.column_names, COLUMNS, dataset=DATASET, folder="path_vqa")
    answers = [yes_no(answer) for answer in dataset["answer"]]
    keep = [row for row, answer in enumerate(answers) if answer]
    drop("open-ended (answer is not yes or no)", len(dataset) - len(keep), selection=True)
    questions = dataset["question"]
    prefix = f"path_vqa-{dataset.split}-" if dataset.split else "path_vqa-"
    columns = {"id": [f"{prefix}{row}" for row in keep], "question": [questions[row] for row in keep],
               "answer": [answers[row] for row in keep], "dimension": [None] * len(keep),
               "source": [DATASET] * len(keep)}
    return embedded_docs(dataset, keep, columns, YES_NO_FEATURES)


full, image_only, ablation = condition_sets(convert)
