"""Inter-rater agreement of two reviewers' decisions: percentage agreement and Cohen's kappa."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np


def percent_agreement(a: Sequence | np.ndarray, b: Sequence | np.ndarray) -> float:
    """Percentage of items on which both raters gave the same label (best: 100); NaN for no items.

    Parameters
    ----------
    a, b : sequence of labels
        Each rater's label for the same items in the same order (any comparable values: bools,
        strings, integers).

    Returns
    -------
    float
        Agreement in percent.

    Examples
    --------
    >>> percent_agreement(["retain", "exclude", "retain", "retain"], ["retain", "exclude", "exclude", "retain"])
    75.0
    """
    first, second = _paired(a, b)
    return float(100.0 * np.mean(first == second)) if first.size else float("nan")


def cohen_kappa(a: Sequence | np.ndarray, b: Sequence | np.ndarray) -> float:
    """Cohen's kappa: agreement corrected for the agreement expected by chance (best: 1, chance: 0).

    ``kappa = (p_o - p_e) / (1 - p_e)`` with ``p_o`` the observed agreement and ``p_e`` the agreement
    expected from each rater's label frequencies: scikit-learn's ``cohen_kappa_score`` (unweighted).

    Parameters
    ----------
    a, b : sequence of labels
        Each rater's label for the same items in the same order; any number of categories.

    Returns
    -------
    float
        Kappa in [-1, 1]. NaN when it is undefined: no items, or ``p_e == 1`` (both raters gave every
        item one and the same label, so agreement cannot exceed chance).

    Examples
    --------
    >>> round(cohen_kappa([1, 1, 0, 0, 1, 0], [1, 1, 0, 1, 1, 0]), 3)
    0.667
    >>> cohen_kappa([1, 1, 1], [1, 1, 1])
    nan
    """
    from sklearn.metrics import cohen_kappa_score

    first, second = _paired(a, b)
    if not first.size:
        return float("nan")
    with warnings.catch_warnings():  # one label in common: undefined, NaN as documented
        warnings.simplefilter("ignore")
        return float(cohen_kappa_score(first, second, replace_undefined_by=np.nan))


def _paired(a: Sequence | np.ndarray, b: Sequence | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    first, second = np.asarray(a).ravel(), np.asarray(b).ravel()
    if first.size != second.size:
        raise ValueError(f"the two raters' label arrays differ in length: {first.size} vs {second.size}")
    return first, second
