"""Attention grounding (Algorithm 1): heat maps, overlap with a box, pixel-AP, effective support, query specificity.

The public functions are here; their engines are private modules beside this one: reading and checking the inputs
(:mod:`pathbind_metrics._grounding_maps`, which also states the reasons an item is lost), ranking a heat map's
pixels (:mod:`pathbind_metrics._grounding_ranks`) and correlating the maps of several queries
(:mod:`pathbind_metrics._grounding_covariance`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from pathbind_metrics._grounding_covariance import _covariance
from pathbind_metrics._grounding_maps import (
    BAD_IMAGE_SIZE,
    BAD_VIEW,
    BOX_INVERTED,
    BOX_MALFORMED,
    BOX_NO_PIXEL,
    BOX_OUTSIDE,
    BOX_OUTSIDE_VIEW,
    BOX_ZERO_AREA,
    CONSTANT_MAP,
    MAP_CONSTANT,
    MAP_EMPTY,
    MAP_NEGATIVE,
    MAP_NOT_2D,
    MAP_NOT_FINITE,
    MAP_ZERO,
    NOT_NUMERIC,
    SHAPE_MISMATCH,
    SMOOTHING_MODE,
    TOO_FEW_MAPS,
    Box,
    ImageSize,
    _area,
    _box_slices,
    _check_q,
    _check_sigma,
    _image_shape,
    _intersect,
    _patch_heat,
    _prepare,
    _support_map,
    _upsample,
    _view,
)
from pathbind_metrics._grounding_ranks import _Blocks

__all__ = [
    "BAD_IMAGE_SIZE",
    "BAD_VIEW",
    "BOX_INVERTED",
    "BOX_MALFORMED",
    "BOX_NO_PIXEL",
    "BOX_OUTSIDE",
    "BOX_OUTSIDE_VIEW",
    "BOX_ZERO_AREA",
    "CONSTANT_MAP",
    "MAP_CONSTANT",
    "MAP_EMPTY",
    "MAP_NEGATIVE",
    "MAP_NOT_2D",
    "MAP_NOT_FINITE",
    "MAP_ZERO",
    "NOT_NUMERIC",
    "SHAPE_MISMATCH",
    "SMOOTHING_MODE",
    "TOO_FEW_MAPS",
    "Box",
    "ImageSize",
    "attention_region_metrics",
    "box_fault",
    "box_view_fraction",
    "correlation_problem",
    "cross_query_correlation",
    "effective_support_ratio",
    "grounding_problem",
    "heat_map",
    "pixel_average_precision",
    "region_sweep",
    "support_problem",
    "view_pixels",
]


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


