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
    totals, pairs = {}, {}
    for name, groups, differ in (("same_case", cases, None), ("same_tss", sites, cases)):
        totals[name], pairs[name] = _within_sample(groups, differ, max_pairs, rng)
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


def _within_sample(groups: np.ndarray, differ: np.ndarray | None, max_pairs: int,
                   rng: np.random.Generator) -> tuple[int, np.ndarray]:
    """(how many pairs share a ``groups`` value, with different ``differ`` values; all of them, or ``max_pairs``
    drawn uniformly without replacement). The count is arithmetic and the draw never lists the pairs: one site
    holding 6,000 slides has 18 million pairs, which would take gigabytes to build."""
    order = np.argsort(groups, kind="stable")
    starts = np.unique(groups[order], return_index=True)[1] if len(order) else np.zeros(0, np.int64)
    sizes = np.diff(np.append(starts, len(order))).astype(np.int64)
    within = sizes * (sizes - 1) // 2
    same = sum(_pairs_of(differ[m]) for m in np.split(order, starts[1:])) if differ is not None and len(order) else 0
    total = int(within.sum() - same)
    # Few enough to list (exact, and no rejection loop near the total). Listing is also the way when most pairs
    # of a group share a patient and few do not (one patient holding most of a site's slides): rare, and slow to
    # draw by rejection.
    if total <= 4 * max_pairs:
        return total, _sample(_within(groups, differ), max_pairs, rng)
    chosen: set[tuple[int, int]] = set()
    while len(chosen) < max_pairs:  # a group by its pair count, then two members: uniform over all pairs
        group = rng.choice(len(sizes), size=2 * max_pairs, p=within / within.sum())
        a = rng.integers(0, sizes[group])
        b = rng.integers(0, sizes[group] - 1)
        b += b >= a  # a second, different member
        for i, j in zip(order[starts[group] + a].tolist(), order[starts[group] + b].tolist(), strict=True):
            if (differ is None or differ[i] != differ[j]) and len(chosen) < max_pairs:
                chosen.add((min(i, j), max(i, j)))
    return total, np.array(sorted(chosen), dtype=np.int64)


def _pairs_of(labels: np.ndarray) -> int:
    _, counts = np.unique(labels, return_counts=True)
    return int((counts * (counts - 1) // 2).sum())


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
    """(how many cross-site pairs there are, all of them or ``max_pairs`` drawn without replacement). Drawn
    directly (a slide by its number of partners at other sites, then one of them), not by rejection, which never
    ends when one site holds nearly every slide."""
    _, site_of, counts = np.unique(sites, return_inverse=True, return_counts=True)
    total = int((counts.sum() ** 2 - (counts ** 2).sum()) // 2)
    if total <= 4 * max_pairs:
        found = [(i, j) for i in range(len(sites)) for j in np.flatnonzero(sites[i + 1:] != sites[i]) + i + 1]
        return total, _sample(np.array(found, dtype=np.int64).reshape(-1, 2), max_pairs, rng)
    order = np.argsort(site_of, kind="stable")
    start = np.concatenate(([0], np.cumsum(counts)[:-1]))
    partners = len(sites) - counts[site_of]
    chosen: set[tuple[int, int]] = set()
    while len(chosen) < max_pairs:
        first = rng.choice(len(sites), size=2 * max_pairs, p=partners / partners.sum())
        site = site_of[first]
        rank = rng.integers(0, partners[first])  # among the slides of the other sites, in site order
        rank += (rank >= start[site]) * counts[site]
        for i, j in zip(first.tolist(), order[rank].tolist(), strict=True):
            if len(chosen) < max_pairs:
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
