"""Attention grounding (Algorithm 1): heat maps, overlap with a box, pixel-AP, effective support, query specificity."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import ndimage, special

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


def heat_map(attn_map: ArrayLike, image_size: ImageSize, *, sigma: float = 3.0,
             view_box: Box | None = None) -> np.ndarray:
    """Algorithm 1 step 4: smooth, min–max normalise and bilinearly upsample a patch map to the image.

    Smoothing is ``scipy.ndimage.gaussian_filter(attn_map, sigma, mode="reflect")`` on the Hp×Wp patch
    grid (σ in patch units, kernel truncated at 4σ; ``sigma=0`` skips it). Upsampling is bilinear with
    half-pixel centres, as torch ``F.interpolate(mode="bilinear", align_corners=False, antialias=False)``
    and PIL's ``Image.resize(BILINEAR)`` when enlarging: output pixel ``j`` samples the patch coordinate
    ``(j + 0.5) * Hp / H - 0.5``, clamped to ``[0, Hp - 1]``, so the outer half patch is flat.

    The map covers ``view_box`` (default: the whole image): the rectangle of the original image the model saw
    (a centre crop shows it less than the whole image). The map is upsampled onto that rectangle, pixels whose
    centres lie in it; pixels outside it were never seen and get no attention (0).

    Parameters
    ----------
    attn_map : array of shape (Hp, Wp)
        The raw entity map M (max over entity tokens), neither smoothed nor normalised.
    image_size : (W, H)
        The original image size in pixels, as PIL reports it.
    sigma : float
        Gaussian standard deviation in patches (the paper: 3).
    view_box : [x_min, y_min, x_max, y_max], optional
        The part of the image the map covers, in original pixels (may be fractional).

    Returns
    -------
    ndarray of shape (H, W)
        Values in [0, 1]. Raises ``ValueError`` naming the reason for a map or size that
        :func:`grounding_problem` rejects; the metric functions return NaN instead.

    Examples
    --------
    >>> heat_map([[0.0, 1.0]], (4, 1), sigma=0).tolist()
    [[0.0, 0.25, 0.75, 1.0]]
    >>> heat_map([[0.0, 1.0]], (4, 1), sigma=0, view_box=[1, 0, 3, 1]).tolist()  # the model saw x = 1…3
    [[0.0, 0.0, 1.0, 0.0]]
    """
    _check_sigma(sigma)
    normalised, shape = _patch_heat(attn_map, sigma), _image_shape(image_size)
    view = shape if isinstance(shape, str) else _view(view_box, shape)
    if isinstance(normalised, str) or isinstance(view, str):
        raise ValueError(f"cannot build a heat map: {normalised if isinstance(normalised, str) else view}")
    assert not isinstance(shape, str)
    return _upsample(normalised, shape, view[0])


def grounding_problem(attn_map: ArrayLike, box: Box, image_size: ImageSize, *, sigma: float = 3.0,
                      view_box: Box | None = None) -> str | None:
    """Why :func:`attention_region_metrics` and :func:`pixel_average_precision` give NaN, or None when they don't.

    Checked in order: the map (2-D, non-empty, finite, not constant after smoothing), the image size, then
    the box (4 finite numbers, not inverted, non-zero area, overlapping the image, covering a pixel centre), the
    view box, and whether any pixel of the box lies inside the view.
    The reasons are the module's fixed strings (``MAP_*``, ``BAD_IMAGE_SIZE``, ``BOX_*``).

    Examples
    --------
    >>> grounding_problem([[0, 1], [2, 3]], [50, 50, 40, 60], (100, 100))
    'box is inverted (x_max < x_min or y_max < y_min)'
    >>> grounding_problem([[0, 1], [2, 3]], [50, 50, 60, 60], (100, 100)) is None
    True
    """
    _check_sigma(sigma)
    prepared = _prepare(attn_map, box, image_size, sigma, view_box)
    return prepared if isinstance(prepared, str) else None


def box_fault(box: Box, image_size: ImageSize) -> str | None:
    """Why ``box`` cannot be scored on an image of ``image_size`` whatever the model answers (one of the ``BOX_*``
    reasons, or ``BAD_IMAGE_SIZE``), None when it can: a fault of the data, which the tasks drop before any model
    call.

    >>> box_fault([50, 50, 40, 60], (100, 100))
    'box is inverted (x_max < x_min or y_max < y_min)'
    """
    shape = _image_shape(image_size)
    if isinstance(shape, str):
        return shape
    slices = _box_slices(box, shape)
    return slices if isinstance(slices, str) else None


def view_pixels(image_size: ImageSize, view_box: Box | None = None) -> tuple[slice, slice]:
    """Rows and columns of the pixels the model saw: those whose centres lie in ``view_box`` (default: all).

    Examples
    --------
    >>> view_pixels((512, 256), [128, 0, 384, 256])
    (slice(0, 256, None), slice(128, 384, None))
    """
    shape = _image_shape(image_size)
    view = shape if isinstance(shape, str) else _view(view_box, shape)
    if isinstance(view, str):
        raise ValueError(f"no pixels in view: {view}")
    return view[1]


def box_view_fraction(box: Box, image_size: ImageSize, view_box: Box | None = None) -> float:
    """Fraction of the box's pixels inside the model's view (1: all seen); NaN for a box or view that is invalid.

    Examples
    --------
    >>> box_view_fraction([0, 0, 4, 2], (8, 4), view_box=[2, 0, 6, 4])
    0.5
    """
    shape = _image_shape(image_size)
    if isinstance(shape, str):
        return float("nan")
    view, box_slices = _view(view_box, shape), _box_slices(box, shape)
    if isinstance(view, str) or isinstance(box_slices, str):
        return float("nan")
    return _area(_intersect(box_slices, view[1])) / _area(box_slices)


def attention_region_metrics(attn_map: ArrayLike, box: Box, image_size: ImageSize, *, q: float = 0.2,
                             sigma: float = 3.0, view_box: Box | None = None) -> dict[str, float]:
    """IoU, precision and recall of the top-q attended pixels against a box (Algorithm 1 step 5; best: 1).

    The heat map is :func:`heat_map`. The attended mask is ``heat >= t``: of all such superlevel sets, the
    one whose size is closest to ``q * H * W`` (equidistant: the larger, as ``>=`` keeps ties; never empty).
    Pixels of equal value are all in or all out, so ties can only move the size away from ``q * H * W``; with
    no ties the mask is the ``round(q * H * W)`` hottest pixels, within one pixel of the paper's
    ``heat >= np.quantile(heat, 1 - q)``. The box mask holds the pixels whose centres ``(x + 0.5, y + 0.5)``
    lie in ``[x_min, x_max) × [y_min, y_max)``, clipped to the image: an integer box covers exactly its area.
    With a ``view_box`` (see :func:`heat_map`) the attended pixels are the top q of the pixels the model saw;
    box pixels outside the view count as missed. A box wholly outside the view is NaN (:data:`BOX_OUTSIDE_VIEW`).

    Parameters
    ----------
    attn_map : array of shape (Hp, Wp)
        The raw entity map M, neither smoothed nor normalised.
    box : [x_min, y_min, x_max, y_max]
        The expert box in absolute pixels.
    image_size : (W, H)
        The original image size in pixels.
    q : float in (0, 1]
        Attended fraction of the image (the paper: 0.2; sensitivity sweep 0.05–0.4).
    sigma : float
        Gaussian smoothing in patches (the paper: 3; 0 skips it).
    view_box : [x_min, y_min, x_max, y_max], optional
        The part of the image the map covers (default: all of it).

    Returns
    -------
    dict
        ``{"iou", "precision", "recall"}`` as fractions in [0, 1]; all NaN exactly when
        :func:`grounding_problem` gives a reason.

    Examples
    --------
    >>> hot = np.zeros((10, 10)); hot[:4, :5] = 1.0  # at native size the top 20 pixels are this block
    >>> attention_region_metrics(hot, [2, 0, 7, 4], (10, 10), q=0.2, sigma=0)
    {'iou': 0.42857142857142855, 'precision': 0.6, 'recall': 0.6}
    """
    _check_q(q)
    _check_sigma(sigma)
    prepared = _prepare(attn_map, box, image_size, sigma, view_box)
    if isinstance(prepared, str):
        return dict.fromkeys(("iou", "precision", "recall"), float("nan"))
    return _Blocks(prepared).top(q)


def pixel_average_precision(attn_map: ArrayLike, box: Box, image_size: ImageSize, *, sigma: float = 3.0,
                            view_box: Box | None = None) -> float:
    """Threshold-free pixel AP: pixels scored by the heat map, labelled by the box mask (best: 1).

    Average precision as ``sklearn.metrics.average_precision_score`` defines it: ``sum_n (R_n - R_{n-1}) P_n``
    over the distinct scores in decreasing order (tied pixels form one threshold), step-wise, not
    interpolated. Heat map and box mask as in :func:`attention_region_metrics`. A map that ignores the box
    scores about the box's share of the image. Pixels outside ``view_box`` rank below every seen pixel.

    Returns
    -------
    float
        AP in (0, 1]; NaN exactly when :func:`grounding_problem` gives a reason.

    Examples
    --------
    >>> ramp = np.tile(np.arange(10.0), (10, 1))  # hotter to the right
    >>> pixel_average_precision(ramp, [5, 0, 10, 10], (10, 10), sigma=0)  # box = the hot half
    1.0
    >>> round(pixel_average_precision(ramp, [0, 0, 5, 10], (10, 10), sigma=0), 3)  # box = the cold half
    0.354
    """
    _check_sigma(sigma)
    prepared = _prepare(attn_map, box, image_size, sigma, view_box)
    if isinstance(prepared, str):
        return float("nan")
    return _Blocks(prepared).average_precision()


def region_sweep(attn_map: ArrayLike, box: Box, image_size: ImageSize, *, qs: Sequence[float] = (0.2,),
                 sigma: float = 3.0, view_box: Box | None = None) -> dict[str, Any]:
    """:func:`attention_region_metrics` at every q of ``qs`` and :func:`pixel_average_precision`, from one heat map.

    Identical values to calling those functions one by one (they share the map's blocks, see :class:`_Blocks`).

    Returns
    -------
    dict
        ``{"by_q": {q: {"iou", "precision", "recall"}}, "pixel_ap": float}``; all NaN exactly when
        :func:`grounding_problem` gives a reason.
    """
    for q in qs:
        _check_q(q)
    _check_sigma(sigma)
    prepared = _prepare(attn_map, box, image_size, sigma, view_box)
    if isinstance(prepared, str):
        return {"by_q": {q: dict.fromkeys(("iou", "precision", "recall"), float("nan")) for q in qs},
                "pixel_ap": float("nan")}
    blocks = _Blocks(prepared)
    return {"by_q": {q: blocks.top(q) for q in qs}, "pixel_ap": blocks.average_precision()}


def effective_support_ratio(attn_map: ArrayLike) -> float:
    """Effective attention support ``N_eff / N = exp(H(p)) / N`` of the raw patch map (1: uniform; 1/N: one patch).

    ``p`` is the raw map divided by its sum (no smoothing), ``H`` the Shannon entropy in nats with
    ``0 log 0 = 0``, ``N`` the number of patches. NaN exactly when :func:`support_problem` gives a reason.

    Examples
    --------
    >>> round(effective_support_ratio(np.ones((4, 4))), 12), effective_support_ratio([[0, 1], [1, 0]])
    (1.0, 0.5)
    """
    values = _support_map(attn_map)
    if isinstance(values, str):
        return float("nan")
    p = values.ravel() / values.sum()
    return float(np.exp(special.entr(p).sum()) / p.size)


def support_problem(attn_map: ArrayLike) -> str | None:
    """Why :func:`effective_support_ratio` gives NaN (not 2-D, empty, NaN/inf, negative, zero sum), or None.

    Examples
    --------
    >>> support_problem([[0.5, -0.1]])
    'attention map has negative values'
    """
    values = _support_map(attn_map)
    return values if isinstance(values, str) else None


def cross_query_correlation(maps: Sequence[ArrayLike] | np.ndarray, *, image_size: ImageSize | None = None,
                            sigma: float = 3.0, view_box: Box | None = None) -> float:
    """Mean pairwise Pearson correlation of K heat maps of one image (1: the query changes nothing).

    Appendix C.4 uses K = 3: the true entity and two entities from other samples. With ``image_size`` each
    raw map first goes through :func:`heat_map` (the paper's heat maps); without it the arrays are correlated
    as given (any shape, the same for all), e.g. precomputed heat maps or raw patch maps. With a ``view_box``
    the heat maps are correlated over the pixels the model saw.

    Returns
    -------
    float
        Mean over the K(K-1)/2 pairs, in [-1, 1]; NaN exactly when :func:`correlation_problem` gives a reason.

    Examples
    --------
    >>> a = np.array([[0.0, 1.0], [2.0, 3.0]])
    >>> round(cross_query_correlation([a, 2 * a + 1, -a]), 12)
    -0.333333333333
    """
    covariance = _covariance(maps, image_size, sigma, view_box)
    if isinstance(covariance, str):
        return float("nan")
    scale = np.sqrt(np.diag(covariance))
    return float((covariance / np.outer(scale, scale))[np.triu_indices(len(covariance), k=1)].mean())


def correlation_problem(maps: Sequence[ArrayLike] | np.ndarray, *, image_size: ImageSize | None = None,
                        sigma: float = 3.0, view_box: Box | None = None) -> str | None:
    """Why :func:`cross_query_correlation` gives NaN (fewer than two maps, a bad or constant map, shapes differ).

    With ``image_size`` a raw map is checked as :func:`grounding_problem` checks it, and the image size too.

    Examples
    --------
    >>> correlation_problem([np.ones((2, 2)), np.eye(2)])
    'a map is constant'
    """
    covariance = _covariance(maps, image_size, sigma, view_box)
    return covariance if isinstance(covariance, str) else None


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


_SLACK = 1e-9  # far above the rounding of a pixel value (a few units of 2**-53, values in [0, 1]), far below the grid
_BLOCK_HEIGHT, _BLOCK_WIDTH = 32, 16  # the most rows and columns of a block of _Blocks


class _Blocks:
    """The seen pixels of a heat map in blocks of at most ``_BLOCK_HEIGHT`` × ``_BLOCK_WIDTH``, each with bounds on
    its values; pixel values are computed only for the blocks a question needs, never the whole upsampled map.

    A pixel's value is ``c_lo * a + c_hi * b``: the row step of :func:`_upsample`, done with the same float
    operations, so bit-identical. ``c_lo`` and ``c_hi`` are entries of the column-upsampled map in the pixel's column
    and its row's two source rows; the weights ``a = 1 - w``, ``b = w`` (to rounding) are the row's. A block lies
    within one run of rows sharing their source rows, so in each of its columns the value is linear in ``w``, which
    grows down the run: a pixel's value lies between the values of the block's first and last row in its column.
    Rounding moves each value by a few units of 2**-53 at most, far less than ``_SLACK``. So every pixel of a block
    lies within ``[low, high]``: the least and greatest value of those two rows over the block's columns, widened
    by ``_SLACK``. A question about a threshold is answered in bulk for the blocks wholly above or below it.
    """

    def __init__(self, prepared: _Prepared) -> None:
        (height, width), (x_min, y_min, x_max, y_max) = prepared.shape, prepared.view
        (rows, cols), patch = prepared.seen, prepared.normalised
        col_lo, col_hi, col_w_lo, col_w_hi = _bilinear_taps(width, patch.shape[1], x_min, x_max)
        self.row_lo, self.row_hi, self.w_lo, self.w_hi = (
            t[rows] for t in _bilinear_taps(height, patch.shape[0], y_min, y_max))
        # The column step of _upsample, its operations on its values, restricted to the seen columns.
        self.columns = (patch[:, col_lo] * col_w_lo + patch[:, col_hi] * col_w_hi)[:, cols]  # (Hp, seen columns)
        n_rows, n_cols = len(self.row_lo), self.columns.shape[1]
        new_source = (self.row_lo[1:] != self.row_lo[:-1]) | (self.row_hi[1:] != self.row_hi[:-1])
        runs = np.flatnonzero(np.r_[True, new_source])
        self.row_edges = np.r_[np.union1d(runs, np.arange(0, n_rows, _BLOCK_HEIGHT)), n_rows]  # never across runs
        self.col_edges = np.r_[np.arange(0, n_cols, _BLOCK_WIDTH), n_cols]
        first, last = self._rows(self.row_edges[:-1]), self._rows(self.row_edges[1:] - 1)
        self.low = np.minimum.reduceat(np.minimum(first, last), self.col_edges[:-1], axis=1) - _SLACK
        self.high = np.maximum.reduceat(np.maximum(first, last), self.col_edges[:-1], axis=1) + _SLACK
        self.size = np.outer(np.diff(self.row_edges), np.diff(self.col_edges))
        # The box's pixels inside the view, in the coordinates of the seen pixels, and their number per block.
        box_rows, box_cols = (slice(b.start - s.start, b.stop - s.start)
                              for b, s in zip(prepared.box_in_view, prepared.seen, strict=True))
        self.box_rows, self.box_cols, self.box_area = box_rows, box_cols, prepared.box_area
        self.in_box_rows, self.in_box_cols = np.zeros(n_rows, bool), np.zeros(n_cols, bool)
        self.in_box_rows[box_rows] = self.in_box_cols[box_cols] = True
        self.box_size = np.outer(np.add.reduceat(self.in_box_rows, self.row_edges[:-1]),
                                 np.add.reduceat(self.in_box_cols, self.col_edges[:-1]))
        self.pixels = n_rows * n_cols
        self.image_pixels = height * width

    def _rows(self, rows: np.ndarray | slice, cols: np.ndarray | slice = slice(None)) -> np.ndarray:
        """The values of whole seen rows (at the seen columns ``cols``)."""
        values = np.multiply(self.columns[self.row_lo[rows], cols], self.w_lo[rows, None])
        values += np.multiply(self.columns[self.row_hi[rows], cols], self.w_hi[rows, None])
        return values

    def values(self, chosen: np.ndarray, *, box: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
        """The values of the pixels of the ``chosen`` blocks (1-D, in no set order) and, with ``box``, whether each
        is in the box."""
        values, in_box = [np.empty(0)], [np.empty(0, bool)]
        columns = np.repeat(chosen, np.diff(self.col_edges), axis=1)  # (row blocks, seen columns)
        for i in np.flatnonzero(chosen.any(axis=1)).tolist():
            rows, cols = slice(self.row_edges[i], self.row_edges[i + 1]), columns[i]
            block = np.multiply(self.columns[self.row_lo[rows.start], cols], self.w_lo[rows, None])
            block += np.multiply(self.columns[self.row_hi[rows.start], cols], self.w_hi[rows, None])
            values.append(block.ravel())
            if box:
                in_box.append((self.in_box_rows[rows, None] & self.in_box_cols[cols]).ravel())
        return np.concatenate(values), np.concatenate(in_box) if box else None

    @cached_property
    def box_values(self) -> np.ndarray:
        """The values of the box's pixels inside the view (1-D)."""
        return self._rows(np.arange(self.box_rows.start, self.box_rows.stop), self.box_cols).ravel()

    @cached_property
    def ranked_bounds(self) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """``low`` and ``high`` in decreasing order, each with the number of pixels of the blocks down to it."""
        ranked = []
        for bounds in (self.low, self.high):
            order = np.argsort(bounds, axis=None)[::-1]
            ranked.append((bounds.flat[order], np.cumsum(self.size.flat[order])))
        return ranked[0], ranked[1]

    def top(self, q: float) -> dict[str, float]:
        """IoU, precision and recall of the top-q superlevel set (see :func:`attention_region_metrics`)."""
        k = _top_count(self.pixels, q)
        # The k-th hottest value lies between these: at least k pixels are >= the first (those of the blocks whose
        # low is), and fewer than k pixels can be > the second (only those of the blocks whose high is > it).
        floor, ceiling = (float(bounds[np.searchsorted(pixels, k)]) for bounds, pixels in self.ranked_bounds)
        above = self.low > ceiling  # every pixel above the k-th value
        values, _ = self.values(~above & (self.high >= floor))  # the others are below it
        kth = _kth_largest(values, k - int(self.size[above].sum()))
        with_ties, without_ties = (int(self.size[above].sum()) + int(np.count_nonzero(values >= kth)),
                                   int(self.size[above].sum()) + int(np.count_nonzero(values > kth)))
        strict = _exclude_ties(q * self.pixels, with_ties, without_ties)
        hit = int(np.count_nonzero(self.box_values > kth if strict else self.box_values >= kth))
        return _overlap(hit, without_ties if strict else with_ties, self.box_area)

    def average_precision(self) -> float:
        """Pixel-AP (see :func:`pixel_average_precision`): unseen pixels score ``_UNSEEN``, below every seen one."""
        in_box = np.sort(self.box_values)
        positive = np.r_[np.full(self.box_area - in_box.size, _UNSEEN), in_box]  # ascending
        starts = np.flatnonzero(np.r_[True, positive[1:] != positive[:-1]])
        thresholds = positive[starts]
        # Pixels scoring at least each threshold: box pixels from their sorted values, the other seen pixels
        # counted by _count_at_least among the box's range of values (blocks wholly above it in bulk); every pixel
        # scores at least _UNSEEN.
        low, high = float(in_box[0]), float(in_box[-1])
        above = self.low > high
        values, box_pixel = self.values(~above & (self.high >= low) & (self.box_size < self.size), box=True)
        assert box_pixel is not None
        others = values[~box_pixel]
        higher = int((self.size - self.box_size)[above].sum()) + int(np.count_nonzero(others > high))
        seen = thresholds[thresholds != _UNSEEN]
        predicted = (in_box.size - np.searchsorted(in_box, seen, side="left")) + higher + _count_at_least(
            others[(others >= low) & (others <= high)], seen, low, high)
        predicted = np.r_[np.full(thresholds.size - seen.size, self.image_pixels), predicted]
        true_positives = positive.size - starts
        gained = np.diff(np.r_[starts, positive.size])
        # sklearn's sum over distinct scores: recall gains the positives at each, precision = TP / predicted.
        return float(np.sum(gained * (true_positives / predicted)) / positive.size)


_BUCKETS = 4096  # the fewest buckets of a bucketed count


def _buckets(values: np.ndarray, low: float, high: float, count: int) -> np.ndarray:
    """Bucket indices 0..count-1 of values in [low, high], non-decreasing in the value: each float operation here
    (subtract, multiply by a positive number, truncate, clip) is monotone, so a value in a lower bucket is smaller."""
    scale = count / (high - low) if high > low else 0.0
    if not math.isfinite(scale):
        scale = 0.0
    scaled = np.subtract(values, low)
    scaled *= scale
    buckets = scaled.astype(np.intp)
    return np.minimum(buckets, count - 1, out=buckets)


def _kth_largest(values: np.ndarray, k: int) -> float:
    """The k-th largest of ``values`` (1 <= k <= size): bucket counts find its bucket, a selection within it."""
    low, high = float(values.min()), float(values.max())
    buckets = _buckets(values, low, high, _BUCKETS)
    counts = np.bincount(buckets, minlength=_BUCKETS)
    above = np.cumsum(counts[::-1])[::-1] - counts  # values in higher buckets
    bucket = int(np.flatnonzero(above < k)[0])  # the lowest bucket with fewer than k values above it
    members = values[buckets == bucket]
    rank = k - int(above[bucket])
    return float(np.partition(members, members.size - rank)[members.size - rank])


def _count_at_least(values: np.ndarray, thresholds: np.ndarray, low: float, high: float) -> np.ndarray:
    """For each threshold, how many ``values`` are >= it; all values and thresholds lie in [low, high].

    With monotone buckets (:func:`_buckets`) a value in a bucket holding no threshold is >= a threshold exactly when
    its bucket is higher; only the values sharing a bucket with a threshold are compared one by one, sorted.
    """
    count = max(8 * thresholds.size, _BUCKETS)
    buckets = _buckets(values, low, high, count)
    threshold_buckets = _buckets(thresholds, low, high, count)
    shared = np.zeros(count, bool)
    shared[threshold_buckets] = True
    near = shared[buckets]
    compared = np.sort(values[near])
    apart = np.bincount(buckets[~near], minlength=count)
    higher = apart.sum() - np.cumsum(apart)  # values in no threshold's bucket, in buckets above each bucket
    return higher[threshold_buckets] + (compared.size - np.searchsorted(compared, thresholds, side="left"))


def _top_count(size: int, q: float) -> int:
    return min(max(math.floor(q * size + 0.5), 1), size)


def _exclude_ties(target: float, with_ties: int, without_ties: int) -> bool:
    # The two superlevel sets whose sizes bracket the target; ties at the k-th value go in or out together.
    return bool(without_ties) and target - without_ties < with_ties - target


def _support_map(attn_map: ArrayLike) -> np.ndarray | str:
    values = _finite_map(attn_map)
    if isinstance(values, str):
        return values
    if (values < 0).any():
        return MAP_NEGATIVE
    return values if values.sum() > 0 else MAP_ZERO


def _covariance(maps: Sequence[ArrayLike] | np.ndarray, image_size: ImageSize | None,
                sigma: float, view_box: Box | None = None) -> np.ndarray | str:
    """K×K covariance over pixels of the maps (of their heat maps with ``image_size``), or why it is undefined."""
    _check_sigma(sigma)
    if len(maps) < 2:
        return TOO_FEW_MAPS
    shape = None if image_size is None else _image_shape(image_size)
    if isinstance(shape, str):
        return shape
    view = None if shape is None else _view(view_box, shape)
    if isinstance(view, str):
        return view
    arrays: list[np.ndarray] = []
    for raw in maps:
        values = _finite_array(raw) if shape is None else _patch_heat(raw, sigma)
        if isinstance(values, str):
            return values
        arrays.append(values)
    if shape is None and any(values.shape != arrays[0].shape for values in arrays):
        return SHAPE_MISMATCH
    covariance = _array_covariance(arrays) if view is None else _heat_covariance(arrays, view)
    if (np.diag(covariance) <= (_FLAT * max(np.abs(a).max() for a in arrays)) ** 2).any():
        return CONSTANT_MAP  # Pearson is undefined for a constant map
    return covariance


def _array_covariance(arrays: list[np.ndarray]) -> np.ndarray:
    rows = np.stack([values.ravel() for values in arrays])
    centred = rows - rows.mean(axis=1, keepdims=True)
    return centred @ centred.T / rows.shape[1]


def _heat_covariance(patches: list[np.ndarray], view: tuple[View, tuple[slice, slice]]) -> np.ndarray:
    """Covariance over the seen pixels of the bilinearly upsampled maps, without upsampling them.

    Upsampling is linear and separable, U = Ry P Rxᵀ, so pixel sums are ΣU = (Ry1)ᵀ P (Rx1) and pixel inner
    products are ΣU_a·U_b = Σ (Ry_bᵀRy_a P_a Rx_aᵀRx_b) ⊙ P_b: patch-sized products instead of H·W pixels.
    """
    (x_min, y_min, x_max, y_max), (seen_rows, seen_cols) = view
    row_taps = [_seen_taps(seen_rows, p.shape[0], y_min, y_max) for p in patches]
    col_taps = [_seen_taps(seen_cols, p.shape[1], x_min, x_max) for p in patches]
    sums = np.array([_tap_sums(r) @ p @ _tap_sums(c) for r, p, c in zip(row_taps, patches, col_taps, strict=True)])
    products = np.array([[np.sum((_gram(row_taps[b], row_taps[a]) @ patches[a] @ _gram(col_taps[a], col_taps[b]))
                                 * patches[b]) for b in range(len(patches))] for a in range(len(patches))])
    pixels = _area((seen_rows, seen_cols))
    return (products - np.outer(sums, sums) / pixels) / pixels


_Taps = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]  # lower, upper, their weights, source length


def _seen_taps(seen: slice, n_in: int, low: float, high: float) -> _Taps:
    """The two taps of :func:`_upsample` along one axis for the ``seen`` output pixels: row i of its matrix."""
    lower, upper, weight_lower, weight_upper = (tap[seen] for tap in _bilinear_taps(seen.stop, n_in, low, high))
    return lower, upper, weight_lower, weight_upper, n_in


def _tap_sums(taps: _Taps) -> np.ndarray:
    """Column sums of the interpolation matrix (Rᵀ1)."""
    lower, upper, weight_lower, weight_upper, n_in = taps
    return np.bincount(lower, weight_lower, n_in) + np.bincount(upper, weight_upper, n_in)


def _gram(left: _Taps, right: _Taps) -> np.ndarray:
    """R_leftᵀ R_right from the taps: four weighted counts over the pixels, O(pixels).

    Not a BLAS product of the (pixels × grid) matrices: that one is large and thin (37 × 1,000 × 37), so OpenBLAS
    splits it over all its threads, and on a busy machine the threads' start-up and waiting cost ~100× the
    arithmetic (400 ms per item at grid 37 vs 3 ms on one thread). The products left are grid-sized.
    """
    *left_taps, n_left = left
    *right_taps, n_right = right
    gram = np.zeros(n_left * n_right)
    for index_l, weight_l in ((left_taps[0], left_taps[2]), (left_taps[1], left_taps[3])):
        for index_r, weight_r in ((right_taps[0], right_taps[2]), (right_taps[1], right_taps[3])):
            gram += np.bincount(index_l * n_right + index_r, weight_l * weight_r, n_left * n_right)
    return gram.reshape(n_left, n_right)


def _finite_array(values: ArrayLike) -> np.ndarray | str:
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        return NOT_NUMERIC
    if array.size == 0:
        return MAP_EMPTY
    return array if np.isfinite(array).all() else MAP_NOT_FINITE
