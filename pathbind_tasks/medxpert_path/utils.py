"""MedXpertQA MM as published (hub ``MM/test.jsonl`` + ``images.zip``), restricted to pathology images.

A row is ``{"id": "MM-26", "question": "... Answer Choices: (A) ... (E) ...", "options": {"A": ..., "E": ...},
"label": "C", "images": ["MM-26-a.jpeg"], "medical_task", "body_system", "question_type"}``; the images are in
``images/`` (``images.zip`` unpacked) or in ``images.zip`` left packed. The release has
no image-type field, so the pathology subset is chosen by what the question says about its image
(:data:`PATHOLOGY`), or by an explicit id list (:data:`ID_LIST`) where one is supplied.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Any

import datasets
from PIL import Image

from pathbind.faults import Fault
from pathbind.layout import Layout
from pathbind_tasks.common.accounting import drop
from pathbind_tasks.common.image_paths import ImageFolder
from pathbind_tasks.common.images import image_problem, max_pixels, rgb_image
from pathbind_tasks.common.raw import (
    MCQ_FEATURES,
    BadField,
    id_list,
    image_root,
    images_in,
    letter_answer,
    require,
    rows_to_docs,
    text_or_empty,
    text_problem,
    unique_ids,
    with_doc_error,
)
from pathbind_tasks.common.vqa import condition_sets

DATASET = "MedXpertQA-MM"
DATA_NAME = "medxpert_path"  # $PATHBIND_DATA/medxpert_path/ holds test.jsonl and images/
HUB_CACHE = "medxpertqa"  # the YAMLs' dataset_kwargs.cache_dir: where lmms-eval unzips images.zip
COLUMNS = ("id", "question", "options", "label", "images")
FEATURES = with_doc_error(MCQ_FEATURES)
ARCHIVE = "images.zip"
IMAGE_FOLDERS = ("images", "")
# MM/test.jsonl and images.zip, unpacked or not; pathology_ids.txt is optional.
LAYOUT = Layout(data=("test.jsonl",), images=("images/", ARCHIVE), readme="pathbind_tasks/medxpert_path/README.md")
ID_LIST = "pathology_ids.txt"  # optional, beside the data: one MedXpertQA id per line replaces the rule below
# The question names a microscopic / histological image; matched on the stem (answer choices removed).
PATHOLOGY = re.compile(
    r"micrograph|histolog|histopatholog|\bH\s?&\s?E\b|ha?ematoxylin|immunohistochem|immunostain|microscop|"
    r"cytolog|\bsmear\b|biopsy (?:specimen|sample)|tissue section|frozen section|pathology slide",
    re.IGNORECASE)
_CHOICES = re.compile(r"\s*Answer Choices:.*\Z", re.DOTALL)


def stem(question: str) -> str:
    """The question without the "Answer Choices: (A) ... (E) ..." tail the release appends."""
    return _CHOICES.sub("", question).strip()


def is_pathology(question: str) -> bool:
    """True when the question stem says its image is microscopic or histological."""
    return PATHOLOGY.search(stem(question)) is not None


def convert(dataset: datasets.Dataset) -> datasets.Dataset:
    """The pathology items (by :data:`ID_LIST` if present, else :func:`is_pathology`) as MCQ documents."""
    require(dataset.column_names, COLUMNS, dataset=DATASET, folder="medxpert_path")
    wanted = id_list(DATA_NAME, ID_LIST)
    if wanted is not None:
        selected = [row for row in dataset if str(row["id"]) in wanted]
    else:
        # a question that is not text cannot be selected by its words: kept, so its fault is named and counted
        selected = [row for row in dataset if not isinstance(row["question"], str) or is_pathology(row["question"])]
    drop(f"not listed in {ID_LIST}" if wanted is not None else "not a pathology question",
         len(dataset) - len(selected), selection=True)
    root = image_root(DATA_NAME, dataset=DATASET, cache_dir=HUB_CACHE)
    images = ImageFolder(images_in(root, ARCHIVE, IMAGE_FOLDERS), IMAGE_FOLDERS)
    ids = unique_ids([str(row["id"]) for row in selected], dataset=DATASET)
    rows = [_row(doc_id, row, images) for doc_id, row in zip(ids, selected, strict=True)]
    return rows_to_docs(rows, FEATURES, dataset=f"{DATASET} pathology")


def _row(doc_id: str, row: dict[str, Any], images: ImageFolder) -> dict[str, Any]:
    choices = row["options"] if isinstance(row["options"], dict) else {}
    letters = sorted(key for key, value in choices.items() if value is not None)
    label = letter_answer(row["label"], 26)
    letter = chr(ord("A") + letters.index(label)) if label in letters else None
    names = row["images"] if isinstance(row["images"], list) else []
    files = [images.image(name, "images") for name in names]
    image, image_error = _image([encoded for encoded, _ in files if encoded])
    return {"id": doc_id, "image": image, "question": stem(text_or_empty(row["question"])),
            "options": [text_or_empty(choices[key]) for key in letters],
            "answer": letter or text_or_empty(row["label"]), "dimension": None, "source": DATASET,
            "doc_error": _problem(row, choices) or next((f for _, f in files if f), None) or image_error}


def _problem(row: dict[str, Any], choices: dict[str, Any]) -> Fault | None:
    """The first field of the wrong type: question, label, options (a mapping of letters to texts), images."""
    if not isinstance(row["options"], dict):
        return BadField("options", "is not a mapping of option letters to texts", row["options"]).fault
    if not isinstance(row["images"], list) or not all(isinstance(name, str) for name in row["images"]):
        return BadField("images", "is not a list of image file names", row["images"]).fault
    bad = next((value for value in choices.values() if value is not None and not isinstance(value, str)), None)
    if bad is not None:
        return BadField("options", f"has a {type(bad).__name__}, not text", bad).fault
    return text_problem(row, ("question", "label"))


def _image(encoded: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, Fault | None]:
    """``(image, fault)``: one image (checked with every other item's image), or several pasted side by side
    (the schema holds one image per item), each read by the image rules of a single image (:mod:`images`: 16-bit
    depth, EXIF orientation, no truncated file); the first that fails them is the item's fault, naming which."""
    if len(encoded) <= 1:
        return (encoded[0] if encoded else None), None
    limit = max_pixels()
    for k, image in enumerate(encoded, 1):
        fault = image_problem(image, limit)
        if fault:  # which image goes into the detail, so the reason stays one count
            which = f"image {k} of {len(encoded)}"
            return None, Fault(fault.reason, f"{which}: {fault.detail}" if fault.detail else which)
    return {"bytes": montage([rgb_image(image) for image in encoded]), "path": None}, None


def montage(images: Sequence[Image.Image], *, height: int = 768, gap: int = 16) -> bytes:
    """PNG of the 8-bit RGB images in order, left to right at a common height, on white."""
    scaled = [image.resize((max(1, round(image.width * height / image.height)), height))
              for image in images]
    canvas = Image.new("RGB", (sum(i.width for i in scaled) + gap * (len(scaled) - 1), height), (255, 255, 255))
    x = 0
    for image in scaled:
        canvas.paste(image, (x, 0))
        x += image.width + gap
    buffer = io.BytesIO()
    canvas.save(buffer, format="PNG")
    return buffer.getvalue()


full, image_only, ablation = condition_sets(convert)
