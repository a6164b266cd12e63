"""Positive control: a transparent image-analysis model that answers the demo from the pixels."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

import numpy as np
from PIL import Image

from pathbind_models.adapter import EntityAttention
from pathbind_models.controls import pathview, questions, vision
from pathbind_models.controls.blind import BlindControl
from pathbind_models.controls.prompt import Prompt, read_prompt

CONFIDENCE = 0.9  # probability mass the control puts on the answer it reads from the pixels
# Presence questions ("Is there <entity> in this image?") are scored smoothly: the log-odds of "Yes" are
# log(evidence mass / PRESENT_MASS), so hiding a patch of evidence lowers the margin in proportion to the
# evidence it held. PRESENT_MASS is about half the mass of one demo quadrant of each pattern.
PRESENCE = re.compile(r"^is there (.+) in (?:this|the) image\?$", re.IGNORECASE)
PRESENT_MASS = {"white": 0.05, "dab": 0.01, "count": 0.0005, "atypia": 0.02}


class PositiveControl:
    """Colour deconvolution and nuclei segmentation (``vision``) measure the image and ``questions`` reads the
    answer from the findings; its findings are its reasoning and its evidence map is its attention. Without an
    image it can only guess, exactly like the blind control."""

    def __init__(self) -> None:
        self._blind = BlindControl()

    def generate(self, images: list[Image.Image], text: str, **gen_kwargs: Any) -> str:
        if not images:
            return self._blind.generate(images, text)
        if pathview.is_pathview_prompt(text):
            return pathview.answer(text, images[0])
        prompt = read_prompt(text)
        answer = self._answer(prompt, images[0])
        if answer is None:
            return vision.describe(images[0])
        thinking = f"<think>{vision.describe(images[0])}</think>" if prompt.wants_thinking else ""
        return f"{thinking}<answer>{answer}</answer>"

    def option_logprobs(self, images: list[Image.Image], text: str, options: list[str]) -> np.ndarray:
        prompt = read_prompt(text)
        presence = PRESENCE.match(prompt.question)
        if images and presence and {o.strip().lower() for o in options} == {"yes", "no"}:
            return _presence_logprobs(images[0], presence.group(1), options)
        answer = self._answer(prompt, images[0]) if images else None
        if answer is None:
            return self._blind.option_logprobs(images, text, options)
        count = max(len(prompt.options), len(options), 2)
        chosen = {answer.lower()}
        if prompt.options:
            chosen.add(prompt.options[ord(answer) - ord("A")].lower())
        other = math.log((1 - CONFIDENCE) / (count - 1))
        return np.array([math.log(CONFIDENCE) if o.strip().lower() in chosen else other for o in options])

    def image_option_logprobs(self, images: Iterable[Image.Image], text: str, options: list[str]) -> np.ndarray:
        """:meth:`option_logprobs` of ``text`` asked about each image alone (N × K), one image at a time."""
        return np.array([self.option_logprobs([image], text, options) for image in images])

    def entity_attention(self, image: Image.Image, text: str, entity: str,
                         layers: str | list[int] = "mid") -> EntityAttention:
        evidence = vision.evidence_map(image, entity)
        return EntityAttention(evidence, [], [], [], (evidence.shape[0], evidence.shape[1]))

    @staticmethod
    def _answer(prompt: Prompt, image: Image.Image) -> str | None:
        """The option letter, or Yes/No, read from the image; None for a question it does not know."""
        if prompt.options:
            index = questions.answer_choice(prompt.question, list(prompt.options), image)
            return None if index is None else chr(ord("A") + index)
        if prompt.yes_no:
            verdict = questions.answer_yes_no(prompt.question, image)
            return None if verdict is None else ("Yes" if verdict else "No")
        return None


def _presence_logprobs(image: Image.Image, entity: str, options: list[str]) -> np.ndarray:
    """Log-probabilities of Yes/No with log-odds log(mass / PRESENT_MASS) of the entity's evidence (floored, so
    an image without any evidence is a confident No rather than -inf)."""
    kind = vision.evidence_kind(entity)
    log_odds = math.log(max(vision.evidence_mass(image, entity), 1e-9) / PRESENT_MASS[kind])
    yes, no = -math.log1p(math.exp(-log_odds)), -math.log1p(math.exp(log_odds))
    return np.array([yes if o.strip().lower() == "yes" else no for o in options])
