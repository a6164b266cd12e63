"""LLaVA-1.5: one square view (the CLS token dropped); no documented box frame; its chat template."""

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


FAMILY = ModelFamily("llava", ("llava",), square_layout, None, ImageGrid(8, 8))
