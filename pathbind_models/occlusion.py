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
from typing import Any

import numpy as np
from PIL import Image

from pathbind.wire import CURVE_KINDS, Box, OcclusionRequest, OcclusionResponse
from pathbind_conventions import cell_edges, resample_to_grid
from pathbind_models.adapter import Attribution
from pathbind_models.attribution import AttributionSettings, layer_spec, model_attribution
from pathbind_models.rise import rise_map

GREY = (128, 128, 128)
NOT_REQUESTED = "not requested: the run's attribution setting leaves raw attention out"


def answer(adapter: Any, image: Image.Image, request: OcclusionRequest,
           settings: AttributionSettings | None = None) -> OcclusionResponse:
    """Scores of the original image, of no image, of each single-cell occlusion, of each curve step and with each
    ROI hidden, plus the heat maps of ``settings``' methods on the grid; a method, attention or text-only score
    that cannot be computed is reported in the response with its reason, not raised."""
    settings = settings or AttributionSettings()
    grid, colour = request.grid, fill_colour(image, request.fill)
    maps, notes, native, view_box = heat_maps(adapter, image, request, settings)
    orders = curve_orders(maps, request.seed, grid)
    masks = [*_single_cells(grid)]
    names = [f"{kind}/{order}" for order in orders for kind in CURVE_KINDS]
    for name in names:
        kind, order = name.split("/")
        masks.extend(curve_masks(orders[order], grid, request.steps, kind))
    pixels = rgb_pixels(image)  # converted once, not once per occluded copy
    images: Iterator[Image.Image] = (image if m is None else occlude(pixels, m, colour) for m in [None, *masks])
    hidden = (hide_box(pixels, box, colour) for box in request.rois.values())
    scores = np.asarray(adapter.image_option_logprobs((*images, *hidden), request.prompt, list(request.options)),
                        dtype=float)
    cells, points = grid * grid, request.steps + 1
    curves: dict[str, np.ndarray | str] = {
        name: scores[1 + cells + i * points:1 + cells + (i + 1) * points] for i, name in enumerate(names)}
    rois: dict[str, np.ndarray | str] = dict(zip(request.rois, scores[1 + cells + len(names) * points:], strict=True))
    attention = maps.pop("attention", NOT_REQUESTED)
    return OcclusionResponse(original=scores[0], text_only=_text_only(adapter, request), patches=scores[1:1 + cells],
                             attention=attention, attention_grid=native, curves=curves, view_box=view_box,
                             attributions=maps, attribution_notes=notes, rois=rois)


def heat_maps(adapter: Any, image: Image.Image, request: OcclusionRequest, settings: AttributionSettings) -> tuple[
        dict[str, np.ndarray | str], dict[str, dict[str, Any]], tuple[int, int], Box | None]:
    """Each method's map on the request's grid (cells outside the model's view get none) or why it has none, what
    each used, the attention's native grid and the model's view box (None: the whole image, or no map says)."""
    maps: dict[str, np.ndarray | str] = {}
    notes: dict[str, dict[str, Any]] = {}
    native, view_box = (0, 0), None
    for method in settings.methods:
        try:
            if method == "rise":
                maps[method], notes[method] = rise_map(
                    adapter, image, request.prompt, list(request.options), request.reference,
                    masks=request.rise_masks, cells=request.rise_cells, grid=request.grid, seed=request.seed)
                continue
            found = (_attention(adapter, image, request, settings) if method == "attention"
                     else model_attribution(adapter, method, image, request, settings))
        except Exception as exc:  # scored without this method's measures; the reason is counted by the task
            maps[method] = f"{type(exc).__name__}: {exc}"
            continue
        maps[method], notes[method] = on_grid(found, image, request.grid), found.notes
        view_box = found.view_box if view_box is None else view_box
        if method == "attention":
            native = (int(found.map.shape[0]), int(found.map.shape[1]))
    return maps, notes, native, view_box


def _attention(adapter: Any, image: Image.Image, request: OcclusionRequest,
               settings: AttributionSettings) -> Attribution:
    """The raw attention of the chosen tokens over the chosen layers (a control's evidence map has neither)."""
    layers = getattr(adapter, "decoder_layers", None)
    if layers is None:
        found = adapter.entity_attention(image, request.prompt, request.entity, layers="mid")
        return Attribution(found.map, found.view_box, {"token": "none (the model's own evidence map)",
                                                       "forwards": 1, "backwards": 0})
    found = adapter.entity_attention(image, request.prompt, request.entity, layers=layer_spec(settings.layers,
                                                                                              len(layers)),
                                     token=settings.token)
    token = "last prompt token" if settings.token == "last" else "expression tokens (max)"
    return Attribution(found.map, found.view_box, {"token": token, "layers": found.layers, "forwards": 1,
                                                   "backwards": 0})


def on_grid(found: Attribution, image: Image.Image, grid: int) -> np.ndarray:
    """A method's map resampled onto the request's G×G grid over the part of the image it covers."""
    width, height = image.size
    box = found.view_box
    fractions = (0.0, 0.0, 1.0, 1.0) if box is None else (box[0] / width, box[1] / height, box[2] / width,
                                                           box[3] / height)
    return resample_to_grid(found.map, grid, fractions, image.size)


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
