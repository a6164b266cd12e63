"""Answer accuracy with and without the image, and the Multimodal Gain between them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np


def accuracy(correct: Sequence[bool] | np.ndarray) -> float:
    """Percentage of correct answers; NaN for no answers.

    Examples
    --------
    >>> accuracy([True, False, True, True])
    75.0
    """
    values = np.asarray(correct, dtype=float)
    return float(100.0 * values.mean()) if values.size else float("nan")


def multimodal_gain(correct_image: Sequence[bool] | np.ndarray, correct_text: Sequence[bool] | np.ndarray) -> float:
    """Multimodal Gain: accuracy with the image minus accuracy without it, in points (best: 100).

    Both arrays hold the same items in the same order.

    Examples
    --------
    >>> multimodal_gain([True, True, False, True], [True, False, False, False])
    50.0
    """
    if len(correct_image) != len(correct_text):
        raise ValueError(f"paired arrays differ in length: {len(correct_image)} vs {len(correct_text)}")
    return accuracy(correct_image) - accuracy(correct_text)


# Aggregations over per-document score records, as lmms-eval hands them to a task's metric_list:
# each record is {"id": str, "condition": str, "correct": bool, "valid": bool}.

def _correct_by_id(records: Iterable[Mapping], condition: str) -> dict[str, bool]:
    return {r["id"]: bool(r["correct"]) for r in records if r["condition"] == condition}


def acc_image(records: list[Mapping]) -> float:
    """Accuracy (%) of the records answered with the image."""
    return accuracy(list(_correct_by_id(records, "image").values()))


def acc_text(records: list[Mapping]) -> float:
    """Accuracy (%) of the records answered without the image."""
    return accuracy(list(_correct_by_id(records, "text").values()))


def mg(records: list[Mapping]) -> float:
    """Multimodal Gain (points) over the items answered in both conditions."""
    image, text = _correct_by_id(records, "image"), _correct_by_id(records, "text")
    paired = sorted(image.keys() & text.keys())
    return multimodal_gain([image[i] for i in paired], [text[i] for i in paired])


def invalid_rate(records: list[Mapping]) -> float:
    """Percentage of answers that could not be parsed (scored wrong)."""
    return accuracy([not r["valid"] for r in records])
