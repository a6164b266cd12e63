"""The supported model families: how each lays out its image tokens as patch grids, and its box convention.

An image becomes one or more *views*, each a run of image tokens in row-major order over a patch grid:

- Qwen2-VL / Qwen2.5-VL / Qwen3-VL: one view of (h/m)×(w/m) tokens, h×w = ``image_grid_thw`` and m the
  spatial merge size (2×2 patches merged per token);
- LLaVA-1.5 (CLS dropped), Gemma3 (pooled to ``mm_tokens_per_image``): one square view;
- InternVL: ``crop_to_patches`` tiles the image into a columns×rows canvas of tiles, row-major, followed by a
  thumbnail of the whole image (a single view when the image fits one tile);
- Idefics3 / SmolVLM: tiles marked ``<row_r_col_c>`` in the text, row-major, then the ``<global-img>`` view.

Tiles are stitched into one mosaic grid in their image position (they cover the resized image edge to edge);
that mosaic is the attention map. The whole-image view of a tiled layout is reported separately as the global
map. Layouts with one view use it as the map.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch


@dataclass(frozen=True)
class View:
    start: int  # index into the image-token positions
    grid: tuple[int, int]
    tile: tuple[int, int] | None  # (row, column) in the mosaic; None for the whole image


# (model config, processor, processed inputs of one image, image-token positions, image (W, H)) -> views
Layout = Callable[[Any, Any, dict[str, torch.Tensor], np.ndarray, tuple[int, int]], list[View]]


@dataclass(frozen=True)
class Family:
    name: str
    model_types: tuple[str, ...]
    layout: Layout
    # The frame the model writes boxes in, whatever the prompt asks (pathbind_models.hf.frames): "per_mille"
    # (0–1000), "input_pixel" (pixels of the resized input), None when undocumented (taken to follow the prompt).
    native_box_frame: str | None


def _qwen(config: Any, processor: Any, inputs: dict[str, torch.Tensor], positions: np.ndarray,
          image_size: tuple[int, int]) -> list[View]:
    _, height, width = (int(v) for v in inputs["image_grid_thw"][0])
    merge = config.vision_config.spatial_merge_size
    return [View(0, (height // merge, width // merge), None)]


def _square(config: Any, processor: Any, inputs: dict[str, torch.Tensor], positions: np.ndarray,
            image_size: tuple[int, int]) -> list[View]:
    return [View(0, _side(len(positions)), None)]


def _internvl(config: Any, processor: Any, inputs: dict[str, torch.Tensor], positions: np.ndarray,
              image_size: tuple[int, int]) -> list[View]:
    from transformers.models.got_ocr2.image_processing_got_ocr2 import get_optimal_tiled_canvas

    tiles = len(inputs["pixel_values"])
    per_tile = len(positions) // tiles
    if tiles == 1:
        return [View(0, _side(per_tile), None)]
    images = processor.image_processor
    size = images.size if isinstance(images.size, dict) else vars(images.size)
    width, height = image_size
    columns, rows = get_optimal_tiled_canvas((height, width), (size["height"], size["width"]),
                                             images.min_patches, images.max_patches)
    if columns * rows != tiles - 1:
        raise ValueError(f"InternVL gave {tiles} tiles, expected {columns}×{rows} plus a thumbnail")
    grid = _side(per_tile)
    views = [View(i * per_tile, grid, divmod(i, columns)) for i in range(tiles - 1)]
    return [*views, View((tiles - 1) * per_tile, grid, None)]


_ROW_COL = re.compile(r"<row_(\d+)_col_(\d+)>")


def _idefics3(config: Any, processor: Any, inputs: dict[str, torch.Tensor], positions: np.ndarray,
              image_size: tuple[int, int]) -> list[View]:
    starts = [0, *(np.flatnonzero(np.diff(positions) > 1) + 1)]
    ids = inputs["input_ids"][0]
    views = []
    for start, end in zip(starts, [*starts[1:], len(positions)], strict=True):
        marker = processor.tokenizer.convert_ids_to_tokens(int(ids[positions[start] - 1]))
        match = _ROW_COL.fullmatch(str(marker))
        tile = (int(match.group(1)) - 1, int(match.group(2)) - 1) if match else None
        views.append(View(int(start), _side(int(end - start)), tile))
    return views


def _side(count: int) -> tuple[int, int]:
    side = math.isqrt(count)
    if side * side != count:
        raise ValueError(f"{count} image tokens do not form a square grid")
    return side, side


FAMILIES = (
    Family("qwen2_vl", ("qwen2_vl",), _qwen, "per_mille"),
    Family("qwen2_5_vl", ("qwen2_5_vl",), _qwen, "input_pixel"),
    Family("qwen3_vl", ("qwen3_vl",), _qwen, "per_mille"),
    Family("llava", ("llava",), _square, None),
    Family("internvl", ("internvl",), _internvl, "per_mille"),
    Family("gemma3", ("gemma3",), _square, None),
    Family("idefics3", ("idefics3",), _idefics3, None),
    Family("smolvlm", ("smolvlm",), _idefics3, None),
)


def family_of(config: Any, pretrained: str) -> Family:
    """The family of a checkpoint's config; ValueError naming the supported families otherwise."""
    for family in FAMILIES:
        if config.model_type in family.model_types:
            return family
    supported = ", ".join(f.name for f in FAMILIES)
    raise ValueError(f"{pretrained}: model type {config.model_type!r} is not supported by pathbind_hf "
                     f"(supported families: {supported})")


def stitch(maps: list[np.ndarray], views: list[View]) -> tuple[np.ndarray, np.ndarray | None]:
    """(map, global map): the tile mosaic and the whole-image view, or the single view and None."""
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
