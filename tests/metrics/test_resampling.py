"""Cluster-bootstrap intervals, design effects and cluster sign-flip tests against independent references: the item
bootstrap written out here, scipy's bootstrap, and the design effect 1 + (m - 1)·ICC of clusters with a known
intra-cluster correlation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pathbind_metrics import multimodal_gain
from pathbind_metrics import resampling as rs


def item_bootstrap_mg(image: np.ndarray, text: np.ndarray, seed: int = 0, n: int = 2000) -> list[float]:
    """The item-level paired bootstrap every interval used before clustering, written out independently."""
    rows = np.random.default_rng(seed).integers(0, image.size, size=(n, image.size))
    acc_image, acc_text = 100.0 * image[rows].mean(axis=1), 100.0 * text[rows].mean(axis=1)
    return [float(v) for v in np.percentile(acc_image - acc_text, [2.5, 97.5])]


def mg_interval(image: np.ndarray, text: np.ndarray, keys: list, **options) -> dict:
    columns = np.column_stack([image, text, np.ones(image.size)])
    return rs.cluster_interval(rs.difference_of_means(0, 1, 2, 100.0), columns, keys, cluster="image", **options)


def test_one_item_per_cluster_reproduces_the_item_bootstrap_exactly():
    rng = np.random.default_rng(3)
    image, text = (rng.random(200) < 0.7).astype(float), (rng.random(200) < 0.4).astype(float)
    interval = mg_interval(image, text, [f"img{i}" for i in range(200)])
    assert [interval["low"], interval["high"]] == item_bootstrap_mg(image, text)
    assert interval["design_effect"] == 1.0 and interval["clusters"] == interval["items"] == 200


def test_the_interval_agrees_with_scipys_paired_percentile_bootstrap():
    rng = np.random.default_rng(3)
    image, text = rng.random(200) < 0.7, rng.random(200) < 0.4
    ours = mg_interval(image.astype(float), text.astype(float), list(range(200)), n_resamples=4000, seed=5)
    reference = stats.bootstrap((image.astype(float), text.astype(float)),
                                lambda a, b, axis=-1: 100 * (a.mean(axis=axis) - b.mean(axis=axis)),
                                paired=True, method="percentile", n_resamples=4000, random_state=7).confidence_interval
    assert ours["low"] == pytest.approx(reference.low, abs=1.5)
    assert ours["high"] == pytest.approx(reference.high, abs=1.5)
    assert ours["low"] < multimodal_gain(image, text) < ours["high"]


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
        clustered = rs.mean_interval(y, keys, cluster="image", n_resamples=1000, seed=seed)
        items = rs.mean_interval(y, list(range(y.size)), cluster="item", n_resamples=1000, seed=seed)
        effects.append(clustered["design_effect"])
        ratios.append((clustered["high"] - clustered["low"]) / (items["high"] - items["low"]))
    assert np.mean(effects) == pytest.approx(expected, rel=0.12)
    assert np.mean(ratios) == pytest.approx(math.sqrt(expected), rel=0.1)


def test_clusters_of_unequal_size_weigh_by_their_items():
    """The resampled statistic is a ratio of totals: a cluster of 9 items counts 9 times one of 1."""
    y = np.array([1.0] * 9 + [0.0])
    interval = rs.mean_interval(y, ["big"] * 9 + ["small"], cluster="image", n_resamples=500)
    assert interval["clusters"] == 2 and interval["items"] == 10
    assert interval["low"] == 0.0 and interval["high"] == 1.0  # draws: (big, big), (small, small), one of each: 0.9
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
