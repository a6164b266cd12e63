"""Aggregations over per-document records: by dimension, paired-bootstrap CIs, ablation drops."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pathbind_metrics import multimodal_gain
from pathbind_metrics.aggregations import accuracy_drop, by_dimension, ci95, condition_accuracy, named_aggregations
from pathbind_metrics.vqa import paired_bootstrap_ci


def record(item: str, condition: str, correct: bool, dimension: str | None = None) -> dict:
    return {"id": item, "condition": condition, "correct": correct, "valid": True, "dimension": dimension}


def test_by_dimension_splits_accuracy_and_gain():
    """Two dimensions with hand-computed accuracies and MG; the item count per dimension."""
    records = [record("a", "image", True, "D1"), record("a", "text", False, "D1"),
               record("b", "image", True, "D1"), record("b", "text", True, "D1"),
               record("c", "image", False, "D2"), record("c", "text", False, "D2")]
    table = by_dimension(records)
    assert table["D1"] == {"acc_image": 100.0, "acc_text": 50.0, "mg": 50.0, "n": 2}
    assert table["D2"]["mg"] == 0.0 and table["D2"]["n"] == 1
    assert by_dimension([record("x", "image", True)]) == {}


def test_ablation_drop_is_paired_against_the_original_image():
    """drop_blank = acc(image) - acc(blank) over the same items."""
    records = [record(str(i), "image", True) for i in range(4)] + [record(str(i), "blank", i == 0) for i in range(4)]
    assert condition_accuracy(records, "blank") == 25.0
    assert accuracy_drop(records, "blank") == 75.0 == named_aggregations()["drop_blank"](records)


def test_paired_bootstrap_ci_matches_scipy_percentile_bootstrap():
    """Our MG interval agrees with scipy.stats.bootstrap (paired, percentile) within resampling noise."""
    rng = np.random.default_rng(3)
    image, text = rng.random(200) < 0.7, rng.random(200) < 0.4
    ours = paired_bootstrap_ci(image, text, n_resamples=4000, seed=5)["mg"]
    reference = stats.bootstrap((image.astype(float), text.astype(float)),
                                lambda a, b, axis=-1: 100 * (a.mean(axis=axis) - b.mean(axis=axis)),
                                paired=True, method="percentile", n_resamples=4000, random_state=7).confidence_interval
    assert ours[0] == pytest.approx(reference.low, abs=1.5) and ours[1] == pytest.approx(reference.high, abs=1.5)
    assert ours[0] < multimodal_gain(image, text) < ours[1]


def test_ci95_is_deterministic_and_order_invariant():
    """The same records in another order (as ranks deliver them) give the same intervals."""
    records = [record(str(i), c, (i * 7 + len(c)) % 3 == 0) for i in range(30) for c in ("image", "text")]
    assert ci95(records) == ci95(list(reversed(records)))
    assert set(ci95(records)) == {"acc_image", "acc_text", "mg"}


def test_image_only_runs_have_no_gain_but_an_accuracy_interval():
    """Without text-condition records MG is NaN and the CI covers acc_image only."""
    records = [record(str(i), "image", i % 2 == 0) for i in range(10)]
    assert math.isnan(named_aggregations()["mg"](records))
    assert list(ci95(records)) == ["acc_image"]


def test_empty_input_gives_nan_not_an_exception():
    """No records at all: every scalar aggregation returns NaN."""
    for name in ("acc_image", "acc_text", "mg", "invalid_rate", "drop_blur_8"):
        assert math.isnan(named_aggregations()[name]([])), name
