"""Data faults in words: one phrasing of a path that cannot be read, for the run, ``data check`` and the records."""

from __future__ import annotations

import errno
import os
from pathlib import Path


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

