"""Grounding: one record per item, every measure of its maps.

An item record holds, for the true expression's map, IoU/precision/recall at every threshold of the sweep
(middle-third layers), the same at q=0.2 for every layer set, effective support, pixel-AP, and the
cross-query correlation of the item's K maps, all over the part of the image the model saw (``view_box``). A
measure that cannot be computed is NaN and its reason is kept in ``lost``; a box partly outside the view is
scored (its unseen pixels count as missed) and says so in ``diagnostics``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from pathbind_metrics import grounding

Q_SWEEP = (0.05, 0.1, 0.2, 0.3, 0.4)
Q_DEFAULT = 0.2
REGION = ("iou", "precision", "recall")
BOX_PARTLY_OUTSIDE_VIEW = "box partly outside the model's view"


def item_record(maps: Sequence[dict[str, np.ndarray] | str], box: Sequence[float], image_size: Sequence[int],
                *, sigma: float = 3.0, view_box: Sequence[float] | None = None) -> dict[str, Any]:
    """Every measure of one item; ``maps[0]`` is the true expression's maps by layer set, the rest alternatives.

    A map entry that is a string is the model's reason for having no map for that query. ``view_box`` is the
    rectangle of the image the maps cover (default: the whole image).
    """
    lost: dict[str, str] = {}
    first = maps[0] if maps else "no maps in the response"
    true_maps = first if isinstance(first, dict) else {}
    if isinstance(first, str):
        lost["item"] = first
    view = [float(v) for v in view_box] if view_box is not None else [0.0, 0.0, *map(float, image_size)]
    geometry = {"box": box, "image_size": image_size, "sigma": sigma, "view_box": view}
    mid = true_maps.get("mid")
    in_view = grounding.box_view_fraction(box, image_size, view)
    record: dict[str, Any] = {"lost": lost, "view_box": view, "box_in_view": in_view,
                              "diagnostics": [BOX_PARTLY_OUTSIDE_VIEW] if 0 < in_view < 1 else [],
                              **_sweep(mid, geometry, lost)}
    record["layers"] = {name: {m: record[m][str(Q_DEFAULT)] for m in REGION} if name == "mid"
                        else _region(attn_map, geometry, lost) for name, attn_map in true_maps.items()}
    record["eff_support"] = _support(mid, lost)
    record["cross_query_r"] = _cross_query(maps, geometry, lost)
    return record


def lost_record(reason: str) -> dict[str, Any]:
    """The record of an item that could not be scored at all: every measure NaN, no view (none was reported)."""
    return {**item_record([reason], [0, 0, 0, 0], (1, 1)), "view_box": None}


def _sweep(attn_map: np.ndarray | None, geometry: dict[str, Any], lost: dict[str, str]) -> dict[str, Any]:
    """IoU/precision/recall per q of the sweep and pixel-AP, all from one heat map."""
    if attn_map is None:
        return {**{name: dict.fromkeys(map(str, Q_SWEEP), math.nan) for name in REGION}, "pixel_ap": math.nan}
    sweep = grounding.region_sweep(attn_map, qs=Q_SWEEP, **geometry)
    if math.isnan(sweep["pixel_ap"]):
        reason = grounding.grounding_problem(attn_map, **geometry) or "NaN"
        lost.update(iou=reason, pixel_ap=reason)
    return {**{name: {str(q): values[name] for q, values in sweep["by_q"].items()} for name in REGION},
            "pixel_ap": sweep["pixel_ap"]}


def _region(attn_map: np.ndarray, geometry: dict[str, Any], lost: dict[str, str]) -> dict[str, float]:
    values = grounding.attention_region_metrics(attn_map, q=Q_DEFAULT, **geometry)
    if math.isnan(values["iou"]):
        lost.setdefault("iou", grounding.grounding_problem(attn_map, **geometry) or "NaN")
    return values


def _support(attn_map: np.ndarray | None, lost: dict[str, str]) -> float:
    if attn_map is None:
        return math.nan
    value = grounding.effective_support_ratio(attn_map)
    if math.isnan(value):
        lost["eff_support"] = grounding.support_problem(attn_map) or "NaN"
    return value


def _cross_query(maps: Sequence[dict[str, np.ndarray] | str], geometry: dict[str, Any], lost: dict[str, str]) -> float:
    mids = [m["mid"] for m in maps if isinstance(m, dict) and "mid" in m]
    if len(mids) < len(maps):
        failed = next((i for i, m in enumerate(maps) if not (isinstance(m, dict) and "mid" in m)))
        reason = maps[failed] if isinstance(maps[failed], str) else "a query has no middle-layer map"
        lost["cross_query_r"] = f"alternative query: {reason}" if failed else str(reason)  # 0: the item's own
        return math.nan
    view = {key: geometry[key] for key in ("image_size", "sigma", "view_box")}
    value = grounding.cross_query_correlation(mids, **view)
    if math.isnan(value):
        lost["cross_query_r"] = grounding.correlation_problem(mids, **view) or "NaN"
    return value
