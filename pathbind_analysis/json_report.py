"""Writes an analysis command's machine-readable report: strict JSON with undefined figures as null."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pathbind.strict_json import dumps_strict


def write_json_report(path: Path, report: dict[str, Any]) -> None:
    """Write ``report`` to ``path`` (parents created), NaN and infinite figures as null."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps_strict(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")



def output_problem(path: Path | None, option: str, *, folder: bool = False) -> str | None:
    """Why ``path`` cannot be written (as a file, or with ``folder`` as a folder), checked before the work that
    would end in writing it; None when it can (or when no path was given)."""
    if path is None:
        return None
    if folder and path.exists() and not path.is_dir():
        return f"{option} {path}: a file, not a folder"
    if not folder and path.is_dir():
        return f"{option} {path}: a folder, not a file"
    existing = next((p for p in [path, *path.parents] if p.exists()), Path("."))
    if existing != path and not existing.is_dir():
        return f"{option} {path}: {existing} is a file, not a folder"
    if not os.access(existing, os.W_OK | (os.X_OK if existing.is_dir() else 0)):
        return f"{option} {path}: {existing} is not writable"
    return None
