"""Runs any PathBind adapter as an lmms-eval model (imported by lmms-eval only when selected)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, ClassVar

import torch
from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms
from loguru import logger
from PIL import Image
from tqdm import tqdm

from pathbind_models.adapter import Adapter


class AdapterModel(lmms):
    """lmms-eval "simple" model around an adapter; subclasses name the adapter class.

    A request whose document or model call fails is logged with its task and doc id and answered
    with an empty string, which every PathBind task scores as an invalid answer.
    """

    is_simple = True
    adapter_class: ClassVar[type]

    def __init__(self, batch_size: int | str = 1, max_batch_size: int | str | None = None, device: str = "cpu",
                 **adapter_kwargs: Any) -> None:
        super().__init__()
        self.batch_size = int(batch_size)
        self._device = torch.device(device)
        self.adapter: Adapter = self.adapter_class(**adapter_kwargs)

    @property
    def device(self) -> torch.device:
        return self._device

    def generate_until(self, requests: list[Instance]) -> list[str]:
        outputs = []
        for request in tqdm(requests, desc=f"{type(self).__name__} generate", disable=self.rank != 0):
            ctx, gen_kwargs, doc_to_visual, doc_id, task, split = request.args
            try:
                images = to_images(doc_to_visual(self.task_dict[task][split][doc_id]))
                text = self.adapter.generate(images, ctx, **dict(gen_kwargs or {}))
            except Exception as exc:  # one bad document never ends the run
                logger.warning(f"{task} doc {doc_id}: no answer ({type(exc).__name__}: {exc})")
                text = ""
            outputs.append(cut_at_stops(text, (gen_kwargs or {}).get("until")))
        return outputs

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        results = []
        for request in tqdm(requests, desc=f"{type(self).__name__} loglikelihood", disable=self.rank != 0):
            ctx, doc_to_target, doc_to_visual, doc_id, task, split = request.args
            doc = self.task_dict[task][split][doc_id]
            continuation = doc_to_target(doc) if callable(doc_to_target) else doc_to_target
            logprob = float(self.adapter.option_logprobs(to_images(doc_to_visual(doc)), ctx, [str(continuation)])[0])
            results.append((logprob, logprob > math.log(0.5)))  # above 1/2 means it is the argmax
        return results

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        raise NotImplementedError(f"{type(self).__name__} answers single-round tasks only")


def to_images(visuals: Any) -> list[Image.Image]:
    """Flatten what a task's doc_to_visual returned into RGB images; paths are opened."""
    if visuals is None:
        return []
    items: Iterable[Any] = visuals if isinstance(visuals, list | tuple) else [visuals]
    images = []
    for item in items:
        if isinstance(item, list | tuple):
            images.extend(to_images(item))
        elif isinstance(item, Image.Image):
            images.append(item.convert("RGB"))
        elif isinstance(item, str):
            with Image.open(item) as opened:
                images.append(opened.convert("RGB"))
        else:
            raise TypeError(f"visual of type {type(item).__name__} is not an image")
    return images


def cut_at_stops(text: str, until: str | list[str] | None) -> str:
    """Truncate ``text`` at the first stop sequence, as lmms-eval's generate_until contract asks."""
    stops = [until] if isinstance(until, str) else list(until or [])
    for stop in filter(None, stops):
        text = text.split(stop, 1)[0]
    return text
