"""Positive control: a transparent image-analysis model that answers the demo from the pixels."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from PIL import Image

from pathbind_models.controls import vision
from pathbind_models.controls.blind import BlindControl
from pathbind_models.controls.prompt import Prompt, read_prompt

CONFIDENCE = 0.9  # probability mass the control puts on the answer it reads from the pixels


class PositiveControl:
    """Colour deconvolution and nuclei segmentation (``vision``) answer the question; its
    findings are its reasoning and its evidence map is its attention. Without an image it can
    only guess, exactly like the blind control."""

    def __init__(self) -> None:
        self._blind = BlindControl()

    def generate(self, images: list[Image.Image], text: str, **gen_kwargs: Any) -> str:
        if not images:
            return self._blind.generate(images, text)
        prompt = read_prompt(text)
        answer = self._answer(prompt, images[0])
        if answer is None:
            return vision.describe(images[0])
        thinking = f"<think>{vision.describe(images[0])}</think>" if prompt.wants_thinking else ""
        return f"{thinking}<answer>{answer}</answer>"

    def option_logprobs(self, images: list[Image.Image], text: str, options: list[str]) -> np.ndarray:
        prompt = read_prompt(text)
        answer = self._answer(prompt, images[0]) if images else None
        if answer is None:
            return self._blind.option_logprobs(images, text, options)
        count = max(len(prompt.options), len(options), 2)
        chosen = {answer.lower()}
        if prompt.options:
            chosen.add(prompt.options[ord(answer) - ord("A")].lower())
        other = math.log((1 - CONFIDENCE) / (count - 1))
        return np.array([math.log(CONFIDENCE) if o.strip().lower() in chosen else other for o in options])

    def evidence_map(self, image: Image.Image, query: str | None = None) -> np.ndarray:
        return vision.evidence_map(image, query)

    @staticmethod
    def _answer(prompt: Prompt, image: Image.Image) -> str | None:
        """The option letter, or Yes/No, read from the image; None for a question it does not know."""
        if prompt.options:
            index = vision.answer_choice(prompt.question, list(prompt.options), image)
            return None if index is None else chr(ord("A") + index)
        if prompt.yes_no:
            verdict = vision.answer_yes_no(prompt.question, image)
            return None if verdict is None else ("Yes" if verdict else "No")
        return None
