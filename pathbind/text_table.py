"""Plain text for the command line: tables, and the values messages quote."""

from __future__ import annotations

import math
from typing import Any


def format_table(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    """Left-aligned columns (default: every key, in first-seen order); floats with one decimal, or three below 1
    (fractions and correlations such as IoU 0.798 would otherwise all read 0.8)."""
    columns = columns or list(dict.fromkeys(key for row in rows for key in row))
    cells = [[cell_text(row.get(c)) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(line.rstrip() for line in lines)


def cell_text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:.3f}" if 0 < abs(value) < 1 else f"{value:.1f}"
    return str(value)


def quoted(value: Any, limit: int = 60) -> str:
    """``value`` as a message quotes it: its type and repr, the repr cut to ``limit`` characters.

    >>> quoted(None), quoted("x" * 80)[:12]
    ('NoneType None', "str 'xxxxxxx")
    """
    shown = repr(value)
    return f"{type(value).__name__} {shown if len(shown) <= limit else shown[:limit - 3] + '...'}"
