"""PathView metrics against independent references: hand-rasterised masks, scikit-learn, plain arithmetic."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
from sklearn.metrics import f1_score

from pathbind import box_frames
from pathbind_metrics import labels, pathview_parsing, refusal
from pathbind_metrics import pathview as pv


def hand_mask(boxes: list[list[float]], width: int, height: int) -> np.ndarray:
    """Pixel by pixel: in when the pixel centre lies in [x_min, x_max) x [y_min, y_max) of some box."""
    mask = np.zeros((height, width), bool)
    for row in range(height):
        for col in range(width):
            mask[row, col] = any(x0 <= col + 0.5 < x1 and y0 <= row + 0.5 < y1 for x0, y0, x1, y1 in boxes)
    return mask


def hand_dice(pred: np.ndarray, true: np.ndarray) -> float:
    return 2 * int((pred & true).sum()) / (int(pred.sum()) + int(true.sum()))


CASES = [
    ([[2, 3, 10, 9]], [[5, 5, 14, 12]]),  # partial overlap
    ([[0, 0, 6, 6], [4, 4, 12, 12]], [[3, 3, 9, 9]]),  # overlapping predictions count once
    ([[1.4, 2.6, 7.5, 8.49]], [[1, 2, 8, 9], [10, 10, 15, 15]]),  # fractional edges, several true boxes
    ([[-5, -5, 4, 4]], [[0, 0, 4, 4]]),  # clipped to the image: identical after clipping
    ([[12, 12, 30, 40]], [[0, 0, 3, 3]]),  # disjoint
]


@pytest.mark.parametrize(("pred", "true"), CASES)
def test_box_mask_and_dice_match_hand_rasterisation(pred, true):
    """box_mask is the pixel-centre union; box_dice is 2|P∩G|/(|P|+|G|) of those unions."""
    width, height = 16, 14
    assert np.array_equal(pv.box_mask(pred, (width, height)), hand_mask(pred, width, height))
    assert pv.box_dice(pred, true, (width, height)) == pytest.approx(
        hand_dice(hand_mask(pred, width, height), hand_mask(true, width, height)))


def test_dice_of_several_boxes_is_dice_of_their_unions_not_a_mean():
    """Two predicted boxes, one on each true box: Dice 1, where a per-box mean would be lower."""
    boxes = [[0, 0, 4, 4], [8, 8, 12, 12]]
    assert pv.box_dice(boxes, list(reversed(boxes)), (16, 16)) == 1.0


@pytest.mark.parametrize(("box", "reason"), [
    ([10, 2, 4, 8], "inverted"),
    ([3, 3, 3, 9], "zero area"),
    ([20, 20, 30, 30], "outside the image"),
    ([1, 1, 1.2, 1.3], "no pixel centre"),
    ([1, 2, 3], "not 4 finite numbers"),
    ([1, 2, float("nan"), 4], "not 4 finite numbers"),
])
def test_bad_boxes_have_a_reason_naming_the_box_and_score_nan(box, reason):
    """A bad box is named with its index and coordinates; Dice is NaN, never a number."""
    problem = pv.box_problem([[0, 0, 4, 4], box], (16, 16))
    assert problem is not None and problem.startswith("box 2 of 2") and reason in problem
    assert math.isnan(pv.box_dice([[0, 0, 4, 4], box], [[0, 0, 4, 4]], (16, 16)))
    with pytest.raises(ValueError, match=reason):
        pv.box_mask([box], (16, 16))


def test_no_boxes_is_a_problem():
    """An empty box list cannot be scored."""
    assert pv.box_problem([], (8, 8)) == pv.NO_BOXES


@pytest.mark.parametrize("convention", ["pixel", "unit", "per_mille"])
def test_conventions_round_trip(convention):
    """from_pixels inverts to_pixels for every convention."""
    boxes = np.array([[10.0, 20.0, 100.0, 60.0], [0.0, 0.0, 200.0, 80.0]])
    there = pv.from_pixels(boxes, convention, (200, 80))
    assert np.allclose(pv.to_pixels(there, convention, (200, 80)), boxes)


def test_conventions_scale_by_the_image_size():
    """unit is a fraction and per_mille a thousandth of the width (x) and height (y)."""
    assert pv.to_pixels([[0.5, 0.5, 1, 1]], "unit", (200, 80)).tolist() == [[100, 40, 200, 80]]
    assert pv.to_pixels([[500, 500, 1000, 1000]], "per_mille", (200, 80)).tolist() == [[100, 40, 200, 80]]
    with pytest.raises(ValueError, match="unknown box convention 'normalized'"):
        pv.to_pixels([[0, 0, 1, 1]], "normalized", (10, 10))


def test_prompt_frames_and_metric_conventions_agree():
    """Every frame a prompt can ask boxes in is one the metrics convert."""
    for frame in box_frames.FRAMES:
        assert pv.from_pixels(pv.to_pixels([[0, 0, 1, 1]], frame, (10, 10)), frame, (10, 10)).tolist() == [[0, 0, 1, 1]]


def test_mean_absolute_error():
    """MAE is the mean of |pred - true|; NaN without pairs; unequal lengths are an error."""
    assert pv.mean_absolute_error([3, 10, 0], [5, 10, 4]) == 2.0
    assert math.isnan(pv.mean_absolute_error([], []))
    with pytest.raises(ValueError, match="differ in length"):
        pv.mean_absolute_error([1, 2], [1])


def test_macro_f1_matches_scikit_learn_with_invalid_answers():
    """Random labels with invalid answers (None): equal to sklearn's macro F1 over the classes seen."""
    rng = np.random.default_rng(0)
    classes = np.array(["upper left", "upper right", "lower left", "lower right"])
    for _ in range(50):
        n = int(rng.integers(1, 30))
        y_true = list(rng.choice(classes, n))
        y_pred = [None if rng.random() < 0.2 else str(c) for c in rng.choice(classes, n)]
        labels = sorted(set(y_true) | {p for p in y_pred if p is not None})
        expected = f1_score(y_true, ["<invalid>" if p is None else p for p in y_pred], labels=labels,
                            average="macro", zero_division=0)
        assert pv.macro_f1(y_true, y_pred) == pytest.approx(expected)


