"""Faithfulness per attribution method: the seed's Tables 2 and 3 for every heat map the run computed.

Each method (``pathbind_models.attribution``) is scored the same way (:mod:`faithfulness_records`): pointing game,
mass in the box (AMiM) and box AP, each with Δ against the shuffled mask (the box-placement null: the map measured
against the boxes of other images, :func:`faithfulness_aggregations.with_placement_nulls`), a paired permutation
test (whole images' signs flipped) and the pooled paired Cohen's d; Spearman ρ against the signed and the |δ|
occlusion map with cluster intervals (and Δ against the map's cells shuffled); insertion and deletion AUC in the
method's order against the random order; the causal − method AMiM difference. One-sided tests of every method ×
measure are Holm-adjusted together, the family named; the two-sided causal − method tests form a second family.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from pathbind_metrics import faithfulness as fm
from pathbind_metrics import resampling as rs
from pathbind_tasks.common import faithfulness_aggregations as fa
from pathbind_tasks.common.clusters import cluster_keys

# The seed's method order (Tables 2–3), then any other a plugin adds.
ORDER = ("attention", "rollout", "gradient_attention", "winsor_cam", "integrated_gradients", "rise")
# Tested measure -> its null: the method's own field, or the record's random-order curve (deletion: lower is better)
TESTED = {"pointing_hit": "pointing_hit_null", "amim": "amim_null", "box_ap": "box_ap_null", "rho": "rho_null",
          "insertion_auc": "insertion_random", "deletion_auc": "deletion_random"}
TABLE2 = ("pointing_hit", "amim", "box_ap")  # best per measure marked in the report
WITHIN = 0.05  # Integrated Gradients' completeness: |gap| within 5% of m(image) − m(baseline)


def method_table(records: list[dict[str, Any]], *, n_permutations: int = 10000, seed: int = 0) -> dict[str, Any]:
    """Per method: every measure's mean with its 95% cluster interval, Δ against its null with interval, p
    (``p_holm`` adjusted across the ``family``) and Cohen's d, ρ against |δ|, the causal − method AMiM test, how
    many items each method scored and why the others were lost, what it used and cost, and its verdict; ``best``
    names the method with the highest mean of each Table 2 measure."""
    records = fa.with_placement_nulls(records)
    keys, cluster = cluster_keys(records)
    present = {name for record in records for name in record.get("methods", {})}
    names = [m for m in ORDER if m in present] + sorted(present - set(ORDER))
    uses_image = fa.verdict(records)["image"] == "uses the image"
    table = {name: _method(records, name, keys, cluster, uses_image, n_permutations, seed) for name in names}
    tests = [(name, measure) for name in names for measure in TESTED]
    for (name, measure), p_holm in zip(tests, rs.holm([table[n][m]["p"] for n, m in tests]), strict=True):
        table[name][measure]["p_holm"] = p_holm
    for name, p_holm in zip(names, rs.holm([table[n]["causal_minus_amim"]["p"] for n in names]), strict=True):
        table[name]["causal_minus_amim"]["p_holm"] = p_holm
    best = {measure: _best(table, names, measure) for measure in TABLE2}
    return {"methods": table, "best": best, "cluster": cluster,
            "family": f"the one-sided tests of {len(names)} methods × {len(TESTED)} measures "
                      f"({', '.join(TESTED)}), Holm–Bonferroni",
            "causal_family": f"the two-sided causal − method AMiM tests of {len(names)} methods, Holm–Bonferroni"}


def _method(records: list[dict[str, Any]], name: str, keys: list[str], cluster: str, uses_image: bool,
            n_permutations: int, seed: int) -> dict[str, Any]:
    measures = [r.get("methods", {}).get(name) or {} for r in records]

    def values(field: str) -> np.ndarray:
        return np.asarray([m.get(field, math.nan) for m in measures], dtype=float)

    def interval(array: np.ndarray) -> dict[str, Any]:
        return rs.mean_interval(array, keys, cluster=cluster)

    entry: dict[str, Any] = {"n": int(sum(1 for m in measures if m and "map" not in m.get("lost", {}))),
                             "lost": dict(Counter(f"{field}: {reason}" for m in measures
                                                  for field, reason in m.get("lost", {}).items())),
                             "settings": settings(m.get("notes", {}) for m in measures if m)}
    for measure, null in TESTED.items():
        real = values(measure)
        other = (np.asarray([r.get(null, math.nan) for r in records], dtype=float) if null.endswith("random")
                 else values(null))
        gain = other - real if measure == "deletion_auc" else real - other  # positive: the method beats its null
        entry[measure] = {"mean": _mean(real), "ci": interval(real), "null": _mean(other), "delta": _mean(gain),
                          "delta_ci": interval(gain), "d": fm.paired_cohens_d(gain),
                          "p": rs.sign_flip_p(gain, keys, alternative="greater", n_permutations=n_permutations,
                                              seed=seed)}
    entry["abs_rho"] = {"mean": _mean(values("abs_rho")), "ci": interval(values("abs_rho"))}
    entry["pointing_tie"] = _mean(values("pointing_tie"))
    causal = np.asarray([r.get("causal_amim", math.nan) for r in records], dtype=float) - values("amim")
    entry["causal_minus_amim"] = {"mean": _mean(causal), "ci": interval(causal), "d": fm.paired_cohens_d(causal),
                                  "p": rs.sign_flip_p(causal, keys, n_permutations=n_permutations, seed=seed)}
    entry["verdict"] = method_verdict(name, entry["rho"]["mean"], entry["rho"]["ci"], uses_image, entry["lost"],
                                      entry["n"])
    return entry


def method_verdict(name: str, rho: float, interval: dict[str, Any], uses_image: bool, lost: dict[str, int],
                   scored: int) -> str:
    """"<method> tracks causal importance" (the image is used and ρ > 0 with its interval above 0), "... does not
    track ...", or "<method> does not apply: <why>" when no item has its map."""
    if scored == 0:
        reasons = [reason.removeprefix("map: ") for reason, _ in Counter(lost).most_common(1)]
        return f"{name} does not apply: {reasons[0] if reasons else 'no map'}"
    tracks = uses_image and rho > 0 and interval["low"] > 0
    return f"{name} {'tracks' if tracks else 'does not track'} causal importance"


