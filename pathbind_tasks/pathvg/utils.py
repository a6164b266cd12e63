"""PathVG (RefPath) test splits as released, one grounding item per referring expression.

The release (hub ``fengluo/RefPath``) ships ``train.jsonl``, ``testA.jsonl`` and ``testB.jsonl``, one record per
annotated box: ``image_id``, ``image`` (``refpath_image/<name>.jpg``), ``bbox`` ([x_min, y_min, x_max, y_max] in
pixels), ``bbox_id``, ``height``, ``width`` and ``expression``, a list of the box's referring expressions (the
official ``json2pt.py`` also accepts one string). The images come as ``refpath_image.zip``, unpacked or not.

Each expression is one item, id ``<split>-<bbox_id>-<k>`` (``k`` its place in the list), as the paper counts them:
testA 1,342 and testB 1,706 expressions (PathBind 001). The task's rows are the expressions; an expression that is
not a non-empty text, or a record whose ``expression`` is neither a list nor a text, is dropped with its field and
type named (never its Python text in a prompt).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import datasets
from loguru import logger

from pathbind.data import override_dir
from pathbind.faults import Fault
from pathbind.layout import Layout
from pathbind_tasks.common.accounting import FAULT, close, counting, faults_column, read_rows, without_faults
from pathbind_tasks.common.box_rows import bbox, pixels, require_rows
from pathbind_tasks.common.grounding import process_docs
from pathbind_tasks.common.image_paths import ImageFolder
from pathbind_tasks.common.raw import BadField, image_root, require, shown_text, unique_ids, unpacked

DATA_NAME = "pathvg"  # $PATHBIND_DATA/pathvg/ holds the release files
RECORD_FIELDS = ("image", "bbox", "bbox_id", "height", "width", "expression")
IMAGES = "refpath_image"  # the images' folder, or IMAGES + ".zip"
HUB_CACHE = "refpath"  # the YAMLs' dataset_kwargs.cache_dir: where lmms-eval unpacks refpath_image.zip
# train.jsonl is released too but not read; the images are needed by the grounding tasks only.
LAYOUT = Layout(data=("testA.jsonl", "testB.jsonl"), images=(f"{IMAGES}/", f"{IMAGES}.zip"),
                readme="pathbind_tasks/pathvg/README.md")
JUDGED = ("id", "expression", "split", "doc_error")  # the specificity judge's document columns
PAPER_COUNTS = {"testA": 1342, "testB": 1706}  # expressions per test split (PathBind 001)
# width and height as floats: a fractional, NaN or huge value reaches the row check (a dropped item naming the
# field) instead of failing the integer cast for the whole file.
FEATURES = datasets.Features({"id": datasets.Value("string"), "image": datasets.Image(),
                              "expression": datasets.Value("string"), "bbox": datasets.List(datasets.Value("float64")),
                              "width": datasets.Value("float64"), "height": datasets.Value("float64"),
                              "split": datasets.Value("string"), "doc_error": FAULT})
JUDGED_FEATURES = datasets.Features({name: FEATURES[name] for name in JUDGED})


def expressions(records: list[dict[str, Any]], split: str) -> list[dict[str, Any]]:
    """One item per expression of each record: the record's fields, ``expression`` one text, ``id``
    ``<split>-<bbox_id>-<k>`` and ``doc_error`` (the fault that keeps it from being evaluated, None when it has
    none). A record whose
    ``expression`` is an empty list, or of another type, is one item with that problem."""
    items: list[dict[str, Any]] = []
    for record in records:
        value = record.get("expression")
        texts = value if isinstance(value, list) and value else [value]
        for k, expression in enumerate(map(unbracketed, texts)):
            items.append({**record, "id": f"{split}-{record.get('bbox_id')}-{k}", "split": split,
                          "expression": expression if isinstance(expression, str) else None,
                          "doc_error": expression_problem(value, expression)})
    for item, unique in zip(items, unique_ids([item["id"] for item in items], dataset="PathVG"), strict=True):
        item["id"] = unique
    return items


def unbracketed(expression: Any) -> Any:
    """The expression as the official ``json2pt.py`` asks it: a text wrapped in square brackets
    (``"[the cluster of ...]"``) without them and the spaces inside them; anything else as it is."""
    if isinstance(expression, str) and expression.startswith("[") and expression.endswith("]"):
        return expression[1:-1].strip()
    return expression


def expression_problem(value: Any, expression: Any) -> Fault | None:
    """Why one expression of a record cannot be asked (None when it can): not text, empty, or holding markup."""
    if isinstance(value, list) and not value:
        return BadField("expression", "is an empty list", value).fault
    try:
        if not shown_text(expression, "expression").strip():
            raise BadField("expression", "is empty", expression)
    except BadField as exc:
        return exc.fault
    return None


def pathvg_docs(split: str, *, expressions_only: bool = False) -> Callable[[datasets.Dataset], datasets.Dataset]:
    """``process_docs`` for the release's ``<split>.jsonl`` (see the module docstring). ``expressions_only``:
    the specificity judge's documents (``id``, ``expression``, ``split``), which need no image."""
    label = f"PathVG {split}"

    def convert(dataset: datasets.Dataset) -> datasets.Dataset:
        require(dataset.column_names, RECORD_FIELDS, dataset="PathVG", folder="pathvg")
        require_rows(dataset, label)
        with counting(dataset) as ledger:
            items = expressions(dataset.to_list(), split)
            read_rows(len(items))  # the task's rows are the expressions, not the records
            _check_count(len(items), split)
            if expressions_only:
                columns = {name: [item[name] for item in items] for name in JUDGED}
                columns["doc_error"] = faults_column(columns["doc_error"])
                docs = datasets.Dataset.from_dict(columns, features=JUDGED_FEATURES)
                return close(ledger, without_faults(docs, label))
            images = ImageFolder(image_folder())
            return process_docs(without_faults(_grounding_docs(items, images), label), images=images)

    return convert


