"""Cluster-bootstrap intervals, design effects and cluster sign-flip tests against independent references: the item
bootstrap written out here, scipy's bootstrap, and the design effect 1 + (m - 1)·ICC of clusters with a known
intra-cluster correlation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pathbind_metrics import resampling as rs


def mg_interval(image: np.ndarray, text: np.ndarray, keys: list, **options) -> dict:
    columns = np.column_stack([image, text, np.ones(image.size)])
    return rs.cluster_interval(rs.difference_of_means(0, 1, 2, 100.0), columns, keys, cluster="image", **options)


def test_one_item_per_cluster_gives_the_paired_t_interval():
    """With every item its own cluster the jackknife SE of a mean is s/√n: the interval is scipy's one-sample t
    interval of the paired differences, and the design effect exactly 1."""
    rng = np.random.default_rng(3)
    image, text = (rng.random(200) < 0.7).astype(float), (rng.random(200) < 0.4).astype(float)
    interval = mg_interval(image, text, [f"img{i}" for i in range(200)])
    reference = stats.ttest_1samp(100 * (image - text), 0).confidence_interval()
    assert (interval["low"], interval["high"]) == pytest.approx((reference.low, reference.high), rel=1e-9)
    assert interval["design_effect"] == 1.0 and interval["clusters"] == interval["items"] == 200
    assert interval["df"] == pytest.approx(199) and interval["warning"] == ""


def test_equal_clusters_give_the_t_interval_of_cluster_means():
    """Clusters of equal size: the mean is the mean of cluster means, and the interval scipy's t interval of those
    C means on C − 1 degrees of freedom, the small-sample interval that holds from 3 clusters up."""
    rng = np.random.default_rng(4)
    y = clustered_outcomes(rng, 5, 6, 0.3)
    keys = np.repeat(np.arange(5), 6).tolist()
    interval = rs.mean_interval(y, keys, cluster="image", scale=100)
    reference = stats.ttest_1samp(100 * y.reshape(5, 6).mean(axis=1), 0).confidence_interval()
    assert (interval["low"], interval["high"]) == pytest.approx((reference.low, reference.high), rel=1e-9)
    assert interval["df"] == pytest.approx(4) and interval["warning"] == "only 5 image clusters (< 20)"


def clustered_outcomes(rng: np.random.Generator, n_clusters: int, size: int, icc: float) -> np.ndarray:
    """0/1 outcomes whose clusters share a Beta-distributed rate with intra-cluster correlation ``icc`` (mean 0.5):
    the beta-binomial with a + b = 1/icc - 1."""
    a = b = (1 / icc - 1) / 2
    rates = rng.beta(a, b, n_clusters)
    return (rng.random((n_clusters, size)) < rates[:, None]).astype(float).ravel()


@pytest.mark.parametrize(("size", "icc"), [(5, 0.5), (8, 0.25)])
def test_intervals_widen_by_the_expected_design_effect(size, icc):
    """Over 20 datasets the mean design effect is 1 + (m - 1)·ICC and the width ratio to the item interval its
    square root, within Monte-Carlo error."""
    expected = 1 + (size - 1) * icc
    effects, ratios = [], []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        y = clustered_outcomes(rng, 150, size, icc)
        keys = np.repeat(np.arange(150), size).tolist()
        clustered = rs.mean_interval(y, keys, cluster="image")
        items = rs.mean_interval(y, list(range(y.size)), cluster="item")
        effects.append(clustered["design_effect"])
        ratios.append((clustered["high"] - clustered["low"]) / (items["high"] - items["low"]))
    assert np.mean(effects) == pytest.approx(expected, rel=0.12)
    assert np.mean(ratios) == pytest.approx(math.sqrt(expected), rel=0.1)


def test_clusters_of_unequal_size_weigh_by_their_items_and_lower_the_degrees_of_freedom():
    """The statistic is a ratio of totals: a cluster of 9 items counts 9 times one of 1; leaving either out gives
    1 or 0, a jackknife SE of 0.5. A dominant cluster leaves fewer degrees of freedom than C − 1, and warns."""
    y = np.array([1.0] * 9 + [0.0])
    interval = rs.mean_interval(y, ["big"] * 9 + ["small"], cluster="image")
    assert interval["clusters"] == 2 and interval["items"] == 10
    half = stats.t.ppf(0.975, interval["df"]) * 0.5
    assert (interval["low"], interval["high"]) == pytest.approx((0.9 - half, 0.9 + half))
    assert rs.bell_mccaffrey_df(np.full(7, 4.0)) == pytest.approx(6)
    dominant = np.array([60.0, 60.0, *[3.0] * 18])
    assert 1 < rs.bell_mccaffrey_df(dominant) < 4
    assert rs.cluster_warning(dominant, "image") == "one image holds 34% of the items (> 10%)"
    draws = rs.resampled(rs.mean_of(0, 1), np.array([[9.0, 9.0], [0.0, 1.0]]), 500, 0)
    assert set(np.round(draws, 12)) == {1.0, 0.0, 0.9}


def test_chunked_draws_equal_one_draw():
    totals = np.random.default_rng(1).random((300, 2))
    whole = rs.resampled(rs.mean_of(0, 1), totals, 64, 4)
    saved, rs.DRAWS_PER_CHUNK = rs.DRAWS_PER_CHUNK, 300 * 5  # five resamples per chunk
    try:
        assert np.array_equal(rs.resampled(rs.mean_of(0, 1), totals, 64, 4), whole)
    finally:
        rs.DRAWS_PER_CHUNK = saved


def test_a_proportion_at_100_percent_keeps_a_lower_bound():
    """All 60 answers right on 60 images: Clopper–Pearson's [94.0, 100] (scipy's exact binomial interval), not
    [100, 100]; on 5 images of 6 questions the bound rests on 5 clusters and is lower still."""
    interval = rs.mean_interval(np.ones(60), list(range(60)), cluster="image", scale=100, proportion=100)
    reference = stats.binomtest(60, 60).proportion_ci(method="exact")
    assert (interval["low"], interval["high"]) == pytest.approx((100 * reference.low, 100 * reference.high))
    clustered = rs.mean_interval(np.ones(30), np.repeat(np.arange(5), 6).tolist(), cluster="image", scale=100,
                                 proportion=100)
    assert clustered["low"] < 60 and clustered["high"] == 100.0 and clustered["warning"]
    inside = rs.mean_interval(np.r_[np.ones(29), 0.0], np.repeat(np.arange(5), 6).tolist(), cluster="image",
                              scale=100, proportion=100)
    assert 0 < inside["low"] < 96.7 < inside["high"] <= 100


def coverage_at_five_clusters(proportion: float | None, datasets: int = 300) -> float:
    """Coverage of the true mean 50 by the interval of 0/1 answers on 5 images of lognormal sizes, ICC 0.3."""
    rng = np.random.default_rng(11)
    hits = 0
    for _ in range(datasets):
        sizes = np.maximum(1, np.round(np.exp(rng.normal(math.log(4), 1.0, 5)))).astype(int)
        rates = rng.beta(0.5 * (1 / 0.3 - 1), 0.5 * (1 / 0.3 - 1), 5)
        y = (rng.random(sizes.sum()) < np.repeat(rates, sizes)).astype(float)
        interval = rs.mean_interval(y, np.repeat(np.arange(5), sizes).tolist(), cluster="image", scale=100,
                                    proportion=proportion)
        hits += interval["low"] <= 50 <= interval["high"]
    return hits / datasets


@pytest.mark.parametrize("proportion", [None, 100.0])
def test_intervals_hold_their_level_at_five_clusters_of_unequal_size(proportion):
    """A percentile cluster bootstrap covers about 0.8 here; these intervals about 0.95 (binomial SE at 300 data
    sets: 0.013; benchmarks/coverage.py measures every setting)."""
    assert coverage_at_five_clusters(proportion) >= 0.91


def test_no_items_and_constant_items():
    empty = rs.mean_interval([], [], cluster="image")
    assert math.isnan(empty["low"]) and empty["clusters"] == 0 and math.isnan(empty["design_effect"])
    constant = rs.mean_interval([1.0] * 6, list("aabbcc"), cluster="image")
    assert (constant["low"], constant["high"]) == (1.0, 1.0) and math.isnan(constant["design_effect"])
    single = rs.mean_interval([1.0, 0.0, 1.0], ["a"] * 3, cluster="image")  # every item on one image
    assert math.isnan(single["low"]) and (single["clusters"], single["items"]) == (1, 3)
    with pytest.raises(ValueError, match="3 items but 2 cluster keys"):
        rs.cluster_interval(rs.mean_of(0, 1), [[1, 1]] * 3, ["a", "b"], cluster="image")


def item_sign_flip_p(diff: np.ndarray, n_permutations: int, seed: int) -> float:
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(n_permutations, diff.size))
    observed = diff.mean()
    extreme = np.count_nonzero((signs @ diff) / diff.size >= observed - 1e-12 * max(1.0, abs(observed)))
    return (extreme + 1) / (n_permutations + 1)


def test_sign_flip_with_one_item_per_cluster_is_the_item_test():
    diff = np.random.default_rng(2).normal(0.2, 1.0, 40)
    ours = rs.sign_flip_p(diff, list(range(40)), alternative="greater", n_permutations=2000, seed=3)
    assert ours == item_sign_flip_p(diff, 2000, 3)
    assert rs.sign_flip_p(np.ones(30), list(range(30)), alternative="greater", n_permutations=2000) == 1 / 2001
    assert rs.sign_flip_p(np.zeros(30), list(range(30)), n_permutations=2000) == 1.0
    assert math.isnan(rs.sign_flip_p([math.nan], ["a"]))


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_up_to_13_clusters_every_sign_pattern_is_counted_as_scipy_does(alternative):
    """Exact enumeration: scipy's permutation_test of the cluster totals' sum gives the same p-value, and with C
    clusters no two-sided p can be below 2/2^C."""
    rng = np.random.default_rng(5)
    for count in (3, 5, 9, 13):
        sizes = rng.integers(1, 6, count)
        keys = np.repeat(np.arange(count), sizes)
        diff = rng.normal(0.4, 1.0, keys.size) + np.repeat(rng.normal(0, 0.5, count), sizes)
        totals = np.bincount(keys, weights=diff)
        reference = stats.permutation_test((totals,), lambda x, axis=-1: x.sum(axis=axis), vectorized=True,
                                           permutation_type="samples", n_resamples=10000, alternative=alternative)
        flips = rs.SignFlips(diff, keys.tolist())
        assert flips.exact and flips.p_value(alternative) == pytest.approx(reference.pvalue, rel=1e-12)
        assert flips.smallest_p() == 2 / 2**count


def test_the_interval_is_where_the_sign_flip_test_does_not_reject():
    """Over 60 data sets on 4 to 30 clusters of unequal size: the test of "mean = bound ∓ ε" rejects just outside
    each bound and not just inside, and the interval excludes 0 exactly when p <= 0.05. With 5 clusters no test
    can reject: no bounds."""
    rng = np.random.default_rng(6)
    for seed in range(60):
        count = int(rng.integers(6, 31))
        sizes = rng.integers(1, 8, count)
        keys = np.repeat(np.arange(count), sizes).tolist()
        diff = rng.normal(rng.choice([0.0, 0.3]), 1.0, len(keys)) + np.repeat(rng.normal(0, 0.5, count), sizes)
        low, high = rs.SignFlips(diff, keys, n_permutations=2000, seed=seed).interval()

        def p_at(delta: float) -> float:
            return rs.sign_flip_p(diff - delta, keys, n_permutations=2000, seed=seed)  # noqa: B023

        width = 1e-7 * (high - low)
        assert p_at(low - width) <= 0.05 < p_at(low + width) and p_at(high + width) <= 0.05 < p_at(high - width)
        assert (p_at(0.0) <= 0.05) == (not low <= 0 <= high)
    assert all(math.isnan(bound) for bound in rs.SignFlips(np.ones(5), list("abcde")).interval())


def test_the_cluster_sign_flip_test_holds_its_level_where_the_item_test_does_not():
    """Null differences shared within clusters of 10: the item test rejects far too often, the cluster test at
    most at its 5% level (over 200 seeds)."""
    clustered, items = [], []
    for seed in range(200):
        rng = np.random.default_rng(seed)
        diff = np.repeat(rng.normal(0, 1, 12), 10) + rng.normal(0, 0.2, 120)
        keys = np.repeat(np.arange(12), 10).tolist()
        clustered.append(rs.sign_flip_p(diff, keys, n_permutations=400, seed=seed) <= 0.05)
        items.append(rs.sign_flip_p(diff, list(range(120)), n_permutations=400, seed=seed) <= 0.05)
    assert np.mean(clustered) <= 0.05 + 0.03  # binomial SE at 200 seeds is 0.015
    assert np.mean(items) > 0.3


def test_holm():
    assert rs.holm([0.01, math.nan, 0.02]) == pytest.approx([0.02, math.nan, 0.02], nan_ok=True)
    assert rs.holm([0.25, 0.5, 0.125]) == [0.5, 0.5, 0.375]
