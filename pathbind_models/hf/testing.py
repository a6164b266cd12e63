"""Tiny random checkpoints of every model family (``pathbind make-tiny-model``), saved like hub ones, for tests."""

from __future__ import annotations

from pathlib import Path

from pathbind_models.hf.families import FAMILIES, NAMES
from pathbind_models.hf.families.base import ImageGrid, ModelFamily

# transformers (and so torch) is imported inside the builders: the family registry stays cheap to import.


def make_tiny_model(family: str, out_dir: Path, seed: int = 0) -> Path:
    """Write a randomly initialised tiny ``family`` model, its tokenizer and processor to ``out_dir``.

    The folder loads with ``AutoProcessor``/``AutoModelForImageTextToText.from_pretrained`` offline, like a hub
    checkpoint; the same seed gives the same weights.
    """
    import torch

    make_model, config, processor = _family(family).build_tiny()
    torch.manual_seed(seed)
    model = make_model(config)
    out_dir = Path(out_dir)
    model.save_pretrained(out_dir)
    processor.save_pretrained(out_dir)
    return out_dir


def image_grid(family: str) -> ImageGrid:
    """The image-token layout a tiny ``family`` model's processor gives a 224×224 image."""
    return _family(family).tiny_grid


def _family(name: str) -> ModelFamily:
    found = [family for family in FAMILIES if family.name == name]
    if not found:
        raise ValueError(f"unknown tiny model family {name!r}; supported families: {', '.join(NAMES)}")
    return found[0]
