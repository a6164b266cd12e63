"""Coverage of every cluster interval and null rejection rate of every paired test, on simulated data with known
truth, at 3, 5, 10, 20 and 50 clusters (images) of equal, lognormal and two-dominant sizes.

Answers are 0/1 with intra-image correlation 0.3 (each image's rate Beta-distributed); with two dominant images
(60 questions each among images of 1–5) the big images are also harder (rate 0.3 lower), so a miss would fall on
one side. Checked, each over ``reps`` data sets (seeded):

- ``mean``: :func:`mean_interval` of the accuracy (jackknife SE × Bell–McCaffrey t), beside the percentile cluster
  bootstrap it replaced (``percentile_bootstrap``, the baseline, same data);
- ``proportion``, ``proportion_near_100``: the Korn–Graubard interval of an accuracy near 50% and near 97%;
- ``difference``: the interval of a difference of two accuracies over the same items (MG, a drop);
- ``paired``: :func:`paired_delta`'s inverted sign-flip interval of a mean paired difference;
- ``design_effect``: the mean reported design effect over the true one (the variance of the estimate across
  data sets over its variance were the items independent): it holds when not understated (the jackknife reads
  high, conservatively, where a few images dominate);
- null rejection rates: ``sign_flip`` (two models with the same answer rates) and ``holm_family`` (four pairs ×
  two measures under a global null, any Holm-adjusted p <= 0.05: the family-wise error).

An interval holds when its coverage is at least 0.95 less 3 Monte Carlo SEs, a test when its rate is at most 0.05
plus 3 SEs. A case where no answer can exist is refused with its reason (with 5 clusters or fewer no sign-flip
test reaches 0.05). The same line carries, under ``audits``, the null rates of the swap, faithfulness and
audit-features tests (``benchmarks/null_rates.py``, ``--audit-reps`` data sets per setting; 0 leaves them out).
Prints one JSON line. Run: python benchmarks/coverage.py [--reps N] [--audit-reps M] [--seed S]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from typing import Any

import numpy as np

from pathbind_metrics import resampling as rs
from pathbind_metrics.pairs import paired_delta

CLUSTERS = (3, 5, 10, 20, 50)
SIZES = ("equal", "lognormal", "two_dominant")
ICC = 0.3
LEVEL, ALPHA = 0.95, 0.05
PAIRS, MEASURES = 4, 2  # the Holm family of a `pathbind pairs` run on four pairs


def cluster_sizes(kind: str, count: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "equal":
        return np.full(count, 6)
    if kind == "lognormal":
        return np.maximum(1, np.round(np.exp(rng.normal(math.log(4), 1.0, count)))).astype(int)
    sizes = rng.integers(1, 6, count)
    sizes[:2] = 60
    return sizes


def rates(mean: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per-image answer rates around ``mean`` with intra-image correlation ICC (beta-binomial)."""
    spread = 1 / ICC - 1
    return rng.beta(mean * spread, (1 - mean) * spread)


