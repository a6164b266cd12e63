"""Qwen3-VL: Qwen2-VL's one view of merged patches; boxes in thousandths; its tiny checkpoint."""

from __future__ import annotations

from typing import Any

from pathbind_models.hf.families.base import ImageGrid, ModelFamily
from pathbind_models.hf.families.qwen2_vl import (
    QWEN_SPECIALS,
    QWEN_TEMPLATE,
    layout,
    qwen_ids,
    qwen_processor,
    qwen_rope,
    qwen_tokenizer,
)

QWEN3_TEMPLATE = QWEN_TEMPLATE.replace(
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}", "")  # Qwen3-VL has no default system prompt


def build_tiny() -> tuple[Any, Any, Any]:
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration, Qwen3VLProcessor, Qwen3VLVideoProcessor

    from pathbind_models.hf.tiny_parts import TEXT, text_config

    tokenizer = qwen_tokenizer(QWEN_SPECIALS, image_token="<|image_pad|>", video_token="<|video_pad|>")
    # Patches of 16 merged 2×2: factor 32. The real min_pixels 256² upscales a 224×224 image to 256 → 8×8 tokens;
    # max_pixels = min_pixels keeps every image at about that size.
    processor = qwen_processor(Qwen3VLProcessor, Qwen3VLVideoProcessor, tokenizer, 16, 256 * 256, 256 * 256,
                               QWEN3_TEMPLATE)
    vision = {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "patch_size": 16,
              "out_hidden_size": TEXT["hidden_size"], "num_position_embeddings": 64, "deepstack_visual_indexes": [0]}
    text = text_config(tokenizer, "qwen3_vl_text", head_dim=16, **qwen_rope("qwen3_vl_text"))
    config = Qwen3VLConfig(text_config=text, vision_config=vision, **qwen_ids(tokenizer))
    return Qwen3VLForConditionalGeneration, config, processor


FAMILY = ModelFamily("qwen3_vl", ("qwen3_vl",), layout, "per_mille", build_tiny, ImageGrid(8, 8))
