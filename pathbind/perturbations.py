"""The perturbations of an occlusion request (``pathbind.requests.OcclusionRequest``), defined once for every model.

:func:`occlude` fills cells of the G×G grid (cell edges at ``floor(i * size / G)``) with :func:`fill_colour`;
:func:`curve_masks` gives the occluded cells at each insertion/deletion curve step.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

GREY = (128, 128, 128)


def cell_edges(length: int, grid: int) -> np.ndarray:
    """Pixel edges of ``grid`` cells along a side of ``length`` pixels: cell i is ``[edges[i], edges[i+1])``."""
    return (np.arange(grid + 1) * length) // grid


def fill_colour(image: Image.Image, fill: str) -> tuple[int, int, int]:
    """``mean``: the image's own mean colour (an occluded patch carries no new colour); ``grey``: mid-grey."""
    if fill == "grey":
        return GREY
    mean = np.asarray(image.convert("RGB"), dtype=float).reshape(-1, 3).mean(axis=0)
    red, green, blue = (round(float(v)) for v in mean)
    return red, green, blue


def occlude(image: Image.Image, mask: np.ndarray, colour: tuple[int, int, int]) -> Image.Image:
    """``image`` with the cells where the G×G boolean ``mask`` is true painted ``colour``."""
    pixels = np.array(image.convert("RGB"))
    grid = mask.shape[0]
    rows, cols = cell_edges(pixels.shape[0], grid), cell_edges(pixels.shape[1], grid)
    for r, c in zip(*np.nonzero(mask), strict=True):
        pixels[rows[r]:rows[r + 1], cols[c]:cols[c + 1]] = colour
    return Image.fromarray(pixels)


def curve_orders(attention: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """Cell orders of the curves: hottest attention first (ties by cell index), and a seeded random order."""
    flat = np.asarray(attention, dtype=float).ravel()
    return {"attention": np.argsort(-flat, kind="stable"),
            "random": np.random.default_rng(seed).permutation(flat.size)}


def curve_masks(order: np.ndarray, grid: int, steps: int, kind: str) -> list[np.ndarray]:
    """Occluded cells at each of ``steps + 1`` points: deletion occludes the first ``round(s/steps · G²)`` cells of
    ``order``; insertion starts fully occluded and reveals them."""
    count = grid * grid
    masks = []
    for step in range(steps + 1):
        taken = np.zeros(count, bool)
        taken[order[:round(step * count / steps)]] = True
        masks.append((taken if kind == "deletion" else ~taken).reshape(grid, grid))
    return masks
