"""Faithfulness: one record per item, every measure of its causal map and of each heat map the model gave.

Each heat map (the raw attention and every other attribution method the run computed, ``pathbind_models.attribution``)
is scored the same way against the same occlusion map (``methods``); the raw attention's measures are also the
record's top-level fields (``attn_occlusion_rho``, ``attn_amim``, ...). Each measure that cannot be computed is NaN
with its reason (``lost``, per method under ``methods[m]["lost"]``). Rank measures (ρ, curve order) read a map as
it is; box measures (mass in the box, pointing, box AP) read its positive part (RISE's map is signed). The null of
the rank correlation is the same map with its cells shuffled (one seeded permutation per item); each map's cell
shares are kept for the box-placement nulls of the box measures, which the aggregations draw from the other items
(:func:`pathbind_tasks.common.faithfulness_aggregations.with_placement_nulls`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pathbind_metrics import faithfulness as fm

NO_CAUSAL_SIGNAL = "causal_l1 is 0: no occlusion changes the answer margin"
NO_ATTENTION = "no attention map"
NO_TEXT_ONLY = "no text-only scores"
NO_ROI = "the model returned no scores with the box hidden"
HEADLINE = ("attn_occlusion_rho", "attn_abs_delta_rho", "causal_l1", "causal_amim", "attn_amim", "pointing_hit",
            "pointing_tie", "attn_box_ap", "causal_box_ap", "insertion_auc", "deletion_auc", "text_agreement")
# Tested measure -> its paired null in the record; the direction is always "real above null".
TESTS = {"attn_occlusion_rho": "attn_occlusion_rho_null", "attn_amim": "attn_amim_null",
         "causal_amim": "causal_amim_null", "insertion_auc": "insertion_random", "deletion_random": "deletion_auc"}
# A method's measure -> the raw attention's top-level field of it.
ATTENTION_FIELDS = {"rho": "attn_occlusion_rho", "rho_null": "attn_occlusion_rho_null", "abs_rho": "attn_abs_delta_rho",
                    "amim": "attn_amim", "pointing_hit": "pointing_hit", "pointing_tie": "pointing_tie",
                    "box_ap": "attn_box_ap", "insertion_auc": "insertion_auc", "deletion_auc": "deletion_auc"}
ROI_BOX, ROI_RANDOM = "box", "random"  # the request's ROI names: the expert box, a random box of its size


def item_record(original: np.ndarray, patches: np.ndarray, attention: np.ndarray | str, text_only: np.ndarray | str,
                curves: Mapping[str, np.ndarray | str], *, reference: int, box: Sequence[float],
                image_size: Sequence[int], seed: int, view_box: Sequence[float] | None = None,
                attributions: Mapping[str, np.ndarray | str] | None = None,
                notes: Mapping[str, Mapping[str, Any]] | None = None,
                rois: Mapping[str, np.ndarray | str] | None = None) -> dict[str, Any]:
    """Every measure of one item. ``attention``, any of ``attributions`` (method -> map) or ``text_only`` may be the
    model's reason for having none; ``notes`` say what each method used; ``rois`` are the scores with the box and
    with a random box of its size hidden.

    ``view_box`` is the part of the image the model saw (default: all of it). Occlusion cells wholly outside it
    cannot change the answer because the model never sees them: they are counted in ``cells_outside_view`` and
    left out of the rank correlations, instead of passing for cells the model ignored.
    """
    grid = round(math.sqrt(len(patches)))
    lost: dict[str, str] = {}
    delta = fm.occlusion_map(original, patches, reference, grid)
    magnitude = np.abs(delta)
    coverage = fm.box_coverage(box, image_size, grid)
    areas = fm.cell_areas(image_size, grid)
    view = [float(v) for v in view_box] if view_box is not None else [0.0, 0.0, *map(float, image_size)]
    seen = fm.box_coverage(view, image_size, grid) > 0
    rng = np.random.default_rng(seed)
    shuffle = _within(rng.permutation(grid * grid), seen)
    record: dict[str, Any] = {"causal_l1": float(magnitude.sum()), "area_share": float(coverage.mean()),
                              "view_box": view, "cells_outside_view": int((~seen).sum())}
    record.update(_causal_measures(magnitude, coverage, areas, lost))
    scored = {"attention": attention, **(attributions or {})}
    methods = {name: _method_measures(value, delta, shuffle, seen, coverage, areas, curves, name, reference)
               for name, value in scored.items()}
    for name, measures in methods.items():
        measures["notes"] = dict((notes or {}).get(name, {}))
    record.update(_attention_fields(methods["attention"], lost))
    boxes = fm.control_boxes(box, image_size, rng)
    maps = {"attention": _box_map(attention), "causal": magnitude}
    record["boxes"] = {name: {kind: (fm.mass_in_box(m, fm.box_coverage(b, image_size, grid))
                                     if m is not None and np.isfinite(b).all() else math.nan)
                              for kind, b in boxes.items()} for name, m in maps.items()}
    record.update(_random_curves(curves, reference), text_agreement=_agreement(original, text_only, lost),
                  roi_effect=_roi_effect(original, rois or {}, reference, lost))
    record |= {"box": [float(v) for v in box], "image_size": [int(v) for v in image_size], "methods": methods,
               "maps": {"causal": _shares(magnitude),
                        **{name: _shares(_box_map(value)) for name, value in scored.items()}}}
    return {**record, "lost": lost}


def _box_map(values: np.ndarray | str) -> np.ndarray | None:
    """What the box measures read: the map's positive part (None without a map)."""
    return np.clip(values, 0, None) if isinstance(values, np.ndarray) else None


