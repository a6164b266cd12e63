"""Negative control: never looks at the image, so its answers cannot depend on it."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from typing import Any

import numpy as np
from PIL import Image

from pathbind_models.adapter import EntityAttention
from pathbind_models.controls import pathview
from pathbind_models.controls.prompt import read_prompt


class BlindControl:
    """Answers from the prompt text alone with a guess seeded by that text: chance accuracy,
    identical with and without the image, and a uniform attention map."""

    def generate(self, images: list[Image.Image], text: str, **gen_kwargs: Any) -> str:
        prompt = read_prompt(text)
        seed = int(hashlib.sha256(text.encode("utf-8")).hexdigest(), 16)
        if prompt.options:
            return f"<answer>{chr(ord('A') + seed % len(prompt.options))}</answer>"
        if prompt.yes_no:
            return "<answer>Yes</answer>" if seed % 2 else "<answer>No</answer>"
        if pathview.is_pathview_prompt(text):
            return pathview.blind_answer(text, seed)
        return "The answer cannot be determined from the text alone."

    def option_logprobs(self, images: list[Image.Image], text: str, options: list[str]) -> np.ndarray:
        count = max(len(read_prompt(text).options), len(options))
        return np.full(len(options), -math.log(count))

    def image_option_logprobs(self, images: Iterable[Image.Image], text: str, options: list[str]) -> np.ndarray:
        """The same scores for every image (N × K): they never depend on it."""
        return np.array([self.option_logprobs([image], text, options) for image in images])

    def entity_attention(self, image: Image.Image, text: str, entity: str,
                         layers: str | list[int] = "mid") -> EntityAttention:
        return EntityAttention(np.full((16, 16), 1.0 / 256), [], [], [], (16, 16))
