"""The supported model families, one module each, as one registry (see :class:`base.ModelFamily`)."""

from __future__ import annotations

from typing import Any

from pathbind_models.hf.families import gemma3, idefics3, internvl, llava, qwen2_5_vl, qwen2_vl, qwen3_vl, smolvlm
from pathbind_models.hf.families.base import ModelFamily

FAMILIES: tuple[ModelFamily, ...] = tuple(
    module.FAMILY for module in (qwen2_vl, qwen2_5_vl, qwen3_vl, llava, internvl, gemma3, idefics3, smolvlm))
NAMES = tuple(family.name for family in FAMILIES)


def family_of(config: Any, pretrained: str) -> ModelFamily:
    """The family of a checkpoint's config; ValueError naming the supported families otherwise."""
    for family in FAMILIES:
        if config.model_type in family.model_types:
            return family
    raise ValueError(f"{pretrained}: model type {config.model_type!r} is not supported by pathbind_hf "
                     f"(supported families: {', '.join(NAMES)})")
