"""``pathbind report``: the paper's tables and figures from lmms-eval output folders, as Markdown and HTML."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["ReportError", "build_report"]
_HOMES = {"build_report": "pathbind_analysis.report.builder", "ReportError": "pathbind_analysis.report.runs"}


def __getattr__(name: str) -> Any:
    # Imported on first use, so that the `pathbind` command line (which registers `report` with every other command)
    # starts without loading the report's plotting and dataset libraries.
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
