"""InternVL: a row-major canvas of tiles, then a thumbnail; boxes in thousandths; its tiny checkpoint."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pathbind_models.hf.families.base import ImageGrid, ModelFamily
from pathbind_models.hf.families.qwen2_vl import QWEN_SPECIALS, qwen_tokenizer
from pathbind_models.hf.views import View, square_grid

if TYPE_CHECKING:
    import numpy as np
    import torch


def layout(config: Any, processor: Any, inputs: dict[str, torch.Tensor], positions: np.ndarray,
           image_size: tuple[int, int]) -> list[View]:
    """The columns×rows tiles ``crop_to_patches`` cut, row-major, then a thumbnail of the whole image; one view when
    the image fits one tile."""
    from transformers.models.got_ocr2.image_processing_got_ocr2 import get_optimal_tiled_canvas

    tiles = len(inputs["pixel_values"])
    per_tile = len(positions) // tiles
    if tiles == 1:
        return [View(0, square_grid(per_tile), None)]
    images = processor.image_processor
    size = images.size if isinstance(images.size, dict) else vars(images.size)
    width, height = image_size
    columns, rows = get_optimal_tiled_canvas((height, width), (size["height"], size["width"]),
                                             images.min_patches, images.max_patches)
    if columns * rows != tiles - 1:
        raise ValueError(f"InternVL gave {tiles} tiles, expected {columns}×{rows} plus a thumbnail")
    grid = square_grid(per_tile)
    views = [View(i * per_tile, grid, divmod(i, columns)) for i in range(tiles - 1)]
    return [*views, View((tiles - 1) * per_tile, grid, None)]


TEMPLATE = (  # the family's own chat template
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' %}{{ '<IMG_CONTEXT>\n' }}{% elif content['type'] == 'video' %}"
    "{{ '<video>\n' }}{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}{% endfor %}{% endif %}"
    "{{ '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def build_tiny() -> tuple[Any, Any, Any]:
    from transformers import (
        GotOcr2ImageProcessor,
        InternVLConfig,
        InternVLForConditionalGeneration,
        InternVLProcessor,
        InternVLVideoProcessor,
    )

    from pathbind_models.hf.tiny_parts import VISION, text_config

    named = {"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>",
             "video_token": "<video>"}
    tokenizer = qwen_tokenizer(QWEN_SPECIALS[:3] + list(named.values()), **named)
    # 224 px tiles, patches of 14 → 16×16, pixel shuffle 0.5 → 8×8 tokens per tile. The processor crops to tiles by
    # default; a square image keeps one tile (no thumbnail), other aspect ratios get several tiles + a thumbnail.
    size = {"height": 224, "width": 224}
    processor = InternVLProcessor(image_processor=GotOcr2ImageProcessor(size=size), tokenizer=tokenizer,
                                  video_processor=InternVLVideoProcessor(size=size), image_seq_length=64,
                                  chat_template=TEMPLATE)
    vision = {**VISION, "image_size": 224, "patch_size": 14}
    config = InternVLConfig(vision_config=vision, text_config=text_config(tokenizer, "qwen2"),
                            image_token_id=tokenizer.context_image_token_id, image_seq_length=64)
    return InternVLForConditionalGeneration, config, processor


FAMILY = ModelFamily("internvl", ("internvl",), layout, "per_mille", build_tiny, ImageGrid(8, 8))
