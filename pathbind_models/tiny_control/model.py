"""``pathbind_tiny`` and ``pathbind_tiny_untrained``: the packaged tiny checkpoints, run as ``pathbind_hf`` runs any."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pathbind_models.hf.model import HFModel

CHECKPOINTS = Path(__file__).parent / "checkpoints"
# Their answers are a few tokens ("Yes", "No", a letter); the cap keeps the untrained twin's babble short.
MAX_NEW_TOKENS = 16


class TinyControlModel(HFModel):
    """``--model pathbind_tiny``: the trained checkpoint; every other ``pathbind_hf`` model argument applies."""

    checkpoint = "pathbind_tiny"

    def __init__(self, pretrained: str | None = None, max_new_tokens: int | str = MAX_NEW_TOKENS,
                 **kwargs: Any) -> None:
        super().__init__(pretrained=pretrained or str(CHECKPOINTS / self.checkpoint),
                         max_new_tokens=int(max_new_tokens), **kwargs)


class UntrainedTinyControlModel(TinyControlModel):
    """``--model pathbind_tiny_untrained``: the same architecture at its seed-0 initialisation, never trained."""

    checkpoint = "pathbind_tiny_untrained"
