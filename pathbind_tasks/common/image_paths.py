"""Image paths: one rule for every road an image path takes into a task.

The roads are a column of file names, an image struct ``{bytes: null, path}`` (parquet written by pandas or
pyarrow), a text in a JSON file, an element of a list of names, and a member of an image archive. On each, a path
is resolved against the data folder (:class:`ImageFolder`), never against the folder the command runs in, and is
never read when it leaves that folder: an absolute path elsewhere, ``..`` above it, or a link inside the folder
that leads out of it. Such an item is a fault of the data, dropped and counted under one reason
(:data:`OUTSIDE`), so every file a run reads lies in the folder its data record lists. A link to the data folder
itself is followed: it is where the data is. Text that holds a base64-encoded image (VLMEvalKit's TSVs, converted)
is the image it encodes, not a file name.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import datasets
import pyarrow.compute as pc

from pathbind.faults import Fault
from pathbind.lmms.running import running_task
from pathbind_tasks.common.columns import column_values, with_column

OUTSIDE = "is a path outside the data folder"
NO_FOLDER = "is a file path, but the data has no folder to read it from"
SEVERAL = "holds several images; the task shows one image per item"
NOT_AN_IMAGE = "is neither an image nor a file name"
NOT_BASE64_IMAGE = "holds base64 text that is no image"
# What a base64 text must decode to, to be taken for an image: the signatures of the formats PIL reads here.
SIGNATURES = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"II*\x00", b"MM\x00*", b"BM", b"RIFF")
_BASE64 = re.compile(r"(?:data:image/[\w.+-]+;base64,)?[A-Za-z0-9+/\s]{64,}={0,2}\s*")
STORED = datasets.Image(decode=False)  # a resolved image column: {bytes, path}, decoded when a document is read
Encoded = dict[str, Any]  # {"bytes": ..., "path": ...}, as datasets' Image(decode=False) holds an image


@dataclass(frozen=True)
class ImageFolder:
    """Where a task's image paths resolve: ``root`` (None when the data came with no folder, e.g. from the hub:
    then no path is read) and the ``subfolders`` of it a relative name is looked up in, in order."""

    root: Path | None
    subfolders: tuple[str, ...] = ("",)

    def __post_init__(self) -> None:
        if self.root is not None:  # absolute now: a name never resolves against a later working folder
            object.__setattr__(self, "root", Path(os.path.abspath(self.root)))

    @cached_property
    def real_root(self) -> Path | None:
        """The folder the root is, its links followed (a link to the data folder is the data folder)."""
        return Path(os.path.realpath(self.root)) if self.root is not None else None

    def image(self, value: Any, field: str = "image") -> tuple[Encoded | None, Fault | None]:
        """``(image, fault)`` for an image value of any road: ``{bytes, path}`` with the bytes it carries, or the
        path of its file in this folder; ``(None, None)`` when there is no image (the image check's "no image").

        A path is resolved by :meth:`file`; base64 text is decoded; a list of one image is that image, of several
        a fault (:data:`SEVERAL`).
        """
        if value is None:
            return None, None
        if isinstance(value, bytes | bytearray):
            return {"bytes": bytes(value), "path": None}, None
        if isinstance(value, dict):
            if value.get("bytes") is not None:
                return {"bytes": value["bytes"], "path": None}, None
            return self.image(value.get("path"), field)
        if isinstance(value, list | tuple):
            images = [v for v in value if v is not None]
            if len(images) > 1:
                return None, Fault(f"field {field!r} {SEVERAL}", f"{len(images)} images: {_shown(images)}")
            return self.image(images[0] if images else None, field)
        if not isinstance(value, str):
            return None, Fault(f"field {field!r} {NOT_AN_IMAGE}", f"got a {type(value).__name__}")
        if _BASE64.fullmatch(value):  # base64 text, not a file name
            encoded = base64_image(value)
            if encoded is None:
                return None, Fault(f"field {field!r} {NOT_BASE64_IMAGE}",
                                   f"{len(value):,} characters: {_shown(value, 60)}")
            return {"bytes": encoded, "path": None}, None
        path, fault = self.file(value, field)
        return ({"bytes": None, "path": path} if path else None), fault

    def file(self, name: str, field: str = "image") -> tuple[str | None, Fault | None]:
        """``(path, fault)`` for the file name ``name``: the file under the first subfolder that has it, its name in
        the data's Unicode normalisation or the other one (NFC, NFD: a copy between systems may change it), else
        where it was expected (the image check reports it absent, naming it). A name that leaves the folder, or a
        file that is a link out of it, is ``(None, fault)``; a blank name ``(None, None)``."""
        if not name.strip():
            return None, None
        if self.root is None:
            return None, Fault(f"field {field!r} {NO_FOLDER}", f"got {_shown(name)}")
        forms = list(dict.fromkeys([name, unicodedata.normalize("NFC", name), unicodedata.normalize("NFD", name)]))
        if os.path.isabs(name):
            candidates = [Path(os.path.normpath(form)) for form in forms]
        else:
            candidates = [Path(os.path.normpath(self.root / sub / form)) for form in forms for sub in self.subfolders]
        if not all(self._inside(path) for path in candidates):
            return None, Fault(f"field {field!r} {OUTSIDE}", f"got {_shown(name)}")
        found = next((path for path in candidates if path.is_file()), candidates[0])
        if found.exists() and not self._inside(Path(os.path.realpath(found)), real=True):
            return None, Fault(f"field {field!r} {OUTSIDE}",
                               f"got {_shown(name)}, a link to {os.path.realpath(found)}")
        return str(found), None

    def _inside(self, path: Path, real: bool = False) -> bool:
        root = self.real_root if real else self.root
        return root is not None and path.is_relative_to(root)


def base64_image(text: str) -> bytes | None:
    """The image a base64 text (or ``data:image/...;base64,`` URI) encodes; None for any other text."""
    if len(text) < 64 or not _BASE64.fullmatch(text):
        return None
    try:
        data = base64.b64decode(text.partition("base64,")[2] or text)
    except (binascii.Error, ValueError):
        return None
    return data if data.startswith(SIGNATURES) else None


def _shown(value: Any, limit: int = 200) -> str:
    """A value as a message shows it: never more than ``limit`` characters of it."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 3]}..."


def data_folder() -> Path | None:
    """The running task's data folder: the folder of the data files it reads (``$PATHBIND_DATA/<name>/`` when that
    is set), or its ``save_to_disk`` folder; None for data from the hub or held in memory."""
    task = running_task()
    if task is None:
        return None
    files = task.data_files
    named = [files] if isinstance(files, str) else list(files.values()) if isinstance(files, dict) else []
    paths = [p for group in named for p in ([group] if isinstance(group, str) else group or [])]
    parents = {os.path.dirname(os.path.abspath(p)) for p in paths if isinstance(p, str) and os.path.isabs(p)}
    if parents:
        return Path(os.path.commonpath(sorted(parents)))
    path = task.dataset_path
    return Path(path).absolute() if isinstance(path, str) and os.path.isdir(path) else None


def task_images(subfolders: Sequence[str] = ("",)) -> ImageFolder:
    """The running task's :class:`ImageFolder`: its :func:`data_folder`."""
    return ImageFolder(data_folder(), tuple(subfolders))


def confine(docs: datasets.Dataset, images: ImageFolder, column: str = "image"
            ) -> tuple[datasets.Dataset, list[Fault | None]]:
    """``docs`` with every value of the image column resolved by ``images`` (``{bytes, path}``, undecoded), and each
    row's fault (None when it has none). A column whose every image carries its bytes is left as it is, its bytes
    never copied."""
    if embedded(docs.features[column]) and not any(file_paths(docs, column)):
        return docs, [None] * len(docs)
    resolved = [images.image(value, column) for value in column_values(_undecoded(docs, column), column)]
    values = [image for image, _ in resolved]
    if docs.column_names == [column]:  # a table of no columns would lose its rows on a later cast
        docs = datasets.Dataset.from_dict({column: values}, features=datasets.Features({column: STORED}))
    else:
        docs = with_column(docs.remove_columns(column), column, values, STORED)
    return docs, [fault for _, fault in resolved]


def file_paths(docs: datasets.Dataset, column: str = "image") -> list[str | None]:
    """For each row of an image column of ``{bytes, path}``, its path when it has no bytes (None otherwise), read
    through Arrow a batch at a time: the bytes are never converted, and few are held at once."""
    feature = docs.features[column]
    if not (isinstance(feature, datasets.Image) or (isinstance(feature, dict) and {"bytes", "path"} <= set(feature))):
        return [None] * len(docs)
    found: list[str | None] = []
    for batch in docs.select_columns([column]).with_format("arrow").iter(batch_size=1024):
        images = batch.column(column)
        stored = pc.is_valid(pc.struct_field(images, "bytes")).to_pylist()
        found += [None if has_bytes else path for path, has_bytes in
                  zip(pc.struct_field(images, "path").to_pylist(), stored, strict=True)]
    return found


def embedded(feature: Any) -> bool:
    """Whether an image column of this type holds the images themselves (datasets' Image, ``{bytes, path}`` as
    parquet written without its metadata, raw bytes) rather than file names; a struct may hold a path instead."""
    if isinstance(feature, datasets.Value):
        return feature.dtype in ("binary", "large_binary")
    return isinstance(feature, datasets.Image) or (isinstance(feature, dict) and "bytes" in feature)


def _undecoded(docs: datasets.Dataset, column: str) -> datasets.Dataset:
    """The image column as stored: an Image feature left undecoded (a file name stays a name)."""
    if isinstance(docs.features[column], datasets.Image):
        return docs.select_columns([column]).cast_column(column, datasets.Image(decode=False))
    return docs.select_columns([column])
