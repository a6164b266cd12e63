"""Qwen3-VL: Qwen2-VL's one view of merged patches; boxes in thousandths; its chat template."""

from __future__ import annotations

from pathbind_models.hf.families.base import ImageGrid, ModelFamily
from pathbind_models.hf.families.qwen2_vl import QWEN_TEMPLATE, layout

QWEN3_TEMPLATE = QWEN_TEMPLATE.replace(
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}", "")  # Qwen3-VL has no default system prompt


FAMILY = ModelFamily("qwen3_vl", ("qwen3_vl",), layout, "per_mille", ImageGrid(8, 8))