def _grounding_docs(items: list[dict[str, Any]], images: ImageFolder) -> datasets.Dataset:
    """The items' documents, ``image`` the record's file under the images' folder (a missing one is dropped by the
    image check, naming it; one outside the folder is never read, its item dropped)."""
    files = [images.image(item.get("image")) for item in items]
    items = [_typed({**item, "doc_error": item["doc_error"] or fault}) for item, (_, fault) in
             zip(items, files, strict=True)]
    columns = {name: [item[name] for item in items] for name in FEATURES if name not in ("image", "doc_error")}
    columns["doc_error"] = faults_column([item["doc_error"] for item in items])
    columns["image"] = [image for image, _ in files]
    return datasets.Dataset.from_dict(columns, features=FEATURES)


def _typed(item: dict[str, Any]) -> dict[str, Any]:
    """The item with box fields the documents' number columns can hold: a box or side of another type (a text, an
    object) is the item's ``doc_error``, named as the row check names it, and stored as null."""
    try:
        bbox(item.get("bbox"))
        pixels(item.get("width"), "width")
        pixels(item.get("height"), "height")
    except BadField as exc:
        return {**item, "doc_error": item["doc_error"] or exc.fault, "bbox": None, "width": None, "height": None}
    return item


def image_folder() -> Path:
    """The folder the records' ``image`` paths resolve against: the data folder with ``refpath_image/``, else its
    unpacked ``refpath_image.zip``; without a data folder, where lmms-eval unpacked the hub download. None of
    them is a setup error, raised before any model call."""
    root = override_dir(DATA_NAME)
    if root is None:
        return image_root(DATA_NAME, dataset="PathVG", cache_dir=HUB_CACHE)
    if (root / IMAGES).is_dir():
        return root
    if (root / f"{IMAGES}.zip").is_file():
        return unpacked(root / f"{IMAGES}.zip")
    raise FileNotFoundError(f"PathVG: neither {root / IMAGES}/ nor {root / IMAGES}.zip (the release's images) "
                            f"exists; see pathbind_tasks/pathvg/README.md")


def _check_count(n_items: int, split: str) -> None:
    expected = PAPER_COUNTS.get(split)
    if expected is not None and n_items != expected:
        logger.warning(f"PathVG {split}: {n_items:,} expressions, the full release has {expected:,} (PathBind 001); "
                       f"a partial or different copy of the release")


testa = pathvg_docs("testA")
testb = pathvg_docs("testB")
specificity_testa = pathvg_docs("testA", expressions_only=True)
specificity_testb = pathvg_docs("testB", expressions_only=True)
