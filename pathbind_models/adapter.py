"""The adapter contract: what every PathBind model, controls included, can be asked."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from PIL import Image


class Adapter(Protocol):
    """A model as PathBind tasks use it: text in, images in, answers and scores out."""

    def generate(self, images: list[Image.Image], text: str, **gen_kwargs: Any) -> str:
        """Answer ``text`` about ``images`` (an empty list means no image at all)."""
        ...

    def option_logprobs(self, images: list[Image.Image], text: str, options: list[str]) -> np.ndarray:
        """Log-probability of each candidate answer in ``options`` as the continuation of ``text``."""
        ...
