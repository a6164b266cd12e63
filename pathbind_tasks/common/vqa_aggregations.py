"""The VQA aggregations over per-document score records, as lmms-eval hands them to the metrics declared in
:mod:`pathbind_tasks.common.metrics`.

A record is ``{"id": str, "condition": str, "correct": bool, "valid": bool, "dimension": str | None}``, plus
the ``task`` that scored it where known; the list holds every document of every rank, in no particular order,
so items are paired by id. A condition with items missing is logged by its ``acc_<condition>`` metric.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from loguru import logger

from pathbind_metrics.vqa import accuracy, multimodal_gain, paired_bootstrap_ci

Records = list[Mapping]


def _correct_by_id(records: Iterable[Mapping], condition: str, dimension: str | None = None) -> dict[str, bool]:
    return {r["id"]: bool(r["correct"]) for r in records
            if r["condition"] == condition and (dimension is None or r.get("dimension") == dimension)}


def _paired(records: Records, dimension: str | None = None) -> tuple[list[bool], list[bool]]:
    image, text = _correct_by_id(records, "image", dimension), _correct_by_id(records, "text", dimension)
    ids = sorted(image.keys() & text.keys())
    return [image[i] for i in ids], [text[i] for i in ids]


def condition_accuracy(records: Records, condition: str = "image") -> float:
    """Accuracy (%) of the records answered under ``condition``, with a warning for its unpaired items."""
    answered = _correct_by_id(records, condition)
    problem = unpaired(records, condition)
    if problem:
        logger.warning(problem)
    return accuracy(list(answered.values()))


UNPAIRED_CAUSES = ("data without the condition, a --limit that is not a multiple of the task's number of conditions, "
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
    image, other = _correct_by_id(records, "image"), _correct_by_id(records, condition)
    ids = sorted(image.keys() & other.keys())
    return multimodal_gain([image[i] for i in ids], [other[i] for i in ids])


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


def ci95(records: Records) -> dict[str, list[float]]:
    """95% paired-bootstrap CIs (2,000 resamples, seed 0) of acc_image, acc_text and mg."""
    if not _correct_by_id(records, "text"):
        image = list(_correct_by_id(records, "image").values())
        return {"acc_image": list(paired_bootstrap_ci(image, image)["acc_image"])}
    return {name: list(bounds) for name, bounds in paired_bootstrap_ci(*_paired(records)).items()}
