"""Writes an analysis command's machine-readable report: JSON with undefined figures as null."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any


def write_json_report(path: Path, report: dict[str, Any]) -> None:
    """Write ``report`` to ``path`` (parents created), NaN figures as null."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nan_to_null(report), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def nan_to_null(value: Any) -> Any:
    """JSON has no NaN: undefined figures (an empty test set, an empty stratum) become null."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {key: nan_to_null(item) for key, item in value.items()}
    if isinstance(value, list):
        return [nan_to_null(item) for item in value]
    return value
