"""The VQA aggregations over per-document score records, as lmms-eval hands them to the metrics declared in
:mod:`pathbind_tasks.common.metrics`.

A record is ``{"id": str, "cluster": str | None, "condition": str, "correct": bool, "valid": bool,
"parsed": str | None, "dimension": str | None}``, plus the ``task`` that scored it where known; the list holds
every document of every rank, in no particular order, so items are paired by id. A condition with items missing
is logged by its ``acc_<condition>`` metric.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial, reduce
from typing import Any

import numpy as np
from loguru import logger

from pathbind.decoding import describe_decoding
from pathbind.lmms.running import running_task
from pathbind_metrics import resampling as rs
from pathbind_metrics.vqa import accuracy, multimodal_gain
from pathbind_tasks.common.clusters import cluster_keys
from pathbind_tasks.common.conditions import ABLATION_CONDITIONS

Records = list[Mapping]


def _records_by_id(records: Iterable[Mapping], condition: str, dimension: str | None = None) -> dict[str, Mapping]:
    return {r["id"]: r for r in records
            if r["condition"] == condition and (dimension is None or r.get("dimension") == dimension)}


def _correct_by_id(records: Iterable[Mapping], condition: str, dimension: str | None = None) -> dict[str, bool]:
    return {item: bool(r["correct"]) for item, r in _records_by_id(records, condition, dimension).items()}


class _Answers:
    """One condition's answers (the last record of each id) as arrays, read in the order the records came: Python
    records read in another order (by sorted id) cost a cache miss each, which at 300,000 items tripled the time per
    item; numpy then sorts and pairs the ids as blocks of memory."""

    def __init__(self, records: Iterable[Mapping], condition: str, dimension: str | None = None) -> None:
        chosen = list(_records_by_id(records, condition, dimension).values())
        keys, self.cluster = cluster_keys(chosen)
        self.ids = np.array([r["id"] for r in chosen], dtype=str)
        self.keys = np.array(keys, dtype=object)  # gathered, never sorted: the records' own strings
        self.correct = np.fromiter((bool(r["correct"]) for r in chosen), dtype=float, count=len(chosen))
        self.valid = np.fromiter((bool(r["valid"]) for r in chosen), dtype=bool, count=len(chosen))
        self.parsed = np.array([r.get("parsed") for r in chosen], dtype=object)

    def __len__(self) -> int:
        return len(self.ids)


def _aligned(*answers: _Answers) -> list[np.ndarray]:
    """Per condition, the positions of the ids answered under every one of them, in id order."""
    common = reduce(np.intersect1d, [found.ids for found in answers])
    positions = []
    for found in answers:
        order = np.argsort(found.ids, kind="stable")
        positions.append(order[np.searchsorted(found.ids, common, sorter=order)])
    return positions


def _paired(records: Records, dimension: str | None = None, condition: str = "text") -> tuple[np.ndarray, np.ndarray]:
    """Correct (1/0) with the image and under ``condition`` of the items answered under both, in id order."""
    image, other = _Answers(records, "image", dimension), _Answers(records, condition, dimension)
    first, second = _aligned(image, other)
    return image.correct[first], other.correct[second]


def condition_accuracy(records: Records, condition: str = "image") -> float:
    """Accuracy (%) of the records answered under ``condition``, with a warning for its unpaired items."""
    answered = _correct_by_id(records, condition)
    problem = unpaired(records, condition)
    if problem:
        logger.warning(problem)
    return accuracy(list(answered.values()))


UNPAIRED_CAUSES = ("data without the condition, a --limit that is not a multiple of the task's number of conditions, "
                   "a swap with no item of the subset on another image, "
                   "or a condition skipped for this model (results['pathbind']['skipped_conditions'])")


def _metrics_of(condition: str) -> str:
    return "acc_text and mg" if condition == "text" else f"acc_{condition} and drop_{condition}"


def unpaired(records: Records, condition: str) -> str:
    """Why ``condition`` is not answered for every item answered with the image, or "" when it is.

    An evaluation cut short (a ``--limit`` that is not a multiple of a task's number of conditions) or data
    without the condition leaves items unpaired; with none paired, the condition's metrics are NaN.
    """
    tasks = sorted({str(r["task"]) for r in records if r.get("task")})
    where = f"task {', '.join(tasks) if tasks else 'unknown'}, condition {condition}"
    answered = _correct_by_id(records, condition).keys()
    image = _correct_by_id(records, "image").keys()
    if condition == "image":
        return f"{where}: no item was answered with the image, so acc_image is NaN" if records and not image else ""
    paired, missing = len(image & answered), len(image - answered)
    if not image or not missing:
        return ""
    if not paired:
        return (f"{where}: no answer under {condition} for any of the {len(image)} items answered with the image, "
                f"so {_metrics_of(condition)} are NaN ({UNPAIRED_CAUSES})")
    return (f"{where}: {missing} of the {len(image)} items answered with the image have no answer under "
            f"{condition}; {_metrics_of(condition)} cover only the {paired} items answered under both "
            f"({UNPAIRED_CAUSES})")


def accuracy_drop(records: Records, condition: str) -> float:
    """Points lost from the original image to ``condition``, over items answered under both."""
    return multimodal_gain(*_paired(records, condition=condition))


def mg(records: Records) -> float:
    """Multimodal Gain (points) over the items answered in both the image and text conditions."""
    return multimodal_gain(*_paired(records)) if _correct_by_id(records, "text") else math.nan


def invalid_rate(records: Records) -> float:
    """Percentage of answers that could not be parsed or scored (counted wrong)."""
    return accuracy([not r["valid"] for r in records])


def by_dimension(records: Records) -> dict[str, dict[str, float]]:
    """Per diagnostic dimension: acc_image, acc_text, mg and the item count (empty without dimensions)."""
    dimensions = sorted({str(r["dimension"]) for r in records if r.get("dimension")})
    table = {}
    for dimension in dimensions:
        image = _correct_by_id(records, "image", dimension)
        text = _correct_by_id(records, "text", dimension)
        table[dimension] = {"acc_image": accuracy(list(image.values())), "acc_text": accuracy(list(text.values())),
                            "mg": multimodal_gain(*_paired(records, dimension)) if text else math.nan,
                            "n": len(image)}
    return table


def ci95(records: Records) -> dict[str, Any]:
    """95% cluster intervals (:mod:`pathbind_metrics.resampling`) of acc_image, acc_text and mg over the items
    answered with and without the image (acc_image alone without a text condition), of each ablation's drop, and of
    the same per diagnostic dimension. Each interval names what it resampled (the task's cluster: by default the
    image), how many clusters and items, its design effect and a warning where clusters are few or one dominates;
    ``by_dimension_adjustment`` says that the per-dimension intervals are not adjusted for their number."""
    intervals = _intervals(records)
    dimensions = sorted({str(r["dimension"]) for r in records if r.get("dimension")})
    if dimensions:
        intervals["by_dimension"] = {dimension: _intervals(records, dimension) for dimension in dimensions}
        count = sum(len(found) for found in intervals["by_dimension"].values())
        intervals["by_dimension_adjustment"] = (
            f"none: each of the {count} per-dimension intervals holds 95% on its own, not jointly (about one in 20 "
            "misses by chance); one on few clusters says so in its warning")
    return intervals


def _intervals(records: Records, dimension: str | None = None) -> dict[str, Any]:
    """A task's condition set holds text (full), ablations, or the image alone: the intervals of what it ran."""
    image, text = _Answers(records, "image", dimension), _Answers(records, "text", dimension)
    if len(text):
        return _paired_intervals(image, text, {"acc_image": "with", "acc_text": "without", "mg": "difference"})
    intervals = _paired_intervals(image, image, {"acc_image": "with"})
    for condition in ABLATION_CONDITIONS:
        ablated = _Answers(records, condition, dimension)
        if len(ablated):
            intervals |= _paired_intervals(image, ablated, {f"drop_{condition}": "difference"})
    return intervals


def _paired_intervals(image: _Answers, other: _Answers, measures: dict[str, str]) -> dict[str, Any]:
    """Over the items answered under both conditions, by their clusters, the interval of each of ``measures``: the
    accuracy (%) ``with`` the image or ``without`` it (under the other condition), or the ``difference`` between
    the two (points)."""
    first, second = _aligned(image, other)
    keys, correct = image.keys[first], {"with": image.correct[first], "without": other.correct[second]}
    return {name: rs.difference_interval(correct["with"] - correct["without"], keys, cluster=image.cluster,
                                         scale=100.0) if kind == "difference" else
            rs.mean_interval(correct[kind], keys, cluster=image.cluster, scale=100.0, proportion=100.0)
            for name, kind in measures.items()}


REPLACEMENTS = ("blank", "swap_same", "swap_cross")  # the real image replaced by a blank or another item's image
SWAPS = ("swap_same", "swap_cross")


def reliance(records: Records) -> dict[str, Any]:
    """Does the answer depend on the image? The measures of "Beyond Accuracy: Evaluating Visual Grounding in
    Multimodal Medical Reasoning" (Zafar, Murali, Vashist; arXiv 2603.03437) from the conditions the task ran,
    each with its 95% cluster interval:

    - ``vrs``, the Visual Reliance Score: accuracy with the real image minus accuracy with another item's image,
      per swap condition, in points (the paper's fraction x 100);
    - ``image_sensitivity``: the percentage of items whose answer changes when the real image is replaced (by a
      swap, as in the paper; also by a blank image, or removed), right or wrong;
    - ``invariant``: the percentage of items whose answer is the same with the real image and with every
      replacement run, the image-invariant answers the paper's Hallucinated Visual Reasoning Rate counts when their
      reasoning also claims to see something. That rate itself needs a detector of visual claims, which the paper
      does not specify, so it is not computed.

    An answer survives a replacement when the replacement gets the same valid answer; an invalid answer there (no
    answer, a refusal, unparseable text) is a change. Items without a valid answer with the real image have nothing
    to compare and are left out, counted in ``invalid_left_out``.
    """
    image = _Answers(records, "image")
    replaced = {c: found for c in ("text", *REPLACEMENTS) if len(found := _Answers(records, c))}
    measures: dict[str, Any] = {}
    swaps = [c for c in SWAPS if c in replaced]
    if swaps:
        measures["vrs"] = {c: _estimate(image, [replaced[c]], _vrs, difference=True) for c in swaps}
    if replaced:
        measures["image_sensitivity"] = {c: _estimate(image, [found], _unchanged, changed=True)
                                         for c, found in replaced.items()}
    images = [replaced[c] for c in REPLACEMENTS if c in replaced]
    if images:
        measures["invariant"] = {"conditions": [c for c in REPLACEMENTS if c in replaced],
                                 **_estimate(image, images, _unchanged)}
    return measures


Comparison = Callable[[_Answers, np.ndarray, list[tuple[_Answers, np.ndarray]]], np.ndarray]


def _estimate(image: _Answers, others: list[_Answers], compare: Comparison, *, difference: bool = False,
              changed: bool = False) -> dict[str, Any]:
    """The value and interval of the mean (percent) of ``compare(image, its positions, [(other, its positions)])``
    over the items answered under every condition; for a proportion (not ``difference``) over those with a valid
    answer with the image, the others counted in ``invalid_left_out``. ``changed``: 1 − the comparison."""
    first, *rest = _aligned(image, *others)
    values = compare(image, first, list(zip(others, rest, strict=True)))
    kept = np.ones(first.size, dtype=bool) if difference else image.valid[first]
    values = 1.0 - values if changed else values
    return {**_percentage(values[kept], image.keys[first][kept], image.cluster, difference=difference),
            "invalid_left_out": int(first.size - kept.sum())}


def _percentage(values: np.ndarray, keys: Sequence[str], cluster: str, difference: bool = False) -> dict[str, Any]:
    """``{"value", "ci95"}`` of the mean of per-item ``values`` in percent over items of cluster ``keys``: a
    proportion's interval, or with ``difference`` (values in [−1, 1], such as VRS) a difference's."""
    interval = (rs.difference_interval(values, keys, cluster=cluster, scale=100.0) if difference
                else rs.mean_interval(values, keys, cluster=cluster, scale=100.0, proportion=100.0))
    return {"value": 100.0 * float(values.mean()) if values.size else math.nan, "ci95": interval}


def _vrs(image: _Answers, first: np.ndarray, others: list[tuple[_Answers, np.ndarray]]) -> np.ndarray:
    (other, positions), = others
    return image.correct[first] - other.correct[positions]


def _unchanged(image: _Answers, first: np.ndarray, others: list[tuple[_Answers, np.ndarray]]) -> np.ndarray:
    """1 where every other condition got the same valid answer as the image, else 0 (an invalid answer there is a
    change)."""
    same = np.ones(first.size, dtype=bool)
    for other, positions in others:
        same &= other.valid[positions] & (other.parsed[positions] == image.parsed[first])
    return same.astype(float)


def repeats(records: Records) -> dict[str, Any]:
    """Under lmms-eval's ``--repeats N``: per condition, the percentage of items whose N answers are one and the
    same valid answer (with its 95% cluster interval), and each headline (accuracy per condition, mg, each drop)
    computed from each of the N answers, with its mean, standard deviation and range. Items stay paired by id and
    clustered as in a plain run; the other metrics score the first answer. ``decoding`` says how the N answers
    were asked for (:func:`pathbind.decoding.describe_decoding`): sampled answers agree as far as the model is sure;
    greedy ones differ only where the model or its server is not deterministic. ``{"n": 1}`` for a run without
    repeats."""
    repeated = [r for r in records if r.get("repeats")]
    if not repeated:
        return {"n": 1}
    task = running_task()
    n = min(len(r["repeats"]) for r in repeated)
    by_repeat = [[{**r, **r["repeats"][k]} if r.get("repeats") else r for r in records] for k in range(n)]
    conditions = sorted({str(r["condition"]) for r in records})
    agreement = {}
    for condition in conditions:
        answered = [r for _, r in sorted(_records_by_id(records, condition).items())]
        keys, cluster = cluster_keys(answered)
        agreement[condition] = _percentage(np.array([float(_all_agree(r, n)) for r in answered]), keys, cluster)
    spread = {name: _spread([headline(run) for run in by_repeat]) for name, headline in _headlines(conditions).items()}
    return {"n": n, "decoding": describe_decoding(task.generation if task else None), "agreement": agreement,
            "spread": spread}


def _all_agree(record: Mapping, n: int) -> bool:
    answers = record.get("repeats") or [record]
    return len(answers) >= n and all(a["valid"] for a in answers[:n]) and len({a["parsed"] for a in answers[:n]}) == 1


def _headlines(conditions: list[str]) -> dict[str, Callable[[Records], float]]:
    headlines: dict[str, Callable[[Records], float]] = {
        f"acc_{c}": partial(_accuracy_of, condition=c) for c in conditions}
    if "text" in conditions:
        headlines["mg"] = mg
    headlines.update({f"drop_{c}": partial(accuracy_drop, condition=c) for c in conditions
                      if c in ABLATION_CONDITIONS})
    return headlines


def _accuracy_of(records: Records, condition: str) -> float:
    """Accuracy under ``condition``, without :func:`condition_accuracy`'s warning (each repeat would repeat it)."""
    return accuracy(list(_correct_by_id(records, condition).values()))


def _spread(values: list[float]) -> dict[str, Any]:
    array = np.asarray(values, dtype=float)
    return {"per_repeat": [float(v) for v in array], "mean": float(array.mean()),
            "sd": float(array.std(ddof=1)) if array.size > 1 else math.nan,
            "min": float(array.min()), "max": float(array.max())}
