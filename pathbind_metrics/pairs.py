"""General model vs its pathology-tuned descendant: paired differences with cluster intervals and tests, ranking
agreement."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

from pathbind_metrics import resampling as rs

ALPHA = 0.05  # the level of ``ci95`` and of the warning that no test can reach it


def paired_delta(differences: Sequence[float], clusters: Sequence[Hashable], *, cluster: str, scale: float = 1.0,
                 n_permutations: int = 10000, seed: int = 0) -> dict[str, Any]:
    """The mean of per-item differences tuned − general (``scale``-d: 100 for points), the two-sided cluster
    sign-flip p-value that it is 0, and its 95% interval: the means that test does not reject, so the interval
    excludes 0 exactly when p <= 0.05. Over the items whose difference is finite.

    The interval names what it resampled, its design effect and a ``warning`` (few or dominant clusters,
    :func:`~pathbind_metrics.resampling.cluster_warning`); with so few clusters that even the most extreme data
    cannot give p <= 0.05 (2 / 2^C, so 5 clusters or fewer at 95%) it has no bounds and says so.

    Every paired measure is such a mean: ΔAcc of (correct_tuned − correct_general), ΔMG of the difference of the
    two models' (correct with image − correct without) over the same items, ΔIoU of the IoU differences.
    """
    d = np.asarray(differences, dtype=float)
    keep = np.isfinite(d)
    flips = rs.SignFlips(d, clusters, n_permutations=n_permutations, seed=seed)
    described = rs.mean_interval(d, clusters, cluster=cluster)  # what is resampled, the design effect, warnings
    warnings = [described["warning"]] if described["warning"] else []
    if keep.any() and flips.smallest_p() > ALPHA:
        count = described["clusters"]
        warnings.append(f"no test can reach p <= {ALPHA} with {count} {cluster} clusters (the smallest two-sided "
                        f"sign-flip p is {f'2/2^{count} = ' if flips.exact else ''}{flips.smallest_p():.3g})")
    low, high = flips.interval(1 - ALPHA)
    interval = {"low": scale * low, "high": scale * high,
                **{key: described[key] for key in ("cluster", "clusters", "items", "design_effect")},
                "method": "inverted cluster sign-flip test", "warning": "; ".join(warnings)}
    return {"delta": float(scale * d[keep].mean()) if keep.any() else math.nan, "ci95": interval,
            "p": flips.p_value(), "n": int(keep.sum())}


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
