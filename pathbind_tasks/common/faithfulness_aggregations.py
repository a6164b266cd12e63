"""Faithfulness: the task-level aggregations over the item records (:mod:`pathbind_tasks.common.faithfulness_records`):
means, cluster intervals, permutation tests with Holm–Bonferroni, and the verdict. They use the finite values and
count the reasons a measure was lost.

The null of a map's mass in its box (AMiM) is box placement (:func:`with_placement_nulls`): what the map puts in
the boxes of the items of the same image size on other images (clusters). A map that ignores the box, however it is
spread (e.g. towards the centre of the image, where boxes placed anywhere overlap most), puts as much mass in another
item's box as in its own; shuffling its cells would instead spread it evenly and read any centre bias as grounding.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any

import numpy as np

from pathbind_metrics import faithfulness as fm
from pathbind_metrics import resampling as rs
from pathbind_tasks.common.clusters import cluster_keys
from pathbind_tasks.common.faithfulness_records import HEADLINE, TESTS

NO_OTHER_BOX = "no item of the same image size on another image"
USES_IMAGE_MIN = 1e-3  # nats: the lower 95% bound of causal_l1 above this means the answer depends on the image
BOX_KINDS = ("true", "shifted", "far", "random_size")
PLACEMENT_NULLS = {"attention": "attn_amim_null", "causal": "causal_amim_null"}  # map -> its box-placement null
BOX_MEASURES = ("amim", "pointing_hit", "box_ap")  # a heat map's measures against the box, each with its null


def with_placement_nulls(records: list[dict[str, Any]], *, chunk: int = 1024) -> list[dict[str, Any]]:
    """The records with each map's box-placement null (``attn_amim_null``, ``causal_amim_null``, and each heat map's
    ``amim_null``, ``pointing_hit_null`` and ``box_ap_null`` under ``methods``): what the measure of the item's
    map would be against its box if map and box were unrelated, from the items of the same image size and grid on
    other images (clusters): the mean of its map's measure against their boxes, plus how much more their maps
    measure against its box than against their own boxes on average (a box near the centre collects more of any
    centre-biased map). Under "maps ignore the box", ``measure − null`` has mean 0 whatever the maps' shape or the
    boxes' placement; NaN (with the reason in ``lost``) where no such item exists.
    """
    keys = np.asarray(cluster_keys(records)[0])
    out = [{**r, **dict.fromkeys(PLACEMENT_NULLS.values(), math.nan), "lost": dict(r["lost"]),
            "methods": {name: dict(m) for name, m in r.get("methods", {}).items()}} for r in records]
    names = sorted({name for record in records for name in record.get("maps", {})})
    for name in names:
        measures = ("amim",) if name == "causal" else BOX_MEASURES
        strata: dict[tuple, list[int]] = defaultdict(list)
        for index, record in enumerate(records):
            if record["maps"].get(name) is not None:
                strata[(*record["image_size"], len(record["maps"][name]))].append(index)
        for (width, height, grid), members in strata.items():
            shares = np.asarray([np.ravel(records[i]["maps"][name]) for i in members])
            boxes = np.asarray([fm.box_coverage(records[i]["box"], (width, height), grid).ravel() for i in members])
            nulls = _placement_null(shares, boxes, fm.cell_areas((width, height), grid).ravel(), keys[members],
                                    measures, chunk)
            for row, i in enumerate(members):
                if name in PLACEMENT_NULLS:
                    out[i][PLACEMENT_NULLS[name]] = nulls["amim"][row]
                    if math.isnan(nulls["amim"][row]):
                        out[i]["lost"][PLACEMENT_NULLS[name]] = NO_OTHER_BOX
                if name in out[i]["methods"]:
                    out[i]["methods"][name].update({f"{m}_null": nulls[m][row] for m in measures})
    return out


def _placement_null(shares: np.ndarray, boxes: np.ndarray, areas: np.ndarray, clusters: np.ndarray,
                    measures: tuple[str, ...], chunk: int) -> dict[str, np.ndarray]:
    """Per item and measure: row mean + column mean − grand mean of the measure over the (map, box) pairs of
    different clusters (:func:`fm.pair_measures`), chunk × items pairs at a time (bounded memory)."""
    count = len(shares)
    sums = {m: (np.zeros(count), np.zeros(count)) for m in measures}  # (row sums, column sums)
    counts = np.zeros(count)
    for start in range(0, count, chunk):
        rows = slice(start, start + chunk)
        other = clusters[rows, None] != clusters[None, :]
        pairs = fm.pair_measures(shares[rows], boxes, areas)
        counts[rows] = other.sum(axis=1)
        for measure in measures:
            values = np.where(other, pairs[measure], 0.0)  # map of row i against box of column j, other clusters
            sums[measure][0][rows] = values.sum(axis=1)
            sums[measure][1][:] += values.sum(axis=0)
    out = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for measure, (row_sums, column_sums) in sums.items():
            grand = row_sums.sum() / counts.sum() if counts.sum() else math.nan
            out[measure] = np.where(counts > 0, row_sums / counts + column_sums / counts - grand, math.nan)
    return out


def mean(records: list[dict[str, Any]], field: str) -> float:
    values = _values(records, field)
    values = values[np.isfinite(values)]
    return float(values.mean()) if values.size else math.nan


def intervals(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """95% cluster CI of each headline mean and of each tested measure's excess over its null."""
    records = with_placement_nulls(records)

    def ci(values: np.ndarray) -> dict[str, Any]:
        return _interval(records, values)

    out = {name: ci(_values(records, name)) for name in HEADLINE}
    for real, null in TESTS.items():
        out[f"{real}_minus_{null}"] = ci(_values(records, real) - _values(records, null))
    for name in ("causal_amim", "attn_amim"):
        out[f"{name}_minus_area_share"] = ci(_values(records, name) - _values(records, "area_share"))
    return out


