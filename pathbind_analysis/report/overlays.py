"""Attention overlays (the paper's Figures C.2–C.4): image, heat map, top-q mask and true box, models side by side."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Any

import numpy as np

from pathbind.faults import Fault
from pathbind.lmms.queries import task_documents
from pathbind.lmms_output import sample_record, task_samples
from pathbind.wire import AttentionResponse
from pathbind_analysis.report.document import Figure, Note, Section
from pathbind_analysis.report.figures import new_figure, save
from pathbind_analysis.report.grounding import grounding_tasks
from pathbind_analysis.report.runs import Run
from pathbind_metrics.grounding import heat_map, view_pixels
from pathbind_tasks.common.grounding_records import Q_DEFAULT
from pathbind_tasks.common.images import rgb_image

SUCCESS_IOU = 0.5  # at least half of mask ∪ box is shared: the attention localises the entity
PARTIAL_IOU = 0.1  # touches the region but is diffuse or shifted; below it the attention misses the box
GROUPS = ("success", "partial", "failure")


@dataclass
class ItemMap:
    """One model's answer for one item: its middle-third map of the true expression (or why there is none)."""

    attn_map: np.ndarray | None
    iou: float
    problem: str = ""
    view_box: tuple[float, float, float, float] | None = None  # what the model saw; None: the whole image


def overlay_section(runs: list[Run], out: Path, n_items: int) -> Section:
    section = Section("Attention overlays",
                      f"For {n_items} grounding items per task: the image, each model's heat map (middle-third "
                      f"layers, smoothed), its top-{Q_DEFAULT:.0%} mask (white outline) and the expert box (green). An "
                      f"item is a success when the best model's IoU is ≥ {SUCCESS_IOU}, partial when it is "
                      f"≥ {PARTIAL_IOU}, a failure otherwise or when no model could be scored (the paper's "
                      "Figures C.2–C.4).")
    if n_items <= 0:
        section.blocks.append(Note("overlays not requested (--overlays 0)"))
        return section
    tasks = grounding_tasks(runs)
    if not tasks:
        section.blocks.append(Note("no run has a grounding task: no overlays"))
    for task in tasks:
        section.blocks += _task_overlays(runs, task, out, n_items)
    return section


def _task_overlays(runs: list[Run], task: str, out: Path, n_items: int) -> list[Figure | Note]:
    logged: dict[str, dict[int, ItemMap]] = {}
    notes: list[Figure | Note] = []
    for run in (r for r in runs if task in r.results):
        try:
            logged[run.name] = _item_maps(task_samples(run.path, task))
        except ValueError as exc:
            notes.append(Note(f"{run.name}: no overlays for {task}: {exc}"))
    if not logged:
        return notes
    try:
        docs = task_documents(task)
    except ValueError as exc:
        return [*notes, Note(f"no overlays for {task}: {exc}")]
    for group, doc_ids in choose_items(logged, n_items).items():
        if not doc_ids:
            notes.append(Note(f"{task}: no {group} item among the items shown"))
            continue
        notes.append(_group_figure(task, group, [(i, _doc(docs, i)) for i in doc_ids], logged, out))
    return notes


def _item_maps(logged: list[dict[str, Any]]) -> dict[int, ItemMap]:
    items = {}
    for sample in logged:
        record = sample_record(sample)
        iou = float(record.get("iou", {}).get(str(Q_DEFAULT), math.nan)) if isinstance(record, dict) else math.nan
        items[int(sample["doc_id"])] = _first_map(sample.get("filtered_resps"), iou)
    return items


def _first_map(response: Any, iou: float) -> ItemMap:
    text = response[0] if isinstance(response, list) and response else response
    try:
        response = AttentionResponse.decode(str(text))
        first = response.maps[0]
    except (ValueError, IndexError) as exc:
        return ItemMap(None, iou, str(exc))
    if isinstance(first, str) or "mid" not in first:
        return ItemMap(None, iou, first if isinstance(first, str) else "no middle-layer map")
    return ItemMap(first["mid"], iou, view_box=response.view_box)


def choose_items(logged: dict[str, dict[int, ItemMap]], n_items: int) -> dict[str, list[int]]:
    """Up to ``n_items`` doc ids, taken in turn from each group so that every group present is shown.

    Within a group the clearest examples come first: successes by highest IoU, failures by lowest, partial
    items by highest; ties by doc id.
    """
    best = {doc_id: _best_iou([maps.get(doc_id) for maps in logged.values()])
            for doc_id in sorted({i for maps in logged.values() for i in maps})}
    grouped: dict[str, list[int]] = {group: [] for group in GROUPS}
    for doc_id, iou in best.items():
        grouped[_group(iou)].append(doc_id)
    for group, ids in grouped.items():
        ids.sort(key=lambda i: (best[i] if group == "failure" else -best[i]) if math.isfinite(best[i]) else math.inf)
    chosen: dict[str, list[int]] = {group: [] for group in GROUPS}
    for turn in zip_longest(*grouped.values()):
        for group, doc_id in zip(GROUPS, turn, strict=True):
            if doc_id is not None and sum(map(len, chosen.values())) < n_items:
                chosen[group].append(doc_id)
    return chosen


