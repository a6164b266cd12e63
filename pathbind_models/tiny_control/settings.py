"""What fixes a training run of the tiny control (no torch import: the command's help stays fast)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    """Everything that fixes a training run; the same settings give the same weights."""

    seed: int = 1  # of the training data; seed 0 would draw the demo's own items
    steps: int = 1500
    batch: int = 16
    lr: float = 3e-3
    attention_weight: float = 0.5
    n_tiles: int = 480  # yes/no tiles (both demo questions, balanced)
    n_mosaics: int = 400  # each gives a presence question and a localisation prompt
    n_mcq: int = 20  # per diagnostic dimension D1–D6
    n_text: int = 100  # yes/no questions without an image, answered Yes and No alike: no answer from the text
