"""The PathView release format, converted to the documents the PathView tasks render and score.

A task reads one file of the release (``$PATHBIND_DATA/pathview/<task>.parquet``; columns in the README).
The columns a task kind needs are checked once, before any model call. Then each row is checked: a bad one
is a fault of the data: dropped with its problem (``doc_error``, naming the field) and counted in ``accounting``,
never scored as the model's invalid answer. Boxes are in pixels of the stated ``width`` x ``height``: where that is
not the image's size, the item is dropped.
Items with boxes carry ``box_frame``, the frame (:mod:`pathbind.box_frames`) their prompt writes and asks
boxes in and their answer is read in; the task's ``process_docs`` names it (``grounding_docs_per_mille``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import datasets

from pathbind.box_frames import check_frame
from pathbind.layout import Layout
from pathbind_conventions import REFUSAL_FORM
from pathbind_metrics.pathview import box_problem
from pathbind_tasks.common import box_rows
from pathbind_tasks.common.accounting import FAULT
from pathbind_tasks.common.conditions import IMAGE_ONLY, with_conditions
from pathbind_tasks.common.image_paths import ImageFolder, confine, data_folder, embedded
from pathbind_tasks.common.pathview_vocabulary import matcher
from pathbind_tasks.common.raw import (
    BadField,
    DataFault,
    image_root,
    require,
    schema_docs,
    shown_text,
    text_field,
    unique_ids,
)

DATA_NAME = "pathview"
LABEL = "PathView-Bench"
# One file per task, named after the task without "pathbind_pathview_"; images embedded, or file names the image check
# follows item by item.
LAYOUT = Layout(data=("region_dlo.parquet", "region_ocl.parquet", "region_ocn.parquet", "region_ogd.parquet",
                      "region_rcl.parquet", "region_rds.parquet", "region_spr.parquet", "region_trap.parquet",
                      "slide_are.parquet", "slide_dlo.parquet", "slide_lgd.parquet", "slide_ocl.parquet",
                      "slide_org.parquet", "slide_trap.parquet"),
                readme="pathbind_tasks/pathview/README.md")
IMAGE_FOLDERS = ("", "images")  # where a file name resolves: the data folder, then its images/
TEXT = datasets.Value("string")
FEATURES = datasets.Features({
    "id": TEXT, "image": datasets.Image(), "question": TEXT, "answer_format": TEXT, "trap": datasets.Value("bool"),
    "answer": TEXT, "options": datasets.List(TEXT), "target": TEXT,
    "boxes": datasets.List(datasets.List(datasets.Value("float64"))),
    "query_box": datasets.List(datasets.Value("float64")), "count": datasets.Value("int64"),
    "entities": datasets.List(TEXT), "width": datasets.Value("int32"), "height": datasets.Value("int32"),
    "source": TEXT, "slide_id": TEXT, "doc_error": FAULT, "box_frame": TEXT,
})


@dataclass(frozen=True)
class Kind:
    """A task kind: the answer format its prompt asks for, whether its items are traps, the columns it needs."""

    answer_format: str  # "box", "choice", "count" or "description"
    trap: bool
    columns: tuple[str, ...]

    @property
    def has_boxes(self) -> bool:
        """Its prompt or its answer holds boxes, so it has a box frame."""
        return self.answer_format == "box" or "query_box" in self.columns


KINDS = {
    "grounding": Kind("box", False, ("target", "boxes", "width", "height")),
    "choice": Kind("choice", False, ("options", "answer")),
    "boxed_choice": Kind("choice", False, ("options", "answer", "query_box", "width", "height")),
    "count": Kind("count", False, ("count",)),
    "description": Kind("description", False, ("entities",)),
    "choice_trap": Kind("choice", True, ("options",)),
    "count_trap": Kind("count", True, ()),
}


_Bad = BadField  # one field of one row is unusable


def _size(row: dict[str, Any], required: bool) -> tuple[int, int] | None:
    values = row.get("width"), row.get("height")
    if values == (None, None) and not required:
        return None
    return box_rows.pixels(values[0], "width"), box_rows.pixels(values[1], "height")


def _boxes(value: Any, field: str, size: tuple[int, int] | None) -> list[list[float]]:
    if size is None:
        raise _Bad(field, "needs the image's width and height", detail="no width or height")
    try:
        boxes = [[float(v) for v in box] for box in value or []]
    except (TypeError, ValueError):
        raise _Bad(field, "is not a list of [x_min, y_min, x_max, y_max] boxes", value) from None
    problem = box_problem(boxes, size)
    if problem:
        raise _Bad(field, "has boxes that cannot be drawn on the image",
                   detail=f"{problem}; {size[0]}x{size[1]} image, pixel coordinates")
    return boxes


def _options(row: dict[str, Any]) -> list[str]:
    raw = row.get("options")
    options = [shown_text(option, "options").strip() for option in raw] if isinstance(raw, list) else []
    if len(options) < 2 or not all(options):
        raise _Bad("options", "is not a list of at least two non-empty options", raw)
    return options


def _answer(row: dict[str, Any], options: list[str]) -> str:
    text = text_field(row.get("answer"), "answer").strip()
    hits = [o for o in options if o == text] or [o for o in options if o.casefold() == text.casefold()]
    if len(hits) != 1:
        raise _Bad("answer", "is not one of the options", detail=f"{row.get('answer')!r:.80}; options {options}")
    return hits[0]


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or value < 0 or value != int(value):
        raise _Bad("count", "is not a non-negative whole number", value)
    return int(value)


def _entities(value: Any) -> list[str]:
    names = [text_field(name, "entities") for name in value] if isinstance(value, list) else []
    canonical = [matcher().canonical(name) for name in names]
    unknown = [name for name, label in zip(names, canonical, strict=True) if label is None]
    if not names or unknown:
        raise _Bad("entities", "needs at least one entity, each a label of labels.yaml or a synonym",
                   detail=f"{value!r:.80}; unknown: {unknown}")
    return list(dict.fromkeys(label for label in canonical if label))


def _fields(row: dict[str, Any], kind: Kind, image_size: tuple[int, int] | None) -> dict[str, Any]:
    """The document fields of one row, raising ``_Bad`` for the first unusable one; boxes need ``image_size``
    (None: unknown, the image check reports why) to be the stated size."""
    size = _size(row, required="width" in kind.columns)
    mismatch = box_rows.size_problem(size, image_size) if kind.has_boxes and size is not None else None
    if mismatch:  # the stated width and height are not the image's: the frame of the item's boxes is ambiguous
        raise DataFault(mismatch)
    fields: dict[str, Any] = dict(zip(("width", "height"), size or (None, None), strict=True))
    if kind.answer_format == "choice":
        fields["options"] = _options(row)
        if not kind.trap:
            fields["answer"] = _answer(row, fields["options"])
    if "query_box" in kind.columns:
        fields["query_box"] = _boxes([row.get("query_box")], "query_box", size)[0]
    if kind.answer_format == "box":
        fields["boxes"] = _boxes(row.get("boxes"), "boxes", size)
        fields["answer"] = json.dumps(fields["boxes"])
    if kind.answer_format == "count" and not kind.trap:
        fields["count"] = _count(row.get("count"))
        fields["answer"] = str(fields["count"])
    if kind.answer_format == "description":
        fields["entities"] = _entities(row.get("entities"))
        fields["answer"] = ", ".join(fields["entities"])
    if kind.trap:
        fields["answer"] = REFUSAL_FORM
    return fields


def _document(row: dict[str, Any], kind: Kind, frame: str | None, image_size: tuple[int, int] | None
              ) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "question": "", "answer_format": kind.answer_format, "trap": kind.trap,
        "answer": "", "options": [], "target": None if row.get("target") is None else str(row["target"]),
        "boxes": [], "query_box": [], "count": None, "entities": [], "width": None, "height": None,
        "source": None if row.get("source") is None else str(row["source"]),
        "slide_id": None if row.get("slide_id") is None else str(row["slide_id"]), "doc_error": None,
        "box_frame": frame,
    }
    try:
        doc["question"] = shown_text(row.get("question"), "question")
        if not doc["question"].strip():
            raise _Bad("question", "is empty", doc["question"])
        doc.update(_fields(row, kind, image_size))
    except DataFault as exc:
        doc["doc_error"] = exc.fault
    return doc


def converter(kind_name: str, frame: str = "pixel") -> Callable[[datasets.Dataset], datasets.Dataset]:
    """Release rows of a ``kind_name`` task (see ``KINDS``) as PathView documents, boxes asked in ``frame``."""
    kind = KINDS[kind_name]
    box_frame = check_frame(frame) if kind.has_boxes else None

    def convert(dataset: datasets.Dataset) -> datasets.Dataset:
        require(dataset.column_names, ("id", "image", "question", *kind.columns), dataset=LABEL, folder="pathview")
        box_rows.require_rows(dataset, LABEL)
        root = data_folder() if embedded(dataset.features["image"]) else image_root(DATA_NAME, dataset=LABEL)
        images = ImageFolder(root, IMAGE_FOLDERS)
        rows = dataset.remove_columns("image").to_list()
        docs = _documents(confine(dataset.select_columns(["image"]), images)[0], rows, kind, box_frame)
        columns = {"id": unique_ids([str(row["id"]) for row in rows], dataset=LABEL),
                   **{name: [doc[name] for doc in docs] for name in FEATURES if name not in ("id", "image")}}
        return schema_docs(dataset, range(len(dataset)), columns, FEATURES, images)

    return convert


def _documents(images: datasets.Dataset, rows: list[dict[str, Any]], kind: Kind, frame: str | None
               ) -> list[dict[str, Any]]:
    """Each row's document; boxes are checked against the image's size, read from its header (``images``: the
    rows' images as the image-path rule resolved them) without decoding it; a malformed row keeps its fault in
    ``doc_error``."""
    sizes = box_rows.image_sizes(images) if kind.has_boxes else [None] * len(rows)
    return [_document(row, kind, frame, size) for row, size in zip(rows, sizes, strict=True)]


class ProcessDocs:
    """A task's ``process_docs``: convert, check every image, one pass with the image. Its text, which
    lmms-eval writes into the results' ``configs``, names the kind and the box frame."""

    def __init__(self, kind_name: str, frame: str = "pixel") -> None:
        self.kind_name, self.frame = kind_name, frame if KINDS[kind_name].has_boxes else None
        self._process = with_conditions(IMAGE_ONLY, converter(kind_name, frame))

    def __call__(self, dataset: datasets.Dataset) -> datasets.Dataset:
        return self._process(dataset)

    def __repr__(self) -> str:
        boxes = f", box_frame={self.frame}" if self.frame else ""
        return f"pathview process_docs({self.kind_name}{boxes})"


grounding_docs = ProcessDocs("grounding")
grounding_docs_unit = ProcessDocs("grounding", "unit")
grounding_docs_per_mille = ProcessDocs("grounding", "per_mille")
choice_docs = ProcessDocs("choice")
boxed_choice_docs = ProcessDocs("boxed_choice")
boxed_choice_docs_unit = ProcessDocs("boxed_choice", "unit")
boxed_choice_docs_per_mille = ProcessDocs("boxed_choice", "per_mille")
count_docs = ProcessDocs("count")
description_docs = ProcessDocs("description")
choice_trap_docs = ProcessDocs("choice_trap")
count_trap_docs = ProcessDocs("count_trap")
