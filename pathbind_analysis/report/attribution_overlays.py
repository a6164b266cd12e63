"""Per-method overlays for the faithfulness tasks (the seed's Figure 2): per item, the image with its expert box, the
occlusion map |δ| and one column per attribution method the run computed, read from the run's sample log."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from pathbind.lmms.queries import task_documents
from pathbind.lmms_output import task_samples
from pathbind.wire import OcclusionResponse
from pathbind_analysis.report.document import Figure, Note
from pathbind_analysis.report.figures import new_figure, save
from pathbind_analysis.report.overlays import draw_box
from pathbind_analysis.report.runs import Run
from pathbind_metrics.faithfulness import occlusion_map
from pathbind_metrics.grounding import heat_map
from pathbind_tasks.common.faithfulness_methods import ORDER
from pathbind_tasks.common.images import rgb_image

REFERENCE = 0  # the faithfulness tasks' reference answer ("Yes")


def attribution_overlays(runs: list[Run], tasks: list[str], out: Path, n_items: int) -> list[Figure | Note]:
    """One figure per run and task with its first ``n_items`` items (by document), or a note saying why not."""
    if n_items <= 0:
        return []
    blocks: list[Figure | Note] = []
    for task in tasks:
        documents: Any = None
        for run in (r for r in runs if task in r.results):
            try:
                responses = _responses(task_samples(run.path, task), n_items)
                documents = task_documents(task) if documents is None else documents
            except ValueError as exc:
                blocks.append(Note(f"{run.name}: no per-method overlays for {task}: {exc}"))
                continue
            blocks.append(_figure(run.name, task, responses, documents, out))
    return blocks


def _responses(samples: list[dict[str, Any]], n_items: int) -> list[tuple[int, OcclusionResponse]]:
    found = []
    for sample in sorted(samples, key=lambda s: int(s["doc_id"])):
        text = sample.get("filtered_resps")
        text = text[0] if isinstance(text, list) and text else text
        try:
            found.append((int(sample["doc_id"]), OcclusionResponse.decode(str(text))))
        except ValueError:
            continue  # an item the model could not answer has no maps to show
        if len(found) == n_items:
            break
    if not found:
        raise ValueError("no logged item has an occlusion response")
    return found


def _figure(model: str, task: str, responses: list[tuple[int, OcclusionResponse]], documents: Any,
            out: Path) -> Figure:
    present = {name for _, r in responses for name in ("attention", *r.attributions)}
    methods = [m for m in ORDER if m in present] + sorted(present - set(ORDER))
    columns = ["image", "occlusion |δ|", *methods]
    figure = new_figure(2.2 * len(columns) + 0.3, 2.4 * len(responses) + 0.4)
    axes = np.atleast_2d(figure.subplots(len(responses), len(columns), squeeze=False))
    for row, (doc_id, response) in enumerate(responses):
        doc = documents[doc_id] if 0 <= doc_id < len(documents) else None
        maps: dict[str, Any] = {"occlusion |δ|": _causal(response), "attention": response.attention,
                                **response.attributions}
        for col, name in enumerate(columns):
            _panel(axes[row, col], doc, None if name == "image" else maps.get(name, "not computed"),
                   name if row == 0 else "")
    figure.suptitle(f"{model} on {task}", fontsize=11)
    path = save(figure, out / f"attribution_{model}_{task}.png")
    return Figure(path, f"{model} on {task}: per row one item (expert box in green), per column the occlusion map "
                        "and each attribution method's map (positive part, min–max scaled).")


def _causal(response: OcclusionResponse) -> np.ndarray | str:
    if isinstance(response.original, str) or isinstance(response.patches, str):
        return "no occlusion scores"
    grid = round(math.sqrt(len(response.patches)))
    return np.abs(occlusion_map(response.original, response.patches, REFERENCE, grid))


def _panel(ax: Any, doc: dict[str, Any] | None, values: np.ndarray | str | None, title: str) -> None:
    ax.set_xticks([])
    ax.set_yticks([])
    if doc is None or doc.get("image") is None:
        ax.set_title(f"{title}\nno image", fontsize=7)
        return
    width, height = int(doc["width"]), int(doc["height"])
    ax.imshow(rgb_image(doc["image"]), extent=(0, width, height, 0))
    if isinstance(values, str):
        title = f"{title}\n{values[:40]}"
    elif values is not None:
        try:
            heat = heat_map(np.clip(values, 0, None), (width, height), sigma=0)
        except ValueError:
            title = f"{title}\n(uniform)"
        else:
            ax.imshow(heat, cmap="jet", alpha=0.45, extent=(0, width, height, 0), vmin=0, vmax=1)
    draw_box(ax, doc.get("bbox"))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.set_title(title, fontsize=7)
