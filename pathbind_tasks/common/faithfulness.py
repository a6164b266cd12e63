"""Causal faithfulness tasks: each grounding item becomes a yes/no presence question whose answer margin is
measured under patch occlusion and compared with the model's attention (../shared/DESIGN.md §4.4).

Grounding items carry an expression and its box but no answer options, so every item asks
``Is there <expression> in this image?`` (yes/no prompt template) with reference answer "Yes": the expression
was annotated in this image, and hiding its box should lower the "Yes" margin. The heat map under test is the
attention from the expression's tokens in that same question, beside the other attribution methods the model runs
(``--model_args attribution=...``); the box and a random box of its size are also hidden whole (ROI deletion).
Schema: ``id``, ``image``, ``expression``, ``bbox`` ([x_min, y_min, x_max, y_max] pixels of ``width`` x
``height``), ``width``, ``height``, plus the column naming the item's subgroup for the permutation tests
(``split``, testA or testB in any case, or ``pattern`` in the demo). A row whose data is at fault (a field, an
unreadable image, a stated size that is not the image's) is dropped and counted in ``accounting``, never a lost
item.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

import datasets
import numpy as np
from PIL import Image

from pathbind import render_template
from pathbind.wire import OcclusionRequest, OcclusionResponse
from pathbind_metrics.faithfulness import random_box
from pathbind_tasks.common import box_rows
from pathbind_tasks.common import faithfulness_records as fr
from pathbind_tasks.common.accounting import close, counting
from pathbind_tasks.common.failures import response_scorer
from pathbind_tasks.common.images import rgb_image
from pathbind_tasks.common.raw import require

COLUMNS = ("id", "image", "expression", "bbox", "width", "height")
OPTIONS, REFERENCE = ("Yes", "No"), 0
SEED = 0  # combined with each item's id, so the random curve order and control boxes do not depend on the rank
ADDED = ("subgroup", "image_error", "doc_error")  # columns process_docs computes


def subgroups_by(column: str) -> Callable[[datasets.Dataset], datasets.Dataset]:
    """``process_docs`` checking the schema, every image and every row, with ``column`` as each item's subgroup
    (``split``: testA and testB only, the other rows dropped with their value)."""

    def process_docs(dataset: datasets.Dataset) -> datasets.Dataset:
        dataset = box_rows.replace_added(dataset, ADDED, "faithfulness")
        require(dataset.column_names, (*COLUMNS, column), dataset="faithfulness", folder="pathbind_grounding")
        box_rows.require_rows(dataset, "faithfulness")
        with counting(dataset) as ledger:
            if column == "split":
                dataset = box_rows.only_splits(dataset, box_rows.SPLITS, "faithfulness")
            docs = box_rows.checked(dataset, "faithfulness")
            return close(ledger, docs.add_column("subgroup", [str(value) for value in docs[column]]))

    return process_docs


by_split = subgroups_by("split")
by_pattern = subgroups_by("pattern")


def doc_to_visual(doc: dict[str, Any]) -> list[Image.Image]:
    return [rgb_image(doc["image"])]


def question(expression: str) -> str:
    return f"Is there {expression.strip().rstrip('.')} in this image?"


def item_seed(doc_id: Any) -> int:
    return zlib.crc32(f"{SEED}:{doc_id}".encode())


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """An occlusion request (``pathbind.wire``) for the item's presence question."""
    options = lmms_eval_specific_kwargs or {}
    expression = str(doc["expression"])  # a row without a text expression was dropped
    prompt = render_template("yesno", question=question(expression), thinking=False)
    seed, box = item_seed(doc["id"]), [float(v) for v in doc["bbox"]]
    size = (int(doc["width"]), int(doc["height"]))
    rois = {fr.ROI_BOX: box, fr.ROI_RANDOM: random_box(box, size, np.random.default_rng(seed))}
    return OcclusionRequest(prompt, OPTIONS, REFERENCE, entity=expression.strip().rstrip("."),
                            grid=int(options.get("grid", 16)), fill=str(options.get("fill", "mean")),
                            steps=int(options.get("steps", 16)), seed=seed, rois=rois,
                            rise_masks=int(options.get("rise_masks", 1500)),
                            rise_cells=int(options.get("rise_cells", 7)),
                            ig_steps=int(options.get("ig_steps", 32))).encode()


def _score(doc: dict[str, Any], text: str) -> dict[str, Any]:
    response = OcclusionResponse.decode(text)
    return fr.item_record(_scores(response.original, "original"), _scores(response.patches, "patches"),
                          response.attention, response.text_only, response.curves, reference=REFERENCE,
                          box=[float(v) for v in doc["bbox"]], image_size=(int(doc["width"]), int(doc["height"])),
                          seed=item_seed(doc["id"]), view_box=response.view_box,
                          attributions=response.attributions, notes=response.attribution_notes, rois=response.rois)


process_results = response_scorer("faithfulness", {"group": "subgroup"}, _score, fr.lost_record)


def _scores(part: np.ndarray | str, name: str) -> np.ndarray:
    if isinstance(part, str):
        raise ValueError(f"the model returned no {name} scores: {part}")
    return part
