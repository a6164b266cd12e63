"""A ``pathbind_hf`` checkpoint's vision tower as an image encoder (``pathbind embed``): one mean-pooled vector per
image."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch is imported when an encoder is built: offering the class to the plugin system stays cheap
    import numpy as np
    from PIL import Image


class ImageEncoder:
    """A checkpoint's vision tower, run through ``get_image_features`` (every supported family has it).

    ``features`` is ``vision`` (the tower's output tokens, before any projector or token merging) or ``projected``
    (the image tokens the language model reads); ``dtype`` a torch dtype name or ``auto`` (the checkpoint's own).
    """

    def __init__(self, pretrained: str, features: str, dtype: str, device: str | None,
                 processor_options: dict[str, Any]) -> None:
        import torch
        from transformers import AutoConfig, AutoModelForImageTextToText

        from pathbind_models.hf import loading
        from pathbind_models.hf.families import family_of

        processor_options = dict(processor_options)
        loading.refuse_remote_code(pretrained, processor_options)
        if dtype != "auto" and not isinstance(getattr(torch, dtype, None), torch.dtype):
            raise ValueError(f"dtype {dtype!r} is not a torch dtype (float32, bfloat16, float16) or 'auto'")
        self.pretrained, self.features = pretrained, features
        self.family = family_of(AutoConfig.from_pretrained(pretrained), pretrained).name
        self.processor = loading.load_processor(pretrained, processor_options)
        self.processor_options = processor_options
        self.model = AutoModelForImageTextToText.from_pretrained(
            pretrained, dtype=getattr(torch, dtype) if dtype != "auto" else "auto",
            device_map=loading.placement(device, None)).eval()
        self.device = loading.input_device(self.model)

    def embed(self, image: Image.Image) -> np.ndarray:
        """The mean over the chosen tokens of one image (every crop or tile of it), as float32."""
        import torch

        inputs = self.processor.image_processor(images=[image], return_tensors="pt")
        accepted = inspect.signature(self.model.get_image_features).parameters
        # Only what the method names: e.g. InternVL's num_patches and Gemma3's num_crops are the processor's own.
        kwargs = {key: value.to(self.device) for key, value in inputs.items() if key in accepted}
        kwargs["pixel_values"] = kwargs["pixel_values"].to(self.model.dtype)
        with torch.inference_mode():
            output = self.model.get_image_features(**kwargs)
        tokens = output.last_hidden_state if self.features == "vision" else output.pooler_output
        if isinstance(tokens, list | tuple):  # per-image pieces: one image here
            tokens = torch.cat([t.reshape(-1, t.shape[-1]) for t in tokens])
        return tokens.reshape(-1, tokens.shape[-1]).float().mean(dim=0).cpu().numpy()

    def metadata(self) -> dict[str, Any]:
        """How the vectors are made: checkpoint, family, features, dtype, processor options and image limits."""
        from pathbind_models.hf import loading

        return {"model": self.pretrained, "family": self.family, "features": self.features,
                "dtype": str(self.model.dtype), "processor_options": loading.to_json(self.processor_options),
                "image_limits": loading.image_limits(self.processor)}
