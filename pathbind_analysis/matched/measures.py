"""PathView-Bench's Matched-Slide Analysis: a Slide-FOV measure over every slide and over the slides a model answered
correctly in an external benchmark, with intervals that resample slides."""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from pathbind_metrics import resampling as rs
from pathbind_tasks.common.pathview_aggregations import INTERVALS, PROPORTIONS

# The seed's four columns: Slide-FOV task, its label, and the headline its records are scored by.
MEASURES = (("slide_lgd", "LGD Dice"), ("slide_are", "ARE macro-F1"), ("slide_dlo", "DLO macro-F1"),
            ("slide_ocl", "OCL accuracy"))
IDEAL = 1.0  # every measure's best value: the paper's "ideal upper bound"
CLUSTER = "slide"


def pathview_task(tasks: Collection[str], measure: str) -> str | None:
    """The run's task for a Slide-FOV measure: ``pathbind_pathview_<measure>`` (or its alias ``pathview_<measure>``),
    then its box-frame variants, then the demo's."""
    pattern = re.compile(rf"^(pathbind_)?pathview(_demo)?_{measure}(_per_mille|_unit)?$")
    found = sorted((t for t in tasks if pattern.match(t)), key=lambda t: ("_demo_" in t, len(t), t))
    return found[0] if found else None


def slide_of(record: Mapping[str, Any]) -> str:
    """The record's slide; an item without one is its own cluster (it is in "all slides", never matched)."""
    return str(record.get("slide_id") or f"item={record.get('id')}")


def compare(records: Sequence[Mapping[str, Any]], matched: Collection[str]) -> dict[str, Any]:
    """The task's headline (as a fraction: 0.274, as the seed prints it) over every item and over the items of the
    ``matched`` slides, and the gap matched − all, each with its 95% cluster interval over slides.

    The gap's interval resamples the slides once for both terms (the matched slides are part of all slides), by the
    cluster jackknife of :func:`pathbind_metrics.resampling.cluster_interval`. ``items`` counts the scored items,
    ``without_slide`` those that name no slide."""
    ordered = sorted(records, key=lambda r: str(r.get("id")))
    kind = str(ordered[0].get("kind")) if ordered else ""
    if kind not in INTERVALS or not INTERVALS[kind]:
        raise ValueError(f"records of kind {kind!r} are not a Slide-FOV measure (LGD, ARE, DLO or OCL)")
    (name, columns_of), = INTERVALS[kind].items()
    kept = [r for r in ordered if name != "macro_f1" or r.get("reference") is not None]
    columns, statistic = columns_of(kept)
    keys = np.asarray([slide_of(r) for r in kept], dtype=object)
    inside = np.asarray([r.get("slide_id") in matched for r in kept], dtype=bool)
    proportion = 100.0 if name in PROPORTIONS else None
    width = columns.shape[1]

    def gap(sums: np.ndarray) -> np.ndarray:
        return statistic(sums[..., width:]) - statistic(sums[..., :width])

    both = np.hstack([columns, columns * inside[:, None]])
    return {"metric": name, "items": len(kept), "without_slide": sum(1 for r in kept if not r.get("slide_id")),
            "slides": len(set(keys)), "matched_slides": len(set(keys[inside])), "matched_items": int(inside.sum()),
            "all": _value(statistic, columns, keys, proportion),
            "matched": _value(statistic, columns[inside], keys[inside], proportion),
            "gap": _fraction({"value": float(gap(both.sum(axis=0))) if inside.any() else math.nan,
                              "ci95": rs.cluster_interval(gap, both, list(keys), cluster=CLUSTER,
                                                          bounds=(-100.0, 100.0))})}


def _value(statistic: rs.Statistic, columns: np.ndarray, keys: np.ndarray, proportion: float | None) -> dict[str, Any]:
    value = float(statistic(columns.sum(axis=0))) if len(columns) else math.nan
    interval = rs.cluster_interval(statistic, columns, list(keys), cluster=CLUSTER, proportion=proportion,
                                   bounds=(0.0, 100.0))
    return _fraction({"value": value, "ci95": interval})


def _fraction(estimate: dict[str, Any]) -> dict[str, Any]:
    """A percentage estimate and its interval as fractions (the seed's 0.252)."""
    interval = dict(estimate["ci95"])
    interval["low"], interval["high"] = interval["low"] / 100, interval["high"] / 100
    return {"value": estimate["value"] / 100, "ci95": interval}


def macro_average(models: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per measure, the mean over the models that have it of their value over all slides and over matched slides
    (the seed's macro average over 16 models), with the models it averages."""
    table: dict[str, dict[str, Any]] = {}
    for measure, label in MEASURES:
        rows = [(m["model"], m["measures"][measure]) for m in models if measure in m.get("measures", {})]
        rows = [(model, row) for model, row in rows if math.isfinite(row["matched"]["value"])]
        table[measure] = {"label": label, "models": [model for model, _ in rows], "ideal": IDEAL,
                          **{part: float(np.mean([row[part]["value"] for _, row in rows])) if rows else math.nan
                             for part in ("all", "matched")}}
    return table
