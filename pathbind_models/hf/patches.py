"""Values over an image's processed pixels or its vision tower's patches, reduced to its image tokens.

The families lay the image out in two ways, both read from the tensors' shapes: rows of flattened patches
(Qwen2-VL, Qwen2.5-VL, Qwen3-VL: ``pixel_values`` is (patches, channels × patch²) and the vision tower keeps one
row per patch; m×m consecutive rows merge into one token), or frames of pixels (LLaVA, Gemma3, InternVL, Idefics3,
SmolVLM: (…, 3, H, W), one frame per view in the views' order, the vision tower giving each frame a square grid of
patches, after a CLS token in CLIP-style towers). A frame's values reduce to its view's token grid by blocks.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from pathbind_models.hf.views import View


def pixel_token_sums(values: np.ndarray, views: list[View], tokens: int) -> np.ndarray:
    """Per image token, the sum of ``values`` (shaped as the processor's ``pixel_values`` of one image) over the
    pixels it covers; ValueError when the layout cannot be matched to the views."""
    if values.ndim == 2:  # rows of flattened patches
        return _row_groups(values.sum(axis=1), tokens, np.sum)
    frames = values.reshape(-1, *values.shape[-3:]).sum(axis=1)  # (frames, H, W), channels summed
    return _frame_tokens(frames, views, tokens, np.sum)


def patch_token_means(values: np.ndarray, views: list[View], tokens: int) -> np.ndarray:
    """Per image token, the mean of a vision tower's per-patch ``values``: (patches,) for row layouts, (frames,
    patches per frame) for frame layouts (a leading CLS entry is dropped)."""
    if values.ndim == 1:
        return _row_groups(values, tokens, np.mean)
    side = math.isqrt(values.shape[1])
    if side * side != values.shape[1]:  # CLS first
        values = values[:, 1:]
        side = math.isqrt(values.shape[1])
    if side * side != values.shape[1]:
        raise ValueError(f"{values.shape[1]} vision patches per frame do not form a square grid")
    return _frame_tokens(values.reshape(-1, side, side), views, tokens, np.mean)


Reduce = Callable[..., np.ndarray]


def _row_groups(rows: np.ndarray, tokens: int, reduce: Reduce) -> np.ndarray:
    if tokens == 0 or rows.shape[0] % tokens:
        raise ValueError(f"{rows.shape[0]} patch rows do not merge evenly into {tokens} image tokens")
    return np.asarray(reduce(rows.reshape(tokens, -1), axis=1))


def _frame_tokens(frames: np.ndarray, views: list[View], tokens: int, reduce: Reduce) -> np.ndarray:
    if len(frames) != len(views):
        raise ValueError(f"{len(frames)} image frames for {len(views)} views of image tokens")
    out = np.zeros(tokens)
    for frame, view in zip(frames, views, strict=True):
        rows, cols = view.grid
        if frame.shape[0] % rows or frame.shape[1] % cols:
            raise ValueError(f"a {frame.shape[0]}×{frame.shape[1]} frame does not split into its {rows}×{cols} "
                             "image tokens")
        blocks = frame.reshape(rows, frame.shape[0] // rows, cols, frame.shape[1] // cols)
        out[view.start:view.start + rows * cols] = np.asarray(reduce(blocks, axis=(1, 3))).ravel()
    return out
