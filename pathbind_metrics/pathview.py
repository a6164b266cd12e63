"""PathView-Bench metrics: boxes between frames, Dice of box unions, counting MAE, macro-F1, entity recall."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from pathbind_conventions import BOX_CONVENTIONS
from pathbind_metrics._grounding_maps import _box_slices, _image_shape

NO_BOXES = "no box"

ImageSize = Sequence[int] | np.ndarray


def _scale(convention: str, image_size: ImageSize) -> np.ndarray:
    """Pixels per coordinate unit along x, y, x, y."""
    if convention not in BOX_CONVENTIONS:
        raise ValueError(f"unknown box convention {convention!r}; known: {', '.join(BOX_CONVENTIONS)}")
    full = BOX_CONVENTIONS[convention]
    width, height = (float(side) for side in image_size)
    return np.array([width, height, width, height]) / full if full else np.ones(4)


def to_pixels(boxes: ArrayLike, convention: str, image_size: ImageSize) -> np.ndarray:
    """Boxes ``[x_min, y_min, x_max, y_max]`` given in ``convention`` as pixel coordinates.

    Parameters
    ----------
    boxes : array of shape (n, 4)
    convention : {"pixel", "unit", "per_mille"}
        Pixels of the image as given; fractions of its width and height (0-1); thousandths (0-1000, Qwen-VL).
    image_size : (W, H)

    Returns
    -------
    ndarray of shape (n, 4), float

    Examples
    --------
    >>> to_pixels([[0.5, 0.25, 1.0, 0.5]], "unit", (200, 100)).tolist()
    [[100.0, 25.0, 200.0, 50.0]]
    """
    return np.asarray(boxes, dtype=float).reshape(-1, 4) * _scale(convention, image_size)


def from_pixels(boxes: ArrayLike, convention: str, image_size: ImageSize) -> np.ndarray:
    """Pixel boxes expressed in ``convention`` (the inverse of :func:`to_pixels`).

    Examples
    --------
    >>> from_pixels([[100, 25, 200, 50]], "per_mille", (200, 100)).tolist()
    [[500.0, 250.0, 1000.0, 500.0]]
    """
    return np.asarray(boxes, dtype=float).reshape(-1, 4) / _scale(convention, image_size)


def box_problem(boxes: ArrayLike, image_size: ImageSize) -> str | None:
    """Why pixel ``boxes`` cannot be rasterised on the image, naming the first bad box; None when they can.

    A box must be 4 finite numbers with ``x_min < x_max`` and ``y_min < y_max`` and cover at least one pixel
    centre of the image; a box reaching beyond the image is clipped to it, one wholly outside is a problem.

    Examples
    --------
    >>> box_problem([[0, 0, 10, 10], [30, 5, 20, 9]], (64, 64))
    'box 2 of 2 [30, 5, 20, 9]: box is inverted (x_max < x_min or y_max < y_min)'
    """
    shape = _image_shape(image_size)
    if isinstance(shape, str):
        return shape
    rows: list[Any] = list(boxes)  # type: ignore[arg-type]
    if not rows:
        return NO_BOXES
    for number, box in enumerate(rows, start=1):
        slices = _box_slices(box, shape)
        if isinstance(slices, str):
            return f"box {number} of {len(rows)} {_show(box)}: {slices}"
    return None


def _show(box: ArrayLike) -> str:
    try:
        return "[" + ", ".join(f"{v:g}" for v in np.asarray(box, dtype=float).ravel()) + "]"
    except (TypeError, ValueError):
        return repr(box)


def box_mask(boxes: ArrayLike, image_size: ImageSize) -> np.ndarray:
    """The union of pixel ``boxes`` as a boolean (H, W) mask: pixel (r, c) is in a box when its centre
    (c + 0.5, r + 0.5) lies in ``[x_min, x_max) x [y_min, y_max)``. Raises ``ValueError`` with
    :func:`box_problem`'s reason for boxes that cannot be rasterised.

    Examples
    --------
    >>> box_mask([[0, 0, 2, 1], [1, 0, 3, 2]], (4, 2)).astype(int).tolist()
    [[1, 1, 1, 0], [0, 1, 1, 0]]
    """
    problem = box_problem(boxes, image_size)
    if problem is not None:
        raise ValueError(problem)
    shape = _image_shape(image_size)
    assert not isinstance(shape, str)
    mask = np.zeros(shape, dtype=bool)
    for box in np.asarray(boxes, dtype=float).reshape(-1, 4):
        slices = _box_slices(box, shape)
        assert not isinstance(slices, str)
        mask[slices] = True
    return mask


def box_dice(pred_boxes: ArrayLike, true_boxes: ArrayLike, image_size: ImageSize) -> float:
    """Dice coefficient ``2|P ∩ G| / (|P| + |G|)`` of the rasterised unions of predicted and true pixel boxes.

    Parameters
    ----------
    pred_boxes, true_boxes : array of shape (n, 4) and (m, 4)
        Pixel boxes ``[x_min, y_min, x_max, y_max]``; several boxes count as their union.
    image_size : (W, H)

    Returns
    -------
    float
        In [0, 1], best 1. NaN when either set of boxes has a :func:`box_problem`.

    Examples
    --------
    >>> box_dice([[0, 0, 10, 10]], [[5, 0, 15, 10]], (20, 20))
    0.5
    """
    if box_problem(pred_boxes, image_size) or box_problem(true_boxes, image_size):
        return math.nan
    pred, true = box_mask(pred_boxes, image_size), box_mask(true_boxes, image_size)
    return float(2 * np.logical_and(pred, true).sum() / (pred.sum() + true.sum()))


def mean_absolute_error(predicted: ArrayLike, reference: ArrayLike) -> float:
    """Mean absolute error of paired counts (best 0); NaN for no pairs.

    Examples
    --------
    >>> mean_absolute_error([10, 4, 7], [12, 4, 4])
    1.6666666666666667
    """
    pred, true = np.asarray(predicted, dtype=float), np.asarray(reference, dtype=float)
    if pred.shape != true.shape:
        raise ValueError(f"paired arrays differ in length: {pred.size} vs {true.size}")
    return float(np.abs(pred - true).mean()) if pred.size else math.nan


def macro_f1(y_true: Sequence[Hashable], y_pred: Sequence[Hashable | None], *,
             labels: Sequence[Hashable] | None = None) -> float:
    """Unweighted mean over classes of the per-class F1 ``2TP / (2TP + FP + FN)`` (best 1): scikit-learn's
    ``f1_score(average="macro")``; NaN for no items.

    Parameters
    ----------
    y_true : sequence
        Reference classes.
    y_pred : sequence
        Predicted classes, ``None`` for an invalid answer: a wrong prediction of no class (a false negative
        of the true class, a false positive of none).
    labels : sequence, optional
        The classes averaged over; default: every class in ``y_true`` or ``y_pred``. A class with no
        reference and no prediction scores 0 (scikit-learn's ``zero_division=0``).

    Examples
    --------
    >>> macro_f1(["a", "a", "b", "c"], ["a", "b", "b", None])
    0.4444444444444444
    """
    from sklearn.metrics import f1_score

    if len(y_true) != len(y_pred):
        raise ValueError(f"paired arrays differ in length: {len(y_true)} vs {len(y_pred)}")
    classes = [c for c in (labels if labels is not None else dict.fromkeys([*y_true, *y_pred])) if c is not None]
    if not y_true or not classes:
        return math.nan
    # Classes as codes 0..K-1, an invalid answer (or any class not averaged over) as -1: scikit-learn compares
    # labels of one type, and -1 is no class averaged over.
    code = {label: k for k, label in enumerate(classes)}
    true, pred = ([code.get(label, -1) for label in sequence] for sequence in (y_true, y_pred))
    return float(f1_score(true, pred, labels=list(range(len(classes))), average="macro", zero_division=0))


def entity_recall(reference: Sequence[Hashable], mentioned: Sequence[Hashable]) -> float:
    """Fraction of the distinct reference entities that were mentioned (best 1); NaN without references.

    Examples
    --------
    >>> entity_recall(["stroma", "lymphocyte", "necrosis"], ["lymphocyte", "fat", "stroma"])
    0.6666666666666666
    """
    wanted = set(reference)
    return len(wanted & set(mentioned)) / len(wanted) if wanted else math.nan
