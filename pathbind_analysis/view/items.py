"""The viewer's items: per task and item id, its document (image, boxes, question, options, reference) and each run's
record of it (each condition's answer with its invalid reason, the item's measures, its heat maps)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pathbind.lmms_output import sample_record, task_samples
from pathbind.wire import AttentionResponse
from pathbind_analysis.report.runs import Run
from pathbind_analysis.view.pictures import Pictures
from pathbind_metrics.grounding import heat_map
from pathbind_tasks.common.grounding_records import Q_DEFAULT

Documents = Callable[[str], Sequence[dict[str, Any]]]
MISS_IOU = 0.1  # below it a heat map misses the expert box (the report's overlays call it a failure)
SHOWN_ANSWER = 300  # characters of a raw answer kept beside its parsed form
NOT_MEASURES = {"doc_id", "n_options", "cells_outside_view", "area_share", "box_in_view"}


@dataclass
class Item:
    task: str
    id: str
    doc: dict[str, Any] | None = None  # the item's document under the original image (its "image" condition)
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)  # run name -> what it logged of the item


def collect(runs: list[Run], documents: Documents, pictures: Pictures) -> tuple[list[dict[str, Any]], list[str]]:
    """Every logged item of every run, as the page shows it, and a note for each task or run left out (why)."""
    items: dict[tuple[str, str], Item] = {}
    notes = []
    for task in sorted({task for run in runs for task in run.results if task not in run.groups | run.unscored}):
        try:
            docs = documents(task)
        except ValueError as exc:
            notes.append(f"{task}: left out: {exc}")
            continue
        for run in (r for r in runs if task in r.results and task not in r.groups | r.unscored):
            try:
                samples = task_samples(run.path, task)
            except ValueError as exc:
                notes.append(f"{run.name}: {task} left out: {exc}")
                continue
            for sample in samples:
                _add(items, task, run.name, sample, docs)
    return [_shown(item, pictures) for item in items.values()], notes


def _add(items: dict[tuple[str, str], Item], task: str, run: str, sample: dict[str, Any],
         docs: Sequence[dict[str, Any]]) -> None:
    record = sample_record(sample)
    if record is None or "id" not in record:
        return
    item = items.setdefault((task, str(record["id"])), Item(task, str(record["id"])))
    doc_id = int(sample.get("doc_id", -1))
    condition = str(record.get("condition", "image"))
    if condition == "image" and item.doc is None and 0 <= doc_id < len(docs):
        item.doc = docs[doc_id]
    logged = item.runs.setdefault(run, {"answers": [], "measures": {}, "maps": {}, "boxes": []})
    text = _response(sample)
    if "valid" in record or "parsed" in record:
        logged["answers"].append({"condition": condition, "parsed": _plain(record.get("parsed")),
                                  "correct": record.get("correct"), "valid": record.get("valid", not record.get(
                                      "reason")), "reason": str(record.get("reason") or ""),
                                  "answer": text[:SHOWN_ANSWER]})
        if _is_boxes(record.get("parsed")):
            logged["boxes"] = record["parsed"]
    logged["measures"].update(_measures(record))
    logged["maps"].update(_maps(record, text))
    logged["view_box"] = record.get("view_box")


def _shown(item: Item, pictures: Pictures) -> dict[str, Any]:
    """The item as the page's data holds it: pictures written, maps replaced by their overlays."""
    doc = item.doc or {}
    width, height = _int(doc.get("width")), _int(doc.get("height"))
    thumb, problem = "", "" if doc else "no document of the item's image condition in the task's data"
    if doc.get("image") is not None:
        try:
            thumb = pictures.thumbnail(doc["image"])
        except (OSError, ValueError) as exc:
            problem = f"image unreadable: {exc}"
    runs = {}
    for name, logged in item.runs.items():
        overlays: dict[str, str] = {}
        missing: dict[str, list[str]] = {}
        for label, grid in logged.pop("maps").items():
            try:
                overlays[label] = pictures.overlay(heat_map(grid, (width, height), view_box=logged.get("view_box")))
            except (ValueError, TypeError) as exc:  # a uniform map, a missing size: say why, draw nothing
                missing.setdefault(str(exc).split(": ", 1)[-1], []).append(label)
        logged.pop("view_box", None)
        runs[name] = {**logged, "overlays": overlays, "outcomes": _outcomes(logged),
                      "no_overlay": [f"{why} ({', '.join(labels)})" for why, labels in missing.items()]}
    return {"task": item.task, "id": item.id, "dimension": str(doc.get("dimension") or ""),
            "cluster": str(doc.get("cluster") or ""), "question": str(doc.get("question") or doc.get("expression")
                                                                         or ""),
            "options": [str(o) for o in doc.get("options") or []], "reference": _plain(_reference(doc)),
            "thumb": thumb, "problem": problem, "width": width, "height": height, "boxes": _expert_boxes(doc),
            "runs": runs}


def _outcomes(logged: dict[str, Any]) -> list[str]:
    """The filter classes of one run's item: right only with the image, right without it, invalid, grounding
    miss."""
    by_condition = {a["condition"]: a for a in logged["answers"]}
    image, text = by_condition.get("image", {}), by_condition.get("text", {})
    found = []
    if image.get("correct") is True and text.get("correct") is False:
        found.append("image_only")
    if text.get("correct") is True:
        found.append("right_without_image")
    if any(a["valid"] is False for a in logged["answers"]):
        found.append("invalid")
    iou = logged["measures"].get("iou")
    if isinstance(iou, float) and iou < MISS_IOU:
        found.append("grounding_miss")
    return found


def _measures(record: dict[str, Any]) -> dict[str, float | None]:
    """The record's per-item numbers (None where undefined); a measure over thresholds q at the default q."""
    found = {}
    for name, value in record.items():
        if isinstance(value, dict) and str(Q_DEFAULT) in value:
            value = value[str(Q_DEFAULT)]
        if (isinstance(value, int | float) and not isinstance(value, bool) and name not in NOT_MEASURES
                and not name.endswith(("_null", "_random"))):
            found[name] = float(value) if math.isfinite(value) else None
    return found


def _maps(record: dict[str, Any], text: str) -> dict[str, Any]:
    """Heat maps by label: a grounding answer's layer sets ("layers mid"), a faithfulness record's maps by method
    ("attention", "causal", ...)."""
    found: dict[str, Any] = {str(name): grid for name, grid in (record.get("maps") or {}).items()
                             if isinstance(grid, list)}
    if "iou" in record and text.startswith("{"):
        try:
            first = AttentionResponse.decode(text).maps[0]
        except (ValueError, IndexError):
            return found
        if isinstance(first, dict):
            found |= {f"layers {name}": grid for name, grid in first.items()}
    return found


def _response(sample: dict[str, Any]) -> str:
    response = sample.get("filtered_resps")
    return str(response[0] if isinstance(response, list) and response else response or "")


def _reference(doc: dict[str, Any]) -> Any:
    return doc.get("answer", doc.get("count", ""))


def _expert_boxes(doc: dict[str, Any]) -> list[list[float]]:
    if _is_boxes([doc.get("bbox")]):
        return [list(map(float, doc["bbox"]))]
    return [list(map(float, box)) for box in doc.get("boxes") or [] if _is_boxes([box])]


def _is_boxes(value: Any) -> bool:
    return (isinstance(value, list) and bool(value) and all(
        isinstance(box, list | tuple) and len(box) == 4 and all(isinstance(v, int | float) for v in box)
        for box in value))


def _plain(value: Any) -> Any:
    """A JSON-ready copy: numbers, text, lists of them; anything else as text."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
