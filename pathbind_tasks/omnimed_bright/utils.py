"""OmniMedVQA QA records, as its release ships them, restricted to microscopy: the task schema.

A record (``QA_information/<Open|Restricted>-access/<dataset>.json`` holds a list of them) is
``{"question_id", "dataset", "question_type", "question", "gt_answer", "image_path", "option_A", "option_B",
["option_C", "option_D",] "modality_type"}``; ``gt_answer`` is the text of one option and ``image_path`` is
relative to the OmniMedVQA root (``Images/<dataset>/...``). One release file spells ``modality_type`` as
``modality``; both are read.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

import datasets

from pathbind.faults import Fault
from pathbind.layout import Layout
from pathbind_tasks.common.accounting import drop
from pathbind_tasks.common.image_paths import ImageFolder
from pathbind_tasks.common.raw import (
    MCQ_FEATURES,
    id_list,
    image_root,
    require,
    rows_to_docs,
    text_answer,
    text_or_empty,
    text_problem,
    unique_ids,
    with_doc_error,
)
from pathbind_tasks.common.vqa import condition_sets

DATASET = "OmniMedVQA"
DATA_NAME = "omnimed_bright"  # $PATHBIND_DATA/omnimed_bright/ holds test.json and the Images/ tree
COLUMNS = ("question_id", "question", "gt_answer", "image_path", "option_A", "option_B")
OPTION_KEYS = ("option_A", "option_B", "option_C", "option_D")
FEATURES = with_doc_error(MCQ_FEATURES)
MICROSCOPY = "Microscopy Images"  # OmniMedVQA's modality_type of light-microscopy (bright-field) images
# image_path ("Images/<dataset>/...") resolves in the folder or in an OmniMedVQA/ copy of the release in it.
IMAGE_FOLDERS = ("", "OmniMedVQA")
LAYOUT = Layout(data=("test.json",), images=("Images/", "OmniMedVQA/Images/"),
                readme="pathbind_tasks/omnimed_bright/README.md")
ID_LIST = "question_ids.txt"  # optional, beside the data: one question_id per line replaces the modality rule


def modality(row: dict[str, Any]) -> str | None:
    """The record's modality (``modality_type``, or ``modality`` in the one file that spells it so)."""
    value = row.get("modality_type") or row.get("modality")
    return None if value is None else str(value).strip()


def convert(dataset: datasets.Dataset) -> datasets.Dataset:
    """The records listed in :data:`ID_LIST` if present, else the microscopy ones (all, when the data names no
    modality), as MCQ documents."""
    require(dataset.column_names, COLUMNS, dataset=DATASET, folder="omnimed_bright")
    wanted = id_list(DATA_NAME, ID_LIST)
    has_modality = bool({"modality_type", "modality"} & set(dataset.column_names))
    if wanted is not None:
        selected = [row for row in dataset if str(row["question_id"]) in wanted]
    else:
        selected = [row for row in dataset if not has_modality or modality(row) == MICROSCOPY]
    drop(f"not listed in {ID_LIST}" if wanted is not None else f"modality is not {MICROSCOPY}",
         len(dataset) - len(selected), selection=True)
    images = ImageFolder(image_root(DATA_NAME, dataset=DATASET), IMAGE_FOLDERS)
    ids = unique_ids([str(row["question_id"]) for row in selected], dataset=DATASET)
    rows = [_row(doc_id, row, images) for doc_id, row in zip(ids, selected, strict=True)]
    return rows_to_docs(rows, FEATURES, dataset=f"{DATASET} microscopy")


def _row(doc_id: str, row: dict[str, Any], images: ImageFolder) -> dict[str, Any]:
    present = [key for key in OPTION_KEYS if row.get(key) is not None]
    options = [text_or_empty(row[key]).strip() for key in present]
    letter = text_answer(row["gt_answer"], options)
    image, path_problem = images.image(row["image_path"], "image_path")
    return {"id": doc_id, "image": image, "question": text_or_empty(row["question"]).strip(), "options": options,
            "answer": letter or text_or_empty(row["gt_answer"]), "dimension": None,
            "source": f"{DATASET}/{row['dataset']}" if isinstance(row.get("dataset"), str) else DATASET,
            "doc_error": text_problem(row, ("question", "gt_answer", *present)) or path_problem
            or undistributed(row["image_path"], images.root)}


def undistributed(image: Any, root: Path | None) -> Fault | None:
    """Why an image cannot be there (None when it may): its dataset's folder ``Images/<dataset>/`` is absent, as for
    every Restricted-access dataset, whose QA records OmniMedVQA ships without their images."""
    parts = PurePosixPath(image).parts if isinstance(image, str) else ()
    if root is None or len(parts) < 3 or parts[0] != "Images" or any((root / sub / parts[0] / parts[1]).is_dir()
                                                                      for sub in IMAGE_FOLDERS):
        return None
    return Fault("image folder of its dataset is absent",
                 f"{parts[0]}/{parts[1]}/ in {root}; OmniMedVQA distributes no images of its Restricted-access "
                 f"datasets: write only QA_information/Open-access into test.json")


full, image_only, ablation = condition_sets(convert)
