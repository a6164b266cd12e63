"""Raw published rows to the VQA task schema: column checks, answers as option letters, image files.

Every converter returns ``id, image, question, [options,] answer, dimension, source``. A systematically
broken input (a missing column, no image folder at all) raises before any model call. One bad item is
kept: an answer that names no option keeps its raw text as ``answer`` (the scorer reports it as invalid),
and an image file that is absent or unreadable is left to ``with_conditions``, which checks every image
and scores such an item invalid with the file's error.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import datasets
from loguru import logger

from pathbind.data import DATA_ENV, override_dir
from pathbind_tasks.common.harness import data_source

TEXT = datasets.Value("string")
YES_NO_FEATURES = datasets.Features({"id": TEXT, "image": datasets.Image(), "question": TEXT, "answer": TEXT,
                                     "dimension": TEXT, "source": TEXT})
MCQ_FEATURES = datasets.Features({"id": TEXT, "image": datasets.Image(), "question": TEXT,
                                  "options": datasets.List(TEXT), "answer": TEXT, "dimension": TEXT, "source": TEXT})

# "A) text", "(A) text", "A. text", "A: text": a capital and a delimiter; "A cell" is text, not a letter.
_PREFIX = re.compile(r"^\s*\(?([A-Z])[).:]\s*")
_LETTER = re.compile(r"^\s*\(?([A-Za-z])\)?\s*$")  # a letter alone names its option in either case


def require(present: Iterable[str], required: Iterable[str], *, dataset: str, folder: str,
            what: str = "column") -> None:
    """Fail before any model call when the raw data lacks a field its published layout has."""
    present = list(present)
    missing = [name for name in required if name not in present]
    if missing:
        where = data_source(unknown="")
        raise ValueError(f"{dataset}: the raw data has no {what} {', '.join(map(repr, missing))} (present: "
                         f"{', '.join(map(repr, present)) or 'none'}); expected the published layout described in "
                         f"pathbind_tasks/{folder}/README.md" + (f" ({where})" if where else ""))


def strip_letter_prefixes(options: Sequence[str]) -> list[str]:
    """Option texts without "A) " prefixes, when every option carries its own letter in order."""
    matches = [_PREFIX.match(option) for option in options]
    if options and all(m is not None and m.group(1) == chr(ord("A") + i) for i, m in enumerate(matches)):
        return [option[m.end():].strip() for option, m in zip(options, matches, strict=True) if m is not None]
    return [option.strip() for option in options]


def letter_answer(answer: Any, n_options: int) -> str | None:
    """The option letter a raw answer names: "B", "b", "(B)", "B) text", "B. text"; None beyond the options."""
    text = "" if answer is None else str(answer)
    match = _LETTER.match(text) or _PREFIX.match(text)
    if match is None or ord(match.group(1).upper()) - ord("A") >= n_options:
        return None
    return match.group(1).upper()


def text_answer(answer: Any, options: Sequence[str]) -> str | None:
    """The letter of the one option whose text the raw answer is (exactly, else ignoring case and spaces)."""
    text = "" if answer is None else " ".join(str(answer).split())
    for key in (lambda s: " ".join(s.split()), lambda s: " ".join(s.split()).casefold()):
        hits = [i for i, option in enumerate(options) if key(option) == key(text)]
        if len(hits) == 1:
            return chr(ord("A") + hits[0])
    return None


def yes_no(answer: Any) -> str | None:
    """"yes" or "no" for a raw yes/no answer ("Yes", "no."), else None."""
    text = "" if answer is None else str(answer).strip().rstrip(".!").strip().casefold()
    return text if text in ("yes", "no") else None


def unique_ids(ids: Sequence[str], *, dataset: str) -> list[str]:
    """The ids, each repeat renamed "<id>#<n>" (the first occurrence keeps its id): items are paired across
    conditions by id, so every id returned is distinct, never one that the data, or an earlier rename, has."""
    taken, seen, out = set(ids), set(), []
    suffix: Counter[str] = Counter()
    for item in ids:
        if item not in seen:
            seen.add(item)
            out.append(item)
            continue
        suffix[item] = max(suffix[item], 1) + 1
        while f"{item}#{suffix[item]}" in taken:
            suffix[item] += 1
        taken.add(f"{item}#{suffix[item]}")
        out.append(f"{item}#{suffix[item]}")
    if len(seen) < len(ids):
        logger.warning(f"{dataset}: {len(ids) - len(seen)} repeated ids renamed '<id>#<n>' (the first keeps its id)")
    return out


def report_unmapped(answers: Sequence[str | None], *, dataset: str) -> None:
    """Log how many items keep a raw answer that names no option (each is scored invalid)."""
    unmapped = sum(answer is None for answer in answers)
    if unmapped:
        logger.warning(f"{dataset}: {unmapped} of {len(answers)} items have an answer that names no option; "
                       f"they are kept with their raw answer and scored invalid")


def data_folder(name: str) -> Path | None:
    """``$PATHBIND_DATA/<name>/`` when set and present: where the raw files and their images are."""
    return override_dir(name)


def id_list(name: str, file_name: str) -> set[str] | None:
    """The ids listed one per line in ``$PATHBIND_DATA/<name>/<file_name>``, if that file exists."""
    folder = data_folder(name)
    path = folder / file_name if folder is not None else None
    if path is None or not path.is_file():
        return None
    return {line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}


def hub_cache(cache_dir: str) -> Path:
    """Where lmms-eval unpacks a hub dataset's archives (``dataset_kwargs: {video: true, cache_dir: ...}``)."""
    return Path(os.path.expanduser(os.getenv("HF_HOME", "~/.cache/huggingface/"))) / cache_dir


