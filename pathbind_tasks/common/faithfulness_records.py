"""Faithfulness: one record per item, every measure of its causal and attention maps.

Each measure that cannot be computed is NaN with its reason in the record's ``lost``. The null of the rank
correlation is the same map with its cells shuffled (one seeded permutation per item); each map's cell shares are
kept for the box-placement null of its mass in the box, which the aggregations draw from the other items
(:func:`pathbind_tasks.common.faithfulness_aggregations.with_placement_nulls`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pathbind_metrics import faithfulness as fm
from pathbind_metrics import grounding

NO_CAUSAL_SIGNAL = "causal_l1 is 0: no occlusion changes the answer margin"
NO_ATTENTION = "no attention map"
NO_TEXT_ONLY = "no text-only scores"
HEADLINE = ("attn_occlusion_rho", "attn_abs_delta_rho", "causal_l1", "causal_amim", "attn_amim", "pointing_hit",
            "pointing_tie", "attn_box_ap", "causal_box_ap", "insertion_auc", "deletion_auc", "text_agreement")
# Tested measure -> its paired null in the record; the direction is always "real above null".
TESTS = {"attn_occlusion_rho": "attn_occlusion_rho_null", "attn_amim": "attn_amim_null",
         "causal_amim": "causal_amim_null", "insertion_auc": "insertion_random", "deletion_random": "deletion_auc"}


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
