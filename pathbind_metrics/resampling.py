"""Intervals and tests that resample what is independent: clusters of items (the questions on one image, the tiles
of one slide), not the items themselves.

Questions on one image are not independent draws: Path-VQA asks about 6.6 per image. An interval that treats items
as independent is too narrow by the square root of the design effect (Kish), about ``1 + (m - 1)·ICC`` for
clusters of ``m`` items with intra-cluster correlation ICC. So every interval here is built over clusters, and
holds its level with few clusters and with clusters of very unequal size (``benchmarks/coverage.py`` measures it
from 3 clusters up):

- :func:`cluster_interval`: the estimate ± t·SE, the SE the cluster jackknife's (leave one cluster out: it counts a
  large cluster's leverage, where a bootstrap's SD does not) and t on the Bell–McCaffrey degrees of freedom of a
  mean over clusters of these sizes (C − 1 for equal sizes, fewer when a few clusters carry most items). A
  percentile cluster bootstrap covers 0.8 at 5 clusters and less with a dominant cluster. Never narrower than the
  interval of independent items, which a few clusters that agree by chance would otherwise give.
- with ``proportion``: the Korn–Graubard interval, Clopper–Pearson on the effective number of items (items over
  the design effect, scaled by (t_items / t_df)²), which stays inside [0, 100] and has width at 0% or 100%.
- :func:`difference_interval`: a difference of two proportions over the same items (MG, a drop), the MOVER of the
  Korn–Graubard intervals of the shares gaining and losing: width wherever its parts have it, skewed near a bound.
- :class:`Interval`: the level-free part of each, its bounds at any level and the p-value of the test it inverts.
- :func:`sign_flip_p`: a cluster sign-flip test, exact (every sign pattern) up to 13 clusters;
  :meth:`SignFlips.interval`: the values of the mean it does not reject, so interval and p-value agree.

Each interval says what it resampled and warns where clusters are few (< 20), one holds more than 10% of the
items, or so few degrees of freedom are left that it is wide. Memory and time are linear in the items. A statistic
is a function of column totals: ``statistic(sums)`` maps ``sums[..., k]`` (the totals of ``k`` per-item columns)
to the measure, e.g. ``100 * sums[..., 0] / sums[..., 1]`` for an accuracy over the columns (correct, 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

Statistic = Callable[[np.ndarray], np.ndarray]
FEW_CLUSTERS = 20  # below this many clusters an interval warns that its level rests on the small-sample correction
DOMINANT_SHARE = 0.10  # a cluster holding more than this share of the items makes the others count for less
WIDE_DF = 3.0  # fewer degrees of freedom than this (t above 3.2): an interval says why it is wide


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


class Interval:
    """An interval's level-free part: what it resampled and how (``described``), and its bounds at any level
    (``bounds(level)``), from which :meth:`at` gives the interval and :meth:`p_value` the test it inverts. Built by
    :meth:`of_statistic`, :meth:`of_mean` and :meth:`of_difference`; :func:`cluster_interval`,
    :func:`mean_interval` and :func:`difference_interval` give their dicts at one level."""

    def __init__(self, described: dict[str, Any], bounds: Callable[[float], tuple[float, float]]) -> None:
        self.described, self.bounds = described, bounds

    def at(self, level: float = 0.95) -> dict[str, Any]:
        """``{"low", "high", "cluster", "clusters", "items", "design_effect", "df", "method", "warning"}``."""
        low, high = self.bounds(level)
        return {"low": low, "high": high, **self.described}

    def p_value(self) -> float:
        """The smallest 1 − level at which the interval excludes 0 (bisection to 1e-12: intervals widen with their
        level); 1 where none does, NaN without an interval."""
        def excludes(alpha: float) -> bool:
            low, high = self.bounds(1 - alpha)
            return bool(low > 0 or high < 0)

        low, high = 1e-12, 1 - 1e-12
        if math.isnan(self.bounds(0.5)[0]):
            return math.nan
        if excludes(low):
            return low
        if not excludes(high):
            return 1.0
        while high - low > 1e-12 * high:
            middle = (low + high) / 2
            low, high = (low, middle) if excludes(middle) else (middle, high)
        return high

    @classmethod
    def of_statistic(cls, statistic: Statistic, columns: ArrayLike, clusters: Sequence[Hashable], *, cluster: str,
                     proportion: float | None = None,
                     bounds: tuple[float, float] = (-math.inf, math.inf)) -> Interval:
        """See :func:`cluster_interval`."""
        rows, codes, sizes = _clustered(columns, clusters)
        if sizes.size < 2:
            return _no_interval(sizes, len(rows), cluster)
        totals = cluster_totals(rows, codes)
        with np.errstate(divide="ignore", invalid="ignore"):  # a left-out cluster may leave a ratio undefined: NaN
            estimate = float(statistic(totals.sum(axis=0)))
            variance = jackknife_variance(statistic, totals)
            items = variance if sizes.size == len(rows) else jackknife_variance(statistic, rows)
        effect = _ratio(variance, items)
        df = bell_mccaffrey_df(sizes, working_icc(effect, sizes))
        described = _described(cluster, sizes, len(rows), effect, df)
        alike = variance == 0 and items == 0 and all(map(math.isfinite, bounds))  # every item the same value
        if proportion is not None or alike:
            # A mean within finite bounds whose items all agree: the jackknife sees no spread, and would give a
            # point; its place between the bounds is a proportion whose interval has width (Kish's clusters).
            origin, reach = (0.0, proportion) if proportion is not None else (bounds[0], bounds[1] - bounds[0])

            def scaled(level: float) -> tuple[float, float]:
                low, high = korn_graubard((estimate - origin) / reach, variance / reach**2, sizes, df, level)
                return origin + low * reach, origin + high * reach

            return cls({**described, "method": "Korn–Graubard (Clopper–Pearson on effective n)"}, scaled)

        def symmetric(level: float) -> tuple[float, float]:
            # Never narrower than the interval of independent items: a few clusters that agree by chance would
            # otherwise give next to no width.
            half = max(float(stats.t.ppf(0.5 + level / 2, df)) * math.sqrt(variance),
                       float(stats.norm.ppf(0.5 + level / 2)) * math.sqrt(items) if math.isfinite(items) else 0.0)
            return max(estimate - half, bounds[0]), min(estimate + half, bounds[1])

        return cls({**described, "method": "cluster jackknife SE × t(df)"}, symmetric)

    @classmethod
    def of_mean(cls, values: ArrayLike, clusters: Sequence[Hashable], *, cluster: str, scale: float = 1.0,
                proportion: float | None = None) -> Interval:
        """See :func:`mean_interval`."""
        array = np.asarray(values, dtype=float)
        keep = np.isfinite(array)
        kept = [key for key, k in zip(clusters, keep, strict=True) if k]
        columns = np.column_stack([array[keep], np.ones(int(keep.sum()))])
        return cls.of_statistic(mean_of(0, 1, scale), columns, kept, cluster=cluster, proportion=proportion)

    @classmethod
    def of_difference(cls, differences: ArrayLike, clusters: Sequence[Hashable], *, cluster: str,
                      bound: float = 1.0, scale: float = 1.0) -> Interval:
        """See :func:`difference_interval`."""
        d = np.asarray(differences, dtype=float)
        keep = np.isfinite(d)
        d = d[keep] / bound
        rows, codes, sizes = _clustered(np.column_stack([np.maximum(d, 0), np.maximum(-d, 0), np.ones(d.size)]),
                                        [key for key, kept in zip(clusters, keep, strict=True) if kept])
        if sizes.size < 2:
            return _no_interval(sizes, len(rows), cluster)
        left_out = cluster_totals(rows, codes)
        left_out = left_out.sum(axis=0) - left_out
        deviations = left_out[:, :2] / left_out[:, 2:] - (left_out[:, :2] / left_out[:, 2:]).mean(axis=0)
        covariance = (sizes.size - 1) / sizes.size * deviations.T @ deviations  # jackknife, of the two shares
        shares, items = rows[:, :2].mean(axis=0), rows[:, :2].var(axis=0, ddof=1) / len(rows)
        dfs = [bell_mccaffrey_df(sizes, working_icc(_ratio(covariance[k, k], items[k]), sizes)) for k in (0, 1)]
        spread = math.sqrt(covariance[0, 0] * covariance[1, 1])
        correlation = covariance[0, 1] / spread if spread > 0 else 0.0
        effect = _ratio(covariance[0, 0] + covariance[1, 1] - 2 * covariance[0, 1],
                        float(np.var(rows[:, 0] - rows[:, 1], ddof=1)) / len(rows))
        reach = scale * bound

        def combined(level: float) -> tuple[float, float]:
            parts = [korn_graubard(shares[k], covariance[k, k], sizes, dfs[k], level) for k in (0, 1)]
            low, high = mover(shares, parts, correlation)
            return max(reach * low, -abs(reach)), min(reach * high, abs(reach))

        described = _described(cluster, sizes, len(rows), effect, min(dfs))
        return cls({**described, "method": "MOVER from the Korn–Graubard intervals of the shares gaining and "
                                           "losing"}, combined)


def cluster_interval(statistic: Statistic, columns: ArrayLike, clusters: Sequence[Hashable], *, cluster: str,
                     proportion: float | None = None, bounds: tuple[float, float] = (-math.inf, math.inf),
                     level: float = 0.95) -> dict[str, Any]:
    """The ``level`` interval of ``statistic`` over the items' ``columns`` (one row per item, ``clusters`` its
    cluster key), with what it resampled and how:

    ``{"low", "high", "cluster": <what a cluster is>, "clusters": C, "items": n, "design_effect": d,
    "df": <degrees of freedom>, "method", "warning": <"" or why the level is less certain or the interval wide>}``.

    The estimate ± t·SE, or with ``proportion`` (the statistic is a proportion times this, 100 for a percentage)
    the Korn–Graubard interval. ``bounds``: the statistic's possible range, which the interval does not leave;
    where both are finite and every item has the same value (no spread for the jackknife: a point), the
    Korn–Graubard interval of the estimate's place between them. NaN bounds for fewer than two clusters or where
    leaving a cluster out leaves the statistic undefined; a NaN design effect where the items do not vary.
    """
    found = Interval.of_statistic(statistic, columns, clusters, cluster=cluster, proportion=proportion,
                                  bounds=bounds)
    return found.at(level)


def mean_interval(values: ArrayLike, clusters: Sequence[Hashable], *, cluster: str, scale: float = 1.0,
                  proportion: float | None = None, level: float = 0.95) -> dict[str, Any]:
    """:func:`cluster_interval` of the mean of the finite ``values`` (items with a non-finite value left out)."""
    return Interval.of_mean(values, clusters, cluster=cluster, scale=scale, proportion=proportion).at(level)


def difference_interval(differences: ArrayLike, clusters: Sequence[Hashable], *, cluster: str, bound: float = 1.0,
                        scale: float = 1.0, level: float = 0.95) -> dict[str, Any]:
    """The ``level`` interval of the mean of per-item differences within ``[-bound, bound]`` (MG: correct with the
    image − correct without it, ``bound`` 1), times ``scale``, with :func:`cluster_interval`'s fields (``df``:
    the fewer of its two parts'). Items with a non-finite difference are left out.

    A difference of two proportions is the share of items that gain minus the share that lose (``max(d, 0)`` and
    ``max(-d, 0)`` over ``bound``): each has its Korn–Graubard interval, and the two are combined by the method of
    variance estimates recovery (MOVER: Newcombe's square-and-add of each bound's distance from its estimate,
    with the cluster jackknife's correlation of the two shares; Zou & Donner 2008). It keeps the parts' bounds:
    it has width wherever they have, at every value of the difference (every item gaining on 2 images is not
    [100, 100]), and where a few images lose it is skewed as the truth is.
    """
    return Interval.of_difference(differences, clusters, cluster=cluster, bound=bound, scale=scale).at(level)


def mover(estimates: ArrayLike, intervals: Sequence[tuple[float, float]],
          correlation: float = 0.0) -> tuple[float, float]:
    """Bounds of ``estimates[0] − estimates[1]`` from each estimate's interval (Newcombe 1998; the MOVER of Zou &
    Donner 2008): each bound is the difference minus (plus) the root of the squared distances from each estimate
    to its bound that moves the difference that way, less twice ``correlation`` times their product.

    >>> mover([0.5, 0.5], [(0.3, 0.7), (0.3, 0.7)])
    (-0.28284271247461906, 0.28284271247461906)
    """
    (first, second), ((low1, high1), (low2, high2)) = np.asarray(estimates, dtype=float), intervals
    down, up = first - low1, high2 - second  # the moves that lower the difference
    rise, fall = high1 - first, second - low2  # and those that raise it
    difference = first - second  # NaN in, NaN out: np.maximum keeps it where max() would not
    return (float(difference - np.sqrt(np.maximum(0.0, down**2 + up**2 - 2 * correlation * down * up))),
            float(difference + np.sqrt(np.maximum(0.0, rise**2 + fall**2 - 2 * correlation * rise * fall))))


def _clustered(columns: ArrayLike, clusters: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The items' columns as rows, their cluster codes and the clusters' sizes."""
    rows = np.asarray(columns, dtype=float)
    rows = rows.reshape(len(rows), -1) if rows.size else np.zeros((len(clusters), 1))
    if len(rows) != len(clusters):
        raise ValueError(f"{len(rows)} items but {len(clusters)} cluster keys")
    codes = cluster_codes(clusters)
    return rows, codes, np.bincount(codes).astype(float)


