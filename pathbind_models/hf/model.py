"""``pathbind_hf``: any supported Hugging Face VLM checkpoint as an lmms-eval model."""

from __future__ import annotations

import os
from typing import Any

from pathbind_models.hf.adapter import HFAdapter
from pathbind_models.lmms_model import AdapterModel


class HFModel(AdapterModel):
    """``--model pathbind_hf --model_args pretrained=<hub id or dir>[,dtype=…,device=…,max_new_tokens=…,thinking=…]``.

    ``device=cuda`` binds each process of ``torchrun``/``accelerate launch`` to its own GPU (``LOCAL_RANK``).
    """

    adapter_class = HFAdapter

    def __init__(self, pretrained: str, batch_size: int | str = 1, max_batch_size: int | str | None = None,
                 device: str = "cpu", **kwargs: Any) -> None:
        if device == "cuda":
            device = f"cuda:{os.environ.get('LOCAL_RANK', '0')}"
        super().__init__(batch_size=batch_size, max_batch_size=max_batch_size, device=device, pretrained=pretrained,
                         **kwargs)

    def make_adapter(self, **adapter_kwargs: Any) -> HFAdapter:
        return HFAdapter(device=str(self.device), **adapter_kwargs)
