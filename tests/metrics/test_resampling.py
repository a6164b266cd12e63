"""Cluster intervals, design effects and cluster sign-flip tests against independent references: scipy's t and exact
binomial intervals and permutation test, statsmodels' Newcombe interval, the Bell–McCaffrey matrix written out, and
the design effect 1 + (m - 1)·ICC of clusters with a known intra-cluster correlation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from pathbind_metrics import resampling as rs


def test_one_item_per_cluster_gives_the_paired_t_interval():
    """With every item its own cluster the jackknife SE of a mean is s/√n: the interval is scipy's one-sample t
    interval of the paired differences, and the design effect exactly 1."""
    rng = np.random.default_rng(3)
    image, text = (rng.random(200) < 0.7).astype(float), (rng.random(200) < 0.4).astype(float)
    interval = rs.mean_interval(100 * (image - text), [f"img{i}" for i in range(200)], cluster="image")
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
    # Within finite bounds (a Dice, an entity recall), the same value on every item is no point: 0 on 12 images
    # is Clopper–Pearson's 0 of 12 (scipy's exact binomial interval).
    nothing = rs.cluster_interval(rs.mean_of(0, 1, 100.0), np.column_stack([np.zeros(12), np.ones(12)]),
                                  list(range(12)), cluster="image", bounds=(0.0, 100.0))
    reference = stats.binomtest(0, 12).proportion_ci(method="exact")
    assert (nothing["low"], nothing["high"]) == pytest.approx((0.0, 100 * reference.high))
    single = rs.mean_interval([1.0, 0.0, 1.0], ["a"] * 3, cluster="image")  # every item on one image
    assert math.isnan(single["low"]) and (single["clusters"], single["items"]) == (1, 3)
    with pytest.raises(ValueError, match="3 items but 2 cluster keys"):
        rs.cluster_interval(rs.mean_of(0, 1), [[1, 1]] * 3, ["a", "b"], cluster="image")


def bell_mccaffrey_matrix_df(sizes: np.ndarray, icc: float) -> float:
    """Bell & McCaffrey's df written out as the C × C matrix of the CR2-scaled, centred cluster indicators under
    the working correlation: trace² over the sum of squares."""
    share, scale = sizes / sizes.sum(), 1 / np.sqrt(1 - sizes / sizes.sum())
    a = sizes * ((1 - icc) + icc * sizes)
    m = (np.diag(a) - np.outer(a, share) - np.outer(share, a) + np.outer(share, share) * a.sum()) \
        * np.outer(scale, scale)
    return float(np.trace(m) ** 2 / np.sum(m * m))


@pytest.mark.parametrize("icc", [0.0, 0.3, 1.0])
def test_the_degrees_of_freedom_from_sums_equal_the_matrix_form(icc):
    """The closed form in the cluster sizes (O(C) memory) is the matrix form's number, equal or unequal sizes,
    one dominant cluster, 2 to 300 clusters; 300,000 clusters take no C × C matrix (720 GB)."""
    rng = np.random.default_rng(12)
    for sizes in (np.full(7, 4.0), np.array([60.0, 60.0, *[3.0] * 18]), np.array([1.0, 9.0]),
                  *(rng.integers(1, 40, count).astype(float) for count in (3, 30, 300))):
        assert rs.bell_mccaffrey_df(sizes, icc) == pytest.approx(bell_mccaffrey_matrix_df(sizes, icc), rel=1e-9)
    assert rs.bell_mccaffrey_df(np.ones(300_000)) == pytest.approx(299_999)


def test_mover_is_newcombes_square_and_add():
    """Given each proportion's Wilson interval, the MOVER of the difference is Newcombe's hybrid score interval
    for two independent proportions (statsmodels' ``newcomb``)."""
    for counts in ((45, 60, 20, 50), (60, 60, 2, 40), (0, 30, 0, 30)):
        parts = [proportion_confint(count, n, method="wilson") for count, n in (counts[:2], counts[2:])]
        ours = rs.mover([counts[0] / counts[1], counts[2] / counts[3]], parts)
        assert ours == pytest.approx(confint_proportions_2indep(*counts, method="newcomb", compare="diff"))


def test_a_difference_is_never_a_point_while_its_parts_are_uncertain():
    """Every item gaining on 2 images (the quick start's MG of 100) keeps a lower bound far below 100; no item
    changing keeps width both ways; the shares' intervals are the Korn–Graubard ones (Clopper–Pearson on n − 1
    independent items, the jackknife's variance of a share being p(1 − p)/(n − 1))."""
    gained = rs.difference_interval([1.0] * 4, ["a", "a", "b", "b"], cluster="image", scale=100)
    assert gained["high"] == 100 and gained["low"] < 0 and "1.0 degrees of freedom" in gained["warning"]
    still = rs.difference_interval([0.0] * 60, list(range(60)), cluster="image", scale=100)
    reference = stats.binomtest(0, 60).proportion_ci(method="exact")
    assert (still["low"], still["high"]) == pytest.approx((-100 * reference.high, 100 * reference.high))
    rng = np.random.default_rng(13)
    image, text = (rng.random(300) < 0.8).astype(float), (rng.random(300) < 0.3).astype(float)
    interval = rs.difference_interval(image - text, list(range(300)), cluster="image")
    shares = [image * (1 - text), text * (1 - image)]
    parts = [clopper_pearson(share.mean() * 299, 299) for share in shares]
    expected = rs.mover([share.mean() for share in shares], parts, np.corrcoef(*shares)[0, 1])
    assert (interval["low"], interval["high"]) == pytest.approx(expected, rel=1e-9)


def clopper_pearson(successes: float, n: float) -> tuple[float, float]:
    """The exact binomial interval's beta quantiles, at a count that need not be whole."""
    return stats.beta.ppf(0.025, successes, n - successes + 1), stats.beta.ppf(0.975, successes + 1, n - successes)


def coverage_of_a_96_point_gain(images: int, datasets: int = 150) -> tuple[float, float]:
    """Coverage of a true MG of 96 (98% with the image, 2% without; rare weak images, ICC 0.3) on images of
    lognormal size, by the difference interval and by the cluster jackknife × t of the differences it replaced."""
    rng = np.random.default_rng(14)
    hits = np.zeros(2)
    for _ in range(datasets):
        sizes = np.maximum(1, np.round(np.exp(rng.normal(math.log(4), 1.0, images)))).astype(int)
        keys = np.repeat(np.arange(images), sizes).tolist()
        image, text = ((rng.random(sizes.sum()) < np.repeat(rng.beta(m * (1 / 0.3 - 1), (1 - m) * (1 / 0.3 - 1),
                                                                     images), sizes)).astype(float)
                       for m in (0.98, 0.02))
        for k, found in enumerate((rs.difference_interval(image - text, keys, cluster="image"),
                                   rs.mean_interval(image - text, keys, cluster="image"))):
            hits[k] += found["low"] <= 0.96 <= found["high"]
    return hits[0] / datasets, hits[1] / datasets


def test_a_gain_near_the_bound_is_covered_where_the_jackknife_collapsed():
    """At 10 lognormal images the jackknife × t covered a 96-point gain about 0.6 of the time (often a point:
    every difference 1); the difference interval at its level (binomial SE at 150 data sets: 0.018)."""
    ours, replaced = coverage_of_a_96_point_gain(10)
    assert ours >= 0.92 and replaced < 0.8


def test_the_p_value_of_an_interval_is_where_it_reaches_zero():
    """Interval.p_value: the interval at 1 − p just touches 0, excludes it above and not below."""
    rng = np.random.default_rng(15)
    for shift in (0.0, 0.1, 0.3):
        image, text = (rng.random(120) < 0.5 + shift).astype(float), (rng.random(120) < 0.5).astype(float)
        keys = np.repeat(np.arange(30), 4).tolist()
        interval = rs.Interval.of_difference(image - text, keys, cluster="image")
        p = interval.p_value()
        assert 0 < p <= 1
        if p < 1:
            inside, outside = interval.bounds(1 - p * 1.001), interval.bounds(1 - p * 0.999)
            assert not inside[0] <= 0 <= inside[1] and outside[0] <= 0 <= outside[1]


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
