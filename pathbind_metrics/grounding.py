"""Attention grounding (Algorithm 1): heat maps, overlap with a box, pixel-AP, effective support, query specificity."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

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

    def heat(self) -> np.ndarray:
        return _upsample(self.normalised, self.shape, self.view)


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
    heat = prepared.heat()
    values, in_box = heat[prepared.seen].ravel(), heat[prepared.box_in_view].ravel()
    k = _top_count(values.size, q)
    kth = np.partition(values, values.size - k)[values.size - k]  # the k-th hottest value, O(n)
    with_ties, without_ties = int(np.count_nonzero(values >= kth)), int(np.count_nonzero(values > kth))
    strict = _exclude_ties(q * values.size, with_ties, without_ties)
    hit = int(np.count_nonzero(in_box > kth if strict else in_box >= kth))
    return _overlap(hit, without_ties if strict else with_ties, prepared.box_area)


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
    scores = np.full(prepared.shape, _UNSEEN)
    scores[prepared.seen] = prepared.heat()[prepared.seen]
    return _average_precision(scores[prepared.box].ravel(), scores.ravel())


def region_sweep(attn_map: ArrayLike, box: Box, image_size: ImageSize, *, qs: Sequence[float] = (0.2,),
                 sigma: float = 3.0, view_box: Box | None = None) -> dict[str, Any]:
    """:func:`attention_region_metrics` at every q of ``qs`` and :func:`pixel_average_precision`, from one heat map.

    Identical values to calling those functions one by one, at the cost of one upsampling and one sort.

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
    heat = prepared.heat()
    seen, seen_in_box = np.sort(heat[prepared.seen].ravel()), np.sort(heat[prepared.box_in_view].ravel())
    by_q = {}
    for q in qs:
        kth, strict = _top_threshold(seen, q)
        side: Literal["left", "right"] = "right" if strict else "left"
        attended = seen.size - int(np.searchsorted(seen, kth, side=side))
        hit = seen_in_box.size - int(np.searchsorted(seen_in_box, kth, side=side))
        by_q[q] = _overlap(hit, attended, prepared.box_area)
    # Unseen pixels rank below every seen one, as in pixel_average_precision.
    ranked = np.r_[np.full(heat.size - seen.size, _UNSEEN), seen]
    in_box = np.r_[np.full(prepared.box_area - seen_in_box.size, _UNSEEN), seen_in_box]
    return {"by_q": by_q, "pixel_ap": _average_precision(in_box, ranked, ranked=ranked, ranked_positive=in_box)}


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


def _top_threshold(ranked: np.ndarray, q: float) -> tuple[float, bool]:
    """The top-q superlevel set of ascending ``ranked`` values: (k-th hottest value, whether to drop its ties)."""
    k = _top_count(ranked.size, q)
    kth = ranked[ranked.size - k]
    with_ties = ranked.size - int(np.searchsorted(ranked, kth, side="left"))
    without_ties = ranked.size - int(np.searchsorted(ranked, kth, side="right"))
    return float(kth), _exclude_ties(q * ranked.size, with_ties, without_ties)


def _top_count(size: int, q: float) -> int:
    return min(max(math.floor(q * size + 0.5), 1), size)


def _exclude_ties(target: float, with_ties: int, without_ties: int) -> bool:
    # The two superlevel sets whose sizes bracket the target; ties at the k-th value go in or out together.
    return bool(without_ties) and target - without_ties < with_ties - target


def _average_precision(positive: np.ndarray, scores: np.ndarray, *, ranked: np.ndarray | None = None,
                       ranked_positive: np.ndarray | None = None) -> float:
    # Recall only grows at the distinct positive scores, so the sum needs no other threshold: at each one,
    # recall gains the positives of that score, and precision = positives / pixels scoring at least it.
    ranked = np.sort(scores) if ranked is None else ranked
    ranked_positive = np.sort(positive) if ranked_positive is None else ranked_positive
    starts = np.flatnonzero(np.r_[True, ranked_positive[1:] != ranked_positive[:-1]])
    thresholds = ranked_positive[starts]
    true_positives = positive.size - starts
    predicted = scores.size - np.searchsorted(ranked, thresholds, side="left")
    gained = np.diff(np.r_[starts, positive.size])
    return float(np.sum(gained * (true_positives / predicted)) / positive.size)


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
    rows = [_interpolation_matrix(seen_rows, p.shape[0], y_min, y_max) for p in patches]
    cols = [_interpolation_matrix(seen_cols, p.shape[1], x_min, x_max) for p in patches]
    sums = np.array([r.sum(axis=0) @ p @ c.sum(axis=0) for r, p, c in zip(rows, patches, cols, strict=True)])
    products = np.array([[np.sum((rows[b].T @ rows[a] @ patches[a] @ cols[a].T @ cols[b]) * patches[b])
                          for b in range(len(patches))] for a in range(len(patches))])
    pixels = _area((seen_rows, seen_cols))
    return (products - np.outer(sums, sums) / pixels) / pixels


def _interpolation_matrix(seen: slice, n_in: int, low: float, high: float) -> np.ndarray:
    """The matrix of :func:`_upsample` along one axis, rows for the ``seen`` output pixels (two taps each)."""
    lower, upper, weight_lower, weight_upper = (tap[seen] for tap in _bilinear_taps(seen.stop, n_in, low, high))
    matrix = np.zeros((len(lower), n_in))
    np.add.at(matrix, (np.arange(len(lower)), lower), weight_lower)
    np.add.at(matrix, (np.arange(len(lower)), upper), weight_upper)
    return matrix


def _finite_array(values: ArrayLike) -> np.ndarray | str:
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        return NOT_NUMERIC
    if array.size == 0:
        return MAP_EMPTY
    return array if np.isfinite(array).all() else MAP_NOT_FINITE
