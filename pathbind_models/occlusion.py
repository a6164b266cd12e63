"""The model side of an occlusion request (``pathbind.wire``): every perturbed image, scored in batches.

An adapter answers occlusion requests when it has ``image_option_logprobs(images, text, options)``: the option
log-probabilities (N × K) of ``text`` asked about each of an iterable of images, one image each. The HF adapter
scores several images per forward; the controls loop. The perturbations are defined here once for every model:
:func:`occlude` fills cells of the G×G grid (``pathbind_conventions.cell_edges``, the cells the metrics
measure) with :func:`fill_colour`; :func:`curve_masks` gives the occluded cells at each insertion/deletion step, in
a seeded random order and in the order of each heat map the run computes (``pathbind_models.attribution``);
:func:`hide_box` hides a request's ROI boxes whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from typing import Any

import numpy as np
from PIL import Image

from pathbind.wire import CURVE_KINDS, OcclusionRequest, OcclusionResponse
from pathbind_conventions import cell_edges
from pathbind_models.attribution import NOT_REQUESTED, AttributionSettings, heat_maps

GREY = (128, 128, 128)


def answer(adapter: Any, image: Image.Image, request: OcclusionRequest,
           settings: AttributionSettings | None = None) -> OcclusionResponse:
    """Scores of the original image, of no image, of each single-cell occlusion, of each curve step and with each
    ROI hidden, plus the heat maps of ``settings``' methods on the grid; a method, attention or text-only score
    that cannot be computed is reported in the response with its reason, not raised."""
    settings = settings or AttributionSettings()
    grid, colour = request.grid, fill_colour(image, request.fill)
    maps, notes, native, view_box = heat_maps(adapter, image, request, settings, colour)
    orders = curve_orders(maps, request.seed, grid)
    masks = [np.zeros((grid, grid), bool), *_single_cells(grid)]  # the original image first
    names = [f"{kind}/{order}" for order in orders for kind in CURVE_KINDS]
    for name in names:
        kind, order = name.split("/")
        masks.extend(curve_masks(orders[order], grid, request.steps, kind))
    # Every curve starts or ends at the original or the wholly hidden image: each distinct image is scored once.
    distinct: dict[bytes, int] = {}
    firsts: list[np.ndarray] = []
    for mask in masks:
        if distinct.setdefault(mask.tobytes(), len(firsts)) == len(firsts):
            firsts.append(mask)
    index = [distinct[mask.tobytes()] for mask in masks]
    pixels = rgb_pixels(image)  # converted once, not once per occluded copy
    images = (occlude(pixels, m, colour) if m.any() else image for m in firsts)
    hidden = (hide_box(pixels, box, colour) for box in request.rois.values())
    scored = np.asarray(adapter.image_option_logprobs(chain(images, hidden), request.prompt, list(request.options)),
                        dtype=float)
    scores = np.concatenate([scored[index], scored[len(firsts):]])
    cells, points = grid * grid, request.steps + 1
    curves: dict[str, np.ndarray | str] = {
        name: scores[1 + cells + i * points:1 + cells + (i + 1) * points] for i, name in enumerate(names)}
    rois: dict[str, np.ndarray | str] = dict(zip(request.rois, scores[1 + cells + len(names) * points:], strict=True))
    attention = maps.pop("attention", NOT_REQUESTED)
    return OcclusionResponse(original=scores[0], text_only=_text_only(adapter, request), patches=scores[1:1 + cells],
                             attention=attention, attention_grid=native, curves=curves, view_box=view_box,
                             attributions=maps, attribution_notes=notes, rois=rois)


def _single_cells(grid: int) -> Iterator[np.ndarray]:
    for cell in range(grid * grid):
        mask = np.zeros(grid * grid, bool)
        mask[cell] = True
        yield mask.reshape(grid, grid)


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


def curve_orders(maps: dict[str, np.ndarray | str], seed: int, grid: int) -> dict[str, np.ndarray]:
    """Cell orders of the curves: a seeded random order, and each heat map's, hottest first (ties by cell index)."""
    orders = {"random": np.random.default_rng(seed).permutation(grid * grid)}
    orders.update({name: np.argsort(-np.asarray(m, dtype=float).ravel(), kind="stable")
                   for name, m in maps.items() if isinstance(m, np.ndarray)})
    return orders


def hide_box(pixels: np.ndarray, box: list[float], colour: tuple[int, int, int]) -> Image.Image:
    """The image with the pixels whose centres lie in ``box`` ([x_min, y_min, x_max, y_max]) painted ``colour``."""
    painted = np.array(pixels)
    x0, y0, x1, y1 = (int(np.clip(np.ceil(v - 0.5), 0, side)) for v, side in
                      zip(box, (painted.shape[1], painted.shape[0]) * 2, strict=True))
    painted[y0:y1, x0:x1] = colour
    return Image.fromarray(painted)


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
