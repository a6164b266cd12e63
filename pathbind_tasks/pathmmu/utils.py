"""PathMMU as published (gated hub ``data.json`` + ``images.zip``) in the task schema.

``data.json`` is one JSON object ``{subset: {split: [item, ...]}}`` with subsets PubMed, SocialPath,
EduContent, Atlas and PathCLS, splits ``val``, ``test`` and ``test_tiny``, and items
``{"No", "img", "question", "options": ["A) ...", ...], "answer": "B) ...", "explanation", ...}``; the
image of an item is ``images/<img>`` beside data.json. The json loader reads the whole object as one row
whose columns are the subsets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import datasets
from loguru import logger

from pathbind.layout import Layout
from pathbind_tasks.common.accounting import read_rows
from pathbind_tasks.common.raw import (
    MCQ_FEATURES,
    BadField,
    image_file,
    image_root,
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
# The release as published; images.zip unpacked (a run reads image files, not the archive).
LAYOUT = Layout(data=("data.json",), images=("images/",), readme="pathbind_tasks/pathmmu/README.md")
# PathMMU's "test-all" is its test and test_tiny splits together (test_overall in the official eval code).
TEST_ALL = ("test", "test_tiny")
TEST_TINY = ("test_tiny",)
FEATURES = with_doc_error(MCQ_FEATURES)


Item = tuple[str, str, int | None, Any]  # subset, split, place in the split's list (None: no list), the item


def items(dataset: datasets.Dataset, splits: Sequence[str]) -> Iterator[Item]:
    """Every item of the given splits, subsets in data.json order. A split that is not a list is one entry (its
    item dropped as such); a top-level value that is not an object holds no splits and is skipped, logged."""
    if len(dataset) != 1 or not any(isinstance(v, dict) for v in dataset[0].values()):
        raise ValueError(f"{DATASET}: data.json was not read as one JSON object {{subset: {{split: [items]}}}} "
                         f"(got {len(dataset)} rows with columns {dataset.column_names}). Keep the task's "
                         f"dataset_kwargs chunksize (a data.json larger than the json loader's chunk is read in "
                         f"blocks and loses its split names); see pathbind_tasks/pathmmu/README.md")
    for subset, splits_of_subset in dataset[0].items():
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


def convert_splits(splits: Sequence[str]) -> Callable[[datasets.Dataset], datasets.Dataset]:
    """A converter for the items of ``splits`` of every subset; ``source`` is ``PathMMU/<subset>``. An item that is
    not an object or lacks a key is dropped naming it; the task stops only when no item has the published keys."""

    def convert(dataset: datasets.Dataset) -> datasets.Dataset:
        selected = list(items(dataset, splits))
        read_rows(len(selected))  # data.json is one row; its items of these splits are the task's rows
        if not selected:
            present = {s: sorted(v) if isinstance(v, dict) else type(v).__name__ for s, v in dataset[0].items()}
            raise ValueError(f"{DATASET}: data.json has no items in split(s) {', '.join(splits)}; subsets and splits "
                             f"present: {present}")
        if not any(isinstance(item, dict) and all(key in item for key in ITEM_KEYS) for *_, item in selected):
            first = next((item for *_, item in selected if isinstance(item, dict)), {})
            require(first, ITEM_KEYS, dataset=DATASET, folder="pathmmu", what="item key")
        root = image_root(DATA_NAME, dataset=DATASET, cache_dir=HUB_CACHE)
        ids = unique_ids([f"{subset}-{split}-{_number(item, k)}" for subset, split, k, item in selected],
                         dataset=DATASET)
        rows = [_row(doc_id, entry, root) for doc_id, entry in zip(ids, selected, strict=True)]
        return rows_to_docs(rows, FEATURES, dataset=DATASET)

    return convert


def _number(item: Any, place: int | None) -> Any:
    """The item's ``No``; where it has none, its place in its split's list ("#1" the first)."""
    if isinstance(item, dict) and item.get("No") is not None:
        return item["No"]
    return f"#{place + 1}" if place is not None else "#"


def structure_problem(subset: str, split: str, place: int | None, item: Any) -> str:
    """Why an entry of data.json is not an item of the published shape ("" when it is): a split that is not a
    list, an entry that is not an object, an object lacking one of :data:`ITEM_KEYS`."""
    if place is None:
        return f"split is not a list of items ({subset}/{split} is a {type(item).__name__})"
    if not isinstance(item, dict):
        return f"item is not an object (got {item!r:.80})"
    missing = next((key for key in ITEM_KEYS if key not in item), None)
    return str(BadField(missing, "is missing", detail="no such key")) if missing else ""


def _row(doc_id: str, entry: Item, root: Path) -> dict[str, Any]:
    """One item; a field of the wrong type (options as one string, a number for a question) is its ``doc_error``."""
    subset, _, _, value = entry
    problem = structure_problem(*entry)
    item = value if isinstance(value, dict) else {}
    raw = item.get("options")
    problem = problem or text_problem(item, ("question", "answer"))
    if not isinstance(raw, list):
        problem = problem or options_problem(raw)  # a string of options is not split into characters
    elif not problem:
        problem = next((str(BadField("options", f"has a {type(o).__name__}, not text", o)) for o in raw
                        if not isinstance(o, str)), "")
    options = strip_letter_prefixes([o for o in raw if isinstance(o, str)]) if isinstance(raw, list) else []
    letter = letter_answer(item.get("answer"), len(options))
    image, path_problem = image_file(item.get("img"), root, ("images",), field="img")
    return {"id": doc_id, "image": image, "question": text_or_empty(item.get("question")), "options": options,
            "answer": letter or text_or_empty(item.get("answer")), "dimension": None,
            "source": f"{DATASET}/{subset}", "doc_error": problem or path_problem}


convert_test = convert_splits(TEST_ALL)
convert_test_tiny = convert_splits(TEST_TINY)
test_full, test_image_only, test_ablation = condition_sets(convert_test)
test_tiny_full, test_tiny_image_only, test_tiny_ablation = condition_sets(convert_test_tiny)