def _shares(values: np.ndarray | None) -> list[list[float]] | None:
    """Each cell's share of a map (rounded: the sample log keeps it for the box-placement null), or None where
    shares are undefined (no map, a negative or non-finite value, a zero total)."""
    if values is None or math.isnan(fm.mass_in_box(values, np.ones_like(values))):
        return None
    return np.round(values / values.sum(), 7).tolist()


def _causal_measures(magnitude: np.ndarray, coverage: np.ndarray, areas: np.ndarray,
                     lost: dict[str, str]) -> dict[str, float]:
    if magnitude.sum() == 0:
        lost.update(causal_amim=NO_CAUSAL_SIGNAL, attn_occlusion_rho=NO_CAUSAL_SIGNAL)
        return {"causal_amim": math.nan, "causal_box_ap": math.nan}
    return {"causal_amim": fm.mass_in_box(magnitude, coverage),
            "causal_box_ap": fm.box_average_precision(magnitude, coverage, areas)}


def _within(shuffle: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """The permutation ``shuffle`` restricted to the seen cells (unseen cells stay in place)."""
    cells = np.flatnonzero(seen.ravel())
    order = np.arange(seen.size)
    order[cells] = [cell for cell in shuffle if seen.flat[cell]]
    return order


def _method_measures(values: np.ndarray | str, delta: np.ndarray, shuffle: np.ndarray, seen: np.ndarray,
                     coverage: np.ndarray, areas: np.ndarray, curves: Mapping[str, np.ndarray | str], name: str,
                     reference: int) -> dict[str, Any]:
    """One heat map's measures against the occlusion map ``delta`` and the box, with the reasons of those lost."""
    lost: dict[str, str] = {}
    if isinstance(values, str):
        return {**dict.fromkeys(ATTENTION_FIELDS, math.nan), "lost": {"map": values}}
    positive = np.clip(values, 0, None)
    shuffled = values.ravel()[shuffle].reshape(values.shape)
    hit, tie = fm.pointing(positive, coverage)
    out: dict[str, Any] = {"rho": fm.spearman(values[seen], delta[seen]),
                           "rho_null": fm.spearman(shuffled[seen], delta[seen]),
                           "abs_rho": fm.spearman(values[seen], np.abs(delta[seen])),
                           "amim": fm.mass_in_box(positive, coverage), "pointing_hit": hit, "pointing_tie": float(tie),
                           "box_ap": fm.box_average_precision(positive, coverage, areas)}
    for kind in ("insertion", "deletion"):
        curve = curves.get(f"{kind}/{name}")
        out[f"{kind}_auc"] = (fm.curve_auc(fm.reference_probability(curve, reference))
                              if isinstance(curve, np.ndarray) else math.nan)
    if math.isnan(out["rho"]):
        lost["rho"] = "the map or the occlusion map is constant"
    if math.isnan(out["amim"]):
        lost["amim"] = "the map has no positive mass"
    if math.isnan(out["box_ap"]):
        lost["box_ap"] = "the box covers no pixel"
    return {**out, "lost": lost}


def _attention_fields(measures: Mapping[str, Any], lost: dict[str, str]) -> dict[str, float]:
    """The raw attention's measures under their top-level names, its losses under theirs."""
    if "map" in measures["lost"]:
        lost["attention"] = measures["lost"]["map"]
    elif "rho" in measures["lost"]:
        lost.setdefault("attn_occlusion_rho", "attention or occlusion map is constant")
    return {field: measures[name] for name, field in ATTENTION_FIELDS.items()}


def _random_curves(curves: Mapping[str, np.ndarray | str], reference: int) -> dict[str, float]:
    """AUC of the reference answer's probability along the random-order curves (fraction of cells hidden/shown)."""
    return {f"{kind}_random": (fm.curve_auc(fm.reference_probability(curves[f"{kind}/random"], reference))
                               if isinstance(curves.get(f"{kind}/random"), np.ndarray) else math.nan)
            for kind in ("insertion", "deletion")}


def _roi_effect(original: np.ndarray, rois: Mapping[str, np.ndarray | str], reference: int,
                lost: dict[str, str]) -> float:
    """ROI deletion: how much more hiding the box lowers the margin than hiding a random box of its size."""
    hidden = [rois.get(name) for name in (ROI_BOX, ROI_RANDOM)]
    if not all(isinstance(scores, np.ndarray) for scores in hidden):
        lost["roi_effect"] = NO_ROI
        return math.nan
    box, random = (fm.margin(scores, reference) for scores in hidden)  # type: ignore[arg-type]
    return float(random - box)


def _agreement(original: np.ndarray, text_only: np.ndarray | str, lost: dict[str, str]) -> float:
    if isinstance(text_only, str):
        lost["text_agreement"] = f"{NO_TEXT_ONLY}: {text_only}"
        return math.nan
    return float(fm.answer_index(original) == fm.answer_index(text_only))


def lost_record(reason: str) -> dict[str, Any]:
    """The record of an item that could not be scored at all."""
    fields = (*HEADLINE, *TESTS.values(), "attn_occlusion_rho_null", "area_share", "roi_effect")
    return {**dict.fromkeys(fields, math.nan), "boxes": {}, "maps": {}, "methods": {}, "lost": {"item": reason}}