def _described(cluster: str, sizes: np.ndarray, items: int, effect: float, df: float) -> dict[str, Any]:
    return {"cluster": cluster, "clusters": sizes.size, "items": items, "design_effect": effect, "df": df,
            "warning": cluster_warning(sizes, cluster, df)}


def _no_interval(sizes: np.ndarray, items: int, cluster: str) -> Interval:
    """One cluster cannot show how clusters vary: no interval, rather than a point."""
    described = {**_described(cluster, sizes, items, math.nan, math.nan), "method": "none: fewer than two clusters"}
    return Interval(described, lambda level: (math.nan, math.nan))


def jackknife_variance(statistic: Statistic, totals: np.ndarray) -> float:
    """The leave-one-out jackknife variance of ``statistic`` over the rows of ``totals`` (clusters or items); NaN
    where leaving a row out leaves the statistic undefined."""
    left_out = statistic(totals.sum(axis=0) - totals)
    if not np.isfinite(left_out).all():
        return math.nan
    count = len(totals)
    return float((count - 1) / count * np.sum((left_out - left_out.mean()) ** 2))


def bell_mccaffrey_df(sizes: np.ndarray, icc: float = 0.0) -> float:
    """Degrees of freedom of the cluster-robust (CR2) variance of a mean over clusters of ``sizes`` items
    (Bell & McCaffrey 2002) under a working intra-cluster correlation ``icc``: C − 1 for equal sizes, towards 1
    as a few clusters carry most items (and most of the variance, the more so the higher ``icc``).

    The df is trace(M)² / ‖M‖²_F for the C × C matrix M = K (diag(a) − a sᵀ − s aᵀ + A s sᵀ) K, with ``s`` the
    clusters' shares of the items, ``a`` their sizes times their working correlation's row sums, A = Σa and
    K = diag(1/√(1 − s)). M is diagonal plus rank two, so both come from sums over the clusters: O(C) time and
    memory (the matrix itself would be 13 GB at 40,000 clusters).
    """
    share = sizes / sizes.sum()
    k2 = 1 / (1 - share)  # the CR2 scale, squared
    a = sizes * ((1 - icc) + icc * sizes)
    total = a.sum()
    trace = np.sum(k2 * (a - 2 * a * share + total * share**2))
    uu, vv, uv = np.sum(k2 * a * a), np.sum(k2 * share * share), np.sum(k2 * a * share)
    # ‖K diag(a) K‖² + 2⟨K diag(a) K, K B K⟩ + ‖K B K‖² with B = −a sᵀ − s aᵀ + A s sᵀ, u = K a, v = K s
    squares = (np.sum(k2**2 * a * (a - 4 * a * share + 2 * total * share**2))
               + 2 * uu * vv + 2 * uv**2 + total**2 * vv**2 - 4 * total * uv * vv)
    return float(trace**2 / squares)


