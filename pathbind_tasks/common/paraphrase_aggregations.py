"""Paraphrase flips and text-only consistency over the VQA records of the ``paraphrase`` condition set.

An item's answer *flips* under a paraphrase of its question when the paraphrase does not get the same valid answer
as the original wording (an invalid answer under the paraphrase is a flip; the rule is the one ``reliance`` uses for
a changed image). *Text-only consistency* is the share of items whose answer without the image is the same valid
answer as with it (the seed's "text-only agreement"). Items without a valid answer in the original wording have
nothing to compare and are left out, counted. Intervals resample clusters (by default images), as every VQA interval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pathbind_metrics import resampling as rs
from pathbind_tasks.common.clusters import cluster_keys

Records = list[Mapping]
POINTS = (0.0, 100.0)


def flip_rate(records: Records) -> float:
    """Percentage of (item, paraphrase) pairs whose answer flips."""
    return float(paraphrase(records)["flip_rate"]["value"])


def text_consistency(records: Records) -> float:
    """Percentage of items answered the same without the image as with it."""
    return float(paraphrase(records)["text_consistency"]["value"])


def paraphrase(records: Records) -> dict[str, Any]:
    """``flip_rate`` and ``text_consistency`` with their 95% cluster intervals, the flip rate of each rule, and the
    counts: items compared, (item, paraphrase) pairs, items left out for an invalid original answer."""
    original = {r["id"]: r for r in records if r["condition"] == "image"}
    valid = {item: r for item, r in original.items() if r["valid"]}
    reworded = [r for r in records if str(r["condition"]).startswith("paraphrase_") and r["id"] in valid]
    rules = sorted({str(r.get("paraphrase") or "") for r in reworded})
    text = [(valid[r["id"]], r) for r in records if r["condition"] == "text" and r["id"] in valid]
    return {"flip_rate": _rate(valid, reworded), "text_consistency": _rate(valid, [other for _, other in text],
                                                                             changed=False),
            "by_rule": {rule: _rate(valid, [r for r in reworded if (r.get("paraphrase") or "") == rule])
                        for rule in rules},
            "items": len(valid), "pairs": len(reworded), "invalid_left_out": len(original) - len(valid)}


def _rate(original: Mapping[str, Mapping], others: list[Mapping], changed: bool = True) -> dict[str, Any]:
    """Percentage of ``others`` whose answer differs (``changed``) from, or equals, the item's original one, over the
    items' clusters: the flips (or agreements) and answers of each item summed."""
    per_item: dict[str, list[float]] = {}
    for other in others:
        same = bool(other["valid"]) and other["parsed"] == original[other["id"]]["parsed"]
        counts = per_item.setdefault(other["id"], [0.0, 0.0])
        counts[0] += float(same != changed)
        counts[1] += 1.0
    ids = sorted(per_item)
    keys, cluster = cluster_keys([original[i] for i in ids])
    statistic = rs.mean_of(0, 1, 100.0)
    columns = [per_item[i] for i in ids]
    value = 100.0 * sum(c[0] for c in columns) / sum(c[1] for c in columns) if columns else math.nan
    return {"value": value, "n": int(sum(c[1] for c in columns)),
            "ci95": rs.cluster_interval(statistic, columns, keys, cluster=cluster, proportion=100.0, bounds=POINTS)}
