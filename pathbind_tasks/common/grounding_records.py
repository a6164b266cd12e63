"""Grounding: one record per item, every measure of its maps.

An item record holds, for the true expression's map, IoU/precision/recall at every threshold of the sweep
(middle-third layers), the same at q=0.2 for every layer set, the IoU with the true box and with three control
boxes per layer group (``overlap_controls``), effective support, pixel-AP, and the cross-query correlation of the
item's K maps, all over the part of the image the model saw (``view_box``). A
measure that cannot be computed is NaN and its reason is kept in ``lost``; a box partly outside the view is
scored (its unseen pixels count as missed) and says so in ``diagnostics``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pathbind.wire import LAYER_GROUPS, LAYER_SETS
from pathbind_metrics import faithfulness, grounding

Q_SWEEP = (0.05, 0.1, 0.2, 0.3, 0.4)
Q_DEFAULT = 0.2
REGION = ("iou", "precision", "recall")
BOX_PARTLY_OUTSIDE_VIEW = "box partly outside the model's view"
CONTROL_Q = 0.1  # seed 004 thresholds attention at its 90th percentile: the top 10% of the pixels
CONTROL_SETS = ("mid", *LAYER_GROUPS)  # the default layers, then the sweep over nine layer groups


def item_record(maps: Sequence[dict[str, np.ndarray] | str], box: Sequence[float], image_size: Sequence[int],
                *, sigma: float = 3.0, view_box: Sequence[float] | None = None,
                layers: Mapping[str, Sequence[int]] | None = None, seed: int = 0) -> dict[str, Any]:
    """Every measure of one item; ``maps[0]`` is the true expression's maps by layer set, the rest alternatives.

    A map entry that is a string is the model's reason for having no map for that query. ``view_box`` is the
    rectangle of the image the maps cover (default: the whole image); ``layers`` the decoder layers of each layer
    set (as the response names them); ``seed`` draws the item's control boxes.
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
                        else _region(attn_map, geometry, lost) for name, attn_map in true_maps.items()
                        if name in LAYER_SETS}
    record["overlap_controls"] = _controls(true_maps, geometry, dict(layers or {}), seed)
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


def _controls(true_maps: dict[str, np.ndarray], geometry: dict[str, Any], layers: dict[str, Sequence[int]],
              seed: int) -> dict[str, dict[str, Any]]:
    """Seed 004's controlled overlap: per layer set (the middle third, then each ninth) the IoU of the top
    :data:`CONTROL_Q` attention mask with the true box and with each control box (shifted, far, random size), every
    box within the part of the image the model saw."""
    if not any(name in true_maps for name in CONTROL_SETS):
        return {}
    boxes = control_boxes_in_view(geometry["box"], geometry["view_box"], np.random.default_rng(seed))
    shared = {**geometry, "q": CONTROL_Q}
    return {name: {"layers": [int(i) for i in layers.get(name, [])],
                   **{kind: grounding.attention_region_metrics(true_maps[name], **{**shared, "box": drawn})["iou"]
                      for kind, drawn in boxes.items()}}
            for name in CONTROL_SETS if name in true_maps}


def control_boxes_in_view(box: Sequence[float], view: Sequence[float], rng: np.random.Generator
                          ) -> dict[str, list[float]]:
    """The box clipped to the view, and its controls (:func:`pathbind_metrics.faithfulness.control_boxes`) drawn in
    the view, in pixels of the image."""
    x0, y0, x1, y1 = (float(v) for v in view)
    inside = [max(box[0], x0) - x0, max(box[1], y0) - y0, min(box[2], x1) - x0, min(box[3], y1) - y0]
    if inside[2] <= inside[0] or inside[3] <= inside[1]:  # the model saw none of the box: nothing to compare
        return dict.fromkeys(("true", "shifted", "far", "random_size"), [math.nan] * 4)
    drawn = faithfulness.control_boxes(inside, (round(x1 - x0), round(y1 - y0)), rng)
    return {kind: [b[0] + x0, b[1] + y0, b[2] + x0, b[3] + y0] for kind, b in drawn.items()}


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
