"""The conventions PathBind's core, tasks, models and metrics share, stated once: box frames, the refusal form, the
occlusion grid (and a map resampled onto it) and the stain colour model. numpy only, so every package can import it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

# Full scale of a box coordinate in each frame a prompt can ask boxes in; a pixel coordinate's is the image side.
BOX_CONVENTIONS = {"pixel": None, "unit": 1.0, "per_mille": 1000.0}

# The answer every PathView prompt offers for "the image cannot tell"; a trap's only safe answer.
REFUSAL_FORM = "insufficient evidence"


def cell_edges(length: int, grid: int) -> np.ndarray:
    """Pixel edges of the ``grid`` cells along a side of ``length`` pixels: cell i is pixels ``[edges[i], edges[i+1])``,
    the pixels an occlusion of that cell paints and the metrics measure.

    >>> cell_edges(10, 4).tolist()
    [0, 2, 5, 7, 10]
    """
    return (np.arange(grid + 1) * length) // grid



def cell_fractions(length: int | None, grid: int) -> np.ndarray:
    """:func:`cell_edges` as fractions of the side; None: a side divisible by ``grid`` (equal cells)."""
    length = grid if length is None else int(length)
    return cell_edges(length, grid) / length


def resample_to_grid(values: ArrayLike, grid: int, view: Sequence[float] = (0.0, 0.0, 1.0, 1.0),
                     image_size: Sequence[int] | None = None) -> np.ndarray:
    """Area-average a (h, w) map covering ``view`` onto the ``grid``×``grid`` cells of an ``image_size`` (W, H)
    image (None: a size divisible by ``grid``).

    ``view`` is ``(x_min, y_min, x_max, y_max)`` in fractions of the image sides (default: all of it). Each output
    cell is the mean of the input over the part of the cell the map covers, the input cells being weighted by
    their overlap, so a map already on the grid is unchanged and an 8×8 map onto 16×16 repeats each value in 2×2
    cells. A cell wholly outside the view (or without pixels) gets no attention (0).

    >>> resample_to_grid([[1.0, 3.0]], 1).tolist()
    [[2.0]]
    >>> resample_to_grid([[1.0, 3.0]], 2, view=(0.5, 0, 1, 1)).tolist()  # the map covers the right half
    [[0.0, 2.0], [0.0, 2.0]]
    """
    values = np.asarray(values, dtype=float)
    x_min, y_min, x_max, y_max = view
    width, height = (None, None) if image_size is None else image_size
    rows, cols = cell_fractions(height, grid), cell_fractions(width, grid)
    return _overlap(values.shape[0], rows, y_min, y_max) @ values @ _overlap(values.shape[1], cols, x_min, x_max).T


def _overlap(n_in: int, edges_out: np.ndarray, low: float, high: float) -> np.ndarray:
    """(n_out, n_in) weights: overlap of output cell i (``edges_out``, fractions of the side) with input cell j
    (input cells spanning [low, high] of the side), each row normalised to sum 1, or 0 where they do not meet."""
    edges_in = np.linspace(low, high, n_in + 1)
    lower = np.maximum(edges_out[:-1, None], edges_in[None, :-1])
    upper = np.minimum(edges_out[1:, None], edges_in[None, 1:])
    weights = np.clip(upper - lower, 0, None)
    totals = weights.sum(axis=1, keepdims=True)
    return np.divide(weights, totals, out=np.zeros_like(weights), where=totals > 0)

def _unit(vector: list[float]) -> np.ndarray:
    v = np.asarray(vector, dtype=float)
    return v / np.linalg.norm(v)


# The Beer-Lambert stain colour model: the demo generator renders with it, the controls unmix with it.
# Ruifrok & Johnston (2001) optical-density vectors; rows are hematoxylin, eosin, DAB. OD = C @ STAIN_MATRIX.
STAIN_MATRIX = np.stack([_unit([0.65, 0.70, 0.29]), _unit([0.07, 0.99, 0.11]), _unit([0.27, 0.57, 0.78])])
_UNMIX = np.linalg.inv(STAIN_MATRIX)


def concentrations_to_rgb(conc: np.ndarray) -> np.ndarray:
    """(..., 3) H/E/DAB concentrations to uint8 RGB = 255 exp(-C @ STAIN_MATRIX)."""
    od = np.asarray(conc, dtype=np.float32) @ STAIN_MATRIX.astype(np.float32)
    return np.clip(np.rint(255.0 * np.exp(-od)), 0, 255).astype(np.uint8)


def optical_density(rgb: np.ndarray) -> np.ndarray:
    """Optical density -ln(I / 255), with I >= 1 so black stays finite."""
    return -np.log(np.maximum(np.asarray(rgb, dtype=float), 1.0) / 255.0)


def rgb_to_concentrations(rgb: np.ndarray) -> np.ndarray:
    """Colour deconvolution: (..., 3) RGB in [0, 255] to H/E/DAB concentrations."""
    return optical_density(rgb) @ _UNMIX
