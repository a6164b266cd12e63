"""Text-only consensus filtering: drop the items that models answer correctly without the image."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def text_solvable(correct: Sequence[Sequence[bool]] | np.ndarray, *, at_least: int) -> np.ndarray:
    """Which items at least ``at_least`` of the models answer correctly.

    Parameters
    ----------
    correct : 2-D bool array, items x models
        Whether each model answered each item correctly (without the image, for the PathBind filter).
    at_least : int
        Number of correct models that makes an item text-solvable (1 or more).

    Returns
    -------
    numpy.ndarray of bool, one per item
        True for the items to drop.

    Examples
    --------
    >>> text_solvable([[True, True], [True, False], [False, False]], at_least=2).tolist()
    [True, False, False]
    """
    if at_least < 1:
        raise ValueError(f"at_least must be 1 or more, got {at_least}")
    return _matrix(correct).sum(axis=1) >= at_least


def consensus_filter(correct_stage1: Sequence[Sequence[bool]] | np.ndarray,
                     correct_stage2: Sequence[Sequence[bool]] | np.ndarray, *, k: int,
                     k_stage1: int | None = None) -> np.ndarray:
    """The PathBind two-stage text-only filter: which items survive both stages.

    Stage 1 drops the items that ``k_stage1`` of the first models answer correctly (default: all of
    them); stage 2 drops, among the survivors, those that at least ``k`` of the second models answer
    correctly. The paper uses 2 closed-source LLMs in stage 1 and ``k = 3`` of 5 LLMs in stage 2.

    Parameters
    ----------
    correct_stage1 : 2-D bool array, items x stage-1 models
    correct_stage2 : 2-D bool array, the same items x stage-2 models
        Rows of items dropped in stage 1 are not read (they may hold anything, e.g. False for items the
        stage-2 models were never asked).
    k : int
        Stage-2 threshold (1 or more).
    k_stage1 : int, optional
        Stage-1 threshold; None means every stage-1 model.

    Returns
    -------
    numpy.ndarray of bool, one per item
        True for the items kept.

    Examples
    --------
    >>> stage1 = [[True, True], [True, False], [False, False], [False, True]]
    >>> stage2 = [[True, True, True], [True, True, False], [False, False, False], [True, True, True]]
    >>> consensus_filter(stage1, stage2, k=2).tolist()
    [False, False, True, False]
    """
    first, second = _matrix(correct_stage1), _matrix(correct_stage2)
    if first.shape[0] != second.shape[0]:
        raise ValueError(f"stage-1 and stage-2 arrays hold different numbers of items: "
                         f"{first.shape[0]} vs {second.shape[0]}")
    survives = ~text_solvable(first, at_least=first.shape[1] if k_stage1 is None else k_stage1)
    return survives & ~text_solvable(second, at_least=k)


def correct_count_distribution(correct: Sequence[Sequence[bool]] | np.ndarray, *,
                               percent: bool = False) -> np.ndarray:
    """How many items 0, 1, ..., m of the m models answer correctly (a column of the paper's Table B.6).

    Parameters
    ----------
    correct : 2-D bool array, items x models
    percent : bool
        Return percentages of the items instead of counts (NaN for no items).

    Returns
    -------
    numpy.ndarray of length m + 1
        Entry ``j``: items (or % of items) answered correctly by exactly ``j`` models.

    Examples
    --------
    >>> correct_count_distribution([[True, True], [True, False], [False, False], [False, True]]).tolist()
    [1, 2, 1]
    >>> correct_count_distribution([[True, True], [True, False]], percent=True).tolist()
    [0.0, 50.0, 50.0]
    """
    matrix = _matrix(correct)
    counts = np.bincount(matrix.sum(axis=1), minlength=matrix.shape[1] + 1)
    if not percent:
        return counts
    return 100.0 * counts / matrix.shape[0] if matrix.shape[0] else np.full(counts.shape, np.nan)


def _matrix(correct: Sequence[Sequence[bool]] | np.ndarray) -> np.ndarray:
    matrix = np.asarray(correct, dtype=bool)
    if matrix.ndim != 2:
        raise ValueError(f"expected a 2-D items x models array, got shape {matrix.shape}")
    return matrix
