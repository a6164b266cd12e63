"""Row checks of the box tasks (grounding, faithfulness, PathView): fields, split names, the image's real size.

A systematic problem (no rows, a column PathBind would add) is raised or handled once, naming the task's file;
a bad row is a fault of the data: dropped with its problem, naming the field, and counted in ``accounting``.
"""

from __future__ import annotations

import io
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import datasets
from loguru import logger
from PIL import ExifTags, Image

from pathbind.faults import Fault
from pathbind_metrics.grounding import box_fault
from pathbind_tasks.common.accounting import FAULT, drop, faults_column, without_faults
from pathbind_tasks.common.conditions import with_readable_images
from pathbind_tasks.common.harness import data_source
from pathbind_tasks.common.image_paths import ImageFolder, confine, task_images
from pathbind_tasks.common.raw import BadField, shown_text, unique_ids

SPLITS = ("testA", "testB")
MAX_SIDE = 2**31 - 1  # the int32 of the documents' width/height
TRANSPOSED = (5, 6, 7, 8)  # EXIF orientations that datasets' decoding (exif_transpose) turns by 90 degrees


def require_rows(dataset: datasets.Dataset, label: str, what: str = "rows") -> None:
    """Fail before any model call when there is nothing to evaluate (one error, not one per row)."""
    if len(dataset) == 0:
        raise ValueError(f"{label}: no {what} in {data_source(dataset)}; nothing to evaluate")


def replace_added(dataset: datasets.Dataset, added: Iterable[str], label: str) -> datasets.Dataset:
    """``dataset`` without input columns named like the ones PathBind adds, which replace them (logged)."""
    clashes = [name for name in added if name in dataset.column_names]
    if clashes:
        logger.warning(f"{label}: {data_source(dataset)} has column(s) {', '.join(map(repr, clashes))}, which PathBind "
                       f"computes itself; the file's values are ignored and replaced")
        dataset = dataset.remove_columns(clashes)
    return dataset


def split_name(value: Any) -> str | None:
    """``testA`` or ``testB`` for a split written in any case, with spaces around it; None for anything else."""
    text = value.strip().casefold() if isinstance(value, str) else None
    return next((name for name in SPLITS if name.casefold() == text), None)


def split_drop_reason(value: Any, evaluated: Sequence[str]) -> str | None:
    """Why a row of split ``value`` is left out of a task evaluating ``evaluated``; None when it is kept."""
    name = split_name(value)
    if name is None:
        return f"split is {value!r}, not {' or '.join(SPLITS)}"
    return None if name in evaluated else f"split is {name} (this task evaluates {' and '.join(evaluated)})"


def only_splits(dataset: datasets.Dataset, splits: tuple[str, ...], label: str) -> datasets.Dataset:
    """The rows of ``splits``, their ``split`` normalised; every other row dropped in the open ledger."""
    values = dataset["split"]
    reasons = [split_drop_reason(value, splits) for value in values]
    named = {reason for reason, value in zip(reasons, values, strict=True) if split_name(value) is not None}
    for reason, count in Counter(r for r in reasons if r).items():
        drop(reason, count, selection=reason in named)  # another split is the task's choice; no split is a fault
    kept = dataset.select([i for i, reason in enumerate(reasons) if reason is None])
    if not kept:
        present = ", ".join(f"{value!r}: {n}" for value, n in Counter(dataset["split"]).most_common(6))
        raise ValueError(f"{label}: no row of {data_source(dataset)} has split {' or '.join(splits)} (its splits: "
                         f"{present}); nothing to evaluate")
    names = [split_name(value) for value in kept["split"]]
    return kept.remove_columns("split").add_column("split", names)


