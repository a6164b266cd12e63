"""Raw published rows to the VQA task schema: column checks, answers as option letters, image files.

Every converter returns ``id, image, question, [options,] answer, dimension, source``. A systematically
broken input (a missing column, no image folder at all) raises before any model call. One bad item is a fault
of the data, dropped from every condition and counted in the task's ``accounting`` (never the model's invalid
answer): a field of the wrong type (:func:`text_field`), an answer that names no option (kept as its raw text here,
dropped by ``vqa_docs``), an image path outside the data folder (:func:`image_file`), an image file that is absent
or unreadable (dropped by ``with_conditions``).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import unicodedata
import zipfile
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import datasets
from loguru import logger

from pathbind.data import DATA_ENV, override_dir
from pathbind_tasks.common.columns import with_column
from pathbind_tasks.common.harness import data_source

TEXT = datasets.Value("string")
YES_NO_FEATURES = datasets.Features({"id": TEXT, "image": datasets.Image(), "question": TEXT, "answer": TEXT,
                                     "dimension": TEXT, "source": TEXT})
MCQ_FEATURES = datasets.Features({"id": TEXT, "image": datasets.Image(), "question": TEXT,
                                  "options": datasets.List(TEXT), "answer": TEXT, "dimension": TEXT, "source": TEXT})


def with_doc_error(features: datasets.Features) -> datasets.Features:
    """A schema plus ``doc_error``: why a converted row's data cannot be evaluated ("" when it can)."""
    return datasets.Features({**features, "doc_error": TEXT})


# "A) text", "(A) text", "A. text", "A: text": a capital and a delimiter; "A cell" is text, not a letter.
_PREFIX = re.compile(r"^\s*\(?([A-Z])[).:]\s*")
_LETTER = re.compile(r"^\s*\(?([A-Za-z])\)?\s*$")  # a letter alone names its option in either case


class BadField(ValueError):
    """One field of one row is unusable: a fault of the data. The message is ``field 'f' <problem> (<detail>)``;
    the part before the detail is the reason the row is dropped with (see ``accounting.fault_reason``)."""

    def __init__(self, field: str, problem: str, value: Any = None, *, detail: str | None = None) -> None:
        shown = detail if detail is not None else f"got {value!r:.80}"
        super().__init__(f"field {field!r} {problem} ({shown})")


def text_field(value: Any, field: str) -> str:
    """A text field's value, never a stringified other type: ``str(['x'])`` would put Python list text in a prompt.

    A string is returned as is; a missing value (None, or pandas' NaN), a list, a dict, bytes, a number or a bool
    raises :class:`BadField` naming the field and the type.
    """
    if isinstance(value, str):
        return value
    if _missing(value):
        raise BadField(field, "is missing", detail="null")
    raise BadField(field, f"is a {type(value).__name__}, not text", value)


def text_problem(row: dict[str, Any], fields: Sequence[str]) -> str:
    """Why one of ``fields`` of ``row`` is not text (the first :class:`BadField` message), "" when all are."""
    for field in fields:
        try:
            text_field(row.get(field), field)
        except BadField as exc:
            return str(exc)
    return ""


def text_or_empty(value: Any) -> str:
    """``value`` when it is text, else "" (its row carries the :func:`text_problem` and is dropped)."""
    return value if isinstance(value, str) else ""


def optional_text(value: Any, field: str) -> str | None:
    """:func:`text_field` for a field that may be missing (None or NaN)."""
    return None if _missing(value) else text_field(value, field)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)  # NaN: pandas' missing value


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
    if not isinstance(answer, str):  # never the letter of a stringified list or number
        return None
    match = _LETTER.match(answer) or _PREFIX.match(answer)
    if match is None or ord(match.group(1).upper()) - ord("A") >= n_options:
        return None
    return match.group(1).upper()


