"""The engine of :mod:`pathbind_metrics.grounding` that ranks a heat map's pixels without sorting them: blocks of the
upsampled map built from the patch map, the k-th largest value by bucket counts, the top-q region with ties
excluded, and average precision over the ranked pixels.
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from pathbind_metrics._grounding_maps import (
    _UNSEEN,
    _bilinear_taps,
    _overlap,
    _Prepared,
)

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
