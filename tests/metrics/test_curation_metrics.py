"""Curation metrics: reviewer agreement and the text-only consensus filter, against scikit-learn and by hand."""

from __future__ import annotations

import doctest
import math
import warnings

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from pathbind_metrics import agreement, consensus
from pathbind_metrics.agreement import cohen_kappa, percent_agreement
from pathbind_metrics.consensus import consensus_filter, correct_count_distribution, text_solvable


def sklearn_kappa(a, b) -> float:
    with warnings.catch_warnings():  # sklearn warns when only one label occurs; the value is what we compare
        warnings.simplefilter("ignore")
        return float(cohen_kappa_score(a, b, replace_undefined_by=np.nan))


def same(x: float, y: float) -> bool:
    return (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.parametrize("seed", range(40))
def test_kappa_and_agreement_match_sklearn_on_random_labels(seed: int) -> None:
    """Random binary, multi-class and string labels, some nearly constant: kappa equals sklearn's."""
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(1, 200)), int(rng.integers(1, 5))
    a = rng.choice(k, size=n, p=rng.dirichlet(np.ones(k)))
    b = np.where(rng.random(n) < rng.random(), a, rng.integers(0, k, size=n))
    if seed % 3 == 0:
        a, b = np.array(["retain", "exclude", "maybe", "x"])[a], np.array(["retain", "exclude", "maybe", "x"])[b]
    assert same(cohen_kappa(a, b), sklearn_kappa(a, b))
    assert percent_agreement(a, b) == pytest.approx(100.0 * np.mean(a == b))


@pytest.mark.parametrize(("a", "b"), [
    ([True] * 5, [True] * 5),                      # one shared label: chance agreement 1, undefined
    (["retain"] * 4, ["exclude"] * 4),              # each rater constant, different labels
    ([1, 0, 1, 0], [1, 0, 1, 0]),                  # perfect agreement
    ([1, 0, 1, 0], [0, 1, 0, 1]),                  # perfect disagreement
    ([1, 1, 1, 1], [1, 0, 1, 0]),                  # one rater constant: no better than chance
    ([1], [0]),
    ([0, 1, 2], [2, 0, 1]),
])
def test_kappa_edge_cases_match_sklearn(a, b) -> None:
    """Constant raters, perfect (dis)agreement and single items agree with sklearn (NaN where it is NaN)."""
    assert same(cohen_kappa(a, b), sklearn_kappa(a, b))


def test_kappa_edge_values_by_hand() -> None:
    """Undefined is NaN; perfect agreement is 1, perfect disagreement on a balanced pair -1, a constant rater 0."""
    assert math.isnan(cohen_kappa([True] * 5, [True] * 5))
    assert cohen_kappa([1, 0, 1, 0], [1, 0, 1, 0]) == 1.0
    assert cohen_kappa([1, 0, 1, 0], [0, 1, 0, 1]) == -1.0
    assert cohen_kappa([1, 1, 1, 1], [1, 0, 1, 0]) == 0.0


@pytest.mark.parametrize(("both_retain", "both_exclude", "r1_only", "r2_only", "agreement_pct", "kappa"), [
    (1510, 4476, 185, 185, 94.18, 0.851),  # PathBind-VQA
    (1146, 1146, 87, 88, 92.91, 0.858),    # PathBind-Grounding
    (630, 238, 15, 17, 96.44, 0.912),      # PathBind-PTA
])
def test_reproduces_the_papers_table_b8(both_retain, both_exclude, r1_only, r2_only, agreement_pct, kappa) -> None:
    """The counts of Table B.8 give its agreement (%) and kappa to the printed precision."""
    r1 = [True] * both_retain + [False] * both_exclude + [True] * r1_only + [False] * r2_only
    r2 = [True] * both_retain + [False] * both_exclude + [False] * r1_only + [True] * r2_only
    assert round(percent_agreement(r1, r2), 2) == agreement_pct
    assert round(cohen_kappa(r1, r2), 3) == kappa
    assert same(cohen_kappa(r1, r2), sklearn_kappa(r1, r2))


