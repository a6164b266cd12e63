"""Raw published rows to the VQA task schema: column checks, answers as option letters, image files.

Every converter returns ``id, image, question, [options,] answer, dimension, source`` and ``doc_error``, the item's
:class:`pathbind.faults.Fault` (null when it has none). A systematically broken input (a missing column, no image
folder at all) raises before any model call. One bad item is a fault of the data, dropped from every condition and
counted in the task's ``accounting`` (never the model's invalid answer): a field of the wrong type
(:func:`text_field`), an answer that names no option (kept as its raw text here, dropped by ``vqa_docs``), an image
path outside the data folder (:mod:`image_paths`), an image file that is absent or unreadable (dropped by
``with_conditions``).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import zipfile
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import datasets
from loguru import logger

from pathbind.data import DATA_ENV, override_dir
from pathbind.faults import Fault
from pathbind.model_inputs import markup_in
from pathbind_tasks.common.accounting import FAULT
from pathbind_tasks.common.columns import with_column
from pathbind_tasks.common.harness import data_source
from pathbind_tasks.common.image_paths import ImageFolder, confine

TEXT = datasets.Value("string")
YES_NO_FEATURES = datasets.Features({"id": TEXT, "image": datasets.Image(), "question": TEXT, "answer": TEXT,
                                     "dimension": TEXT, "source": TEXT})
MCQ_FEATURES = datasets.Features({"id": TEXT, "image": datasets.Image(), "question": TEXT,
                                  "options": datasets.List(TEXT), "answer": TEXT, "dimension": TEXT, "source": TEXT})


def with_doc_error(features: datasets.Features) -> datasets.Features:
    """A schema plus ``doc_error``: the fault that keeps a converted row's data from being evaluated (null when
    none)."""
    return datasets.Features({**features, "doc_error": FAULT})


# "A) text", "(A) text", "A. text", "A: text": a capital and a delimiter; "A cell" is text, not a letter.
_PREFIX = re.compile(r"^\s*\(?([A-Z])[).:]\s*")
_LETTER = re.compile(r"^\s*\(?([A-Za-z])\)?\s*$")  # a letter alone names its option in either case


class DataFault(ValueError):
    """A fault of the data raised where it is found: :attr:`fault` is the value counted; the message, its words."""

    def __init__(self, fault: Fault) -> None:
        self.fault = fault
        super().__init__(str(fault))


class BadField(DataFault):
    """One field of one row is unusable: reason ``field 'f' <problem>``, detail the value (or ``detail``)."""

    def __init__(self, field: str, problem: str, value: Any = None, *, detail: str | None = None) -> None:
        super().__init__(Fault(f"field {field!r} {problem}", detail if detail is not None else f"got {value!r:.80}"))


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


def shown_text(value: Any, field: str) -> str:
    """:func:`text_field` for a field a model is shown (a question, an option, an expression): text without chat
    or image markup (:func:`pathbind.model_inputs.markup_in`), which raises :class:`BadField` naming the token."""
    text = text_field(value, field)
    token = markup_in(text)
    if token is not None:
        raise BadField(field, "holds a chat or image token of a model", detail=f"{token!r} in {_excerpt(text, token)}")
    return text


def _excerpt(text: str, token: str, width: int = 30) -> str:
    """The text around the first ``token``, quoted, cut to ``width`` characters each side."""
    start = text.index(token)
    before, after = text[max(0, start - width):start], text[start + len(token):start + len(token) + width]
    return repr(("…" if start > width else "") + before + token + after +
                ("…" if start + len(token) + width < len(text) else ""))


def text_problem(row: dict[str, Any], fields: Sequence[str]) -> Fault | None:
    """Why one of ``fields`` of ``row`` is not text (the first :class:`BadField`'s fault), None when all are."""
    for field in fields:
        try:
            text_field(row.get(field), field)
        except BadField as exc:
            return exc.fault
    return None


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

    A member that would land outside the folder (an absolute name, ``..``) is never written: the image-path rule
    of zip members (:mod:`image_paths`), logged once; an item naming it is then dropped as its file is absent.
    Processes unpacking at once each write a folder of their own and keep the first one renamed in place.
    """
    stat = archive.stat()
    key = hashlib.sha256(f"{archive.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    target = Path(datasets.config.HF_DATASETS_CACHE) / "pathbind_unpacked" / f"{archive.stem}-{key}"
    if target.is_dir():
        return target
    staging = target.with_name(f"{target.name}.{os.getpid()}.partial")
    with zipfile.ZipFile(archive) as bundle:
        members = bundle.namelist()
        outside = [m for m in members if m.startswith(("/", "\\")) or ".." in Path(m.replace("\\", "/")).parts]
        if outside:
            logger.warning(f"{archive}: {len(outside)} member(s) would be written outside the folder it is unpacked "
                           f"into and are left packed (first {outside[0]!r}); items naming them have no image file")
        logger.info(f"unpacking {archive} into {target} (once)")
        bundle.extractall(staging, [m for m in members if m not in outside])
    try:
        staging.rename(target)
    except OSError:  # another process finished first: keep its folder
        shutil.rmtree(staging, ignore_errors=True)
    return target


def images_in(root: Path, archive: str, subfolders: Sequence[str]) -> Path:
    """Where a release's image names resolve: ``root`` when one of its image ``subfolders`` is there (or the
    ``archive`` is not), else the folder ``root/<archive>`` is unpacked into (:func:`unpacked`)."""
    if any((root / sub).is_dir() for sub in subfolders if sub) or not (root / archive).is_file():
        return root
    return unpacked(root / archive)


def schema_docs(dataset: datasets.Dataset, keep: Sequence[int], columns: dict[str, list[Any]],
                features: datasets.Features, images: ImageFolder) -> datasets.Dataset:
    """The kept rows' images, each read by the image-path rule in ``images`` (embedded bytes kept as they are, a
    path resolved there: :func:`image_paths.confine`), with the given schema columns; a refused path is the row's
    ``doc_error`` unless it has one (the images are checked by with_conditions)."""
    docs, refused = confine(dataset.select(keep).select_columns(["image"]).flatten_indices(), images)
    columns = {**columns, "doc_error": [Fault.read(own) or path for own, path in
                                        zip(columns["doc_error"], refused, strict=True)]}
    for name, values in columns.items():
        docs = with_column(docs, name, _stored(values), features[name])
    return docs.select_columns(list(features)).cast(features)


def _stored(values: list[Any]) -> list[Any]:
    """Column values as a dataset stores them: a Fault as its row."""
    return [value.row() if isinstance(value, Fault) else value for value in values]


def rows_to_docs(rows: list[dict[str, Any]], features: datasets.Features, *, dataset: str) -> datasets.Dataset:
    """Schema documents from converted rows, ``image`` as :meth:`ImageFolder.image` gives it, ``doc_error`` a
    Fault or None."""
    if not rows:
        raise ValueError(f"{dataset}: no items left after selection; check the raw data against the task README")
    return datasets.Dataset.from_list([dict(zip(row, _stored(list(row.values())), strict=True)) for row in rows],
                                      features=features)
