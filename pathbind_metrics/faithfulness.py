"""Causal faithfulness of heat maps: occlusion maps, rank agreement, mass in a box, pointing, curves, tests.

Maps live on a G×G grid over a W×H image, defined once by :func:`pathbind_conventions.cell_edges`: cell (r, c)
is the pixels ``[⌊c·W/G⌋, ⌊(c+1)·W/G⌋) × [⌊r·H/G⌋, ⌊(r+1)·H/G⌋)``, the ones an occlusion of that cell paints.
Degenerate input gives NaN (the caller records why), never an exception.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy import special, stats

from pathbind_conventions import cell_edges, cell_fractions

Box = Sequence[float] | np.ndarray


def margin(logprobs: ArrayLike, reference: int) -> float:
    """Log-probability of the reference option minus that of the best other option (> 0: the reference wins).

    >>> margin([-0.1, -2.5, -3.0], 0)
    2.4
    """
    values = np.asarray(logprobs, dtype=float)
    return float(values[reference] - np.delete(values, reference).max())


def occlusion_map(original: ArrayLike, occluded: ArrayLike, reference: int, grid: int) -> np.ndarray:
    """Signed causal map δ = margin(original) − margin(cell occluded), G×G, from (G², K) occluded log-probs.

    δ > 0 where hiding the cell lowers the reference answer's margin.
    """
    rows = np.asarray(occluded, dtype=float)
    values = rows[:, reference] - np.delete(rows, reference, axis=1).max(axis=1)
    return (margin(original, reference) - values).reshape(grid, grid)


def spearman(a: ArrayLike, b: ArrayLike) -> float:
    """Spearman's ρ (scipy's ``spearmanr``: Pearson correlation of the average ranks, ties sharing a rank); NaN if
    either is constant.

    >>> round(spearman([1, 2, 3, 4], [10, 20, 40, 30]), 6)
    0.8
    """
    x, y = (np.asarray(v, dtype=float).ravel() for v in (a, b))
    if x.size < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:  # undefined: NaN, without scipy's warning
        return math.nan
    return float(stats.spearmanr(x, y).statistic)


def box_coverage(box: Box, image_size: Sequence[int], grid: int) -> np.ndarray:
    """Fraction of each cell's area inside ``box`` ([x_min, y_min, x_max, y_max] pixels; image_size (W, H)); 0 for
    a cell without pixels (an image side shorter than ``grid``)."""
    width, height = image_size
    x0, y0, x1, y1 = (float(v) for v in box)
    cols = _interval_overlap(x0 / width, x1 / width, cell_fractions(width, grid))
    rows = _interval_overlap(y0 / height, y1 / height, cell_fractions(height, grid))
    return np.outer(rows, cols)


def _interval_overlap(low: float, high: float, edges: np.ndarray) -> np.ndarray:
    # In fractions of the side, so a side divisible by a power-of-two grid gives exactly the equal-cell values.
    inside = np.clip(np.minimum(edges[1:], high) - np.maximum(edges[:-1], low), 0, None)
    widths = np.diff(edges)
    return np.divide(inside, widths, out=np.zeros_like(inside), where=widths > 0)


def mass_in_box(values: ArrayLike, coverage: np.ndarray) -> float:
    """Attribution mass in mask (AMiM): share of a non-negative map's total inside the box (cells weighted by
    their covered fraction); NaN for a map with a negative or non-finite value or a zero total.

    >>> mass_in_box([[3.0, 1.0]], np.array([[1.0, 0.0]]))
    0.75
    """
    values = np.asarray(values, dtype=float)
    total = float(values.sum())
    if not np.isfinite(values).all() or (values < 0).any() or total <= 0:
        return math.nan
    return float((values * coverage).sum() / total)


def pointing(values: ArrayLike, coverage: np.ndarray) -> tuple[float, bool]:
    """Pointing game: (hit, tie). A hit is a unique maximum cell with at least half its area in the box; several
    cells sharing the maximum are a tie and never a hit. NaN hit for a non-finite map.

    >>> pointing([[0.0, 2.0], [1.0, 2.0]], np.ones((2, 2)))
    (0.0, True)
    """
    values = np.asarray(values, dtype=float)
    if not np.isfinite(values).all():
        return math.nan, False
    top = np.flatnonzero(values.ravel() == values.max())
    if top.size > 1:
        return 0.0, True
    return float(coverage.ravel()[top[0]] >= 0.5), False


def control_boxes(box: Box, image_size: Sequence[int], rng: np.random.Generator) -> dict[str, list[float]]:
    """Control boxes for ``box``: ``shifted`` by half the image (wrapped to stay inside), ``far`` (same size,
    random position not overlapping it; NaN when none fits), ``random_size`` (sides 10–50% of the image)."""
    width, height = image_size
    x0, y0, x1, y1 = (float(v) for v in box)
    w, h = x1 - x0, y1 - y0
    shifted = [(x0 + width / 2) % (width - w + 1), (y0 + height / 2) % (height - h + 1)]
    far = _far_corner(x0, y0, w, h, width, height, rng)
    sw, sh = rng.uniform(0.1, 0.5) * width, rng.uniform(0.1, 0.5) * height
    sx, sy = rng.uniform(0, width - sw), rng.uniform(0, height - sh)
    return {"true": [x0, y0, x1, y1], "shifted": [shifted[0], shifted[1], shifted[0] + w, shifted[1] + h],
            "far": [far[0], far[1], far[0] + w, far[1] + h], "random_size": [sx, sy, sx + sw, sy + sh]}


def random_box(box: Box, image_size: Sequence[int], rng: np.random.Generator) -> list[float]:
    """A box of ``box``'s size at a uniformly drawn position inside the image (it may overlap ``box``): the control
    of ROI deletion."""
    width, height = image_size
    x0, y0, x1, y1 = (float(v) for v in box)
    x, y = rng.uniform(0, max(width - (x1 - x0), 0)), rng.uniform(0, max(height - (y1 - y0), 0))
    return [x, y, x + x1 - x0, y + y1 - y0]


def _far_corner(x0: float, y0: float, w: float, h: float, width: int, height: int,
                rng: np.random.Generator) -> tuple[float, float]:
    """A uniformly drawn whole-pixel position for a w×h box that does not overlap the box at (x0, y0)."""
    xs, ys = np.arange(0, width - w + 1), np.arange(0, height - h + 1)
    apart = (ys[:, None] >= y0 + h) | (ys[:, None] + h <= y0) | (xs[None, :] >= x0 + w) | (xs[None, :] + w <= x0)
    choices = np.flatnonzero(apart)
    if choices.size == 0:
        return math.nan, math.nan
    row, col = divmod(int(rng.choice(choices)), xs.size)
    return float(xs[col]), float(ys[row])


def reference_probability(logprobs: ArrayLike, reference: int) -> np.ndarray:
    """Probability of the reference among the options (softmax of their log-probs); works row-wise on (N, K)."""
    values = np.asarray(logprobs, dtype=float)
    return np.exp(values[..., reference] - special.logsumexp(values, axis=-1))


def curve_auc(values: ArrayLike) -> float:
    """Area under a curve sampled at equally spaced fractions 0, 1/S, …, 1 (trapezoid rule).

    >>> curve_auc([1.0, 0.5, 0.0])
    0.5
    """
    y = np.asarray(values, dtype=float)
    return float(((y[1:] + y[:-1]) / 2).sum() / (y.size - 1))


def answer_index(logprobs: ArrayLike) -> int:
    """The option with the strictly highest log-probability, or -1 when several share it (no answer)."""
    values = np.asarray(logprobs, dtype=float)
    top = np.flatnonzero(values == values.max())
    return int(top[0]) if top.size == 1 else -1


def cell_areas(image_size: Sequence[int], grid: int) -> np.ndarray:
    """Pixels in each cell of the G×G grid over a W×H image (``pathbind_conventions.cell_edges``)."""
    width, height = image_size
    return np.outer(np.diff(cell_edges(int(height), grid)), np.diff(cell_edges(int(width), grid))).astype(float)


def box_average_precision(values: ArrayLike, coverage: np.ndarray, areas: np.ndarray) -> float:
    """Pixel AP of a map against a box, every pixel scored by its cell's value: the cells that were occluded.

    Average precision as ``sklearn.metrics.average_precision_score`` defines it (tied scores form one threshold),
    over the pixels of each cell (``areas``), a share ``coverage`` of them inside the box. NaN for a non-finite map
    or a box covering no pixel.

    >>> box_average_precision([[2.0, 1.0]], np.array([[1.0, 0.0]]), np.ones((1, 2)))
    1.0
    """
    return float(pair_measures(np.asarray(values, dtype=float).reshape(1, -1), coverage.reshape(1, -1),
                               np.asarray(areas, dtype=float).ravel())["box_ap"][0, 0])


def pair_measures(maps: np.ndarray, coverages: np.ndarray, areas: np.ndarray) -> dict[str, np.ndarray]:
    """Each (map i, box j) pair's box measures, (n maps × m boxes) each, from flattened maps (n, C), box coverages
    (m, C) and cell areas (C,): ``amim`` (the map's mass in the box; the maps should be shares summing to 1),
    ``pointing_hit`` (:func:`pointing`: a unique maximum on a cell at least half in the box; a tie is no hit) and
    ``box_ap`` (:func:`box_average_precision`). The box-placement nulls evaluate every pair at once this way."""
    maps, coverages = np.asarray(maps, dtype=float), np.asarray(coverages, dtype=float)
    finite = np.isfinite(maps).all(axis=1)
    amim = maps @ coverages.T
    hits = np.zeros((len(maps), len(coverages)))
    ap = np.full((len(maps), len(coverages)), math.nan)
    positives = coverages * areas  # box pixels per cell
    total = positives.sum(axis=1)
    for i in np.flatnonzero(finite):
        top = np.flatnonzero(maps[i] == maps[i].max())
        hits[i] = (coverages[:, top[0]] >= 0.5) if top.size == 1 else 0.0
        order = np.argsort(-maps[i], kind="stable")
        ranked = maps[i][order]
        ends = np.append(np.flatnonzero(np.diff(ranked) != 0), ranked.size - 1)  # last cell of each tie group
        true = positives[:, order].cumsum(axis=1)[:, ends]
        seen = np.cumsum(areas[order])[ends]
        recall = np.divide(true, total[:, None], out=np.zeros_like(true), where=total[:, None] > 0)
        steps = np.diff(recall, prepend=0.0, axis=1)
        ap[i] = np.where(total > 0, (steps * true / seen).sum(axis=1), math.nan)
    amim[~finite], hits[~finite] = math.nan, math.nan
    return {"amim": amim, "pointing_hit": hits, "box_ap": ap}


def paired_cohens_d(differences: ArrayLike) -> float:
    """Cohen's d of paired differences (d_z): their mean over their standard deviation (ddof 1), NaN for fewer than
    two finite values or no spread.

    >>> paired_cohens_d([1.0, 2.0, 3.0])
    2.0
    """
    values = np.asarray(differences, dtype=float)
    values = values[np.isfinite(values)]
    if values.size < 2 or values.std(ddof=1) == 0:
        return math.nan
    return float(values.mean() / values.std(ddof=1))
