"""Faults in words: a fault as a value (its reason and its detail), and one phrasing of a path that cannot be read,
for the run, ``data check`` and the records."""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Fault:
    """One fault, carried as a value from where it is found to where it is counted, so ``pathbind data check``, the
    run's messages and ``accounting`` say the same words.

    ``reason`` is what is counted (one kind of fault, one count however many items have it); ``detail`` what shows
    it for one item (the value, the file, the library's text), shown beside the first item that has it.

    Examples
    --------
    >>> str(Fault("field 'question' is a list, not text", "got ['a']"))
    "field 'question' is a list, not text (got ['a'])"
    >>> Fault.read({"reason": "no image", "detail": ""})
    Fault(reason='no image', detail='')
    """

    reason: str
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.reason} ({self.detail})" if self.detail else self.reason

    def row(self) -> dict[str, str]:
        """The fault as a documents' column holds it (``{"reason", "detail"}``)."""
        return {"reason": self.reason, "detail": self.detail}

    @classmethod
    def read(cls, value: Any) -> Fault | None:
        """The fault a column value holds (a :meth:`row`, a Fault), None for none (null, ""); a plain text, as a
        third party's column may hold, is its own reason."""
        if not value:
            return None
        if isinstance(value, Fault):
            return value
        if isinstance(value, Mapping):
            return cls(str(value.get("reason") or ""), str(value.get("detail") or "")) if value.get("reason") else None
        return cls(str(value))


def path_fault(path: Path, exc: OSError | None = None) -> str:
    """Why ``path`` cannot be read, in words: ``"<path>: a symbolic link to a missing file (<target>)"``, ``"...: a
    symbolic link loop"``, ``"...: is a file, not a folder"``; ``exc``, when given, is the error reading it raised.

    Examples
    --------
    >>> path_fault(Path("/nonexistent/images/a.png"))
    '/nonexistent/images/a.png: no such file or folder'
    """
    if path.is_symlink():
        try:
            os.stat(path)
        except OSError as error:
            exc = error
        if exc is not None and exc.errno == errno.ELOOP:
            return f"{path}: a symbolic link loop (to {os.readlink(path)})"
        if exc is not None and exc.errno == errno.ENOENT:
            return f"{path}: a symbolic link to a missing file ({os.readlink(path)})"
    if not path.exists() and not path.is_symlink():
        return f"{path}: no such file or folder"
    if exc is not None and exc.errno == errno.ENOTDIR:
        return f"{path}: is a file, not a folder"
    reason = (exc.strerror or str(exc)).lower() if exc is not None else "cannot be read"
    return f"{path}: {reason}"


def folder_fault(path: Path) -> str:
    """Why ``path`` is not a folder to read ("" when it is one): missing, a file, or a broken link."""
    if path.is_dir():
        return ""
    if path.is_file():
        return f"{path}: is a file, not a folder"
    return path_fault(path) if path.is_symlink() else f"{path}: no such folder"

