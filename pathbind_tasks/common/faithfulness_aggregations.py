"""Faithfulness: one record per item (every measure of its causal and attention maps) and the task-level
aggregations: means, bootstrap intervals, permutation tests with Holm–Bonferroni, and the verdict.

Each measure that cannot be computed is NaN with its reason in the record's ``lost``; aggregations use the
finite values and count the reasons. The null of the rank correlation is the same map with its cells shuffled
(one seeded permutation per item). The null of a map's mass in its box (AMiM) is box placement
(:func:`with_placement_nulls`): what the map puts in the boxes of the items of the same image size on other images
(clusters). A map that ignores the box, however it is spread (e.g. towards the centre of the image, where boxes
placed anywhere overlap most), puts as much mass in another item's box as in its own; shuffling its cells would
instead spread it evenly and read any centre bias as grounding.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pathbind_metrics import faithfulness as fm
from pathbind_metrics import grounding
from pathbind_metrics import resampling as rs
from pathbind_tasks.common.clusters import cluster_keys

NO_CAUSAL_SIGNAL = "causal_l1 is 0: no occlusion changes the answer margin"
NO_ATTENTION = "no attention map"
NO_TEXT_ONLY = "no text-only scores"
NO_OTHER_BOX = "no item of the same image size on another image"
USES_IMAGE_MIN = 1e-3  # nats: the lower 95% bound of causal_l1 above this means the answer depends on the image
HEADLINE = ("attn_occlusion_rho", "attn_abs_delta_rho", "causal_l1", "causal_amim", "attn_amim", "pointing_hit",
            "pointing_tie", "attn_box_ap", "causal_box_ap", "insertion_auc", "deletion_auc", "text_agreement")
# Tested measure -> its paired null in the record; the direction is always "real above null".
TESTS = {"attn_occlusion_rho": "attn_occlusion_rho_null", "attn_amim": "attn_amim_null",
         "causal_amim": "causal_amim_null", "insertion_auc": "insertion_random", "deletion_random": "deletion_auc"}
BOX_KINDS = ("true", "shifted", "far", "random_size")
PLACEMENT_NULLS = {"attention": "attn_amim_null", "causal": "causal_amim_null"}  # map -> its box-placement null


def item_record(original: np.ndarray, patches: np.ndarray, attention: np.ndarray | str, text_only: np.ndarray | str,
                curves: Mapping[str, np.ndarray | str], *, reference: int, box: Sequence[float],
                image_size: Sequence[int], seed: int, view_box: Sequence[float] | None = None) -> dict[str, Any]:
    """Every measure of one item. ``attention`` or ``text_only`` may be the model's reason for having none.

    ``view_box`` is the part of the image the model saw (default: all of it). Occlusion cells wholly outside it
    cannot change the answer because the model never sees them: they are counted in ``cells_outside_view`` and
    left out of the attention–occlusion rank correlations, instead of passing for cells the model ignored.
    """
    grid = round(math.sqrt(len(patches)))
    lost: dict[str, str] = {}
    delta = fm.occlusion_map(original, patches, reference, grid)
    magnitude = np.abs(delta)
    coverage = fm.box_coverage(box, image_size, grid)
    view = [float(v) for v in view_box] if view_box is not None else [0.0, 0.0, *map(float, image_size)]
    seen = fm.box_coverage(view, image_size, grid) > 0
    rng = np.random.default_rng(seed)
    shuffle = rng.permutation(grid * grid)
    record: dict[str, Any] = {"causal_l1": float(magnitude.sum()), "area_share": float(coverage.mean()),
                              "view_box": view, "cells_outside_view": int((~seen).sum())}
    causal = _causal_measures(magnitude, coverage, box, image_size, lost)
    attn = _attention_measures(attention, delta, _within(shuffle, seen), seen, coverage, box, image_size, lost)
    boxes = fm.control_boxes(box, image_size, rng)
    maps = {"attention": attention if isinstance(attention, np.ndarray) else None, "causal": magnitude}
    record["boxes"] = {name: {kind: (fm.mass_in_box(m, fm.box_coverage(b, image_size, grid))
                                     if m is not None and np.isfinite(b).all() else math.nan)
                              for kind, b in boxes.items()} for name, m in maps.items()}
    record.update(causal, **attn, **_curves(curves, reference), text_agreement=_agreement(original, text_only, lost))
    record |= {"box": [float(v) for v in box], "image_size": [int(v) for v in image_size],
               "maps": {name: _shares(m) for name, m in maps.items()}}
    return {**record, "lost": lost}


def _shares(values: np.ndarray | None) -> list[list[float]] | None:
    """Each cell's share of a map (rounded: the sample log keeps it for the box-placement null), or None where
    shares are undefined (no map, a negative or non-finite value, a zero total)."""
    if values is None or math.isnan(fm.mass_in_box(values, np.ones_like(values))):
        return None
    return np.round(values / values.sum(), 7).tolist()


def _causal_measures(magnitude: np.ndarray, coverage: np.ndarray, box: Sequence[float],
                     image_size: Sequence[int], lost: dict[str, str]) -> dict[str, float]:
    if magnitude.sum() == 0:
        lost.update(causal_amim=NO_CAUSAL_SIGNAL, attn_occlusion_rho=NO_CAUSAL_SIGNAL)
        return {"causal_amim": math.nan, "causal_box_ap": math.nan}
    box_ap = grounding.pixel_average_precision(magnitude, box, image_size, sigma=0)
    if math.isnan(box_ap):
        lost["causal_box_ap"] = grounding.grounding_problem(magnitude, box, image_size, sigma=0) or "NaN"
    return {"causal_amim": fm.mass_in_box(magnitude, coverage), "causal_box_ap": box_ap}


def _within(shuffle: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """The permutation ``shuffle`` restricted to the seen cells (unseen cells stay in place)."""
    cells = np.flatnonzero(seen.ravel())
    order = np.arange(seen.size)
    order[cells] = [cell for cell in shuffle if seen.flat[cell]]
    return order


def _attention_measures(attention: np.ndarray | str, delta: np.ndarray, shuffle: np.ndarray, seen: np.ndarray,
                        coverage: np.ndarray, box: Sequence[float], image_size: Sequence[int],
                        lost: dict[str, str]) -> dict[str, float]:
    names = ("attn_occlusion_rho", "attn_occlusion_rho_null", "attn_abs_delta_rho", "attn_amim", "pointing_hit",
             "pointing_tie", "attn_box_ap")
    if isinstance(attention, str):
        lost["attention"] = attention
        return dict.fromkeys(names, math.nan)
    shuffled = attention.ravel()[shuffle].reshape(attention.shape)
    hit, tie = fm.pointing(attention, coverage)
    values = {"attn_occlusion_rho": fm.spearman(attention[seen], delta[seen]),
              "attn_occlusion_rho_null": fm.spearman(shuffled[seen], delta[seen]),
              "attn_abs_delta_rho": fm.spearman(attention[seen], np.abs(delta[seen])),
              "attn_amim": fm.mass_in_box(attention, coverage), "pointing_hit": hit, "pointing_tie": float(tie),
              "attn_box_ap": grounding.pixel_average_precision(attention, box, image_size, sigma=0)}
    if math.isnan(values["attn_occlusion_rho"]):
        lost.setdefault("attn_occlusion_rho", "attention or occlusion map is constant")
    if math.isnan(values["attn_box_ap"]):
        lost["attn_box_ap"] = grounding.grounding_problem(attention, box, image_size, sigma=0) or "NaN"
    return values


def _curves(curves: Mapping[str, np.ndarray | str], reference: int) -> dict[str, float]:
    """AUC of the reference answer's probability along each curve (fraction of cells deleted or inserted)."""
    names = {"deletion/attention": "deletion_auc", "deletion/random": "deletion_random",
             "insertion/attention": "insertion_auc", "insertion/random": "insertion_random"}
    return {field: (fm.curve_auc(fm.reference_probability(curves[name], reference))
                    if isinstance(curves.get(name), np.ndarray) else math.nan) for name, field in names.items()}


