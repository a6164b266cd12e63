"""PathMMU as published (gated hub ``data.json`` + ``images.zip``) in the task schema.

``data.json`` is one JSON object ``{subset: {split: [item, ...]}}`` with subsets PubMed, SocialPath,
EduContent, Atlas and PathCLS, splits ``val``, ``test`` and ``test_tiny``, and items
``{"No", "img", "question", "options": ["A) ...", ...], "answer": "B) ...", "explanation", ...}``; the
image of an item is ``images/<img>`` beside data.json, or in ``images.zip`` left packed. The json loader reads the
whole object as one row whose columns are the subsets (a ``save_to_disk`` or parquet copy of that row is read
alike); pandas reads it as one row per split (``pd.read_json``), the split in its index column, which a parquet
copy written by pandas keeps: both are read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import datasets
from loguru import logger

from pathbind.faults import Fault
from pathbind.layout import Layout
from pathbind_tasks.common.accounting import read_rows
from pathbind_tasks.common.image_paths import ImageFolder
from pathbind_tasks.common.raw import (
    MCQ_FEATURES,
    BadField,
    image_root,
    images_in,
    letter_answer,
    require,
    rows_to_docs,
    strip_letter_prefixes,
    text_or_empty,
    text_problem,
    unique_ids,
    with_doc_error,
)
from pathbind_tasks.common.vqa import condition_sets, options_problem

DATASET = "PathMMU"
DATA_NAME = "pathmmu"  # $PATHBIND_DATA/pathmmu/ holds data.json and images/
HUB_CACHE = "pathmmu"  # the YAMLs' dataset_kwargs.cache_dir: where lmms-eval unzips images.zip
ITEM_KEYS = ("No", "img", "question", "options", "answer")
ARCHIVE = "images.zip"
IMAGE_FOLDERS = ("images", "")  # images.zip unpacked beside data.json, or its members at the top of the archive
# The release as published: images.zip unpacked, or left packed (unpacked once into datasets' cache).
LAYOUT = Layout(data=("data.json",), images=("images/", ARCHIVE), readme="pathbind_tasks/pathmmu/README.md")
# The column pandas keeps the split names in (its index): pd.read_json(data.json).to_parquet(...) writes it.
SPLIT_COLUMNS = ("__index_level_0__", "index", "split")
MAX_SPLITS = 16  # pandas' reading has one row per split: val, test, test_tiny
# PathMMU's "test-all" is its test and test_tiny splits together (test_overall in the official eval code).
TEST_ALL = ("test", "test_tiny")
TEST_TINY = ("test_tiny",)
FEATURES = with_doc_error(MCQ_FEATURES)


Item = tuple[str, str, int | None, Any]  # subset, split, place in the split's list (None: no list), the item


def items(dataset: datasets.Dataset, splits: Sequence[str]) -> Iterator[Item]:
    """Every item of the given splits, subsets in data.json order. A split that is not a list is one entry (its
    item dropped as such); a top-level value that is not an object holds no splits and is skipped, logged."""
    for subset, splits_of_subset in _subsets(dataset).items():
        if not isinstance(splits_of_subset, dict):
            if splits_of_subset is not None:
                logger.warning(f"{DATASET}: data.json's {subset!r} is a {type(splits_of_subset).__name__}, not an "
                               f"object of splits; it holds no items")
            continue
        for split in splits:
            listed = splits_of_subset.get(split)
            if isinstance(listed, list):
                yield from ((subset, split, k, item) for k, item in enumerate(listed))
            elif listed is not None:
                yield subset, split, None, listed


def _subsets(dataset: datasets.Dataset) -> dict[str, Any]:
    """data.json's object ``{subset: {split: [items]}}`` from its rows: the json loader's one row of subsets, or
    pandas' one row per split (the split in :data:`SPLIT_COLUMNS`, each subset's items of that split in its
    column)."""
    split_column = next((c for c in SPLIT_COLUMNS if c in dataset.column_names), None)
    if len(dataset) == 1 and split_column is None and any(isinstance(v, dict) for v in dataset[0].values()):
        return dict(dataset[0])
    rows = dataset.to_list() if split_column is not None and len(dataset) <= MAX_SPLITS else []
    if rows and all(isinstance(row[split_column], str) and all(isinstance(v, list) or v is None for k, v in
                                                             row.items() if k != split_column) for row in rows):
        return {subset: {row[split_column]: row[subset] for row in rows if row[subset] is not None}
                for subset in dataset.column_names if subset != split_column}
    blocks = len(dataset) > 1 and split_column is None and all(isinstance(v, dict | list) or v is None
                                                                for v in dataset[0].values())
    hint = ("a data.json larger than the json loader's chunk is read in blocks and loses its split names: keep the "
            "task's dataset_kwargs chunksize" if blocks else
            "write data.json as released, or a copy of the row the json loader reads from it (save_to_disk, "
            "to_parquet), or pandas' reading of it (pd.read_json(...).to_parquet)")
    raise ValueError(f"{DATASET}: the data is not data.json's object {{subset: {{split: [items]}}}} (got "
                     f"{len(dataset)} rows with columns {dataset.column_names}); {hint}; see "
                     f"pathbind_tasks/pathmmu/README.md")


def convert_splits(splits: Sequence[str]) -> Callable[[datasets.Dataset], datasets.Dataset]:
    """A converter for the items of ``splits`` of every subset; ``source`` is ``PathMMU/<subset>``. An item that is
    not an object or lacks a key is dropped naming it; the task stops only when no item has the published keys."""

    def convert(dataset: datasets.Dataset) -> datasets.Dataset:
        selected = list(items(dataset, splits))
        read_rows(len(selected))  # data.json is one row; its items of these splits are the task's rows
        if not selected:
            present = {s: sorted(v) if isinstance(v, dict) else type(v).__name__ for s, v in _subsets(dataset).items()}
            raise ValueError(f"{DATASET}: data.json has no items in split(s) {', '.join(splits)}; subsets and splits "
                             f"present: {present}")
        if not any(isinstance(item, dict) and all(key in item for key in ITEM_KEYS) for *_, item in selected):
            first = next((item for *_, item in selected if isinstance(item, dict)), {})
            require(first, ITEM_KEYS, dataset=DATASET, folder="pathmmu", what="item key")
        images = ImageFolder(images_in(image_root(DATA_NAME, dataset=DATASET, cache_dir=HUB_CACHE), ARCHIVE,
                                        IMAGE_FOLDERS), IMAGE_FOLDERS)
        ids = unique_ids([f"{subset}-{split}-{_number(item, k)}" for subset, split, k, item in selected],
                         dataset=DATASET)
        rows = [_row(doc_id, entry, images) for doc_id, entry in zip(ids, selected, strict=True)]
        return rows_to_docs(rows, FEATURES, dataset=DATASET)

    return convert


def _number(item: Any, place: int | None) -> Any:
    """The item's ``No``; where it has none, its place in its split's list ("#1" the first)."""
    if isinstance(item, dict) and item.get("No") is not None:
        return item["No"]
    return f"#{place + 1}" if place is not None else "#"


def structure_problem(subset: str, split: str, place: int | None, item: Any) -> Fault | None:
    """Why an entry of data.json is not an item of the published shape (None when it is): a split that is not a
    list, an entry that is not an object, an object lacking one of :data:`ITEM_KEYS`."""
    if place is None:
        return Fault("split is not a list of items", f"{subset}/{split} is a {type(item).__name__}")
    if not isinstance(item, dict):
        return Fault("item is not an object", f"got {item!r:.80}")
    missing = next((key for key in ITEM_KEYS if key not in item), None)
    return BadField(missing, "is missing", detail="no such key").fault if missing else None


def _row(doc_id: str, entry: Item, images: ImageFolder) -> dict[str, Any]:
    """One item; a field of the wrong type (options as one string, a number for a question) is its ``doc_error``."""
    subset, _, _, value = entry
    problem = structure_problem(*entry)
    item = value if isinstance(value, dict) else {}
    raw = item.get("options")
    problem = problem or text_problem(item, ("question", "answer"))
    if not isinstance(raw, list):
        problem = problem or options_problem(raw)  # a string of options is not split into characters
    elif not problem:
        problem = next((BadField("options", f"has a {type(o).__name__}, not text", o).fault for o in raw
                        if not isinstance(o, str)), None)
    options = strip_letter_prefixes([o for o in raw if isinstance(o, str)]) if isinstance(raw, list) else []
    letter = letter_answer(item.get("answer"), len(options))
    image, path_problem = images.image(item.get("img"), "img")
    return {"id": doc_id, "image": image, "question": text_or_empty(item.get("question")), "options": options,
            "answer": letter or text_or_empty(item.get("answer")), "dimension": None,
            "source": f"{DATASET}/{subset}", "doc_error": problem or path_problem}


convert_test = convert_splits(TEST_ALL)
convert_test_tiny = convert_splits(TEST_TINY)
test_full, test_image_only, test_ablation = condition_sets(convert_test)
test_tiny_full, test_tiny_image_only, test_tiny_ablation = condition_sets(convert_test_tiny)
