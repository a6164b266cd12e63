"""The engine of :mod:`pathbind_metrics.grounding` that correlates the heat maps of several queries: their covariance
over the pixels the model saw, from the bilinear taps of the patch maps, without building the upsampled maps.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from pathbind_metrics._grounding_maps import (
    _FLAT,
    CONSTANT_MAP,
    SHAPE_MISMATCH,
    TOO_FEW_MAPS,
    Box,
    ImageSize,
    View,
    _area,
    _bilinear_taps,
    _check_sigma,
    _finite_array,
    _image_shape,
    _patch_heat,
    _view,
)


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
