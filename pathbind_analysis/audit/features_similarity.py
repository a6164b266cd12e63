"""Cosine similarity of ℓ2-normalised slide embeddings for same-case, same-site and cross-site pairs, and its plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

GROUPS = {"same_case": "same patient (sibling slides)", "same_tss": "same site, different patient",
          "cross_tss": "different sites"}
PAIR_STREAM, BOOTSTRAP_STREAM = 3, 4  # random streams of --seed (see features_probes)


def pair_similarities(vectors: np.ndarray, sites: np.ndarray, cases: np.ndarray, max_pairs: int, seed: int,
                      n_resamples: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Summary per group (mean with a 95% bootstrap interval over its pairs, quartiles, excess over the cross-site
    mean, one-sided Mann-Whitney U tests of cross < same site < same case) and each group's similarities.

    A group with more than ``max_pairs`` pairs is sampled (uniformly, without replacement): cross-site pairs always
    are on a real cohort, as in the paper (n=20,000).
    """
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    rng = np.random.default_rng((seed, PAIR_STREAM))
    pairs = {"same_case": _within(cases), "same_tss": _within(sites, differ=cases)}
    totals = {name: len(found) for name, found in pairs.items()}
    pairs = {name: _sample(found, max_pairs, rng) for name, found in pairs.items()}
    totals["cross_tss"], pairs["cross_tss"] = _cross_pairs(sites, max_pairs, rng)
    values = {name: np.einsum("ij,ij->i", unit[p[:, 0]], unit[p[:, 1]]) for name, p in pairs.items()}
    baseline = float(values["cross_tss"].mean()) if len(values["cross_tss"]) else float("nan")
    boot = np.random.default_rng((seed, BOOTSTRAP_STREAM))
    summary: dict[str, Any] = {"max_pairs": max_pairs, "groups": {}}
    for name, found in values.items():
        summary["groups"][name] = {"pairs_total": totals[name], "pairs_used": len(found), **_describe(found, boot,
                                   n_resamples), "excess_over_cross_tss": _mean(found) - baseline}
    summary["mann_whitney_p"] = {"cross_tss<same_tss": _less(values["cross_tss"], values["same_tss"]),
                                 "same_tss<same_case": _less(values["same_tss"], values["same_case"])}
    return summary, values


def write_similarity_plot(values: dict[str, np.ndarray], path: Path, title: str) -> None:
    """Overlaid densities of the three groups with their means marked."""
    from matplotlib.figure import Figure  # no pyplot: no GUI backend, no global state

    figure = Figure(figsize=(6.5, 4), layout="constrained")
    ax = figure.subplots()
    present = np.concatenate([*values.values(), np.zeros(0)])
    bins = np.linspace(present.min(), present.max(), 50).tolist() if len(present) else 10
    for (name, found), colour in zip(values.items(), ("tab:red", "tab:orange", "tab:blue"), strict=True):
        if not len(found):
            continue
        ax.hist(found, bins=bins, density=True, histtype="stepfilled", alpha=0.35, color=colour,
                label=f"{GROUPS[name]} (n={len(found):,}, mean {found.mean():.3f})")
        ax.axvline(found.mean(), color=colour, linestyle="--", linewidth=1)
    ax.set_xlabel("cosine similarity of ℓ2-normalised slide embeddings")
    ax.set_ylabel("density")
    ax.set_title(title)
    ax.legend(fontsize=8)
    figure.savefig(path, dpi=150)


def _within(groups: np.ndarray, differ: np.ndarray | None = None) -> np.ndarray:
    """Every pair (i < j) of slides sharing a ``groups`` value (and with different ``differ`` values), K×2."""
    members: dict[str, list[int]] = {}
    for index, value in enumerate(groups.tolist()):
        members.setdefault(value, []).append(index)
    found = [np.zeros((0, 2), dtype=np.int64)]
    for indices in members.values():
        first, second = np.triu_indices(len(indices), 1)
        pairs = np.asarray(indices, dtype=np.int64)[np.column_stack([first, second])]
        found.append(pairs if differ is None else pairs[differ[pairs[:, 0]] != differ[pairs[:, 1]]])
    return np.concatenate(found)


def _cross_pairs(sites: np.ndarray, max_pairs: int, rng: np.random.Generator) -> tuple[int, np.ndarray]:
    """(how many cross-site pairs there are, all of them or ``max_pairs`` drawn without replacement)."""
    _, counts = np.unique(sites, return_counts=True)
    total = int((counts.sum() ** 2 - (counts ** 2).sum()) // 2)
    if total <= max_pairs:
        found = [(i, j) for i in range(len(sites)) for j in np.flatnonzero(sites[i + 1:] != sites[i]) + i + 1]
        return total, np.array(found, dtype=np.int64).reshape(-1, 2)
    chosen: set[tuple[int, int]] = set()
    while len(chosen) < max_pairs:  # rejection: most random pairs of a real cohort cross sites
        first, second = rng.integers(0, len(sites), size=(2, 2 * max_pairs))
        for i, j in zip(first.tolist(), second.tolist(), strict=True):
            if sites[i] != sites[j] and len(chosen) < max_pairs:
                chosen.add((min(i, j), max(i, j)))
    return total, np.array(sorted(chosen), dtype=np.int64)


def _sample(pairs: np.ndarray, max_pairs: int, rng: np.random.Generator) -> np.ndarray:
    if len(pairs) <= max_pairs:
        return pairs
    return pairs[np.sort(rng.choice(len(pairs), size=max_pairs, replace=False))]


def _describe(values: np.ndarray, rng: np.random.Generator, n_resamples: int) -> dict[str, Any]:
    if not len(values):
        return {"mean": float("nan"), "mean_ci95": [float("nan")] * 2, "quartiles": [float("nan")] * 3}
    means = [values[rng.integers(0, len(values), len(values))].mean() for _ in range(n_resamples)]
    return {"mean": _mean(values), "mean_ci95": np.percentile(means, [2.5, 97.5]).tolist(),
            "quartiles": np.percentile(values, [25, 50, 75]).tolist()}


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if len(values) else float("nan")


def _less(lower: np.ndarray, higher: np.ndarray) -> float:
    """One-sided Mann-Whitney U p-value that ``lower`` tends below ``higher``."""
    from scipy.stats import mannwhitneyu

    if not len(lower) or not len(higher):
        return float("nan")
    return float(mannwhitneyu(lower, higher, alternative="less").pvalue)
