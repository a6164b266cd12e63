"""Random-choice and most-frequent-choice baselines of PathView-Bench, computed from a task's own documents.

``random`` answers each item with a uniformly drawn option, a count between the task's smallest and largest
reference count, one box with uniformly drawn corners, or one of the task's reference entities, seeded by
the item id (the same answer in every run and process). ``frequent`` answers with the task's most frequent
reference: the modal option, the modal count, the modal box (fractions of the image on a 0.1 grid) or the
most frequent entity; ties go to the first in sorted order (an option that is never a reference answer ranks
last). Both always answer and never refuse, so their safe refusal rate on the traps is 0 by construction.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pathbind_metrics.pathview import from_pixels, to_pixels

STRATEGIES = ("random", "frequent")
TRAP_COUNTS = (0, 100)  # count range when a task has no reference counts (the slide trap)
BOX_GRID = 10  # the modal box is taken on a grid of 1/BOX_GRID of the image


@dataclass(frozen=True)
class TaskStats:
    """The reference answers of one task's answerable items."""

    answers: Counter[str]  # option texts, case-folded
    counts: Counter[int]
    boxes: Counter[tuple[float, ...]]  # unit boxes snapped to the grid
    entities: Counter[str]


def task_stats(docs: Iterable[Mapping[str, Any]]) -> TaskStats:
    """Collect the reference answers of a task's documents (traps and malformed items are left out)."""
    answers: Counter[str] = Counter()
    counts: Counter[int] = Counter()
    boxes: Counter[tuple[float, ...]] = Counter()
    entities: Counter[str] = Counter()
    for doc in docs:
        if doc.get("trap") or doc.get("doc_error"):
            continue
        kind = doc.get("answer_format")
        if kind == "choice":
            answers[str(doc["answer"]).casefold()] += 1
        elif kind == "count":
            counts[int(doc["count"])] += 1
        elif kind == "box":
            unit = from_pixels(doc["boxes"], "unit", (doc["width"], doc["height"]))
            boxes.update(tuple(float(v) for v in np.round(box * BOX_GRID) / BOX_GRID) for box in unit)
        elif kind == "description":
            entities.update(doc["entities"])
    return TaskStats(answers, counts, boxes, entities)


def _modal(counter: Counter, default: Any) -> Any:
    """The most frequent key; ties to the smallest in sorted order."""
    if not counter:
        return default
    top = max(counter.values())
    return min(key for key, n in counter.items() if n == top)


def _most_frequent(options: list[str], answers: Counter[str]) -> int:
    """The index of the option ranked first among the task's answers (by frequency, then text); an option that
    is never an answer ranks last, ties between those go to the first."""
    order = {answer: i for i, answer in enumerate(sorted(answers, key=lambda a: (-answers[a], a)))}
    return min(range(len(options)), key=lambda i: (order.get(options[i].casefold(), len(order)), i))


def _box(doc: Mapping[str, Any], stats: TaskStats, strategy: str, rng: np.random.Generator,
         convention: str) -> str:
    size = (doc["width"], doc["height"])
    if strategy == "random":
        x, y = np.sort(rng.random(2)), np.sort(rng.random(2))
        unit = [x[0], y[0], x[1], y[1]]
    else:
        unit = list(_modal(stats.boxes, (0.0, 0.0, 1.0, 1.0)))
    box = from_pixels(to_pixels([unit], "unit", size), convention, size)[0]
    return "[" + ", ".join(f"{v:.4g}" for v in box) + "]"


def baseline_answer(doc: Mapping[str, Any], stats: TaskStats, strategy: str, *, seed: int = 0,
                    convention: str = "pixel") -> str:
    """The baseline's response to one PathView document, in the format its prompt asks for ("" for others)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown baseline strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
    rng = np.random.default_rng([seed, zlib.crc32(str(doc.get("id")).encode("utf-8"))])
    kind = doc.get("answer_format")
    if kind == "choice":
        options = [str(option) for option in doc["options"]]
        pick = int(rng.integers(len(options))) if strategy == "random" else _most_frequent(options, stats.answers)
        return f"<answer>{chr(ord('A') + pick)}</answer>"
    if kind == "count":
        low, high = (min(stats.counts), max(stats.counts)) if stats.counts else TRAP_COUNTS
        count = int(rng.integers(low, high + 1)) if strategy == "random" else _modal(stats.counts, TRAP_COUNTS[0])
        return f"<answer>{count}</answer>"
    if kind == "box":
        return f"<answer>{_box(doc, stats, strategy, rng, convention)}</answer>"
    if kind == "description":
        names = sorted(stats.entities)
        entity = names[int(rng.integers(len(names)))] if strategy == "random" and names else \
            _modal(stats.entities, "tissue")
        return f"<answer>{entity}</answer>"
    return ""