def image_root(name: str, *, dataset: str, cache_dir: str | None = None) -> Path:
    """The folder image file names resolve against: ``$PATHBIND_DATA/<name>/``, else the hub cache.

    Raises when there is neither: every item would lack its image, a setup error to fix before any model call.
    """
    folder = data_folder(name)
    if folder is not None:
        return folder
    if cache_dir and hub_cache(cache_dir).is_dir():
        return hub_cache(cache_dir)
    unpacked = f" nor {hub_cache(cache_dir)} (where lmms-eval unpacks the hub download)" if cache_dir else ""
    raise ValueError(f"{dataset}: no folder with the image files: neither {DATA_ENV}/{name}/{unpacked} exists; "
                     f"see pathbind_tasks/{name}/README.md")


def image_path(name: str, root: Path, subfolders: Sequence[str] = ("",)) -> str:
    """The file ``name`` under the first subfolder of ``root`` that has it, else where it was expected.

    An absent file is not an error here: the image check of ``with_conditions`` reports it for that item.
    """
    candidates = [root / sub / name for sub in subfolders]
    return str(next((path for path in candidates if path.is_file()), candidates[0]))


def embedded_images(feature: Any) -> bool:
    """Whether an image column holds the images themselves (datasets' Image, ``{bytes, path}`` as parquet written
    without its metadata, or raw bytes) rather than file names."""
    if isinstance(feature, datasets.Value):
        return feature.dtype in ("binary", "large_binary")
    return isinstance(feature, datasets.Image) or (isinstance(feature, dict) and "bytes" in feature)


def embedded_docs(dataset: datasets.Dataset, keep: Sequence[int], columns: dict[str, list[Any]],
                  features: datasets.Features) -> datasets.Dataset:
    """The kept rows' embedded images with the given schema columns (images are checked by with_conditions)."""
    docs = dataset.select(keep).select_columns(["image"]).flatten_indices()
    for name, values in columns.items():
        docs = docs.add_column(name, values, feature=features[name])
    return docs.select_columns(list(features)).cast(features)


def rows_to_docs(rows: list[dict[str, Any]], features: datasets.Features, *, dataset: str) -> datasets.Dataset:
    """Schema documents from converted rows, ``image`` a file path or ``{"bytes": ..., "path": None}``."""
    if not rows:
        raise ValueError(f"{dataset}: no items left after selection; check the raw data against the task README")
    return datasets.Dataset.from_list(rows, features=features)