def answers(sizes: np.ndarray, mean: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return (rng.random(sizes.sum()) < np.repeat(rates(mean, rng), sizes)).astype(float)


class Setting:
    """One data set generator: ``count`` images of ``kind`` sizes (drawn once per data set)."""

    def __init__(self, kind: str, count: int, rng: np.random.Generator) -> None:
        self.kind, self.count, self.rng = kind, count, rng

    def draw(self, mean: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """Sizes, cluster keys, per-image mean rates and the item-weighted truth."""
        sizes = cluster_sizes(self.kind, self.count, self.rng)
        means = np.full(self.count, mean)
        if self.kind == "two_dominant":
            means[:2] -= 0.3
        keys = np.repeat(np.arange(self.count), sizes)
        return sizes, keys, means, float((means * sizes).sum() / sizes.sum())


def _percentile(y: np.ndarray, keys: np.ndarray, seed: int) -> tuple[float, float]:
    """The replaced interval: percentile bootstrap over clusters (1,000 resamples)."""
    totals = rs.cluster_totals(np.column_stack([y, np.ones(y.size)]), keys)
    sums = totals[np.random.default_rng(seed).integers(0, len(totals), (1000, len(totals)))].sum(axis=1)
    low, high = np.percentile(sums[:, 0] / sums[:, 1], [2.5, 97.5])
    return float(low), float(high)


def coverage_table(reps: int = 400, seed: int = 0) -> dict[str, Any]:
    """Per setting ``"<sizes>/<clusters>"``: each interval's coverage and each test's null rejection rate, with
    whether it holds; ``"holds"``: all of them do (refused cases aside)."""
    table: dict[str, Any] = {}
    for kind in SIZES:
        for count in CLUSTERS:
            rng = np.random.default_rng((seed, SIZES.index(kind), count))
            table[f"{kind}/{count}"] = _setting(Setting(kind, count, rng), reps)
    verdicts = [check["holds"] for row in table.values() for check in row.values() if "holds" in check]
    return {"reps": reps, "seed": seed, "level": LEVEL, "holds": all(verdicts), "settings": table}


def _setting(setting: Setting, reps: int) -> dict[str, Any]:
    hits: dict[str, list[bool | None]] = {name: [] for name in ("mean", "percentile_bootstrap", "proportion",
                                                         "proportion_near_100", "difference", "paired")}
    rejections: dict[str, list[bool]] = {"sign_flip": [], "holm_family": []}
    estimates, effects, item_variances = [], [], []
    for rep in range(reps):
        sizes, keys, means, truth = setting.draw(0.5)
        y = answers(sizes, means, setting.rng)
        interval = rs.mean_interval(y, keys.tolist(), cluster="image")
        hits["mean"].append(interval["low"] <= truth <= interval["high"])
        low, high = _percentile(y, keys, rep)
        hits["percentile_bootstrap"].append(low <= truth <= high)
        proportion = rs.mean_interval(y, keys.tolist(), cluster="image", proportion=1.0)
        hits["proportion"].append(proportion["low"] <= truth <= proportion["high"])
        estimates.append(y.mean())
        effects.append(interval["design_effect"])
        item_variances.append(y.var(ddof=1) / y.size)

        sizes, keys, means, truth = setting.draw(0.97)
        near = rs.mean_interval(answers(sizes, means, setting.rng), keys.tolist(), cluster="image", proportion=1.0)
        hits["proportion_near_100"].append(near["low"] <= truth <= near["high"])

        hits["difference"].append(_difference_covers(setting))
        hits["paired"].append(_paired_covers(setting, rep))
        p_values = [_null_p(setting, rep * PAIRS * MEASURES + k) for k in range(PAIRS * MEASURES)]
        rejections["sign_flip"].append(p_values[0] <= ALPHA)
        rejections["holm_family"].append(min(rs.holm(p_values)) <= ALPHA)
    row: dict[str, Any] = {name: _coverage(found) for name, found in hits.items()}
    row["percentile_bootstrap"].pop("holds")  # the baseline, shown for comparison
    row |= {name: _rejection(found, setting.count) for name, found in rejections.items()}
    true_effect = float(np.var(estimates, ddof=1) / np.mean(item_variances))
    ratio = float(np.nanmean(effects)) / true_effect
    # Not understated beyond the Monte Carlo error of the true variance (relative SE √(2 / (reps − 1))).
    row["design_effect"] = {"reported_over_true": round(ratio, 3), "true": round(true_effect, 3),
                            "holds": ratio >= 1 - 3 * math.sqrt(2 / (reps - 1))}
    return row


def _difference_covers(setting: Setting) -> bool:
    """An MG-like difference: with the image each image's rate r rises to r + 0.2·(1 − r), an expected gain of
    0.2·(1 − the mean rate)."""
    sizes, keys, means, truth = setting.draw(0.4)
    base = np.repeat(rates(means, setting.rng), sizes)
    text = (setting.rng.random(base.size) < base).astype(float)
    image = (setting.rng.random(base.size) < base + 0.2 * (1 - base)).astype(float)
    interval = rs.difference_interval(image - text, keys.tolist(), cluster="image")
    return bool(interval["low"] <= 0.2 * (1 - truth) <= interval["high"])


def _paired_covers(setting: Setting, rep: int) -> bool | None:
    """A paired difference of true mean 0.1, symmetric about it within and between images; None: no interval."""
    sizes, keys, _, _ = setting.draw(0.5)
    diff = 0.1 + np.repeat(setting.rng.normal(0, math.sqrt(ICC), setting.count), sizes) \
        + setting.rng.normal(0, math.sqrt(1 - ICC), sizes.sum())
    interval = paired_delta(diff, keys.tolist(), cluster="image", n_permutations=2000, seed=rep)["ci95"]
    return None if math.isnan(interval["low"]) else bool(interval["low"] <= 0.1 <= interval["high"])


def _null_p(setting: Setting, seed: int) -> float:
    """Two models with the same per-image answer rates: the change in accuracy, tested."""
    sizes, keys, means, _ = setting.draw(0.6)
    shared = np.repeat(rates(means, setting.rng), sizes)
    general, tuned = ((setting.rng.random(shared.size) < shared).astype(float) for _ in range(2))
    return rs.sign_flip_p(tuned - general, keys.tolist(), n_permutations=2000, seed=seed)


# ------------------------------------------------------------------ differences near the bounds, paired changes

NEAR_BOUNDS = {0: (0.97, 0.97), 30: (0.65, 0.35), 96: (0.98, 0.02)}  # true MG (points): (acc_image, acc_text)
NEAR_CLUSTERS = (3, 5, 10, 30, 60)
NEAR_SIZES = ("equal", "lognormal", "one_half")
PAIRED_CLUSTERS, PAIRED_SIZES, PAIRED_CHANGE = (6, 8), ("lognormal", "one_half"), 0.10


def near_sizes(kind: str, count: int, rng: np.random.Generator) -> np.ndarray:
    """Equal (6 each), lognormal (median 4) or ``one_half``: one image holding half the items, the rest 4 each."""
    if kind != "one_half":
        return cluster_sizes(kind, count, rng)
    sizes = np.full(count, 4)
    sizes[0] = 4 * (count - 1)
    return sizes


def difference_table(reps: int = 400, seed: int = 0) -> dict[str, Any]:
    """Per ``"mg<truth>/<sizes>/<images>"``: the coverage of the MG interval (:func:`difference_interval`) beside
    the two it was chosen over on the same data, the cluster jackknife × t of the differences it replaced and the
    MOVER from the two accuracies' intervals; with how often each was a point and each miss's side. Each image's
    rate with and without it is Beta-distributed (ICC 0.3) about ``NEAR_BOUNDS``' accuracies, the two independent,
    so that rare weak images skew the 96-point gain."""
    table: dict[str, Any] = {}
    for truth, (image_rate, text_rate) in NEAR_BOUNDS.items():
        for kind in NEAR_SIZES:
            for count in NEAR_CLUSTERS:
                rng = np.random.default_rng((seed, truth, NEAR_SIZES.index(kind), count))
                found: dict[str, list[tuple[float, float]]] = {"mover_gains_losses": [], "jackknife_t": [],
                                                               "mover_accuracies": []}
                for _ in range(reps):
                    sizes = near_sizes(kind, count, rng)
                    keys = np.repeat(np.arange(count), sizes).tolist()
                    image, text = (answers(sizes, np.full(count, rate), rng) for rate in (image_rate, text_rate))
                    found["mover_gains_losses"].append(_bounds(rs.difference_interval(image - text, keys,
                                                                                      cluster="image")))
                    found["jackknife_t"].append(_bounds(rs.mean_interval(image - text, keys, cluster="image")))
                    found["mover_accuracies"].append(_mover_of_accuracies(image, text, keys))
                row = {name: _covers(bounds, (image_rate - text_rate)) for name, bounds in found.items()}
                for baseline in ("jackknife_t", "mover_accuracies"):
                    row[baseline].pop("holds")  # shown for comparison
                table[f"mg{truth}/{kind}/{count}"] = row
    return {"holds": all(row["mover_gains_losses"]["holds"] for row in table.values()), "settings": table}


def _bounds(interval: dict[str, Any]) -> tuple[float, float]:
    return interval["low"], interval["high"]


def _mover_of_accuracies(image: np.ndarray, text: np.ndarray, keys: list) -> tuple[float, float]:
    """The alternative: Newcombe's MOVER from the Korn–Graubard intervals of the two accuracies, with the cluster
    jackknife's correlation of the two."""
    parts = [rs.mean_interval(y, keys, cluster="image", proportion=1.0) for y in (image, text)]
    left_out = rs.cluster_totals(np.column_stack([image, text, np.ones(image.size)]), rs.cluster_codes(keys))
    left_out = left_out.sum(axis=0) - left_out
    deviations = left_out[:, :2] / left_out[:, 2:] - (left_out[:, :2] / left_out[:, 2:]).mean(axis=0)
    spread = math.sqrt(float(deviations[:, 0] @ deviations[:, 0]) * float(deviations[:, 1] @ deviations[:, 1]))
    correlation = float(deviations[:, 0] @ deviations[:, 1]) / spread if spread > 0 else 0.0
    return rs.mover([image.mean(), text.mean()], [_bounds(part) for part in parts], correlation)


def _covers(bounds: list[tuple[float, float]], truth: float) -> dict[str, Any]:
    low, high = (np.array(side) for side in zip(*bounds, strict=True))
    row = _coverage([bool(lo <= truth <= hi) for lo, hi in bounds])
    return {**row, "misses_below": int(np.sum(high < truth)), "misses_above": int(np.sum(low > truth)),
            "points": int(np.sum(high - low < 1e-12)), "mean_width": round(float(np.mean(high - low)), 3)}


def paired_change_table(reps: int = 400, seed: int = 0) -> dict[str, Any]:
    """Per ``"<sizes>/<images>"``: the coverage of `pathbind pairs`' ΔAcc interval (:func:`paired_delta`) of a
    true change of +10 points beside the inverted sign-flip test alone, and the null rejection rate of its test on
    the same images. The general model's rate per image is Beta-distributed about 0.6 (ICC 0.3); the tuned model
    gains a quarter of what the general one misses (+0.1 on average), answering as the general one does on most
    items (each item's answers share a uniform draw, with probability 0.7)."""
    table: dict[str, Any] = {}
    for kind in PAIRED_SIZES:
        for count in PAIRED_CLUSTERS:
            rng = np.random.default_rng((seed, 7, PAIRED_SIZES.index(kind), count))
            joined, flips, nulls = [], [], []
            for rep in range(reps):
                diff, keys = _paired_answers(kind, count, 0.25, rng)
                result = paired_delta(diff, keys, cluster="image", bound=1.0, seed=rep)
                joined.append((result["ci95"]["low"], result["ci95"]["high"]))
                flips.append(rs.SignFlips(diff, keys, seed=rep).interval())
                null, keys = _paired_answers(kind, count, 0.0, rng)
                nulls.append(paired_delta(null, keys, cluster="image", bound=1.0, seed=rep)["p"] <= ALPHA)
            row = {"interval": _covers(joined, PAIRED_CHANGE), "sign_flip_alone": _covers(flips, PAIRED_CHANGE),
                   "null_rejections": _rejection(nulls, count)}
            row["sign_flip_alone"].pop("holds")  # the interval it replaced, shown for comparison
            table[f"{kind}/{count}"] = row
    return {"change": PAIRED_CHANGE, "holds": all(r["interval"]["holds"] and r["null_rejections"]["holds"]
                                                 for r in table.values()), "settings": table}


def _paired_answers(kind: str, count: int, gain: float, rng: np.random.Generator) -> tuple[np.ndarray, list]:
    sizes = near_sizes(kind, count, rng)
    general = np.repeat(rates(np.full(count, 0.6), rng), sizes)
    tuned = general + gain * (1 - general)
    shared = rng.random(general.size)
    own = np.where(rng.random(general.size) < 0.7, shared, rng.random(general.size))
    diff = (own < tuned).astype(float) - (shared < general).astype(float)
    return diff, np.repeat(np.arange(count), sizes).tolist()


def _mc_error(rate: float, reps: int) -> float:
    return 3 * math.sqrt(rate * (1 - rate) / reps)


def _coverage(found: list[bool | None]) -> dict[str, Any]:
    defined = [hit for hit in found if hit is not None]
    if not defined:
        return {"refused": "no test can reach p <= 0.05 with these few clusters (2/2^C > 0.05): no interval"}
    coverage = float(np.mean(defined))
    return {"coverage": round(coverage, 4), "holds": coverage >= LEVEL - _mc_error(LEVEL, len(defined))}


def _rejection(found: list[bool], count: int) -> dict[str, Any]:
    rate = float(np.mean(found))
    if 2 / 2**count > ALPHA:
        return {"rate": rate, "refused": f"with {count} clusters the smallest two-sided p is 2/2^{count} > 0.05: "
                                         "no test can reject"}
    return {"rate": round(rate, 4), "holds": rate <= ALPHA + _mc_error(ALPHA, len(found))}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400, help="data sets per setting (default 400)")
    parser.add_argument("--audit-reps", type=int, default=20,
                        help="data sets per setting of benchmarks/null_rates.py (default 20; 0: leave them out)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    result = coverage_table(args.reps, args.seed)
    result["differences_near_bounds"] = difference_table(args.reps, args.seed)
    result["paired_change"] = paired_change_table(args.reps, args.seed)
    result["holds"] = all(result[part]["holds"] for part in ("differences_near_bounds", "paired_change")) \
        and result["holds"]
    if args.audit_reps:
        from null_rates import null_rates  # this script's folder is first on the path

        result["audits"] = null_rates(args.audit_reps, args.seed)
    print(json.dumps({"benchmark": "coverage", **result, "seconds": round(time.perf_counter() - start, 1)}))


if __name__ == "__main__":
    main()
