"""Writes an analysis command's machine-readable report: strict JSON with undefined figures as null."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pathbind.strict_json import dumps_strict


def write_json_report(path: Path, report: dict[str, Any]) -> None:
    """Write ``report`` to ``path`` (parents created), NaN and infinite figures as null."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps_strict(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

