"""matplotlib helpers: figures without pyplot (no GUI backend, no global state), saved as PNG."""

from __future__ import annotations

from pathlib import Path
from typing import Any

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")


def new_figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure  # imported here: the other pathbind commands never pay for matplotlib

    return Figure(figsize=(width, height), layout="constrained", dpi=110)


def save(figure: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png")
    return path


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]
