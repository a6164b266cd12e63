"""Answer accuracy with and without the image, the Multimodal Gain between them, and their CIs."""

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


def paired_bootstrap_ci(correct_image: BoolArray, correct_text: BoolArray, *, n_resamples: int = 2000,
                        seed: int = 0, level: float = 0.95) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap CIs of ``acc_image``, ``acc_text`` and ``mg``, resampling items (pairs).

    The same resampled items serve all three, so the MG interval reflects the pairing. NaN bounds
    for no items.

    Examples
    --------
    >>> ci = paired_bootstrap_ci([True] * 8 + [False] * 2, [True] * 3 + [False] * 7, seed=1)
    >>> ci["mg"][0] > 0
    True
    """
    image = np.asarray(correct_image, dtype=float)
    text = np.asarray(correct_text, dtype=float)
    if image.shape != text.shape:
        raise ValueError(f"paired arrays differ in length: {image.size} vs {text.size}")
    if image.size == 0:
        return dict.fromkeys(("acc_image", "acc_text", "mg"), (float("nan"), float("nan")))
    rows = np.random.default_rng(seed).integers(0, image.size, size=(n_resamples, image.size))
    acc_image, acc_text = 100.0 * image[rows].mean(axis=1), 100.0 * text[rows].mean(axis=1)
    tails = 100.0 * np.array([(1 - level) / 2, (1 + level) / 2])
    return {name: tuple(float(v) for v in np.percentile(values, tails))  # type: ignore[misc]
            for name, values in (("acc_image", acc_image), ("acc_text", acc_text), ("mg", acc_image - acc_text))}