def permutation_tests(records: list[dict[str, Any]], *, n_permutations: int = 10000,
                      seed: int = 0) -> dict[str, Any]:
    """Per tested measure: the one-sided p-value that it exceeds its null, flipping each cluster's signs together,
    over all items (``p``; ``p_holm`` Holm–Bonferroni-adjusted across the overall p-values of all the tested
    measures, the family ``family`` names) and per subgroup (``by_group``: adjusted across the subgroups)."""
    records = with_placement_nulls(records)
    groups = sorted({str(r.get("group")) for r in records})
    out: dict[str, Any] = {}

    def p_value(subset: list[dict[str, Any]], real: str, null: str) -> float:
        keys, _ = cluster_keys(subset)
        return rs.sign_flip_p(_values(subset, real) - _values(subset, null), keys, alternative="greater",
                              n_permutations=n_permutations, seed=seed)

    for real, null in TESTS.items():
        raw = [p_value([r for r in records if str(r.get("group")) == g], real, null) for g in groups]
        by_group = {g: {"p": p, "p_holm": ph, "n": sum(1 for r in records if str(r.get("group")) == g)}
                    for g, p, ph in zip(groups, raw, rs.holm(raw), strict=True)}
        out[f"{real}>{null}"] = {"p": p_value(records, real, null), "by_group": by_group}
    family = f"the overall p of the {len(out)} tests of perm_tests"
    for test, p_holm in zip(out.values(), rs.holm([test["p"] for test in out.values()]), strict=True):
        test |= {"p_holm": p_holm, "family": family}
    return out


def control_box_masses(records: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Mean mass of the attention and the causal map in the true box and in each control box."""
    return {name: {kind: _mean([r["boxes"][name][kind] for r in records if name in r["boxes"]]) for kind in BOX_KINDS}
            for name in ("attention", "causal")}


def verdict(records: list[dict[str, Any]], *, uses_image_min: float = USES_IMAGE_MIN) -> dict[str, Any]:
    """The two axes of the paper's Figure 3: does the answer depend on the image (the lower 95% bound of
    ``causal_l1`` above ``uses_image_min``), and does attention track causal importance (mean ρ > 0 with its
    95% interval above 0)? (``attribution`` states the second for every heat map the run computed.)"""
    l1_ci = _interval(records, _values(records, "causal_l1"))
    rho, rho_ci = mean(records, "attn_occlusion_rho"), _interval(records, _values(records, "attn_occlusion_rho"))
    uses = bool(l1_ci["low"] > uses_image_min)
    tracks = uses and bool(rho > 0 and rho_ci["low"] > 0)
    return {"image": "uses the image" if uses else "does not use the image",
            "attention": ("attention tracks causal importance" if tracks
                          else "attention does not track causal importance"),
            "causal_l1": mean(records, "causal_l1"), "causal_l1_ci": l1_ci, "rho": rho, "rho_ci": rho_ci}


def lost_counts(records: list[dict[str, Any]]) -> dict[str, Any]:
    """How many items, how many had a finite ρ, and per measure and reason how many could not be scored."""
    counts = Counter(f"{measure}: {reason}" for r in with_placement_nulls(records)
                     for measure, reason in r["lost"].items())
    scored = sum(1 for r in records if math.isfinite(r["attn_occlusion_rho"]))
    return {"items": len(records), "scored": scored, **dict(sorted(counts.items()))}


def _interval(records: list[dict[str, Any]], values: np.ndarray, **options: Any) -> dict[str, Any]:
    keys, cluster = cluster_keys(records)
    return rs.mean_interval(values, keys, cluster=cluster, **options)


def _values(records: list[dict[str, Any]], field: str) -> np.ndarray:
    return np.asarray([r.get(field, math.nan) for r in records], dtype=float)


def _mean(values: list[float]) -> float:
    array = np.asarray(values, dtype=float)
    array = array[np.isfinite(array)]
    return float(array.mean()) if array.size else math.nan
