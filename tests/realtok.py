"""Tiny random-weight checkpoints that carry a real checkpoint's tokenizer, processor and chat template.

``../shared/realtok/<name>/`` holds the non-weight files of a hub checkpoint byte for byte. The builder keeps
its config's vocabulary, special-token and image-token ids, patch and merge sizes and vision structure, shrinks
the layers and widths, saves random weights with ``save_pretrained`` and copies every other file in unchanged,
so ``from_pretrained`` on the folder takes exactly the path a downloaded checkpoint takes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from pathbind_models.hf.tiny_parts import TEXT

REALTOK = Path(__file__).resolve().parents[2] / "shared" / "realtok"
NAMES = ("qwen2_5_vl", "llava")

# The tiny families' decoder (six layers, GQA 4 query heads over 2 KV heads); the real context length stays.
_TEXT = {key: value for key, value in TEXT.items() if key != "max_position_embeddings"}


def available() -> bool:
    return all((REALTOK / name / "config.json").is_file() for name in NAMES)


def _shrink(name: str, config: dict[str, Any]) -> dict[str, Any]:
    if name == "qwen2_5_vl":
        # The real 7B config keeps its text settings at the top level; head_dim 16 needs mrope_section summing to 8.
        vision = {**config["vision_config"], "depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2,
                  "out_hidden_size": _TEXT["hidden_size"], "fullatt_block_indexes": [1]}
        return {**config, **_TEXT, "max_window_layers": 6, "vision_config": vision,
                "rope_scaling": {**config["rope_scaling"], "mrope_section": [2, 3, 3]}}
    if name == "llava":
        text = {**config["text_config"], **_TEXT}
        vision = {**config["vision_config"], "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2,
                  "num_hidden_layers": 2, "projection_dim": 32}
        return {**config, "text_config": text, "vision_config": vision}
    raise ValueError(f"no real files for {name!r}; known: {', '.join(NAMES)}")


def make_realtok_model(name: str, out_dir: Path, seed: int = 0) -> Path:
    """Write a tiny random model with ``name``'s real non-weight files to ``out_dir``."""
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText

    source = REALTOK / name
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    shrunk = out_dir / "config.json"
    shrunk.write_text(json.dumps(_shrink(name, json.loads((source / "config.json").read_text()))))
    config = AutoConfig.from_pretrained(out_dir)
    torch.manual_seed(seed)
    model = AutoModelForImageTextToText.from_config(config, dtype=torch.float32)
    model.save_pretrained(out_dir)
    for path in source.iterdir():  # the real generation_config.json replaces the one save_pretrained wrote
        if path.name not in ("config.json", "README.md"):
            shutil.copy(path, out_dir / path.name)
    return out_dir
