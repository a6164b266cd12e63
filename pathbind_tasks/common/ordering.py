"""Aggregations that give the same value for any number of processes."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

T = TypeVar("T")


def in_id_order(aggregate: Callable[[list], T]) -> Callable[[Sequence[Mapping]], T]:
    """Run ``aggregate`` on the records sorted by item id.

    lmms-eval gathers records rank by rank, so N processes deliver them in another order than one; sorting
    first makes sums, bootstrap resamples and permutations identical for 1 or N processes.
    """

    @functools.wraps(aggregate)
    def ordered(records: Sequence[Mapping]) -> T:
        return aggregate(sorted(records, key=lambda record: str(record.get("id"))))

    return ordered
