"""LLaVA-1.5: one square view (the CLS token dropped); no documented box frame; its tiny checkpoint."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pathbind_models.hf.families.base import ImageGrid, ModelFamily
from pathbind_models.hf.views import View, square_grid

if TYPE_CHECKING:
    import numpy as np
    import torch


def square_layout(config: Any, processor: Any, inputs: dict[str, torch.Tensor], positions: np.ndarray,
                  image_size: tuple[int, int]) -> list[View]:
    """One square view of every image token (Gemma3 too: its tokens are pooled to ``mm_tokens_per_image``)."""
    return [View(0, square_grid(len(positions)), None)]


TEMPLATE = (  # the family's own chat template
    "{% for message in messages %}{% if message['role'] != 'system' %}{{ message['role'].upper() + ': ' }}{% endif %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}{{ '<image>\n' }}{% endfor %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}{{ content['text'] + ' ' }}"
    "{% endfor %}{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"
)


def build_tiny() -> tuple[Any, Any, Any]:
    from transformers import CLIPImageProcessor, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    from pathbind_models.hf.tiny_parts import VISION, backend_tokenizer, llama2_backend, text_config

    specials = ["<unk>", "<s>", "</s>", "<image>", "<pad>"]
    tokenizer = backend_tokenizer(llama2_backend(specials), specials, unk_token="<unk>", bos_token="<s>",
                                  eos_token="</s>", pad_token="<pad>", image_token="<image>", add_bos_token=True)
    # CLIP at 224 px with patches of 28: an 8×8 grid (+ CLS, dropped by the "default" feature strategy).
    images = CLIPImageProcessor(size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224})
    processor = LlavaProcessor(image_processor=images, tokenizer=tokenizer, patch_size=28,
                               vision_feature_select_strategy="default", num_additional_image_tokens=1,
                               chat_template=TEMPLATE)
    vision = {"model_type": "clip_vision_model", **VISION, "image_size": 224, "patch_size": 28, "projection_dim": 32}
    config = LlavaConfig(vision_config=vision, text_config=text_config(tokenizer, "llama"),
                         image_token_index=tokenizer.image_token_id, image_seq_length=64)
    return LlavaForConditionalGeneration, config, processor


FAMILY = ModelFamily("llava", ("llava",), square_layout, None, build_tiny, ImageGrid(8, 8))
