"""``pathbind_baseline``: the PathView random-choice or most-frequent-choice baseline as an lmms-eval model.

``--model_args strategy=random`` (default) or ``strategy=frequent``, ``seed=<int>``. It reads each item and
its task's whole test split (never the image) and answers as :mod:`pathbind_models.baseline` describes,
with boxes in each item's ``box_frame``, the frame its prompt asks for.
"""

from __future__ import annotations

from typing import Any

import torch
from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms

from pathbind_models.baseline import STRATEGIES, TaskStats, baseline_answer, task_stats


class BaselineModel(lmms):
    """Answers PathView documents from their task's reference answers; other tasks get empty (invalid) answers."""

    is_simple = True

    def __init__(self, strategy: str = "random", seed: int | str = 0, batch_size: int | str = 1,
                 max_batch_size: int | str | None = None, device: str = "cpu", **kwargs: Any) -> None:
        super().__init__()
        if strategy not in STRATEGIES:
            raise ValueError(f"pathbind_baseline: strategy={strategy!r}; choose one of {', '.join(STRATEGIES)}")
        self.strategy, self.seed, self.batch_size = strategy, int(seed), int(batch_size)
        self._device = torch.device(device)
        self._docs: dict[tuple[str, str], tuple[list[dict[str, Any]], TaskStats]] = {}

    @property
    def device(self) -> torch.device:
        return self._device

    def _task(self, task: str, split: str) -> tuple[list[dict[str, Any]], TaskStats]:
        """The task's documents without images, and its statistics over the whole split (so ranks agree)."""
        if (task, split) not in self._docs:
            dataset = self.task_dict[task][split]
            docs = dataset.remove_columns([c for c in ("image",) if c in dataset.column_names]).to_list()
            self._docs[task, split] = docs, task_stats(docs)
        return self._docs[task, split]

    def generate_until(self, requests: list[Instance]) -> list[str]:
        answers = []
        for request in requests:
            _, _, _, doc_id, task, split = request.args
            docs, stats = self._task(task, split)
            doc = docs[doc_id]
            frame = {"convention": doc["box_frame"]} if doc.get("box_frame") else {}  # items without boxes have none
            answers.append(baseline_answer(doc, stats, self.strategy, seed=self.seed, **frame))
        return answers

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        raise NotImplementedError("pathbind_baseline answers generate_until tasks only")

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        raise NotImplementedError("pathbind_baseline answers single-round tasks only")
