"""Idefics3: ``<row_r_col_c>`` tiles, then a ``<global-img>`` view; no documented box frame; its tiny checkpoint."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

from pathbind_models.hf.families.base import ImageGrid, ModelFamily
from pathbind_models.hf.views import View, square_grid

if TYPE_CHECKING:
    import torch

_ROW_COL = re.compile(r"<row_(\d+)_col_(\d+)>")


def layout(config: Any, processor: Any, inputs: dict[str, torch.Tensor], positions: np.ndarray,
           image_size: tuple[int, int]) -> list[View]:
    """One view per run of image tokens (SmolVLM too), placed by the ``<row_r_col_c>`` marker before it; a run
    without one is the whole image."""
    starts = [0, *(np.flatnonzero(np.diff(positions) > 1) + 1)]
    ids = inputs["input_ids"][0]
    views = []
    for start, end in zip(starts, [*starts[1:], len(positions)], strict=True):
        marker = processor.tokenizer.convert_ids_to_tokens(int(ids[positions[start] - 1]))
        match = _ROW_COL.fullmatch(str(marker))
        tile = (int(match.group(1)) - 1, int(match.group(2)) - 1) if match else None
        views.append(View(int(start), square_grid(int(end - start)), tile))
    return views


IDEFICS_SPECIALS = ["<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>",
                    *(f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7))]
IDEFICS3_TEMPLATE = (  # the family's own chat template
    "<|begin_of_text|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)


def build_tiny() -> tuple[Any, Any, Any]:
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3ImageProcessor, Idefics3Processor

    from pathbind_models.hf.tiny_parts import VISION, backend_tokenizer, byte_level_backend, text_config

    specials = ["<|begin_of_text|>", "<|end_of_text|>", *IDEFICS_SPECIALS]
    tokenizer = backend_tokenizer(byte_level_backend(specials), specials, bos_token="<|begin_of_text|>",
                                  eos_token="<end_of_utterance>", pad_token="<|end_of_text|>", add_bos_token=True)
    # Real default: longest edge resized to 4 tiles of 364 (a 224 image becomes 4×4 tiles + global). Tiny: tiles of
    # 112 and a longest edge of 224 → 2×2 tiles + global; patches of 14 → 8×8, pixel shuffle 2 → 4×4 tokens each.
    images = Idefics3ImageProcessor(size={"longest_edge": 224}, max_image_size={"longest_edge": 112})
    processor = Idefics3Processor(image_processor=images, tokenizer=tokenizer, image_seq_len=16,
                                  chat_template=IDEFICS3_TEMPLATE)
    vision = {**VISION, "image_size": 112, "patch_size": 14}
    config = Idefics3Config(vision_config=vision, text_config=text_config(tokenizer, "llama"), scale_factor=2,
                            image_token_id=tokenizer.convert_tokens_to_ids("<image>"))
    return Idefics3ForConditionalGeneration, config, processor


FAMILY = ModelFamily("idefics3", ("idefics3",), layout, None, build_tiny,
                     ImageGrid(4, 4, tiles=(2, 2), global_view=True))
