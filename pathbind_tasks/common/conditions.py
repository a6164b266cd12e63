"""Evaluation conditions: each item asked with its image, without it, or with the image ablated.

Conditions: ``image`` (original), ``text`` (no image; same prompt and answer format), ``blank`` (a white
image of the same size), ``swap_same`` / ``swap_cross`` (the image of an item on another image (cluster) from
the same / a different subset, drawn with a fixed seed), ``blur_<sigma>`` (Gaussian blur, sigma 2, 4, 8, 16 pixels),
``paraphrase_<k>`` (the image, with the k-th rule-based paraphrase of the question, :mod:`paraphrase`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import datasets
import numpy as np
from loguru import logger
from PIL import Image, ImageFilter
from pyarrow.lib import ArrowException

from pathbind.faults import Fault
from pathbind_tasks.common.accounting import FAULT, close, counting, faults_column, without_faults
from pathbind_tasks.common.clusters import with_clusters
from pathbind_tasks.common.columns import column_values, with_column
from pathbind_tasks.common.harness import task_name
from pathbind_tasks.common.image_paths import confine, file_paths, task_images
from pathbind_tasks.common.images import image_key, image_problem, max_pixels
from pathbind_tasks.common.paraphrase import paraphrases

ABLATION_CONDITIONS = ("blank", "swap_same", "swap_cross", "blur_2", "blur_4", "blur_8", "blur_16")
WITH_AND_WITHOUT_IMAGE = ("image", "text")
IMAGE_ONLY = ("image",)
ABLATIONS = ("image", *ABLATION_CONDITIONS)
PARAPHRASES = 3  # K: the seed asks each question in 3–5 paraphrases
PARAPHRASE_CONDITIONS = tuple(f"paraphrase_{k}" for k in range(1, PARAPHRASES + 1))
# What a task variant runs, by name: the full set, the quick image-only pass, the image ablations, and the question
# reworded (with the text-only pass, for text-only consistency).
CONDITION_SETS = {"full": WITH_AND_WITHOUT_IMAGE, "image_only": IMAGE_ONLY, "ablation": ABLATIONS,
                  "paraphrase": (*WITH_AND_WITHOUT_IMAGE, *PARAPHRASE_CONDITIONS)}
SWAP_SEED = 20260101  # fixed: every model, run and process count sees the same replacement images

NO_PARTNER = "no item of their subset on another image (cluster) to swap in"
NO_PARAPHRASE = "fewer rule-based paraphrases of their question"

Converter = Callable[[datasets.Dataset], datasets.Dataset]


def with_conditions(conditions: Sequence[str], convert: Converter | None = None) -> Converter:
    """A ``process_docs`` function: ``convert`` the raw rows to the task schema, then repeat every
    document once per condition, tagged in a ``condition`` column.

    Documents run item by item (every condition of the first item, in the given order, then of the second...),
    because lmms-eval's ``--limit N`` keeps the first N documents: a limit then cuts whole items, never a whole
    condition. Swap partners are drawn over the full dataset first, so a limit does not change them. An item
    whose data is at fault (its image, or a ``doc_error`` the conversion found) is dropped from every condition;
    an item with no partner on another image (cluster) for a swap is left out of that swap condition only. Where
    the set has a swap, every document names the item and cluster whose image it shows (``image_from``,
    ``cluster_from``); elsewhere each shows its own, and the documents leave those columns out (every column costs
    each of lmms-eval's reads of a document).
    """
    unknown = [c for c in conditions if c not in (*ABLATIONS, "text") and not _paraphrase_number(c)]
    if unknown:
        raise ValueError(f"unknown condition(s) {unknown}; known: text, {', '.join(ABLATIONS)}, paraphrase_<k>")

    def process_docs(dataset: datasets.Dataset) -> datasets.Dataset:
        with counting(dataset) as ledger:
            docs, refused = (convert(dataset), None) if convert else confine(dataset, task_images())
            docs = close(ledger, without_faults(with_readable_images(docs, refused), "task " + str(task_name() or "?")))
        swaps = any(condition.startswith("swap_") for condition in conditions)
        reworded = any(_paraphrase_number(condition) for condition in conditions)
        parts = [_reworded(docs, condition) if reworded else _condition(docs, condition, swaps)
                 for condition in conditions]
        return item_by_item(parts)

    return process_docs


def item_by_item(parts: Sequence[tuple[datasets.Dataset, Sequence[int]]]) -> datasets.Dataset:
    """Reorder condition blocks (all items under condition 1, then 2, ...; each block with the item positions it
    holds) to all conditions of item 1, then 2, ...

    ``select`` keeps an index mapping instead of copying the rows, so the images are not rewritten.
    """
    offsets = np.cumsum([0, *(len(block) for block, _ in parts)])
    rows = [(item, condition, int(offsets[condition]) + row)
            for condition, (_, items) in enumerate(parts) for row, item in enumerate(items)]
    return datasets.concatenate_datasets([block for block, _ in parts]).select([row for *_, row in sorted(rows)])


def with_readable_images(docs: datasets.Dataset, refused: Sequence[Fault | None] | None = None
                         ) -> datasets.Dataset:
    """Check every distinct image once, keeping each fault in ``image_error`` (null when the image is fine) for
    ``without_faults`` to drop its item, and each item's ``cluster`` (:func:`clusters.with_clusters`: by
    default a digest of its image's bytes); ``image`` comes back as ``datasets.Image()``.

    ``image`` may be an image feature, ``{bytes, path}`` structs (parquet written without datasets' metadata),
    bytes or file paths, so ``doc["image"]`` is always a PIL image. ``refused``: each row's fault found before (a
    path the image-path rule refused, :func:`image_paths.confine`), kept. A relative path a converter left is
    resolved against the task's data folder (:func:`image_paths.task_images`), never against the working folder.
    """
    limit = max_pixels()
    if Image.MAX_IMAGE_PIXELS is not None and limit > Image.MAX_IMAGE_PIXELS:
        Image.MAX_IMAGE_PIXELS = limit  # PIL's own bomb guard must not warn about or refuse an image accepted here
    raw = _undecoded(docs)
    found = list(refused) if refused is not None else [None] * len(raw)
    if _relative_paths(raw):
        raw, resolved = confine(raw, task_images())
        found = [earlier or fault for earlier, fault in zip(found, resolved, strict=True)]
    errors, keys = [], []
    checked: dict[str, Fault | None] = {}  # an image's bytes (and file) -> its fault: items sharing an image share it
    values = (value for batch in raw.select_columns("image").iter(batch_size=256) for value in batch["image"])
    for value, earlier in zip(values, found, strict=True):  # batches bound the bytes held at once
        fault, key = (earlier, "") if earlier else _checked(value, limit, checked)
        errors.append(fault)
        keys.append("" if fault else key)
    return with_clusters(with_column(raw.cast_column("image", datasets.Image()), "image_error", faults_column(errors),
                                     FAULT), keys)


def _relative_paths(docs: datasets.Dataset) -> bool:
    """Whether an image of ``docs`` (undecoded) is a file path that is not absolute; the bytes are never read."""
    return any(path and not os.path.isabs(path) for path in file_paths(docs))


def _checked(value: dict | None, limit: int, checked: dict[str, Fault | None]) -> tuple[Fault | None, str]:
    """:func:`image_problem` of ``value`` and its :func:`image_key`, decoded once per distinct encoded image (a file
    once per path)."""
    try:
        key = image_key(value)
    except OSError:  # a file that cannot be read: its problem names it
        return image_problem(value, limit), ""
    seen = key + ("" if value and value.get("bytes") is not None else f":{(value or {}).get('path')}")
    if seen not in checked:
        checked[seen] = image_problem(value, limit)
    return checked[seen], key


def _undecoded(docs: datasets.Dataset) -> datasets.Dataset:
    try:
        return docs.cast_column("image", datasets.Image(decode=False))
    except (TypeError, ValueError, ArrowException) as exc:  # the whole column is wrong: a setup error
        raise ValueError(f"column 'image' of type {docs.features['image']} holds neither images, {{bytes, path}}, "
                         f"bytes nor file paths ({exc})") from exc


def _condition(docs: datasets.Dataset, condition: str, swaps: bool) -> tuple[datasets.Dataset, list[int]]:
    """The documents of ``condition`` and the positions of the items they are (a swap leaves out the items with
    no partner on another image); with ``image_from`` and ``cluster_from`` where the condition set ``swaps``."""
    tagged = with_column(docs, "condition", [condition] * len(docs))
    if not swaps:
        return tagged, list(range(len(docs)))
    ids, clusters = column_values(docs, "id"), column_values(docs, "cluster")
    if not condition.startswith("swap_"):
        return with_column(with_column(tagged, "image_from", ids), "cluster_from", clusters), list(range(len(docs)))
    drawn = swap_partners(subset_keys(docs), clusters, same=condition == "swap_same")
    items = [i for i, p in enumerate(drawn) if p is not None]
    if len(items) < len(docs):
        logger.warning(f"task {task_name() or '?'}, condition {condition}: {len(docs) - len(items)} of {len(docs)} "
                       f"items have {NO_PARTNER}, so they have no {condition} answer")
    partners = [i if p is None else p for i, p in enumerate(drawn)]  # the unswapped ones are left out below
    # Undecoded, so the swap copies encoded bytes instead of decoding every image.
    images = docs.cast_column("image", datasets.Image(decode=False)).select(partners)["image"]
    swapped = tagged.remove_columns("image").add_column("image", images, feature=docs.features["image"])
    swapped = with_column(swapped, "image_from", [ids[p] for p in partners])
    return with_column(swapped, "cluster_from", [clusters[p] for p in partners]).select(items), items


def _paraphrase_number(condition: str) -> int:
    """k of a ``paraphrase_<k>`` condition, 0 for any other."""
    number = condition.removeprefix("paraphrase_")
    return int(number) if condition.startswith("paraphrase_") and number.isdigit() and int(number) > 0 else 0


def _reworded(docs: datasets.Dataset, condition: str) -> tuple[datasets.Dataset, list[int]]:
    """The documents of ``condition`` in a set with paraphrases, each naming the ``paraphrase`` rule of its question
    ("" for the original wording); a ``paraphrase_<k>`` condition leaves out the items with fewer than k."""
    tagged = with_column(docs, "condition", [condition] * len(docs))
    k = _paraphrase_number(condition)
    if not k:
        return with_column(tagged, "paraphrase", [""] * len(docs)), list(range(len(docs)))
    if "question" not in docs.column_names:
        raise ValueError(f"condition {condition} rewords the field 'question', which the documents do not have "
                         f"(columns: {', '.join(docs.column_names)})")
    found = [paraphrases(str(question or ""), k) for question in column_values(docs, "question")]
    items = [i for i, rewordings in enumerate(found) if len(rewordings) >= k]
    if len(items) < len(docs):
        logger.warning(f"task {task_name() or '?'}, condition {condition}: {len(docs) - len(items)} of {len(docs)} "
                       f"items have {NO_PARAPHRASE} than {k}, so they have no {condition} answer")
    chosen = [rewordings[k - 1] if len(rewordings) >= k else ("", "") for rewordings in found]
    tagged = with_column(tagged.remove_columns("question"), "question", [text for _, text in chosen])
    return with_column(tagged, "paraphrase", [rule for rule, _ in chosen]).select(items), items


def subset_keys(docs: datasets.Dataset) -> list[str]:
    """The subset an item belongs to for swaps: its dimension where it has one, else its source."""
    def values(name: str) -> list:
        return column_values(docs, name) if name in docs.column_names else [None] * len(docs)

    return [str(d) if d is not None else str(s or "") for d, s in zip(values("dimension"), values("source"),
                                                                          strict=True)]


def swap_partners(keys: Sequence[str], clusters: Sequence[str] | None = None, *, same: bool,
                  seed: int = SWAP_SEED) -> list[int | None]:
    """For each item, the index of an item with the same (or a different) subset key on another image: never
    the item itself nor any item of its cluster (``clusters``; default: every item its own), whose image is the
    item's own. None where no such item exists: a swap onto the item's own image would be no swap.
    """
    rng = np.random.default_rng(seed)
    keys_array = np.asarray(keys)
    cluster_array = np.asarray(clusters if clusters is not None else range(len(keys)))
    partners: list[int | None] = []
    for key, cluster in zip(keys_array, cluster_array, strict=True):
        eligible = np.flatnonzero(((keys_array == key) == same) & (cluster_array != cluster))
        partners.append(int(rng.choice(eligible)) if eligible.size else None)
    return partners


def visual_for(doc: dict, image: Image.Image) -> list[Image.Image]:
    """The image the model sees under the document's condition (swaps were applied in process_docs)."""
    condition = doc.get("condition", "image")
    if condition == "text":
        return []
    if condition == "blank":
        return [Image.new("RGB", image.size, (255, 255, 255))]
    if condition.startswith("blur_"):
        return [image.filter(ImageFilter.GaussianBlur(radius=float(condition.removeprefix("blur_"))))]
    return [image]
