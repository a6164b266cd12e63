"""Answer accuracy with and without the image, and the Multimodal Gain between them (their intervals:
:mod:`pathbind_metrics.resampling`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

BoolArray = Sequence[bool] | np.ndarray


def accuracy(correct: BoolArray) -> float:
    """Percentage of correct answers; NaN for no answers.

    Examples
    --------
    >>> accuracy([True, False, True, True])
    75.0
    """
    values = np.asarray(correct, dtype=float)
    return float(100.0 * values.mean()) if values.size else float("nan")


def multimodal_gain(correct_image: BoolArray, correct_text: BoolArray) -> float:
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