def working_icc(design_effect: float, sizes: np.ndarray) -> float:
    """The intra-cluster correlation that design effect implies, 1 + (m − 1)·ICC with m the item-weighted mean
    cluster size (Kish), within [0, 1]; 0 where undefined."""
    m = np.sum(sizes**2) / sizes.sum()
    if not math.isfinite(design_effect) or m <= 1:
        return 0.0
    return float(min(1.0, max(0.0, (design_effect - 1) / (m - 1))))


def korn_graubard(p: float, variance: float, sizes: np.ndarray, df: float, level: float) -> tuple[float, float]:
    """Clopper–Pearson bounds of proportion ``p`` on the effective number of items ``p(1 − p) / variance``
    (Korn & Graubard 1998), scaled by (t_{n−1} / t_df)² for the few clusters the variance rests on. Where the
    items do not vary (``p`` 0 or 1) the effective number is Kish's effective number of clusters, as if every
    cluster's items were one answer; never more than the items."""
    if not (math.isfinite(p) and math.isfinite(variance)):
        return math.nan, math.nan
    items = sizes.sum()
    effective = p * (1 - p) / variance if variance > 0 and 0 < p < 1 else items**2 / np.sum(sizes**2)
    tail = 0.5 + level / 2
    effective = min(effective, items) * (stats.t.ppf(tail, items - 1) / stats.t.ppf(tail, df)) ** 2
    x = p * effective
    low = float(stats.beta.ppf(1 - tail, x, effective - x + 1)) if x > 0 else 0.0
    high = float(stats.beta.ppf(tail, x + 1, effective - x)) if x < effective else 1.0
    return low, high


