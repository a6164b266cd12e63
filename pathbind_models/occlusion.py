"""The model side of an occlusion request (``pathbind.wire``): every perturbed image, scored in batches.

An adapter answers occlusion requests when it has ``image_option_logprobs(images, text, options)``: the option
log-probabilities (N × K) of ``text`` asked about each of an iterable of images, one image each. The HF adapter
scores several images per forward; the controls loop. The perturbations are defined here once for every model:
:func:`occlude` fills cells of the G×G grid (``pathbind_conventions.cell_edges``, the cells the metrics
measure) with :func:`fill_colour`; :func:`curve_masks` gives the occluded cells at each insertion/deletion step.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from PIL import Image

from pathbind.wire import CURVES, Box, OcclusionRequest, OcclusionResponse
from pathbind_conventions import cell_edges, resample_to_grid

GREY = (128, 128, 128)


def answer(adapter: Any, image: Image.Image, request: OcclusionRequest) -> OcclusionResponse:
    """Scores of the original image, of no image, of each single-cell occlusion and of each curve step, plus the
    entity attention on the grid; attention and text-only failures are reported in the response, not raised."""
    grid, colour = request.grid, fill_colour(image, request.fill)
    attention, native, view_box = _attention(adapter, image, request)
    # Curves ordered by attention mean nothing without an attention map: only the random ones are run then.
    names = [n for n in CURVES if isinstance(attention, np.ndarray) or n.endswith("random")]
    orders = curve_orders(attention if isinstance(attention, np.ndarray) else np.zeros((grid, grid)), request.seed)
    masks = [*_single_cells(grid)]
    for name in names:
        kind, order = name.split("/")
        masks.extend(curve_masks(orders[order], grid, request.steps, kind))
    pixels = rgb_pixels(image)  # converted once, not once per occluded copy
    images: Iterator[Image.Image] = (image if m is None else occlude(pixels, m, colour) for m in [None, *masks])
    scores = np.asarray(adapter.image_option_logprobs(images, request.prompt, list(request.options)), dtype=float)
    cells, points = grid * grid, request.steps + 1
    curves: dict[str, np.ndarray | str] = {
        name: scores[1 + cells + i * points:1 + cells + (i + 1) * points] for i, name in enumerate(names)}
    return OcclusionResponse(original=scores[0], text_only=_text_only(adapter, request), patches=scores[1:1 + cells],
                             attention=attention, attention_grid=native, curves=curves, view_box=view_box)


def _single_cells(grid: int) -> Iterator[np.ndarray]:
    for cell in range(grid * grid):
        mask = np.zeros(grid * grid, bool)
        mask[cell] = True
        yield mask.reshape(grid, grid)


def _attention(adapter: Any, image: Image.Image,
               request: OcclusionRequest) -> tuple[np.ndarray | str, tuple[int, int], Box | None]:
    """The entity attention on the occlusion grid (cells outside the model's view get none), its native grid and
    the view box; the view box is None (the whole image) when the adapter has no attention."""
    try:
        attention = adapter.entity_attention(image, request.prompt, request.entity, layers="mid")
    except Exception as exc:  # scored without attention measures; the reason is counted by the task
        return f"{type(exc).__name__}: {exc}", (0, 0), None
    native, view_box = attention.map, attention.view_box
    width, height = image.size
    fractions = (0.0, 0.0, 1.0, 1.0) if view_box is None else (view_box[0] / width, view_box[1] / height,
                                                                view_box[2] / width, view_box[3] / height)
    shape = (int(native.shape[0]), int(native.shape[1]))
    return resample_to_grid(native, request.grid, fractions, image.size), shape, view_box


def _text_only(adapter: Any, request: OcclusionRequest) -> np.ndarray | str:
    try:
        return np.asarray(adapter.option_logprobs([], request.prompt, list(request.options)), dtype=float)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


# ------------------------------------------------------------------------------------------- perturbations


def fill_colour(image: Image.Image, fill: str) -> tuple[int, int, int]:
    """``mean``: the image's own mean colour (an occluded patch carries no new colour); ``grey``: mid-grey."""
    if fill == "grey":
        return GREY
    mean = np.asarray(rgb_pixels(image), dtype=float).reshape(-1, 3).mean(axis=0)
    red, green, blue = (round(float(v)) for v in mean)
    return red, green, blue


def rgb_pixels(image: Image.Image) -> np.ndarray:
    """The H×W×3 uint8 RGB pixels of ``image`` (no conversion, so no extra copy, when it is RGB already)."""
    return np.asarray(image if image.mode == "RGB" else image.convert("RGB"))


def occlude(image: Image.Image | np.ndarray, mask: np.ndarray, colour: tuple[int, int, int]) -> Image.Image:
    """``image`` (or its :func:`rgb_pixels`, converted once for many masks) with the cells where the G×G boolean
    ``mask`` is true painted ``colour``."""
    pixels = np.array(rgb_pixels(image) if isinstance(image, Image.Image) else image)
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
