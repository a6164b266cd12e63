"""Image-token views (runs of image tokens in row-major order over a patch grid) and their stitching into maps."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class View:
    start: int  # index into the image-token positions
    grid: tuple[int, int]
    tile: tuple[int, int] | None  # (row, column) in the mosaic; None for the whole image


def square_grid(count: int) -> tuple[int, int]:
    """The side × side grid of ``count`` image tokens; ValueError when they do not form a square."""
    side = math.isqrt(count)
    if side * side != count:
        raise ValueError(f"{count} image tokens do not form a square grid")
    return side, side


def view_maps(row: np.ndarray, views: list[View]) -> list[np.ndarray]:
    """Split a flat row over the image tokens into each view's grid."""
    return [row[v.start:v.start + v.grid[0] * v.grid[1]].reshape(v.grid) for v in views]


def stitch(maps: list[np.ndarray], views: list[View]) -> tuple[np.ndarray, np.ndarray | None]:
    """(map, global map): the tile mosaic and the whole-image view, or the single view and None.

    Tiles cover the resized image edge to edge, so each goes to its image position in one mosaic grid: that mosaic
    is the attention map, and the whole-image view of a tiled layout is reported separately as the global map.
    """
    tiles = [(m, v) for m, v in zip(maps, views, strict=True) if v.tile is not None]
    whole = next((m for m, v in zip(maps, views, strict=True) if v.tile is None), None)
    if not tiles:
        assert whole is not None
        return whole, None
    height, width = tiles[0][1].grid
    rows = 1 + max(v.tile[0] for _, v in tiles if v.tile)
    columns = 1 + max(v.tile[1] for _, v in tiles if v.tile)
    mosaic = np.zeros((rows * height, columns * width))
    for tile_map, view in tiles:
        assert view.tile is not None
        row, column = view.tile
        mosaic[row * height:(row + 1) * height, column * width:(column + 1) * width] = tile_map
    return mosaic, whole
