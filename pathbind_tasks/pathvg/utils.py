"""PathVG (RefPath) test splits in their published layout, converted to the grounding schema."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import datasets

from pathbind.data import override_dir
from pathbind_tasks.common.accounting import counting
from pathbind_tasks.common.grounding import process_docs
from pathbind_tasks.common.raw import require
from pathbind_tasks.pathvg.specificity import expression_docs

# width and height as floats: a fractional, NaN or huge value reaches the row check (a lost item naming the
# field) instead of failing the integer cast for the whole file.
FEATURES = datasets.Features({"id": datasets.Value("string"), "image": datasets.Image(),
                              "expression": datasets.Value("string"), "bbox": datasets.List(datasets.Value("float64")),
                              "width": datasets.Value("float64"), "height": datasets.Value("float64"),
                              "split": datasets.Value("string")})


def pathvg_docs(split: str, *, expressions_only: bool = False) -> Callable[[datasets.Dataset], datasets.Dataset]:
    """``process_docs`` for ``<root>/pathvg/<split>.json`` records with ``image_id``, ``height``, ``width``,
    ``bbox`` (pixels, [x_min, y_min, x_max, y_max]) and ``expression``; images in ``<root>/pathvg/images/``.
    ``expressions_only``: the specificity judge's documents, which need no image."""

    def convert(dataset: datasets.Dataset) -> datasets.Dataset:
        require(dataset.column_names, ("image_id", "height", "width", "bbox", "expression"), dataset="pathvg",
                folder="pathvg")
        ids = [f"{split}-{i}" for i in range(len(dataset))]
        if expressions_only:
            return expression_docs(dataset, ids, split)
        root = override_dir("pathvg")
        if root is None or not (root / "images").is_dir():
            raise FileNotFoundError("pathvg: no folder $PATHBIND_DATA/pathvg/images; "
                                    "see pathbind_tasks/pathvg/README.md")
        rows = {
            "id": ids,
            "image": [{"path": str(_image_path(root / "images", str(name))), "bytes": None}
                      for name in dataset["image_id"]],
            "expression": list(dataset["expression"]), "bbox": list(dataset["bbox"]),
            "width": list(dataset["width"]), "height": list(dataset["height"]), "split": [split] * len(dataset)}
        with counting(dataset):
            return process_docs(datasets.Dataset.from_dict(rows, features=FEATURES))

    return convert


def _image_path(folder: Path, image_id: str) -> Path:
    """The image named by ``image_id``, with or without its extension (a missing file is reported per item)."""
    exact = folder / image_id
    if exact.exists():
        return exact
    return next(iter(sorted(folder.glob(f"{Path(image_id).stem}.*"))), exact)


testa = pathvg_docs("testA")
testb = pathvg_docs("testB")
specificity_testa = pathvg_docs("testA", expressions_only=True)
specificity_testb = pathvg_docs("testB", expressions_only=True)
