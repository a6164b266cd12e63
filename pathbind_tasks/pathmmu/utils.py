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

from pathbind.layout import Layout
from pathbind_tasks.common.accounting import read_rows
from pathbind_tasks.common.raw import (
    MCQ_FEATURES,
    BadField,
    image_path,
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


def items(dataset: datasets.Dataset, splits: Sequence[str]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(subset, split, item) for every item of the given splits, subsets in data.json order."""
    if len(dataset) != 1 or not any(isinstance(v, dict) for v in dataset[0].values()):
        raise ValueError(f"{DATASET}: data.json was not read as one JSON object {{subset: {{split: [items]}}}} "
                         f"(got {len(dataset)} rows with columns {dataset.column_names}). Keep the task's "
                         f"dataset_kwargs chunksize (a data.json larger than the json loader's chunk is read in "
                         f"blocks and loses its split names); see pathbind_tasks/pathmmu/README.md")
    for subset, splits_of_subset in dataset[0].items():
        for split in splits:
            yield from ((subset, split, item) for item in (splits_of_subset or {}).get(split) or [])


def convert_splits(splits: Sequence[str]) -> Callable[[datasets.Dataset], datasets.Dataset]:
    """A converter for the items of ``splits`` of every subset; ``source`` is ``PathMMU/<subset>``."""

    def convert(dataset: datasets.Dataset) -> datasets.Dataset:
        selected = list(items(dataset, splits))
        read_rows(len(selected))  # data.json is one row; its items of these splits are the task's rows
        if not selected:
            raise ValueError(f"{DATASET}: data.json has no items in split(s) {', '.join(splits)}; subsets and splits "
                             f"present: { {s: sorted(v or {}) for s, v in dataset[0].items()} }")
        require(selected[0][2], ITEM_KEYS, dataset=DATASET, folder="pathmmu", what="item key")
        root = image_root(DATA_NAME, dataset=DATASET, cache_dir=HUB_CACHE)
        ids = unique_ids([f"{subset}-{split}-{item['No']}" for subset, split, item in selected], dataset=DATASET)
        rows = [_row(doc_id, subset, item, root) for doc_id, (subset, _, item) in zip(ids, selected, strict=True)]
        return rows_to_docs(rows, FEATURES, dataset=DATASET)

    return convert


def _row(doc_id: str, subset: str, item: dict[str, Any], root: Path) -> dict[str, Any]:
    """One item; a field of the wrong type (options as one string, a number for a question) is its ``doc_error``."""
    raw = item.get("options")
    problem = text_problem(item, ("question", "answer"))
    if not isinstance(raw, list):
        problem = problem or options_problem(raw)  # a string of options is not split into characters
    elif not problem:
        problem = next((str(BadField("options", f"has a {type(o).__name__}, not text", o)) for o in raw
                        if not isinstance(o, str)), "")
    options = strip_letter_prefixes([o for o in raw if isinstance(o, str)]) if isinstance(raw, list) else []
    letter = letter_answer(item.get("answer"), len(options))
    image = item.get("img")
    return {"id": doc_id, "image": image_path(image, root, ("images",)) if isinstance(image, str) and image else None,
            "question": text_or_empty(item.get("question")), "options": options,
            "answer": letter or text_or_empty(item.get("answer")), "dimension": None,
            "source": f"{DATASET}/{subset}", "doc_error": problem}


convert_test = convert_splits(TEST_ALL)
convert_test_tiny = convert_splits(TEST_TINY)
test_full, test_image_only, test_ablation = condition_sets(convert_test)
test_tiny_full, test_tiny_image_only, test_tiny_ablation = condition_sets(convert_test_tiny)
