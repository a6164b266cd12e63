"""Qwen2-VL: one view of merged patches (``image_grid_thw``); boxes in thousandths; its chat template."""

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


FAMILY = ModelFamily("qwen2_vl", ("qwen2_vl",), layout, "per_mille", ImageGrid(8, 8))
