"""How numbers appear in the report's tables (one decimal, as in the paper)."""

from __future__ import annotations

import math
from typing import Any

from pathbind_analysis.report.document import BEST, Cell

MISSING = "–"


def number(value: Any, *, scale: float = 1.0) -> str:
    """One decimal; ``n/a`` for NaN (a measure the run could not score), ``–`` for a value the run lacks."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return MISSING
    return "n/a" if math.isnan(value) else f"{value * scale:.1f}"


def with_change(value: Any, change: Any) -> str:
    """The paper's "73.2↑23.6": a value and its change against the reference condition (↓ when negative)."""
    if not isinstance(change, int | float) or math.isnan(change):
        return number(value)
    return f"{number(value)}{'↓' if change < 0 else '↑'}{abs(change):.1f}"


def bounds(interval: Any, *, scale: float = 1.0) -> str:
    """``[50.2, 77.0]``: a 95% interval's bounds (an interval dict of :mod:`pathbind_metrics.resampling`), ``–``
    for none, ``[no interval]`` for one that could not be computed (fewer than two clusters)."""
    if not isinstance(interval, dict):
        return MISSING
    low, high = interval.get("low"), interval.get("high")
    if not (finite(low) and finite(high)):
        return "[no interval]"
    return f"[{number(low, scale=scale)}, {number(high, scale=scale)}]"


def finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def best_marks(values: list[Any], *, higher_is_better: bool = True, mark: str = BEST) -> list[str]:
    """``mark`` for the entries holding the best finite value (all ties), "" elsewhere."""
    scored = [v for v in values if finite(v)]
    if not scored:
        return [""] * len(values)
    best = max(scored) if higher_is_better else min(scored)
    return [mark if finite(v) and v == best else "" for v in values]


def cells(texts: list[str], marks: list[str] | None = None) -> list[Cell]:
    return [Cell(text, mark) for text, mark in zip(texts, marks or [""] * len(texts), strict=True)]
