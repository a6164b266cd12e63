"""General model vs its pathology-tuned descendant: paired differences with cluster intervals and tests, ranking
agreement."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

from pathbind_metrics import resampling as rs


def paired_delta(differences: Sequence[float], clusters: Sequence[Hashable], *, cluster: str, scale: float = 1.0,
                 n_resamples: int = 2000, n_permutations: int = 10000, seed: int = 0) -> dict[str, Any]:
    """The mean of per-item differences tuned − general (``scale``-d: 100 for points), its 95% cluster-bootstrap
    interval and the two-sided cluster sign-flip p-value that it is 0, over the items whose difference is finite.

    Every paired measure is such a mean: ΔAcc of (correct_tuned − correct_general), ΔMG of the difference of the
    two models' (correct with image − correct without) over the same items, ΔIoU of the IoU differences.
    """
    d = np.asarray(differences, dtype=float)
    keep = np.isfinite(d)
    keys = [key for key, kept in zip(clusters, keep, strict=True) if kept]
    options = {"n_resamples": n_resamples, "seed": seed}
    return {"delta": float(scale * d[keep].mean()) if keep.any() else math.nan,
            "ci95": rs.mean_interval(d, clusters, cluster=cluster, scale=scale, **options),
            "p": rs.sign_flip_p(d[keep], keys, n_permutations=n_permutations, seed=seed), "n": int(keep.sum())}


def ranking_agreement(scores: Mapping[str, Sequence[float]], reference: str) -> dict[str, float]:
    """Kendall's τ between the model ranking by ``scores[reference]`` and by each other score (one value per
    model, models in the same order); NaN with fewer than two models or a constant score."""
    base = np.asarray(scores[reference], dtype=float)
    agreement = {}
    for name, values in scores.items():
        if name == reference:
            continue
        other = np.asarray(values, dtype=float)
        keep = np.isfinite(base) & np.isfinite(other)
        tau = stats.kendalltau(base[keep], other[keep]).statistic if keep.sum() >= 2 else math.nan
        agreement[name] = float(tau)
    return agreement