def _agreement(original: np.ndarray, text_only: np.ndarray | str, lost: dict[str, str]) -> float:
    if isinstance(text_only, str):
        lost["text_agreement"] = f"{NO_TEXT_ONLY}: {text_only}"
        return math.nan
    return float(fm.answer_index(original) == fm.answer_index(text_only))


def lost_record(reason: str) -> dict[str, Any]:
    """The record of an item that could not be scored at all."""
    fields = (*HEADLINE, *TESTS.values(), "attn_occlusion_rho_null", "area_share")
    return {**dict.fromkeys(fields, math.nan), "boxes": {}, "maps": {}, "lost": {"item": reason}}


def with_placement_nulls(records: list[dict[str, Any]], *, chunk: int = 1024) -> list[dict[str, Any]]:
    """The records with each map's box-placement null (``attn_amim_null``, ``causal_amim_null``): the share of its
    map that the item's box would hold if map and box were unrelated, from the items of the same image size and
    grid on other images (clusters): the mean share of its map in their boxes, plus how much more share of their
    maps its box holds than their boxes hold on average (a box near the centre collects more of any centre-biased
    map). Under "maps ignore the box", ``amim − null`` has mean 0 whatever the maps' shape or the boxes' placement;
    NaN (with the reason in ``lost``) where no such item exists.
    """
    keys = np.asarray(cluster_keys(records)[0])
    out = [{**r, **dict.fromkeys(PLACEMENT_NULLS.values(), math.nan), "lost": dict(r["lost"])} for r in records]
    for name, field in PLACEMENT_NULLS.items():
        strata: dict[tuple, list[int]] = defaultdict(list)
        for index, record in enumerate(records):
            if record.get("maps", {}).get(name) is not None:
                strata[(*record["image_size"], len(record["maps"][name]))].append(index)
        for (width, height, grid), members in strata.items():
            shares = np.asarray([np.ravel(records[i]["maps"][name]) for i in members])
            boxes = np.asarray([fm.box_coverage(records[i]["box"], (width, height), grid).ravel() for i in members])
            clusters = keys[members]
            row_sums, column_sums, counts = np.zeros(len(members)), np.zeros(len(members)), np.zeros(len(members))
            for start in range(0, len(members), chunk):  # bounded memory: chunk × items of the stratum
                rows = slice(start, start + chunk)
                other = clusters[rows, None] != clusters[None, :]
                mass = (shares[rows] @ boxes.T) * other  # map of row i in box of column j, other clusters only
                row_sums[rows], counts[rows] = mass.sum(axis=1), other.sum(axis=1)
                column_sums += mass.sum(axis=0)
            grand = row_sums.sum() / counts.sum() if counts.sum() else math.nan
            for i, row, column, count in zip(members, row_sums, column_sums, counts, strict=True):
                out[i][field] = float(row / count + column / count - grand) if count else math.nan
                if not count:
                    out[i]["lost"][field] = NO_OTHER_BOX
    return out


# ------------------------------------------------------------------------------------------- aggregations


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
    95% interval above 0)?"""
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


def _pair(records: list[dict[str, Any]], real: str, null: str) -> tuple[np.ndarray, np.ndarray]:
    return _values(records, real), _values(records, null)


def _mean(values: list[float]) -> float:
    array = np.asarray(values, dtype=float)
    array = array[np.isfinite(array)]
    return float(array.mean()) if array.size else math.nan
