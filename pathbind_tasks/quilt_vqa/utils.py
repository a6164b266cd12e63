"""Quilt-VQA as released (hub ``wisdomik/Quilt_VQA``): its closed-ended (yes/no) questions in the task schema.

The official evaluation (quilt-llava's ``quilt_eval.py``) reads ``quiltvqa_test_w_ans.json``, a JSON list of
``{"id", "image", "question", "answer", "answer_type", "yes_no_answer", ...}`` with the images in
``quilt_vqa.zip``; a closed-ended item's label is its ``yes_no_answer``, because its ``answer`` is a sentence
("No, there is no necrosis in this field."). Here the label is ``yes_no_answer`` when the data has that field,
else the official rule without it: the answer itself must be yes or no. An item neither settles is a fault of the
data, dropped and counted in ``accounting``, never scored as the model's invalid answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets
from loguru import logger

from pathbind.data import override_dir
from pathbind.faults import Fault
from pathbind.layout import Layout
from pathbind_tasks.common.accounting import drop
from pathbind_tasks.common.image_paths import ImageFolder, data_folder, embedded
from pathbind_tasks.common.raw import (
    YES_NO_FEATURES,
    BadField,
    image_root,
    images_in,
    require,
    schema_docs,
    text_or_empty,
    text_problem,
    unique_ids,
    with_doc_error,
    yes_no,
)
from pathbind_tasks.common.vqa import condition_sets

DATASET = "Quilt-VQA"
DATA_NAME = "quilt_vqa"  # $PATHBIND_DATA/quilt_vqa/ holds quiltvqa_test_w_ans.json and the images
HUB_CACHE = "quilt_vqa"  # the YAMLs' dataset_kwargs.cache_dir: where lmms-eval unpacks quilt_vqa.zip
ARCHIVE = "quilt_vqa.zip"
IMAGE_FOLDERS = ("images", "quilt_vqa/images", "")  # where the release's scripts and its zip put the images
COLUMNS = ("image", "question", "answer", "answer_type")
CLOSED = "CLOSED"
FEATURES = with_doc_error(YES_NO_FEATURES)
# The official evaluation's JSON and image files, or the hub's test split as one parquet file, images embedded.
LAYOUT = Layout(data=("quiltvqa_test_w_ans.json",), images=("images/", "quilt_vqa/images/", ARCHIVE),
                readme="pathbind_tasks/quilt_vqa/README.md", embedded=("test.parquet",))
UNLABELLED = "closed-ended item without a yes/no label (no yes_no_answer, and the answer is not yes or no)"


def closed_label(answer: Any, yes_no_answer: Any = None, *, has_label_field: bool = False) -> str | None:
    """"yes"/"no" for a closed-ended item: its ``yes_no_answer`` where the data has that field, else the
    answer when it is exactly yes or no (the official evaluation's rule); None when neither settles it."""
    return yes_no(yes_no_answer) if has_label_field else yes_no(answer)


def label_problem(value: Any) -> Fault:
    """Why a closed item's ``yes_no_answer`` is no label: an invalid value ("maybe") is named as such, shown; a
    missing one (or no such field) is UNLABELLED."""
    if isinstance(value, str) and value.strip():
        return BadField("yes_no_answer", "is not yes or no", detail=f"{value!r:.80}").fault
    return Fault(UNLABELLED)


def convert(dataset: datasets.Dataset) -> datasets.Dataset:
    """The CLOSED items with their yes/no label; the unlabelled ones dropped and counted."""
    require(dataset.column_names, COLUMNS, dataset=DATASET, folder="quilt_vqa")
    rows = dataset.remove_columns("image").to_list()
    closed = [i for i, row in enumerate(rows) if isinstance(row["answer_type"], str)
              and row["answer_type"].strip().upper() == CLOSED]
    drop(f"answer_type is not {CLOSED}", len(rows) - len(closed), selection=True)
    has_label_field = "yes_no_answer" in dataset.column_names
    labels = {i: closed_label(rows[i]["answer"], rows[i].get("yes_no_answer"), has_label_field=has_label_field)
              for i in closed}
    keep = [i for i in closed if labels[i]]
    for i in (i for i in closed if not labels[i]):
        fault = label_problem(rows[i].get("yes_no_answer") if has_label_field else None)
        item = f"'quilt_vqa-{rows[i].get('id', i)}'"
        drop(fault.reason, example=f"{item}: {fault.detail}" if fault.detail else item)
    if len(keep) < len(closed):
        logger.warning(f"{DATASET}: {len(closed) - len(keep)} of {len(closed)} closed-ended items have no yes/no label "
                       f"and are dropped ({'yes_no_answer' if has_label_field else 'the answer'} is not yes or no)")
    ids = unique_ids([f"quilt_vqa-{rows[i].get('id', i)}" for i in keep], dataset=DATASET)
    columns: dict[str, list[Any]] = {"id": ids, "question": [text_or_empty(rows[i]["question"]) for i in keep],
               "answer": [labels[i] for i in keep], "dimension": [None] * len(keep), "source": [DATASET] * len(keep),
               "doc_error": [text_problem(rows[i], ("question",)) for i in keep]}
    if not keep:
        raise ValueError(f"{DATASET}: no items left after selection; check the raw data against the task README")
    root = data_folder() if embedded(dataset.features["image"]) else image_folder()
    return schema_docs(dataset, keep, columns, FEATURES, ImageFolder(root, IMAGE_FOLDERS))


def image_folder() -> Path:
    """Where the release's image names resolve: the data folder (its ``images/`` or ``quilt_vqa/images/``), else its
    unpacked ``quilt_vqa.zip``; without a data folder, where lmms-eval unpacked the hub download."""
    root = override_dir(DATA_NAME)
    if root is None:
        return image_root(DATA_NAME, dataset=DATASET, cache_dir=HUB_CACHE)
    return images_in(root, ARCHIVE, IMAGE_FOLDERS)  # a missing image is dropped by the image check, naming the file


full, image_only, ablation = condition_sets(convert)
