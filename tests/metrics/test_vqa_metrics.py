"""VQA metrics: the paired-bootstrap interval of accuracies and Multimodal Gain."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pathbind_metrics import multimodal_gain
from pathbind_metrics.vqa import paired_bootstrap_ci


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
