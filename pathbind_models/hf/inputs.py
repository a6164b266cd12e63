"""What a checkpoint takes as data (:mod:`pathbind.model_inputs`), read from its own processor: the texts its
tokenizer turns into tokens of their own, and the image sizes its image processor refuses or blows up."""

from __future__ import annotations

from functools import partial
from typing import Any

from pathbind.model_inputs import ModelInputs
from pathbind_models.hf.geometry import resized_shape


def model_inputs(processor: Any, name: str) -> ModelInputs:
    """``processor``'s reserved texts and image-size rule, for the checkpoint ``name``."""
    return ModelInputs(name, reserved_texts(processor), partial(resized_size, processor))


def reserved_texts(processor: Any) -> frozenset[str]:
    """Every added token of the processor's tokenizer (special or not: each is matched whole in text, so
    ``<|image_pad|>`` or LLaVA's ``<image>`` in a question becomes that token), but single characters."""
    tokenizer = getattr(processor, "tokenizer", processor)
    added = getattr(tokenizer, "added_tokens_decoder", {}) or {}
    return frozenset(token.content for token in added.values() if len(token.content.strip()) > 1)


def resized_size(processor: Any, width: int, height: int) -> tuple[int, int] | None:
    """``(width, height)`` of the image ``processor`` resizes an image of this size to before cutting it into
    patches; None when the processor bounds that size itself (it says how many patches any size makes:
    ``get_number_of_image_patches``, which raises for a size it refuses, e.g. Qwen's aspect ratio of 200 or more).
    """
    images = getattr(processor, "image_processor", None)
    if images is None:
        return None
    patches = getattr(images, "get_number_of_image_patches", None)
    if patches is not None:
        if patches(height, width, {}) < 1:
            raise ValueError(f"{type(images).__name__} makes no image patch of it")
        return None
    if not getattr(images, "do_resize", False):
        return None
    resized_height, resized_width = resized_shape(images, height, width)
    return resized_width, resized_height