def _best_iou(maps: Sequence[ItemMap | None]) -> float:
    scored = [m.iou for m in maps if m is not None and math.isfinite(m.iou)]
    return max(scored) if scored else math.nan


def _group(iou: float) -> str:
    if math.isfinite(iou) and iou >= SUCCESS_IOU:
        return "success"
    return "partial" if math.isfinite(iou) and iou >= PARTIAL_IOU else "failure"


def _doc(docs: Sequence[dict[str, Any]], doc_id: int) -> dict[str, Any] | str:
    """The document, or why its image cannot be shown."""
    if not 0 <= doc_id < len(docs):
        return f"doc {doc_id} is not among the task's {len(docs)} documents (data changed since the run?)"
    doc = docs[doc_id]
    if doc.get("image") is None or doc.get("image_error"):
        return f"doc {doc_id} ({doc.get('id')}): image unreadable: {Fault.read(doc.get('image_error')) or 'no image'}"
    return doc


def _group_figure(task: str, group: str, items: list[tuple[int, dict[str, Any] | str]],
                  logged: dict[str, dict[int, ItemMap]], out: Path) -> Figure | Note:
    shown = [(doc_id, doc) for doc_id, doc in items if not isinstance(doc, str)]
    missing = "; ".join(doc for _, doc in items if isinstance(doc, str))
    if not shown:
        return Note(f"{task} {group}: no image to show ({missing})")
    models = list(logged)
    figure = new_figure(2.6 * len(models) + 0.4, 2.9 * len(shown) + 0.3)
    axes = np.atleast_2d(figure.subplots(len(shown), len(models), squeeze=False))
    for row, (doc_id, doc) in enumerate(shown):
        for col, model in enumerate(models):
            _panel(axes[row, col], doc, logged[model].get(doc_id), model)
        axes[row, 0].set_ylabel(_wrap(str(doc.get("expression", "")), 32), fontsize=7)
    figure.suptitle(f"{task}: {group}", fontsize=11)
    caption = f"{task}, {group} items: per row one item (its expression at the left), per column one model."
    path = save(figure, out / f"overlays_{task}_{group}.png")
    return Figure(path, caption + (f" Not shown: {missing}." if missing else ""))


def _panel(ax: Any, doc: dict[str, Any], item: ItemMap | None, model: str) -> None:
    width, height = int(doc["width"]), int(doc["height"])
    ax.imshow(rgb_image(doc["image"]), extent=(0, width, height, 0))
    ax.set_xticks([])
    ax.set_yticks([])
    title = f"{model}\nnot in this run" if item is None else f"{model}\nIoU {_iou_text(item.iou)}"
    if item is not None and item.attn_map is not None:
        try:
            heat = heat_map(item.attn_map, (width, height), view_box=item.view_box)
        except ValueError as exc:  # e.g. a uniform map: nothing to draw, say why
            title = f"{model}\nno heat map: {_wrap(str(exc).split(': ', 1)[-1], 30)}"
        else:
            _heat(ax, heat, item.view_box)
    elif item is not None:
        title = f"{model}\nno map: {_wrap(item.problem, 30)}"
    draw_box(ax, doc.get("bbox"))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.set_title(title, fontsize=8)


def _heat(ax: Any, heat: np.ndarray, view_box: Sequence[float] | None) -> None:
    """The heat map, its top-q contour over the pixels the model saw, and the rectangle it saw when not all."""
    from matplotlib.patches import Rectangle

    height, width = heat.shape
    ax.imshow(heat, cmap="jet", alpha=0.45, extent=(0, width, height, 0), vmin=0, vmax=1)
    # The paper's quantile threshold; the metric's tie-aware mask differs from it by at most one pixel.
    threshold = np.quantile(heat[view_pixels((width, height), view_box)], 1 - Q_DEFAULT)
    ax.contour(np.arange(width) + 0.5, np.arange(height) + 0.5, heat >= threshold, levels=[0.5], colors="white",
               linewidths=1.2)
    if view_box is not None and list(view_box) != [0, 0, width, height]:
        x_min, y_min, x_max, y_max = view_box
        ax.add_patch(Rectangle((x_min, y_min), x_max - x_min, y_max - y_min, fill=False, edgecolor="white",
                               linestyle="--", linewidth=1.0))


def draw_box(ax: Any, bbox: Any) -> None:
    """The expert box in green."""
    from matplotlib.patches import Rectangle

    if bbox is not None and len(bbox) == 4:
        x_min, y_min, x_max, y_max = (float(v) for v in bbox)
        ax.add_patch(Rectangle((x_min, y_min), x_max - x_min, y_max - y_min, fill=False, edgecolor="lime",
                               linewidth=1.8))


def _iou_text(iou: float) -> str:
    return f"{iou:.2f}" if math.isfinite(iou) else "n/a"


def _wrap(text: str, width: int) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width)[:3])
