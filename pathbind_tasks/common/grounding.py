"""Attention grounding tasks: each item asks the model for entity attention maps, scored against its box.

Schema (after conversion): ``id``, ``image``, ``expression``, ``bbox`` ([x_min, y_min, x_max, y_max] in
pixels of the image as ``width`` x ``height``), ``width``, ``height``, ``split``. ``process_docs`` adds
``alternatives``: the other expressions of the cross-query test, drawn with a fixed seed from the same split, so
every model and run gets the same. A row whose data is at fault (a field, an unreadable image, a stated size that
is not the image's) is dropped and counted in ``accounting``, never a lost item.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

import datasets
import numpy as np
from PIL import Image

from pathbind import render_template
from pathbind.wire import LAYER_GROUPS, LAYER_SETS, AttentionRequest, AttentionResponse, Query
from pathbind_tasks.common import box_rows
from pathbind_tasks.common import grounding_records as gr
from pathbind_tasks.common.accounting import close, counting
from pathbind_tasks.common.failures import response_scorer
from pathbind_tasks.common.image_paths import ImageFolder
from pathbind_tasks.common.images import rgb_image
from pathbind_tasks.common.raw import require

ALTERNATIVES_SEED = 0
N_ALTERNATIVES = 2  # K = 3 queries per image: the true expression and two others
COLUMNS = ("id", "image", "expression", "bbox", "width", "height", "split")
ADDED = ("alternatives", "image_error", "doc_error")  # columns process_docs computes


def process_docs(dataset: datasets.Dataset, *, images: ImageFolder | None = None) -> datasets.Dataset:
    """Check the schema, every image (its path read by the image-path rule in ``images``, by default the task's
    data folder) and every row, then draw each item's alternative expressions."""
    dataset = box_rows.replace_added(dataset, ADDED, "grounding")
    require(dataset.column_names, COLUMNS, dataset="grounding", folder="pathbind_grounding")
    box_rows.require_rows(dataset, "grounding")
    with counting(dataset) as ledger:
        docs = box_rows.checked(dataset, "grounding", images)
        alternatives = draw_alternatives(list(docs["expression"]), list(docs["split"]))
        return close(ledger, docs.add_column("alternatives", alternatives))


def draw_alternatives(expressions: list[Any], splits: list[Any], *, k: int = N_ALTERNATIVES,
                      seed: int = ALTERNATIVES_SEED) -> list[list[str]]:
    """For each item, ``k`` distinct expressions of other items of its split, never equal to its own (an
    expression that is not a non-empty text is in no pool: its row is lost, and no other item is asked it)."""
    rng = np.random.default_rng(seed)
    pools: dict[Any, list[str]] = {}
    for expression, split in zip(expressions, splits, strict=True):
        pools.setdefault(split, [])
        if isinstance(expression, str) and expression.strip() and expression not in pools[split]:
            pools[split].append(expression)
    drawn = []
    for expression, split in zip(expressions, splits, strict=True):
        others = [e for e in pools[split] if e != expression]
        picks = rng.permutation(len(others))[:k]
        drawn.append([others[int(i)] for i in picks])
    return drawn


def doc_to_visual(doc: dict[str, Any]) -> list[Image.Image]:
    return [rgb_image(doc["image"])]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """An attention request (see ``pathbind.wire``) for the true expression and its alternatives."""
    template = (lmms_eval_specific_kwargs or {}).get("template", "locate")
    entity = str(doc["expression"])  # a row without a text expression was dropped
    # The expression's maps over every layer set and ninth (the sweeps); the alternatives' over the middle third.
    queries = (Query(render_template(template, entity=entity), entity, (*LAYER_SETS, *LAYER_GROUPS)),
               *(Query(render_template(template, entity=other), other) for other in doc["alternatives"]))
    return AttentionRequest(queries, ("mid",)).encode()


def _score(doc: dict[str, Any], response: str) -> dict[str, Any]:
    decoded = AttentionResponse.decode(response)  # no-answer responses never get here
    return gr.item_record(decoded.maps, list(doc["bbox"]), (int(doc["width"]), int(doc["height"])),
                          view_box=decoded.view_box, layers=decoded.layers, seed=item_seed(doc["id"]))


def item_seed(item: Any) -> int:
    """The seed of an item's control boxes, from its id alone: the same in every run, process and model."""
    return zlib.crc32(str(item).encode("utf-8"))


process_results = response_scorer("grounding", {"split": "split"}, _score, gr.lost_record)


def split_filter(split: str) -> Callable[[datasets.Dataset], datasets.Dataset]:
    """``process_docs`` for one split of a file holding both (PathBind-Grounding's ``test.parquet``): the rows
    whose ``split`` is ``split`` in any case and spacing, normalised; the others are dropped with their value."""

    def keep(dataset: datasets.Dataset) -> datasets.Dataset:
        require(dataset.column_names, COLUMNS, dataset="grounding", folder="pathbind_grounding")
        box_rows.require_rows(dataset, f"grounding {split}")
        with counting(dataset):
            return process_docs(box_rows.only_splits(dataset, (split,), f"grounding {split}"))

    return keep


by_split_testa = split_filter("testA")
by_split_testb = split_filter("testB")