def pixels(value: Any, field: str) -> int:
    """A side length in pixels: a positive whole number that fits the documents' int32."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 1 \
            or value != int(value):
        raise BadField(field, "is not a positive whole number of pixels", value)
    if value > MAX_SIDE:
        raise BadField(field, f"is more pixels than the {MAX_SIDE} a side can have", value)
    return int(value)


def bbox(value: Any) -> list[float]:
    """``[x_min, y_min, x_max, y_max]``: four finite numbers (their placement is judged by the metrics)."""
    try:  # a text is never a box, even one whose four characters are digits
        box = [] if isinstance(value, str | bytes | dict) else [float(v) for v in value]
    except (TypeError, ValueError):
        box = []
    if len(box) != 4 or not all(map(math.isfinite, box)):
        raise BadField("bbox", "is not [x_min, y_min, x_max, y_max]", value)
    return box


def size_problem(stated: tuple[int, int], actual: tuple[int, int] | None) -> Fault | None:
    """Why boxes in pixels of ``stated`` cannot be placed on an image of ``actual`` size (None when they can): the
    frame of the boxes is ambiguous, and rescaling them would be a guess."""
    if actual is None or tuple(stated) == tuple(actual):
        return None
    return Fault("width x height disagrees with the image's size",
                 f"stated {stated[0]}x{stated[1]}, image {actual[0]}x{actual[1]}")


def header_size(value: dict | str | None) -> tuple[int, int] | None:
    """The (width, height) the decoded image will have, from its header; None when it cannot be read (the image
    check reports why). PNG orientation is read only from an eXIf chunk before the pixels (loading is decoding)."""
    try:
        if isinstance(value, str):
            value = {"path": value, "bytes": None}
        if not value or not (value.get("bytes") or value.get("path")):
            return None
        with Image.open(io.BytesIO(value["bytes"]) if value.get("bytes") else value["path"]) as image:
            size = image.size
            exif = image.getexif() if image.format != "PNG" or "exif" in image.info else Image.Exif()
            orientation = exif.get(ExifTags.Base.Orientation)
    except Exception:  # an unreadable image is the image check's to report
        return None
    return (size[1], size[0]) if orientation in TRANSPOSED else (size[0], size[1])


def image_sizes(docs: datasets.Dataset, column: str = "image") -> list[tuple[int, int] | None]:
    """Each row's image size from its header, never decoding the pixels (batches bound the bytes held)."""
    raw = docs.select_columns([column])
    if isinstance(raw.features[column], datasets.Image):
        raw = raw.cast_column(column, datasets.Image(decode=False))
    return [header_size(value) for batch in raw.iter(batch_size=256) for value in batch[column]]


def box_problem(row: dict[str, Any], size: tuple[int, int] | None) -> Fault | None:
    """The first unusable field of a grounding row (expression, bbox, width, height, size), None when usable. The
    expression must be text a model can be shown (no chat or image markup). The box must be one the metrics can
    score on its image (``pathbind_metrics.grounding.box_fault``: not inverted, of non-zero area, covering a pixel of
    the image), so no fault of the box is ever charged to the model."""
    try:
        if not shown_text(row.get("expression"), "expression").strip():
            raise BadField("expression", "is empty", row["expression"])
        box = bbox(row.get("bbox"))
        stated = pixels(row.get("width"), "width"), pixels(row.get("height"), "height")
    except BadField as exc:
        return exc.fault
    fault = box_fault(box, stated)  # one of the metrics' fixed reasons; the box itself shows it
    return size_problem(stated, size) or (BadField("bbox", f"is unusable: {fault}", box).fault if fault else None)


def checked(dataset: datasets.Dataset, label: str, images: ImageFolder | None = None) -> datasets.Dataset:
    """``dataset`` with unique text ids, every image (read by the image-path rule in ``images``, by default the
    task's data folder) and every row checked, the rows whose data is at fault dropped in the open ledger
    (:func:`without_faults`)."""
    try:
        docs = with_readable_images(*confine(dataset, images or task_images()))
    except ValueError as exc:  # the whole image column is unusable
        raise ValueError(f"{label}: {exc} ({data_source(dataset)})") from None
    ids = unique_ids([str(value) for value in docs["id"]], dataset=label)
    return without_faults(with_box_checks(docs.remove_columns("id").add_column("id", ids)), label)


def with_box_checks(docs: datasets.Dataset) -> datasets.Dataset:
    """``docs`` with ``doc_error``: each row's fault (:func:`box_problem`; null when fine)."""
    sizes = image_sizes(docs)
    fields = docs.select_columns(["id", "expression", "bbox", "width", "height", "image_error"]).to_list()
    # An unreadable image's size says nothing: its error is the reason the row is dropped.
    faults = [box_problem(row, None if row["image_error"] else size) for row, size in zip(fields, sizes, strict=True)]
    return docs.add_column("doc_error", faults_column(faults), feature=FAULT)
