"""RISE (Petsiuk, Das & Saenko, BMVC 2018): random masks weighted by the answer margin, for any adapter that scores
images (``image_option_logprobs``, several images per forward on ``pathbind_hf``, as occlusion is scored).

Each of N masks keeps every cell of an s×s grid with probability p = ½; it is upsampled bilinearly to
(s + 1)·⌈side / s⌉ pixels and cut at a random shift (the paper's smooth masks), and the masked image shows the
image where the mask is 1 and the fill colour where it is 0 (the occlusion map's fill: the image's mean colour, or
mid-grey, the seed's, with ``fill: grey``). The saliency of a pixel is
Σᵢ (mᵢ − m̄)·Mᵢ(pixel) / (N·p): the paper's estimator of E[m | pixel shown] / p with the margin mᵢ of masked image
i as the score and its mean m̄ taken out (which ranks pixels alike and leaves a margin that is negative everywhere
no less informative). Captum has no RISE, so this is its own code; the masks are drawn from a seeded generator.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from PIL import Image

from pathbind_conventions import cell_edges
from pathbind_metrics.faithfulness import margin

KEEP = 0.5  # Petsiuk et al.'s p


def rise_map(adapter: Any, image: Image.Image, prompt: str, options: list[str], reference: int, *, masks: int,
             cells: int, grid: int, seed: int, colour: tuple[int, int, int]) -> tuple[np.ndarray, dict[str, Any]]:
    """The RISE saliency of ``reference``'s margin, averaged over each cell of the ``grid``×``grid`` occlusion grid,
    and what it used. The masks are made one at a time as the images are scored: only each mask's cell means are
    kept (the saliency is linear in the masks), so memory does not grow with N × pixels."""
    pixels, fill = np.asarray(image.convert("RGB"), dtype=float), np.asarray(colour, dtype=float)
    rng = np.random.default_rng(seed)
    kept: list[np.ndarray] = []  # each mask's mean over each grid cell

    def masked_images() -> Iterator[Image.Image]:
        for _ in range(masks):
            mask = smooth_mask(rng, cells, pixels.shape[:2])
            kept.append(cell_means(mask, grid))
            yield Image.fromarray(np.rint(pixels * mask[..., None] + fill * (1 - mask[..., None])).astype(np.uint8))

    scores = np.asarray(adapter.image_option_logprobs(masked_images(), prompt, options), dtype=float)
    margins = np.array([margin(row, reference) for row in scores])
    saliency = np.tensordot(margins - margins.mean(), np.stack(kept), axes=1) / (masks * KEEP)
    notes = {"masks": masks, "cells": cells, "p": KEEP, "fill": list(colour),
             "margin_mean": float(margins.mean()), "margin_sd": float(margins.std()), "images_scored": masks}
    return saliency, notes


def smooth_mask(rng: np.random.Generator, cells: int, shape: tuple[int, int]) -> np.ndarray:
    """One H×W mask in [0, 1]: an s×s binary grid upsampled bilinearly over (s + 1) cells and shifted at random."""
    height, width = shape
    cell_h, cell_w = -(-height // cells), -(-width // cells)
    grid = (rng.random((cells, cells)) < KEEP).astype(np.float32)
    upsampled = Image.fromarray(grid).resize(((cells + 1) * cell_w, (cells + 1) * cell_h), Image.Resampling.BILINEAR)
    dy, dx = int(rng.integers(cell_h)), int(rng.integers(cell_w))
    return np.asarray(upsampled, dtype=float)[dy:dy + height, dx:dx + width]


def cell_means(values: np.ndarray, grid: int) -> np.ndarray:
    """The mean of an H×W pixel map over each cell of the ``grid``×``grid`` occlusion grid (0 for a cell without
    pixels)."""
    rows, cols = cell_edges(values.shape[0], grid), cell_edges(values.shape[1], grid)
    heights, widths = np.diff(rows), np.diff(cols)
    cumulative = np.pad(values.cumsum(axis=0).cumsum(axis=1), ((1, 0), (1, 0)))
    sums = (cumulative[rows[1:]][:, cols[1:]] - cumulative[rows[:-1]][:, cols[1:]]
            - cumulative[rows[1:]][:, cols[:-1]] + cumulative[rows[:-1]][:, cols[:-1]])
    areas = np.outer(heights, widths)
    return np.divide(sums, areas, out=np.zeros_like(sums), where=areas > 0)
