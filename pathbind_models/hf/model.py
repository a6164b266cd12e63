"""``pathbind_hf``: any supported Hugging Face VLM checkpoint as an lmms-eval model."""

from __future__ import annotations

import os
from typing import Any

import torch

from pathbind.model_inputs import declare
from pathbind_models.hf import loading
from pathbind_models.hf.adapter import HFAdapter
from pathbind_models.hf.inputs import model_inputs
from pathbind_models.lmms_model import AdapterModel


class HFModel(AdapterModel):
    """``--model pathbind_hf --model_args pretrained=<hub id or dir>[,dtype=…,device=…,device_map=…,max_pixels=…]``.

    ``device`` defaults to ``cuda:<LOCAL_RANK>`` (so each process of ``torchrun``/``accelerate launch`` gets its
    own GPU) when CUDA is available; ``device_map=auto`` shards one model over every visible GPU in one process.
    The effective settings go into the run's results (``results["pathbind"]["model"]``, see
    :attr:`pathbind_settings`).
    """

    adapter_class = HFAdapter

    def __init__(self, pretrained: str, batch_size: int | str = 1, max_batch_size: int | str | None = None,
                 device: str | None = None, **kwargs: Any) -> None:
        if kwargs.get("device_map") is not None and int(os.environ.get("WORLD_SIZE", "1")) > 1:
            raise ValueError("device_map shards one model over all visible GPUs, so it runs in a single process; "
                             "under torchrun/accelerate launch use device=cuda (one model copy per GPU)")
        self._requested_device = device
        super().__init__(batch_size=batch_size, max_batch_size=max_batch_size, pretrained=pretrained, **kwargs)
        # lmms-eval builds the tasks' documents after the model: their checks read what its processor takes.
        declare(model_inputs(self._hf().processor, pretrained))

    def make_adapter(self, **adapter_kwargs: Any) -> HFAdapter:
        return HFAdapter(device=self._requested_device, **adapter_kwargs)

    @property
    def device(self) -> torch.device:
        """Where this process's inputs go (lmms-eval gathers its counts there under torchrun)."""
        return self._hf().input_device

    @property
    def pathbind_settings(self) -> dict[str, Any]:
        """What this run used, as JSON: dtype, placement, image limits, generation settings that apply."""
        adapter = self._hf()
        greedy = adapter._generation_options({})
        return {
            "pretrained": adapter.pretrained,
            "family": adapter.family.name,
            "dtype": str(adapter.model.dtype).removeprefix("torch."),
            "device": str(adapter.input_device),
            "device_map": getattr(adapter.model, "hf_device_map", None) or adapter.device_map,
            "processor_options": loading.to_json(adapter.processor_options),
            "image_limits": loading.image_limits(adapter.processor),
            "attribution": self.attribution.describe(),
            "generation": {
                "decoding": "greedy unless a task's temperature is above 0: then sampled, each answer seeded from "
                            "lmms-eval's torch seed (--seed) and its task, document and repeat",
                "max_new_tokens": adapter.max_new_tokens,
                "chat_template_kwargs": adapter.template_kwargs,
                "from_checkpoint": loading.checkpoint_generation(adapter.model.generation_config, set(greedy)),
            },
        }

    def _hf(self) -> HFAdapter:
        assert isinstance(self.adapter, HFAdapter)
        return self.adapter
