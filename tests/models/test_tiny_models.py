"""Tiny random models of the eight VLM families: offline reload, forward, generation, image-token layout, CLI."""

from __future__ import annotations

import filecmp

import numpy as np
import pytest
import torch
from PIL import Image
from transformers import AutoModelForImageTextToText, AutoProcessor

from pathbind.cli import main
from pathbind_models.hf.families import NAMES
from pathbind_models.hf.tiny_checkpoints import image_grid, make_tiny_model

PROMPT = "Look at the image and locate: nuclei with prominent nucleoli"
ENTITY = "nuclei with prominent nucleoli"


def image(seed: int) -> Image.Image:
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (224, 224, 3), dtype=np.uint8))


def chat_inputs(processor, picture: Image.Image | None) -> dict:
    content = [{"type": "image", "image": picture}] if picture is not None else []
    messages = [{"role": "user", "content": [*content, {"type": "text", "text": PROMPT}]}]
    return processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=True,
                                         return_tensors="pt")


def load(path):
    return AutoProcessor.from_pretrained(path), AutoModelForImageTextToText.from_pretrained(path).eval()


def runs(mask: torch.Tensor) -> list[int]:
    """Lengths of the maximal runs of True in a 1-D mask."""
    lengths, current = [], 0
    for value in [*mask.tolist(), False]:
        if value:
            current += 1
        elif current:
            lengths, current = [*lengths, current], 0
    return lengths


@pytest.mark.parametrize("family", NAMES)
def test_reloads_offline_and_generates_with_and_without_an_image(family, tiny_model):
    """from_pretrained loads the folder; forward and greedy generate run on image+text and on text only."""
    processor, model = load(tiny_model(family))
    config = model.config.get_text_config()
    assert (config.num_hidden_layers, config.num_attention_heads, config.num_key_value_heads) == (6, 4, 2)
    for picture in (image(0), None):
        inputs = chat_inputs(processor, picture)
        with torch.no_grad():
            logits = model(**inputs).logits
        assert logits.shape[:2] == inputs["input_ids"].shape and torch.isfinite(logits).all()
        out = model.generate(**inputs, max_new_tokens=3, min_new_tokens=3, do_sample=False)
        assert out.shape[1] == inputs["input_ids"].shape[1] + 3


@pytest.mark.parametrize("family", NAMES)
def test_image_tokens_follow_the_documented_grid(family, tiny_model):
    """A 224×224 image gets one run of rows×cols image tokens per documented grid (tiles, then the global view)."""
    processor, model = load(tiny_model(family))
    grid = image_grid(family)
    ids = chat_inputs(processor, image(0))["input_ids"][0]
    assert runs(ids == model.config.image_token_id) == [grid.rows * grid.cols] * grid.num_grids
    assert grid.num_tokens == int((ids == model.config.image_token_id).sum())


@pytest.mark.parametrize("family", NAMES)
def test_the_image_changes_the_output(family, tiny_model):
    """Two different images give different next-token logits (Gemma3's zero-initialised projection is fixed)."""
    processor, model = load(tiny_model(family))
    with torch.no_grad():
        first, second = (model(**chat_inputs(processor, image(seed))).logits[0, -1] for seed in (0, 1))
    assert (first - second).abs().max() > 1e-3


@pytest.mark.parametrize("family", NAMES)
def test_entity_tokens_have_offsets(family, tiny_model):
    """The fast tokenizer splits the locate prompt into words whose offsets cover the entity."""
    tokenizer = AutoProcessor.from_pretrained(tiny_model(family)).tokenizer
    encoded = tokenizer(PROMPT, return_offsets_mapping=True, add_special_tokens=False)
    start = PROMPT.index(ENTITY)
    entity = [(a, b) for a, b in encoded["offset_mapping"] if b > start]
    assert len(encoded["input_ids"]) >= 8 and len(entity) >= 4
    assert "".join(PROMPT[a:b] for a, b in entity).strip() == ENTITY


@pytest.mark.parametrize("family", NAMES)
def test_same_seed_gives_the_same_folder(family, tiny_model, tmp_path):
    """Rebuilding with seed 0 reproduces every file; seed 1 changes the weights only."""
    reference = tiny_model(family)
    again, other = make_tiny_model(family, tmp_path / "again"), make_tiny_model(family, tmp_path / "other", seed=1)
    files = sorted(path.name for path in reference.iterdir())
    assert filecmp.cmpfiles(reference, again, files, shallow=False)[0] == files
    assert filecmp.cmpfiles(reference, other, files, shallow=False)[1] == ["model.safetensors"]
    assert sum(path.stat().st_size for path in reference.iterdir()) < 5_000_000


def test_unknown_family_names_the_supported_ones(tmp_path):
    """An unknown family is a ValueError listing every supported family."""
    with pytest.raises(ValueError, match=r"supported families: qwen2_vl, qwen2_5_vl, .*, smolvlm$"):
        make_tiny_model("blip2", tmp_path)


def test_cli_writes_a_model_and_prints_its_grid(tmp_path, capsys):
    """`pathbind make-tiny-model` writes a loadable folder and reports the image grid of a 224×224 image."""
    assert main(["make-tiny-model", "idefics3", str(tmp_path / "tiny"), "--seed", "2"]) == 0
    printed = capsys.readouterr().out
    assert f"to {tmp_path / 'tiny'}" in printed
    assert "2×2 tiles + a global image, each 4×4 image tokens (80 in all)" in printed
    _, model = load(tmp_path / "tiny")
    assert type(model).__name__ == "Idefics3ForConditionalGeneration"
