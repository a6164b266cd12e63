"""SmolVLM: Idefics3's marked tiles and global view; no documented box frame; its chat template."""

from __future__ import annotations

from pathbind_models.hf.families.base import ImageGrid, ModelFamily
from pathbind_models.hf.families.idefics3 import IDEFICS3_TEMPLATE, layout

TEMPLATE = IDEFICS3_TEMPLATE.replace("<|begin_of_text|>", "<|im_start|>")


FAMILY = ModelFamily("smolvlm", ("smolvlm",), layout, None, ImageGrid(4, 4, tiles=(2, 2), global_view=True))
