"""Intervals and tests that resample what is independent: clusters of items (the questions on one image, the tiles
of one slide), not the items themselves.

Questions on one image are not independent draws: Path-VQA asks about 6.6 per image. An interval that resamples
items as if they were is too narrow by the square root of the design effect (Kish), about ``1 + (m - 1)·ICC``
for clusters of ``m`` items with intra-cluster correlation ICC. Here every interval is a percentile bootstrap
over clusters (the cluster bootstrap of "Adding Error Bars to Evals", arXiv 2411.00640): each resample draws as
many clusters as there are, with replacement, and the statistic is computed from the summed columns of the
drawn clusters, so a mean is a ratio of totals (clusters of unequal size weigh by their items). The design
effect reported beside it is the variance of the statistic over cluster resamples divided by its variance over
item resamples drawn the same way: exactly 1 when every cluster holds one item, where the interval is the item
bootstrap's, draw for draw.

A statistic is a function of column totals: ``statistic(sums)`` maps ``sums[..., k]`` (the totals of ``k``
per-item columns over the drawn items) to the measure, e.g. ``100 * sums[..., 0] / sums[..., 1]`` for an
accuracy over the columns (correct, 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

Statistic = Callable[[np.ndarray], np.ndarray]
DRAWS_PER_CHUNK = 1 << 22  # cluster indices drawn at once (32 MB), whatever the number of resamples


def cluster_codes(keys: Sequence[Hashable]) -> np.ndarray:
    """Each item's cluster as 0..C-1 in order of first appearance (so items that are their own clusters keep
    their order, and their resamples are the item bootstrap's)."""
    index: dict[Hashable, int] = {}
    return np.fromiter((index.setdefault(key, len(index)) for key in keys), dtype=np.intp, count=len(keys))