def cluster_warning(sizes: np.ndarray, cluster: str, df: float = math.nan) -> str:
    """Why an interval over clusters of ``sizes`` items rests on its small-sample correction, and why it is wide
    where it rests on fewer than :data:`WIDE_DF` degrees of freedom, or ""."""
    reasons = []
    if 0 < sizes.size < FEW_CLUSTERS:  # no cluster at all: no interval, nothing to warn of
        reasons.append(f"only {sizes.size} {cluster} clusters (< {FEW_CLUSTERS})")
    if sizes.size and sizes.max() > max(DOMINANT_SHARE, 2 / sizes.size) * sizes.sum():  # more than twice its share
        reasons.append(f"one {cluster} holds {sizes.max() / sizes.sum():.0%} of the items "
                       f"(> {DOMINANT_SHARE:.0%})")
    if df < WIDE_DF:
        reasons.append(f"so its t has {df:.1f} degrees of freedom: the interval holds its level but is wide")
    return "; ".join(reasons)


def _ratio(clustered: float, items: float) -> float:
    return clustered / items if items > 0 and math.isfinite(clustered) else math.nan


# ------------------------------------------------------------------------------------------ sign-flip tests

class SignFlips:
    """The cluster sign-flip null of a mean paired difference: under it the two members of every pair are
    exchangeable, so each cluster's total keeps or flips its sign, all its pairs together.

    Every one of the 2^C sign patterns when there are at most ``n_permutations`` (13 clusters at the default
    10,000), else ``n_permutations`` seeded random ones. Pairs with a non-finite difference are left out.
    """

    def __init__(self, differences: ArrayLike, clusters: Sequence[Hashable], *, n_permutations: int = 10000,
                 seed: int = 0) -> None:
        diff = np.asarray(differences, dtype=float)
        keep = np.isfinite(diff)
        codes = cluster_codes([key for key, kept in zip(clusters, keep, strict=True) if kept])
        self.totals = np.bincount(codes, weights=diff[keep]) if codes.size else np.zeros(0)
        self.sizes = np.bincount(codes).astype(float)
        count = self.totals.size
        self.exact = count > 0 and 2**count <= n_permutations
        if self.exact:
            self.signs = 1.0 - 2.0 * ((np.arange(2**count)[:, None] >> np.arange(count)) & 1)
        else:
            self.signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(n_permutations, count))

    def p_value(self, alternative: str = "two-sided") -> float:
        """p that the mean difference is 0: the share of sign patterns at least as extreme as the observed one,
        which counts as one pattern when they are drawn (so p >= 1 / (n_permutations + 1)); NaN without pairs.
        Exact, the smallest two-sided p is 2 / 2^C."""
        if self.totals.size == 0:
            return math.nan
        permuted, observed = self.signs @ self.totals, self.totals.sum()
        slack = 1e-12 * max(1.0, abs(observed))  # permutations equal to the observed up to rounding count as extreme
        if alternative == "greater":
            extreme = permuted >= observed - slack
        elif alternative == "less":
            extreme = permuted <= observed + slack
        elif alternative == "two-sided":
            extreme = np.abs(permuted) >= abs(observed) - slack
        else:
            raise ValueError(f"alternative {alternative!r} is not greater, less or two-sided")
        return self._share(int(np.count_nonzero(extreme)))

    def _share(self, count: int | np.ndarray) -> Any:
        return count / len(self.signs) if self.exact else (count + 1) / (len(self.signs) + 1)

    def smallest_p(self) -> float:
        """The smallest two-sided p-value any data can give: 2 / 2^C exact."""
        return self._share(2 if self.exact else 0)

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """The mean differences δ the two-sided test does not reject at 1 − ``level`` (its p-value for the
        differences minus δ above it), as (lowest, highest); NaN when no test can reject, or without pairs.

        For one sign pattern s, "as extreme" at δ is |s·(T − δN)| >= |1·(T − δN)| (T the cluster totals, N their
        sizes): a quadratic in δ with a negative leading term unless s flips all or none, so a closed interval of
        δ. The p-value at δ counts the intervals that hold it, found for every δ at once by sorting their ends.
        """
        alpha = 1 - level
        if self.totals.size == 0 or self.smallest_p() > alpha:
            return math.nan, math.nan
        flipped, weights = self.signs @ self.totals, self.signs @ self.sizes
        observed, items = self.totals.sum(), self.sizes.sum()
        a = weights**2 - items**2
        b = -2 * (flipped * weights - observed * items)
        c = flipped**2 - observed**2
        always = np.isclose(a, 0)  # all or no cluster flipped: as extreme at every δ
        roots = np.sqrt(np.maximum(b * b - 4 * a * c, 0.0)[~always])
        real = (b * b - 4 * a * c)[~always] >= 0
        first, second = ((-b[~always] + sign * roots) / (2 * a[~always]) for sign in (1, -1))
        starts, ends = np.sort(np.minimum(first, second)[real]), np.sort(np.maximum(first, second)[real])
        points = np.concatenate([starts, ends])
        holding = np.searchsorted(starts, points, "right") - np.searchsorted(ends, points, "left")
        accepted = points[self._share(holding + int(always.sum())) > alpha]
        return (float(accepted.min()), float(accepted.max())) if accepted.size else (math.nan, math.nan)


def sign_flip_p(differences: ArrayLike, clusters: Sequence[Hashable], *, alternative: str = "two-sided",
                n_permutations: int = 10000, seed: int = 0) -> float:
    """p-value that the mean paired difference is 0 (:class:`SignFlips`); ``alternative``: ``greater`` (mean > 0),
    ``less`` or ``two-sided``. With one item per cluster this is the item-level sign-flip test."""
    return SignFlips(differences, clusters, n_permutations=n_permutations, seed=seed).p_value(alternative)


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