def test_agreement_is_order_invariant_and_takes_lists_or_arrays() -> None:
    """Shuffling items together, or passing arrays instead of lists, changes nothing."""
    rng = np.random.default_rng(7)
    a, b = rng.integers(0, 2, 300), rng.integers(0, 2, 300)
    order = rng.permutation(300)
    for metric in (cohen_kappa, percent_agreement):
        assert metric(a, b) == pytest.approx(metric(a[order], b[order]))
        assert metric(a, b) == metric(a.tolist(), b.tolist())


def test_empty_and_mismatched_inputs() -> None:
    """No items gives NaN; arrays of different lengths are an error naming both lengths."""
    assert math.isnan(cohen_kappa([], []))
    assert math.isnan(percent_agreement([], []))
    for metric in (cohen_kappa, percent_agreement):
        with pytest.raises(ValueError, match="differ in length: 3 vs 2"):
            metric([1, 0, 1], [1, 0])


# Hand-worked two-stage example: 6 items, 2 stage-1 models, 5 stage-2 models, k = 3.
STAGE1 = np.array([
    [1, 1],  # both correct: dropped in stage 1
    [1, 0],
    [0, 0],
    [0, 1],
    [1, 1],  # dropped in stage 1 (its stage-2 row is never read)
    [0, 0],
], dtype=bool)
STAGE2 = np.array([
    [1, 1, 1, 1, 1],
    [1, 1, 1, 0, 0],  # 3 of 5: dropped in stage 2
    [1, 1, 0, 0, 0],  # 2 of 5: kept
    [0, 0, 0, 0, 0],  # kept
    [0, 0, 0, 0, 0],
    [1, 1, 1, 1, 0],  # 4 of 5: dropped
], dtype=bool)


def test_consensus_filter_matches_the_hand_worked_example() -> None:
    """Stage 1 drops items both models solve; stage 2 drops survivors at least 3 of 5 solve."""
    assert consensus_filter(STAGE1, STAGE2, k=3).tolist() == [False, False, True, True, False, False]
    assert text_solvable(STAGE1, at_least=2).tolist() == [True, False, False, False, True, False]


def test_consensus_filter_thresholds() -> None:
    """A stricter stage 1 (any one model) and a looser stage 2 (k = 5) change the kept set as worked out."""
    assert consensus_filter(STAGE1, STAGE2, k=3, k_stage1=1).tolist() == [False, False, True, False, False, False]
    assert consensus_filter(STAGE1, STAGE2, k=5).tolist() == [False, True, True, True, False, True]
    with pytest.raises(ValueError, match="at_least must be 1 or more, got 0"):
        consensus_filter(STAGE1, STAGE2, k=0)


def test_consensus_filter_rejects_bad_shapes() -> None:
    """Different item counts between stages, or a 1-D array, are errors that say so."""
    with pytest.raises(ValueError, match="different numbers of items: 6 vs 5"):
        consensus_filter(STAGE1, STAGE2[:5], k=3)
    with pytest.raises(ValueError, match="2-D items x models"):
        text_solvable([True, False], at_least=1)


def test_correct_count_distribution_by_hand() -> None:
    """Counts of items solved by 0..m models, as percentages too; no items gives NaN percentages."""
    assert correct_count_distribution(STAGE1).tolist() == [2, 2, 2]
    assert correct_count_distribution(STAGE2).tolist() == [2, 0, 1, 1, 1, 1]
    assert correct_count_distribution(STAGE1, percent=True) == pytest.approx([100 / 3] * 3)
    assert correct_count_distribution(np.zeros((0, 2), dtype=bool)).tolist() == [0, 0, 0]
    assert np.isnan(correct_count_distribution(np.zeros((0, 2), dtype=bool), percent=True)).all()


@pytest.mark.parametrize("module", [agreement, consensus])
def test_doctests(module) -> None:
    """The docstring examples run and hold."""
    result = doctest.testmod(module)
    assert result.attempted > 0
    assert result.failed == 0
