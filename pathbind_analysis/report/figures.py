"""matplotlib helpers: figures without pyplot (no GUI backend, no global state), saved as PNG (300 dpi), SVG and
PDF."""

from __future__ import annotations

from pathlib import Path
from typing import Any

DPI = 300  # the PNG's resolution: a journal's for figures with text
FORMATS = ("png", "svg", "pdf")  # the PNG for the HTML page, SVG and PDF for a paper
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")


def new_figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure  # imported here: the other pathbind commands never pay for matplotlib

    return Figure(figsize=(width, height), layout="constrained", dpi=110)


def save(figure: Any, path: Path) -> Path:
    """The figure as ``path`` (a .png) and beside it as .svg and .pdf; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in FORMATS:
        # No creation date in the SVG and PDF: the same runs give the same files.
        figure.savefig(path.with_suffix(f".{suffix}"), format=suffix, dpi=DPI,
                       metadata=None if suffix == "png" else {"Date": None})
    return path


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]
