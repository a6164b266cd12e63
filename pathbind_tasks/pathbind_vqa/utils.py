"""The PathBind release's local format: ``id, image, question, options, answer, dimension, source``.

``image`` is an image column (embedded bytes) or a file path relative to the data folder (or its ``images/``),
read by the image-path rule (:mod:`pathbind_tasks.common.image_paths`); ``options`` the
option texts in letter order; ``answer`` the correct letter; ``dimension`` D1-D6 (VQA) or D1-D5 (PTA).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import datasets

from pathbind.faults import Fault
from pathbind.layout import Layout
from pathbind_tasks.common.image_paths import ImageFolder, data_folder, embedded
from pathbind_tasks.common.raw import (
    MCQ_FEATURES,
    BadField,
    image_root,
    letter_answer,
    optional_text,
    require,
    schema_docs,
    text_or_empty,
    text_problem,
    unique_ids,
    with_doc_error,
)
from pathbind_tasks.common.vqa import condition_sets, options_problem, vqa_docs

COLUMNS = ("id", "image", "question", "options", "answer", "dimension", "source")
IMAGE_FOLDERS = ("", "images")  # where a file name resolves: the data folder, then its images/
FEATURES = with_doc_error(MCQ_FEATURES)
# Both sets (pathbind_vqa/, pathbind_pta/): one parquet file; images embedded, or file names the image check
# follows item by item.
LAYOUT = Layout(data=("test.parquet",), readme="pathbind_tasks/pathbind_vqa/README.md")


def make_converter(data_name: str, label: str) -> Callable[[datasets.Dataset], datasets.Dataset]:
    """A converter for the set read from ``$PATHBIND_DATA/<data_name>/``."""

    def convert(dataset: datasets.Dataset) -> datasets.Dataset:
        require(dataset.column_names, COLUMNS, dataset=label, folder="pathbind_vqa")
        text = dataset.remove_columns("image").to_list()
        options = [_option_texts(row["options"]) for row in text]
        letters = [letter_answer(row["answer"], len(texts)) for row, texts in zip(text, options, strict=True)]
        columns: dict[str, list[Any]] = {
            "id": unique_ids([str(row["id"]) for row in text], dataset=label),
            "question": [text_or_empty(row["question"]) for row in text],
            "options": options,
            "answer": [letter or text_or_empty(row["answer"]) for row, letter in zip(text, letters, strict=True)],
            "dimension": [row["dimension"] if isinstance(row["dimension"], str) else None for row in text],
            "source": [row["source"] if isinstance(row["source"], str) else None for row in text],
            "doc_error": [_problem(row) for row in text]}
        return _docs(dataset, columns)

    def _docs(dataset: datasets.Dataset, columns: dict[str, list[Any]]) -> datasets.Dataset:
        # Embedded images need no folder; file names (and a struct's path) resolve in the data folder.
        root = data_folder() if embedded(dataset.features["image"]) else image_root(data_name, dataset=label)
        return schema_docs(dataset, range(len(dataset)), columns, FEATURES, ImageFolder(root, IMAGE_FOLDERS))

    return convert


def _option_texts(options: Any) -> list[str]:
    """The option texts of a list (a missing or non-text one empty: the item is dropped, naming it); none of
    anything else. A string is not split into options: ``"x|y"`` has no agreed separator."""
    if not isinstance(options, list | tuple):
        return []
    return [text_or_empty(option) for option in options]


def _problem(row: dict[str, Any]) -> Fault | None:
    """The first field of the wrong type: question, answer, options (a list of texts), dimension, source."""
    options = row["options"]
    if options is not None and not isinstance(options, list | tuple):
        return options_problem(options)
    bad = next((o for o in options or [] if o is not None and not isinstance(o, str)), None)
    if bad is not None:
        return BadField("options", f"has a {type(bad).__name__}, not text", bad).fault
    try:
        optional_text(row["dimension"], "dimension")
        optional_text(row["source"], "source")
    except BadField as exc:
        return exc.fault
    return text_problem(row, ("question", "answer"))


convert_vqa = make_converter("pathbind_vqa", "PathBind-VQA")
convert_pta = make_converter("pathbind_pta", "PathBind-PTA")
vqa_full, vqa_image_only, vqa_ablation = condition_sets(convert_vqa)
pta_full, pta_image_only, pta_ablation = condition_sets(convert_pta)
vqa_paraphrase, pta_paraphrase = vqa_docs("paraphrase", convert_vqa), vqa_docs("paraphrase", convert_pta)
