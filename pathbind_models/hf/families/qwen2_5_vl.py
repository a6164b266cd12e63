"""Qwen2.5-VL: Qwen2-VL's one view of merged patches and chat template; boxes in pixels of the resized input."""

from __future__ import annotations

from pathbind_models.hf.families.base import ImageGrid, ModelFamily
from pathbind_models.hf.families.qwen2_vl import layout

FAMILY = ModelFamily("qwen2_5_vl", ("qwen2_5_vl",), layout, "input_pixel", ImageGrid(8, 8))
