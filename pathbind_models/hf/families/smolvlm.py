"""SmolVLM: Idefics3's marked tiles and global view; no documented box frame; its tiny checkpoint."""

from __future__ import annotations

from typing import Any

from pathbind_models.hf.families.base import ImageGrid, ModelFamily
from pathbind_models.hf.families.idefics3 import IDEFICS3_TEMPLATE, IDEFICS_SPECIALS, layout

TEMPLATE = IDEFICS3_TEMPLATE.replace("<|begin_of_text|>", "<|im_start|>")


def build_tiny() -> tuple[Any, Any, Any]:
    from transformers import (
        SmolVLMConfig,
        SmolVLMForConditionalGeneration,
        SmolVLMImageProcessor,
        SmolVLMProcessor,
        SmolVLMVideoProcessor,
    )

    from pathbind_models.hf.tiny_parts import VISION, backend_tokenizer, byte_level_backend, text_config

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<video>", *IDEFICS_SPECIALS]
    named = {"fake_image_token": "<fake_token_around_image>", "image_token": "<image>",
             "end_of_utterance_token": "<end_of_utterance>", "global_image_token": "<global-img>"}
    tokenizer = backend_tokenizer(byte_level_backend(specials), specials, bos_token="<|im_start|>",
                                  eos_token="<end_of_utterance>", pad_token="<|endoftext|>", **named)
    # As Idefics3 (tiles of 112, 2×2 + global for 224 px) with SmolVLM's pixel shuffle 4: patches of 7 → 16×16 → 4×4.
    size, tile = {"longest_edge": 224}, {"longest_edge": 112}
    processor = SmolVLMProcessor(image_processor=SmolVLMImageProcessor(size=size, max_image_size=tile),
                                 tokenizer=tokenizer, video_processor=SmolVLMVideoProcessor(size=size,
                                                                                            max_image_size=tile),
                                 image_seq_len=16, chat_template=TEMPLATE)
    vision = {**VISION, "image_size": 112, "patch_size": 7}
    config = SmolVLMConfig(vision_config=vision, text_config=text_config(tokenizer, "llama"), scale_factor=4,
                           image_token_id=tokenizer.image_token_id)
    return SmolVLMForConditionalGeneration, config, processor


FAMILY = ModelFamily("smolvlm", ("smolvlm",), layout, None, build_tiny,
                     ImageGrid(4, 4, tiles=(2, 2), global_view=True))
