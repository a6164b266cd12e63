"""Qwen2.5-VL: Qwen2-VL's one view of merged patches and chat template; boxes in pixels of the resized input; vision
blocks that hold the merged patches in attention-window order."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pathbind_models.hf.families.base import ImageGrid, ModelFamily
from pathbind_models.hf.families.qwen2_vl import layout

if TYPE_CHECKING:
    import numpy as np
    import torch


def window_order(config: Any, inputs: dict[str, torch.Tensor]) -> np.ndarray:
    """The merged-patch group each position of the vision blocks holds (transformers' own window index)."""
    from transformers.vision_utils import get_vision_window_index

    vision = config.vision_config
    index, _ = get_vision_window_index(inputs["image_grid_thw"], spatial_merge_size=vision.spatial_merge_size,
                                       window_size=vision.window_size, patch_size=vision.patch_size)
    return index.cpu().numpy()


FAMILY = ModelFamily("qwen2_5_vl", ("qwen2_5_vl",), layout, "input_pixel", ImageGrid(8, 8), vision_order=window_order)
