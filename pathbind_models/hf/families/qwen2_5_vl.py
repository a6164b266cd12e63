"""Qwen2.5-VL: Qwen2-VL's one view of merged patches; boxes in pixels of the resized input; its tiny checkpoint."""

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


def build_tiny() -> tuple[Any, Any, Any]:
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
        Qwen2VLVideoProcessor,
    )

    from pathbind_models.hf.tiny_parts import TEXT, text_config

    tokenizer = qwen_tokenizer(QWEN_SPECIALS, image_token="<|image_pad|>", video_token="<|video_pad|>")
    processor = qwen_processor(Qwen2_5_VLProcessor, Qwen2VLVideoProcessor, tokenizer, 14, 56 * 56, 224 * 224,
                               QWEN_TEMPLATE)
    # window_size 112 px = 4×4 merged tokens: the 8×8 grid has 4 attention windows; block 1 attends globally.
    vision = {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "window_size": 112,
              "out_hidden_size": TEXT["hidden_size"], "fullatt_block_indexes": [1]}
    config = Qwen2_5_VLConfig(text_config=text_config(tokenizer, "qwen2_5_vl_text", **qwen_rope("qwen2_5_vl_text")),
                              vision_config=vision, **qwen_ids(tokenizer))
    return Qwen2_5_VLForConditionalGeneration, config, processor


FAMILY = ModelFamily("qwen2_5_vl", ("qwen2_5_vl",), layout, "input_pixel", build_tiny, ImageGrid(8, 8))