def settings(notes: Any) -> dict[str, Any]:
    """What a method used and cost over the items: each setting's value (or its distinct values), each number's
    mean; for Integrated Gradients also the share of items whose completeness gap is within 5%."""
    collected: dict[str, list[Any]] = {}
    for note in notes:
        for key, value in note.items():
            collected.setdefault(key, []).append(value)
    out: dict[str, Any] = {}
    for key, found in collected.items():
        distinct = list({repr(v): v for v in found}.values())
        numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in found)
        out[key] = distinct[0] if len(distinct) == 1 else _mean(np.asarray(found, float)) if numeric else distinct
    if "relative_gap" in collected:
        gaps = np.asarray(collected["relative_gap"], dtype=float)
        gaps = gaps[np.isfinite(gaps)]
        out["completeness_within_5pct"] = float(np.mean(gaps <= WITHIN)) if gaps.size else math.nan
    return out


def roi_deletion(records: list[dict[str, Any]], *, n_permutations: int = 10000, seed: int = 0) -> dict[str, Any]:
    """ROI deletion, the test for a model that shows no attention: how much more hiding the expert box lowers the
    margin than hiding a random box of its size (nats), with its cluster interval, one-sided p and Cohen's d."""
    keys, cluster = cluster_keys(records)
    effect = np.asarray([r.get("roi_effect", math.nan) for r in records], dtype=float)
    p = rs.sign_flip_p(effect, keys, alternative="greater", n_permutations=n_permutations, seed=seed)
    interval = rs.mean_interval(effect, keys, cluster=cluster)
    grounded = bool(p < 0.05 and _mean(effect) > 0)
    return {"mean": _mean(effect), "ci": interval, "p": p, "d": fm.paired_cohens_d(effect),
            "n": int(np.isfinite(effect).sum()),
            "verdict": ("hiding the box lowers the answer margin more than hiding a random box of its size"
                        if grounded else "hiding the box does not lower the answer margin more than a random box")}


def _best(table: dict[str, Any], names: list[str], measure: str) -> str | None:
    """The method with the highest finite mean of ``measure`` (the first of those tied), or None."""
    scored = [(table[name][measure]["mean"], -index, name) for index, name in enumerate(names)
              if math.isfinite(table[name][measure]["mean"])]
    return max(scored)[2] if scored else None


def _mean(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else math.nan
