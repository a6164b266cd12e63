"""General model vs its pathology-tuned descendant: paired differences with bootstrap CIs, ranking agreement."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from scipy import stats


def delta_mg(general: tuple[Sequence[bool], Sequence[bool]], tuned: tuple[Sequence[bool], Sequence[bool]], *,
             n_resamples: int = 2000, seed: int = 0, level: float = 0.95) -> dict[str, float]:
    """ΔMG = MG(tuned) − MG(general) in points, each a (correct with image, correct without) pair of arrays
    over the same items in the same order; the CI resamples items, the same draw for both models."""
    columns = np.column_stack([np.asarray(a, dtype=float) for a in (*general, *tuned)])
    if columns.size == 0:
        return {"delta": math.nan, "low": math.nan, "high": math.nan, "n": 0}

    def statistic(rows: np.ndarray) -> np.ndarray:
        means = rows.mean(axis=-2)
        return 100 * ((means[..., 2] - means[..., 3]) - (means[..., 0] - means[..., 1]))

    return _bootstrap(columns, statistic, n_resamples, seed, level)


def delta_mean(general: Sequence[float], tuned: Sequence[float], *, n_resamples: int = 2000, seed: int = 0,
               level: float = 0.95) -> dict[str, float]:
    """Mean of tuned − general over the items where both values are finite (paired bootstrap CI)."""
    pairs = np.column_stack([np.asarray(general, dtype=float), np.asarray(tuned, dtype=float)])
    pairs = pairs[np.isfinite(pairs).all(axis=1)]
    if pairs.size == 0:
        return {"delta": math.nan, "low": math.nan, "high": math.nan, "n": 0}

    def statistic(rows: np.ndarray) -> np.ndarray:
        return (rows[..., 1] - rows[..., 0]).mean(axis=-1)

    return _bootstrap(pairs, statistic, n_resamples, seed, level)


def _bootstrap(rows: np.ndarray, statistic, n_resamples: int, seed: int, level: float) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    draws = statistic(rows[rng.integers(0, len(rows), (n_resamples, len(rows)))])
    tail = 100 * (1 - level) / 2
    return {"delta": float(statistic(rows)), "low": float(np.percentile(draws, tail)),
            "high": float(np.percentile(draws, 100 - tail)), "n": len(rows)}


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