def cluster_totals(rows: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """The column sums of each cluster's rows (``codes`` from :func:`cluster_codes`), one row per cluster."""
    totals = np.zeros((int(codes.max()) + 1 if codes.size else 0, rows.shape[1]))
    np.add.at(totals, codes, rows)
    return totals


def cluster_interval(statistic: Statistic, columns: ArrayLike, clusters: Sequence[Hashable], *, cluster: str,
                     n_resamples: int = 2000, seed: int = 0, level: float = 0.95) -> dict[str, Any]:
    """The ``level`` percentile interval of ``statistic`` over cluster resamples of the items' ``columns``
    (one row per item, ``clusters`` its cluster key), with what was resampled:

    ``{"low", "high", "cluster": <what a cluster is>, "clusters": C, "items": n, "design_effect": d}``.

    NaN bounds (and design effect) for fewer than two clusters; a NaN design effect where item resamples do not
    vary.
    """
    rows = np.asarray(columns, dtype=float)
    rows = rows.reshape(len(rows), -1) if rows.size else np.zeros((len(clusters), 1))
    if len(rows) != len(clusters):
        raise ValueError(f"{len(rows)} items but {len(clusters)} cluster keys")
    codes = cluster_codes(clusters)
    n_clusters = int(codes.max()) + 1 if codes.size else 0
    described = {"cluster": cluster, "clusters": n_clusters, "items": len(rows)}
    if n_clusters < 2:  # one cluster cannot show how clusters vary: no interval, rather than a point
        return {"low": math.nan, "high": math.nan, **described, "design_effect": math.nan}
    totals = cluster_totals(rows, codes)
    clustered = resampled(statistic, totals, n_resamples, seed)
    singletons = n_clusters == len(rows) and bool((codes == np.arange(len(rows))).all())
    items = clustered if singletons else resampled(statistic, rows, n_resamples, seed)
    tail = round(50 * (1 - level), 10)  # 2.5 for 95%, not 2.500000000000002
    # A draw may leave a ratio undefined (an MAE over no answered item): the interval is over the draws that define it.
    defined = clustered[np.isfinite(clustered)]
    low, high = (float(v) for v in np.percentile(defined, [tail, 100 - tail])) if defined.size else (math.nan,) * 2
    return {"low": low, "high": high, **described, "design_effect": _variance_ratio(clustered, items)}


def resampled(statistic: Statistic, totals: np.ndarray, n_resamples: int, seed: int | tuple[int, ...]) -> np.ndarray:
    """``statistic`` of ``n_resamples`` draws of ``len(totals)`` rows with replacement (seeded; drawn in chunks
    that continue one random stream, so the draws do not depend on the chunk size)."""
    rng = np.random.default_rng(seed)
    per_chunk = max(1, DRAWS_PER_CHUNK // max(1, len(totals)))
    values = []
    for start in range(0, n_resamples, per_chunk):
        draws = rng.integers(0, len(totals), (min(per_chunk, n_resamples - start), len(totals)))
        # One 2-D gather and sum per column: the same pairwise sums an item bootstrap's mean takes.
        sums = np.stack([totals[:, k][draws].sum(axis=1) for k in range(totals.shape[1])], axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):  # an undefined draw is NaN, left out of the interval
            values.append(statistic(sums))
    return np.concatenate(values)


def _variance_ratio(clustered: np.ndarray, items: np.ndarray) -> float:
    base = float(np.nanvar(items))
    return float(np.nanvar(clustered)) / base if base > 0 else math.nan


def sign_flip_p(differences: ArrayLike, clusters: Sequence[Hashable], *, alternative: str = "two-sided",
                n_permutations: int = 10000, seed: int = 0) -> float:
    """p-value that the mean paired difference is 0, flipping the sign of each cluster's total at once (under
    the null the two members of every pair are exchangeable, and a cluster's pairs move together).

    ``alternative``: ``greater`` (mean > 0), ``less`` or ``two-sided``. Pairs with a non-finite difference are
    left out. The observed statistic counts as one permutation, so p >= 1 / (n_permutations + 1); NaN without
    pairs. With one item per cluster this is the item-level sign-flip test.
    """
    diff = np.asarray(differences, dtype=float)
    keep = np.isfinite(diff)
    keys = [key for key, kept in zip(clusters, keep, strict=True) if kept]
    diff = diff[keep]
    if diff.size == 0:
        return math.nan
    codes = cluster_codes(keys)
    totals = np.bincount(codes, weights=diff) if codes.max() + 1 < diff.size else diff
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(n_permutations, totals.size))
    permuted, observed = (signs @ totals) / diff.size, totals.sum() / diff.size
    # A tolerance keeps permutations that equal the observed mean up to rounding on the "as extreme" side.
    slack = 1e-12 * max(1.0, abs(observed))
    if alternative == "greater":
        extreme = permuted >= observed - slack
    elif alternative == "less":
        extreme = permuted <= observed + slack
    elif alternative == "two-sided":
        extreme = np.abs(permuted) >= abs(observed) - slack
    else:
        raise ValueError(f"alternative {alternative!r} is not greater, less or two-sided")
    return (int(np.count_nonzero(extreme)) + 1) / (n_permutations + 1)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values (step-down, monotone, capped at 1); NaN entries stay NaN.

    >>> holm([0.25, 0.5, 0.125])
    [0.5, 0.5, 0.375]
    """
    p = np.asarray(pvalues, dtype=float)
    finite = np.flatnonzero(np.isfinite(p))
    adjusted = np.full(p.size, math.nan)
    order = finite[np.argsort(p[finite], kind="stable")]
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (order.size - rank) * p[index]))
        adjusted[index] = running
    return [float(v) for v in adjusted]


# ------------------------------------------------------------------------------------------ statistics

def mean_of(column: int, count: int, scale: float = 1.0) -> Statistic:
    """The mean of one column: ``scale * sums[column] / sums[count]`` (``count`` a column of ones)."""
    return lambda sums: scale * (sums[..., column] / sums[..., count])


def difference_of_means(first: int, second: int, count: int, scale: float = 1.0) -> Statistic:
    """``mean(first) − mean(second)`` over the same items, each scaled as :func:`mean_of` scales it."""
    return lambda sums: scale * (sums[..., first] / sums[..., count]) - scale * (sums[..., second] / sums[..., count])


def mean_interval(values: ArrayLike, clusters: Sequence[Hashable], *, cluster: str, scale: float = 1.0,
                  **options: Any) -> dict[str, Any]:
    """:func:`cluster_interval` of the mean of the finite ``values`` (items with a non-finite value left out)."""
    array = np.asarray(values, dtype=float)
    keep = np.isfinite(array)
    kept = [key for key, k in zip(clusters, keep, strict=True) if k]
    columns = np.column_stack([array[keep], np.ones(int(keep.sum()))])
    return cluster_interval(mean_of(0, 1, scale), columns, kept, cluster=cluster, **options)
