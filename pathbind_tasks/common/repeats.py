"""lmms-eval's ``--repeats N``: every one of the N sampled answers reaches ``process_results``.

lmms-eval sends each request N times but its default filter (``take_first``) keeps the first answer only, and its
stability metrics are not produced for ``generate_until`` tasks. The VQA tasks name :class:`EveryResponse` as their
filter instead (``_vqa.yaml``): one answer is passed on as ``take_first`` passes it, N answers as one list. The
first is scored as the answer (so every headline is what a plain run reports); the record keeps how each of the N
was scored, and the ``repeats`` metric (``vqa_aggregations.repeats``) reports per-item agreement and the spread of
each headline across the N.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class EveryResponse:
    """An lmms-eval filter (its ``apply(resps, docs)``): one answer as itself, several as the list of them, no
    answer as "" (as ``take_first``)."""

    def apply(self, resps: Iterable[list[Any]], docs: Any) -> list[Any]:
        return [(list(r) if len(r) > 1 else r[0]) if r else "" for r in resps]


def every_response(results: list[Any]) -> list[Any]:
    """The answers ``process_results`` got: the N of a repeated request, or the one of a plain run."""
    if results and isinstance(results[0], list | tuple):
        return list(results[0])
    return list(results)
