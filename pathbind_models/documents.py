"""The documents behind a model's requests, read in chunks instead of one formatted row at a time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import datasets
from lmms_eval.api.instance import Instance

CHUNK = 32  # requests whose documents are read together: bounds the encoded images held at once


class RequestDocuments:
    """``documents[i]`` is the document of ``requests[i]``, as ``task_dict[task][split][doc_id]`` gives it.

    A datasets row read alone is formatted column by column, and lmms-eval's documents are read this way once per
    request; reading the documents of ``CHUNK`` consecutive requests in one gather per task split costs a fraction
    of that. A split with a format or transform of its own, or a chunk whose gather fails (a document that cannot be
    decoded), is read document by document, so only the faulty request fails, when it is read.
    """

    def __init__(self, task_dict: Mapping[str, Any], requests: Sequence[Instance]) -> None:
        self._task_dict, self._requests = task_dict, requests
        self._read_for = range(0)  # the requests of the current chunk
        self._chunk: dict[int, Any] = {}  # their documents that were read together

    def __getitem__(self, index: int) -> Any:
        if index not in self._read_for:
            self._read_for = range(index, min(index + CHUNK, len(self._requests)))
            self._chunk = self._read(self._read_for)
        return self._chunk[index] if index in self._chunk else self._one(index)

    def _read(self, indices: range) -> dict[int, Any]:
        by_split: dict[tuple[str, str], list[int]] = {}
        for index in indices:
            _, _, _, _, task, split = self._requests[index].args
            by_split.setdefault((task, split), []).append(index)
        docs: dict[int, Any] = {}
        for (task, split), members in by_split.items():
            dataset = self._task_dict[task][split]
            if not isinstance(dataset, datasets.Dataset) or dataset.format["type"] is not None:
                continue
            try:
                columns = dataset[[self._requests[i].args[3] for i in members]]
                rows = [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]
                docs.update(zip(members, rows, strict=True))
            except Exception:  # read one by one, where the faulty document fails its own request
                continue
        return docs

    def _one(self, index: int) -> Any:
        _, _, _, doc_id, task, split = self._requests[index].args
        return self._task_dict[task][split][doc_id]
