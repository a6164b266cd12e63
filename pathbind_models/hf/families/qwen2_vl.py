"""Qwen2-VL: one view of merged patches (``image_grid_thw``); boxes in thousandths; its tiny checkpoint."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pathbind_models.hf.families.base import ImageGrid, ModelFamily
from pathbind_models.hf.views import View

if TYPE_CHECKING:
    import numpy as np
    import torch


def layout(config: Any, processor: Any, inputs: dict[str, torch.Tensor], positions: np.ndarray,
           image_size: tuple[int, int]) -> list[View]:
    """One view of (h/m)×(w/m) tokens (Qwen2.5-VL and Qwen3-VL too): h×w = ``image_grid_thw`` patches and m the
    spatial merge size (m×m patches merged per token)."""
    _, height, width = (int(v) for v in inputs["image_grid_thw"][0])
    merge = config.vision_config.spatial_merge_size
    return [View(0, (height // merge, width // merge), None)]


# --- tiny checkpoint (Qwen2.5-VL, Qwen3-VL and InternVL build on these parts) -------------------------------------

QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                 "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>"]
# The family's own chat template, trimmed of tool calling and video options.
QWEN_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def qwen_tokenizer(specials: list[str], **named: str) -> Any:
    from transformers import Qwen2Tokenizer

    from pathbind_models.hf.tiny_parts import finish, learn_bpe

    vocab, merges = learn_bpe(specials)
    tokenizer = Qwen2Tokenizer(vocab=vocab, merges=merges, eos_token="<|im_end|>",
                               pad_token="<|endoftext|>", extra_special_tokens=named)
    return finish(tokenizer, specials)


def qwen_ids(tokenizer: Any) -> dict[str, Any]:
    ids = tokenizer.convert_tokens_to_ids
    return {"image_token_id": ids("<|image_pad|>"), "video_token_id": ids("<|video_pad|>"),
            "vision_start_token_id": ids("<|vision_start|>"), "vision_end_token_id": ids("<|vision_end|>")}


def qwen_rope(model_type: str) -> dict[str, Any]:
    # mrope_section splits head_dim/2 rotary frequencies into (time, height, width); the real [16, 24, 24] or
    # [24, 20, 20] assume head_dim 128 and must be rescaled to the tiny head_dim 16 (sum 8).
    rope = {"rope_type": "default", "rope_theta": 1_000_000.0, "mrope_section": [2, 3, 3]}
    return {"rope_parameters": {**rope, "mrope_interleaved": True} if model_type == "qwen3_vl_text" else rope}


def qwen_processor(processor_class: Any, video_class: Any, tokenizer: Any, patch_size: int, min_pixels: int,
                   max_pixels: int, template: str) -> Any:
    from transformers import Qwen2VLImageProcessor

    images = Qwen2VLImageProcessor(patch_size=patch_size, min_pixels=min_pixels, max_pixels=max_pixels)
    return processor_class(image_processor=images, tokenizer=tokenizer,
                           video_processor=video_class(patch_size=patch_size), chat_template=template)


def build_tiny() -> tuple[Any, Any, Any]:
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLProcessor, Qwen2VLVideoProcessor

    from pathbind_models.hf.tiny_parts import TEXT, text_config

    tokenizer = qwen_tokenizer(QWEN_SPECIALS, image_token="<|image_pad|>", video_token="<|video_pad|>")
    # max_pixels = 224²: a 224×224 image is 16×16 patches of 14 → 8×8 tokens after the 2×2 merge; larger ones shrink.
    processor = qwen_processor(Qwen2VLProcessor, Qwen2VLVideoProcessor, tokenizer, 14, 56 * 56, 224 * 224,
                               QWEN_TEMPLATE)
    vision = {"depth": 2, "embed_dim": 32, "hidden_size": TEXT["hidden_size"], "num_heads": 2, "mlp_ratio": 2}
    config = Qwen2VLConfig(text_config=text_config(tokenizer, "qwen2_vl_text", **qwen_rope("qwen2_vl_text")),
                           vision_config=vision, **qwen_ids(tokenizer))
    return Qwen2VLForConditionalGeneration, config, processor


FAMILY = ModelFamily("qwen2_vl", ("qwen2_vl",), layout, "per_mille", build_tiny, ImageGrid(8, 8))