def text_answer(answer: Any, options: Sequence[str]) -> str | None:
    """The letter of the one option whose text the raw answer is (exactly, else ignoring case and spaces)."""
    if not isinstance(answer, str):
        return None
    text = " ".join(answer.split())
    for key in (lambda s: " ".join(s.split()), lambda s: " ".join(s.split()).casefold()):
        hits = [i for i, option in enumerate(options) if key(option) == key(text)]
        if len(hits) == 1:
            return chr(ord("A") + hits[0])
    return None


def yes_no(answer: Any) -> str | None:
    """"yes" or "no" for a raw yes/no answer ("Yes", "no."), else None."""
    if not isinstance(answer, str):
        return None
    text = answer.strip().rstrip(".!").strip().casefold()
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


def unpacked(archive: Path) -> Path:
    """The folder a release's image zip is unpacked into, once per archive version: datasets' cache,
    ``pathbind_unpacked/<stem>-<key>``, keyed by the archive's path, size and modification time.

    Members that would land outside the folder (absolute paths, ``..``) stop the task: the archive is not the
    release. Processes unpacking at once each write a folder of their own and keep the first one renamed in place.
    """
    stat = archive.stat()
    key = hashlib.sha256(f"{archive.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    target = Path(datasets.config.HF_DATASETS_CACHE) / "pathbind_unpacked" / f"{archive.stem}-{key}"
    if target.is_dir():
        return target
    staging = target.with_name(f"{target.name}.{os.getpid()}.partial")
    with zipfile.ZipFile(archive) as bundle:
        unsafe = [m for m in bundle.namelist() if m.startswith(("/", "\\")) or ".." in Path(m).parts]
        if unsafe:
            raise ValueError(f"{archive}: member {unsafe[0]!r} would be written outside the folder it is unpacked "
                             f"into; not a release archive")
        logger.info(f"unpacking {archive} into {target} (once)")
        bundle.extractall(staging)
    try:
        staging.rename(target)
    except OSError:  # another process finished first: keep its folder
        shutil.rmtree(staging, ignore_errors=True)
    return target


def image_file(name: Any, root: Path, subfolders: Sequence[str] = ("",), *,
               field: str = "image") -> tuple[str | None, str]:
    """``(path, problem)`` for the image file ``name`` the data gives: the file under the first subfolder of
    ``root`` that has it, its name in the data's Unicode normalisation or in the other one (NFC, NFD: a file copied
    between systems may change form), else where it was expected (the image check reports it absent, naming it).

    No name: ``(None, "")``, the image check's "no image". A name that leaves ``root`` (absolute, or ``..``
    above it) is never read, as a zip member that would land outside is never written: ``(None, problem)``, the
    item dropped naming the field, so every file a run reads is inside the data folder its provenance records. The
    check reads the name, not the disk: a link the user placed in the folder (the READMEs' recipes link an image
    folder) is followed.
    """
    if not isinstance(name, str) or not name.strip():
        return None, ""
    if os.path.isabs(name) or os.path.normpath(name).split(os.sep)[0] == "..":
        return None, str(BadField(field, "is a path outside the data folder", detail=f"got {name!r}"))  # uncut
    forms = dict.fromkeys([name, unicodedata.normalize("NFC", name), unicodedata.normalize("NFD", name)])
    candidates = [root / sub / form for form in forms for sub in subfolders]
    return str(next((path for path in candidates if path.is_file()), root / subfolders[0] / name)), ""


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
        docs = with_column(docs, name, values, features[name])
    return docs.select_columns(list(features)).cast(features)


def rows_to_docs(rows: list[dict[str, Any]], features: datasets.Features, *, dataset: str) -> datasets.Dataset:
    """Schema documents from converted rows, ``image`` a file path or ``{"bytes": ..., "path": None}``."""
    if not rows:
        raise ValueError(f"{dataset}: no items left after selection; check the raw data against the task README")
    return datasets.Dataset.from_list(rows, features=features)