def test_macro_f1_with_explicit_labels_and_empty_input():
    """A listed class that never occurs scores 0, as sklearn's zero_division=0; no items give NaN."""
    assert pv.macro_f1(["a", "a"], ["a", "a"], labels=["a", "b"]) == pytest.approx(
        f1_score(["a", "a"], ["a", "a"], labels=["a", "b"], average="macro", zero_division=0))
    assert math.isnan(pv.macro_f1([], []))


def test_entity_recall():
    """Share of distinct reference entities mentioned; extra mentions do not count; NaN without references."""
    assert pv.entity_recall(["stroma", "stroma", "tumor"], ["tumor", "fat", "necrosis"]) == 0.5
    assert math.isnan(pv.entity_recall([], ["tumor"]))


METRICS = {
    "dice": lambda a, b: pv.box_dice(a, b, (32, 32)),
    "mae": lambda a, b: pv.mean_absolute_error([x[0] for x in a], [x[0] for x in b]),
    "macro_f1": lambda a, b: pv.macro_f1([str(x[0]) for x in b], [str(x[0]) for x in a]),
    "entity_recall": lambda a, b: pv.entity_recall([str(x[0]) for x in b], [str(x[0]) for x in a]),
}


@pytest.mark.parametrize("name", sorted(METRICS))
def test_metrics_are_order_invariant_and_accept_arrays(name):
    """Shuffling paired items, or passing arrays instead of lists, leaves every metric unchanged."""
    pred = [[1, 2, 9, 9], [12, 3, 20, 18], [4, 20, 10, 30]]
    true = [[2, 2, 8, 10], [4, 20, 11, 31], [12, 2, 21, 18]]
    order = [2, 0, 1]
    value = METRICS[name](pred, true)
    assert METRICS[name]([pred[i] for i in order], [true[i] for i in order]) == pytest.approx(value)
    assert METRICS[name](np.array(pred, float), np.array(true, float)) == pytest.approx(value)


@pytest.mark.parametrize("module", [pv, labels, pathview_parsing, refusal], ids=lambda m: m.__name__)
def test_doctests(module):
    """The examples in the docstrings run and hold."""
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
