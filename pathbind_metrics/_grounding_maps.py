"""The engine of :mod:`pathbind_metrics.grounding` that reads its inputs: checks of maps, sizes, boxes and views (the
reasons an item is lost), the smoothed and normalised patch map, the pixels a box and a view cover, bilinear
upsampling.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike
from scipy import ndimage

SMOOTHING_MODE = "reflect"  # scipy's default: half-sample symmetric (d c b a | a b c d), no edge darkening
_FLAT = 1e-12  # a smoothed map whose range is below this fraction of its magnitude is a constant plus rounding
# Why an item cannot be scored: fixed strings, so callers can count the items lost per reason.
MAP_NOT_2D = "attention map is not a 2-D numeric array"
MAP_EMPTY = "attention map is empty"
MAP_NOT_FINITE = "attention map has NaN or inf"
MAP_CONSTANT = "attention map is constant after smoothing"
MAP_NEGATIVE = "attention map has negative values"
MAP_ZERO = "attention map sums to zero"
BAD_IMAGE_SIZE = "image size is not two positive integers"
BOX_MALFORMED = "box is not 4 finite numbers"
BOX_INVERTED = "box is inverted (x_max < x_min or y_max < y_min)"
BOX_ZERO_AREA = "box has zero area"
BOX_OUTSIDE = "box lies outside the image"
BOX_NO_PIXEL = "box covers no pixel centre"
BAD_VIEW = "view box is not 4 finite numbers covering a pixel centre of the image"
BOX_OUTSIDE_VIEW = "box lies outside the model's view"
TOO_FEW_MAPS = "fewer than two maps"
SHAPE_MISMATCH = "maps differ in shape"
CONSTANT_MAP = "a map is constant"
NOT_NUMERIC = "a map is not a numeric array"
Box = Sequence[float] | np.ndarray
ImageSize = Sequence[int] | np.ndarray


@dataclass(frozen=True)
class _Prepared:
    normalised: np.ndarray  # smoothed, min–max normalised patch map
    shape: tuple[int, int]  # image (H, W)
    view: tuple[float, float, float, float]  # the rectangle the map covers, original pixels
    box: tuple[slice, slice]  # box rows and columns
    seen: tuple[slice, slice]  # rows and columns of the pixels inside the view

    @property
    def box_in_view(self) -> tuple[slice, slice]:
        return _intersect(self.box, self.seen)

    @property
    def box_area(self) -> int:
        return _area(self.box)


def _check_q(q: float) -> None:
    if not 0 < q <= 1:
        raise ValueError(f"q is the attended fraction of the image and must be in (0, 1], got {q!r}")


def _check_sigma(sigma: float) -> None:
    if not (math.isfinite(sigma) and sigma >= 0):
        raise ValueError(f"sigma is the smoothing width in patches and must be finite and >= 0, got {sigma!r}")


def _finite_map(attn_map: ArrayLike) -> np.ndarray | str:
    try:
        values = np.asarray(attn_map, dtype=float)
    except (TypeError, ValueError):  # ragged lists, strings, objects
        return MAP_NOT_2D
    if values.ndim != 2:
        return MAP_NOT_2D
    if values.size == 0:
        return MAP_EMPTY
    return values if np.isfinite(values).all() else MAP_NOT_FINITE


def _patch_heat(attn_map: ArrayLike, sigma: float) -> np.ndarray | str:
    """The smoothed, min–max normalised patch map, or why there is none."""
    values = _finite_map(attn_map)
    if isinstance(values, str):
        return values
    smooth = ndimage.gaussian_filter(values, sigma, mode=SMOOTHING_MODE) if sigma > 0 else values
    low, high = float(smooth.min()), float(smooth.max())
    if high - low <= _FLAT * float(np.abs(smooth).max()):  # normalising would blow rounding noise up to [0, 1]
        return MAP_CONSTANT
    return (smooth - low) / (high - low)


def _image_shape(image_size: ImageSize) -> tuple[int, int] | str:
    try:
        width, height = (float(side) for side in image_size)
    except (TypeError, ValueError):
        return BAD_IMAGE_SIZE
    if not all(math.isfinite(side) and side >= 1 and side == int(side) for side in (width, height)):
        return BAD_IMAGE_SIZE
    return int(height), int(width)


def _box_slices(box: Box, shape: tuple[int, int]) -> tuple[slice, slice] | str:
    try:
        coords = np.asarray(box, dtype=float)
    except (TypeError, ValueError):
        return BOX_MALFORMED
    if coords.shape != (4,) or not np.isfinite(coords).all():
        return BOX_MALFORMED
    x_min, y_min, x_max, y_max = coords.tolist()
    if x_max < x_min or y_max < y_min:
        return BOX_INVERTED
    if x_max == x_min or y_max == y_min:
        return BOX_ZERO_AREA
    height, width = shape
    if x_max <= 0 or y_max <= 0 or x_min >= width or y_min >= height:
        return BOX_OUTSIDE
    slices = _centres_in(y_min, y_max, height), _centres_in(x_min, x_max, width)
    return slices if _area(slices) else BOX_NO_PIXEL


_UNSEEN = -1.0  # the score of a pixel outside the view: below every heat value, which lie in [0, 1]
View = tuple[float, float, float, float]


def _prepare(attn_map: ArrayLike, box: Box, image_size: ImageSize, sigma: float,
             view_box: Box | None) -> _Prepared | str:
    normalised = _patch_heat(attn_map, sigma)
    if isinstance(normalised, str):
        return normalised
    shape = _image_shape(image_size)
    if isinstance(shape, str):
        return shape
    slices = _box_slices(box, shape)
    if isinstance(slices, str):
        return slices
    view = _view(view_box, shape)
    if isinstance(view, str):
        return view
    if not _area(_intersect(slices, view[1])):
        return BOX_OUTSIDE_VIEW
    return _Prepared(normalised, shape, view[0], slices, view[1])


def _view(view_box: Box | None, shape: tuple[int, int]) -> tuple[View, tuple[slice, slice]] | str:
    """The view rectangle and the rows and columns of the pixels whose centres it holds (default: all)."""
    height, width = shape
    if view_box is None:
        return (0.0, 0.0, float(width), float(height)), (slice(0, height), slice(0, width))
    try:
        coords = np.asarray(view_box, dtype=float)
    except (TypeError, ValueError):
        return BAD_VIEW
    if coords.shape != (4,) or not np.isfinite(coords).all():
        return BAD_VIEW
    x_min, y_min, x_max, y_max = (float(v) for v in coords)
    rows, cols = _centres_in(y_min, y_max, height), _centres_in(x_min, x_max, width)
    if not _area((rows, cols)):
        return BAD_VIEW
    return (x_min, y_min, x_max, y_max), (rows, cols)


def _centres_in(low: float, high: float, length: int) -> slice:
    """Pixels i of a side whose centre i + 0.5 lies in [low, high): from ceil(low - 0.5) to ceil(high - 0.5) - 1."""
    first, end = (min(max(math.ceil(v - 0.5), 0), length) for v in (low, high))
    return slice(first, max(first, end))


def _intersect(a: tuple[slice, slice], b: tuple[slice, slice]) -> tuple[slice, slice]:
    def overlap(x: slice, y: slice) -> slice:
        start = max(x.start, y.start)
        return slice(start, max(start, min(x.stop, y.stop)))

    return overlap(a[0], b[0]), overlap(a[1], b[1])


def _area(slices: tuple[slice, slice]) -> int:
    return (slices[0].stop - slices[0].start) * (slices[1].stop - slices[1].start)


def _overlap(hit: int, attended: int, box_area: int) -> dict[str, float]:
    return {"iou": hit / (attended + box_area - hit), "precision": hit / attended, "recall": hit / box_area}


@lru_cache(maxsize=64)
def _bilinear_taps(n_out: int, n_in: int, low: float, high: float) -> tuple[np.ndarray, ...]:
    """For each output pixel: the two source indices and their weights (half-pixel centres), for a map covering
    ``[low, high)`` of the side; pixels whose centres lie outside get weights 0."""
    centres = np.arange(n_out) + 0.5
    source = np.clip((centres - low) * (n_in / (high - low)) - 0.5, 0, n_in - 1)
    lower = np.floor(source).astype(np.intp)
    inside = (centres >= low) & (centres < high)
    weight = source - lower
    taps = (lower, np.minimum(lower + 1, n_in - 1), (1 - weight) * inside, weight * inside)
    for array in taps:
        array.setflags(write=False)  # shared through the cache
    return taps


_BLOCK_ROWS = 16  # rows per block of the upsampling: a block of the second term stays in cache


def _upsample(patch_map: np.ndarray, shape: tuple[int, int], view: View) -> np.ndarray:
    # Separable, columns then rows as torch does; elementwise, not a BLAS product: clamped edge pixels get
    # weights exactly (1, 0), so they tie exactly. Rows are filled per run of rows sharing their two source rows,
    # by broadcasting (no gathered copies), in cache-sized blocks.
    height, width = shape
    x_min, y_min, x_max, y_max = view
    col_lo, col_hi, col_w_lo, col_w_hi = _bilinear_taps(width, patch_map.shape[1], x_min, x_max)
    row_lo, row_hi, row_w_lo, row_w_hi = _bilinear_taps(height, patch_map.shape[0], y_min, y_max)
    columns = patch_map[:, col_lo] * col_w_lo + patch_map[:, col_hi] * col_w_hi  # (Hp, W)
    heat = np.empty(shape)
    below = np.empty((_BLOCK_ROWS, width))
    bounds = np.r_[0, np.flatnonzero((row_lo[1:] != row_lo[:-1]) | (row_hi[1:] != row_hi[:-1])) + 1, height]
    for run_start, run_stop in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        for start in range(run_start, run_stop, _BLOCK_ROWS):
            rows, part = slice(start, min(start + _BLOCK_ROWS, run_stop)), below[:min(_BLOCK_ROWS, run_stop - start)]
            np.multiply(columns[row_lo[start]], row_w_lo[rows, None], out=heat[rows])
            np.multiply(columns[row_hi[start]], row_w_hi[rows, None], out=part)
            heat[rows] += part
    return heat


def _support_map(attn_map: ArrayLike) -> np.ndarray | str:
    values = _finite_map(attn_map)
    if isinstance(values, str):
        return values
    if (values < 0).any():
        return MAP_NEGATIVE
    return values if values.sum() > 0 else MAP_ZERO


def _finite_array(values: ArrayLike) -> np.ndarray | str:
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        return NOT_NUMERIC
    if array.size == 0:
        return MAP_EMPTY
    return array if np.isfinite(array).all() else MAP_NOT_FINITE
