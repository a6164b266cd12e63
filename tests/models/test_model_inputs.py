"""What a checkpoint's processor takes, checked as data before the model is charged: its tokenizer's added tokens
in a question, and image sizes its image processor refuses (Qwen's aspect ratio) or blows up (CLIP's short-side
resize), read from the real processors of checkpoints with real tokenizer and processor files."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import lmms_eval, metric
from source_data import png
from transformers import AutoProcessor

from pathbind.model_inputs import MARKUP, declare, declared, markup_in, size_fault
from pathbind_models.hf.inputs import model_inputs

QWEN_REFUSES = "image size the model's processor refuses"
ENLARGED = "image the model's processor would enlarge past the pixel limit"
MARKUP_FAULT = "field 'question' holds a chat or image token of a model"


@pytest.fixture
def processor(realtok_model, request):
    """The real processor of a checkpoint (``qwen2_5_vl`` or ``llava``), declared as the run's model."""
    checkpoint = realtok_model(request.param)
    declare(model_inputs(AutoProcessor.from_pretrained(checkpoint), request.param))
    yield declared()
    declare(None)


@pytest.mark.parametrize("processor", ["qwen2_5_vl", "llava"], indirect=True)
def test_every_added_token_of_the_real_tokenizers_is_markup(processor):
    """The static rule, which data check applies with no model, covers every special token of both real
    tokenizers; the declared model adds the rest (Qwen's <tool_call>, an added token that is not special)."""
    special = {token for token in processor.reserved if not token.startswith("<tool_call") and
               not token.startswith("</tool_call")}
    assert special and all(MARKUP.fullmatch(token) for token in special), special - {
        token for token in special if MARKUP.fullmatch(token)}
    assert all(markup_in(f"Is there {token} here?") == token for token in processor.reserved)


@pytest.mark.parametrize(("processor", "size", "fault"), [
    ("qwen2_5_vl", (1, 20000), QWEN_REFUSES), ("qwen2_5_vl", (20000, 1), QWEN_REFUSES),
    ("qwen2_5_vl", (200, 1), None), ("qwen2_5_vl", (4000, 3000), None), ("qwen2_5_vl", (3, 3), None),
    ("llava", (1, 20000), ENLARGED), ("llava", (336, 50), None), ("llava", (4000, 3000), None),
], indirect=["processor"])
def test_image_sizes_follow_the_processors_own_rules(processor, size, fault):
    """Qwen's smart_resize refuses an aspect ratio of 200 or more (in its own words); CLIP resizes the short side
    to 336 first, so a 1x20000 image would be made 336x6,720,000 pixels before its centre crop."""
    found = size_fault(*size, limit=100_000_000)
    assert (found.reason if found else None) == fault
    if fault == QWEN_REFUSES:
        assert "absolute aspect ratio must be smaller than 200" in found.detail
    if fault == ENLARGED:
        assert "resized to 336x6720000" in found.detail


@pytest.mark.slow
def test_a_run_drops_what_the_models_processor_cannot_take_before_it_is_charged(tmp_path, realtok_model):
    """pathbind_hf on the real Qwen2.5-VL files: a 1x20000 image and a question holding <tool_call> (an added token
    of its tokenizer only) are faults of the data, in accounting, never the model's invalid answers."""
    folder = tmp_path / "data" / "pathbind_vqa"
    folder.mkdir(parents=True)
    (folder / "ok.png").write_bytes(png(40, (32, 24)))
    (folder / "thin.png").write_bytes(png(80, (20000, 1)))
    base = {"options": ["Gland", "Vessel"], "answer": "A", "dimension": "D1", "source": "s"}
    pd.DataFrame([{"id": "ok", "image": "ok.png", "question": "Which structure?", **base},
                  {"id": "thin", "image": "thin.png", "question": "Which structure?", **base},
                  {"id": "tool", "image": "ok.png", "question": "Which <tool_call> structure?", **base}]
                 ).to_parquet(folder / "test.parquet")
    result = lmms_eval(tmp_path, "pathbind_hf", "pathbind_vqa_image", "--model_args",
                       f"pretrained={realtok_model('qwen2_5_vl')},max_new_tokens=4,dtype=float32",
                       env={"PATHBIND_DATA": str(tmp_path / "data")})
    assert metric(result, "pathbind_vqa_image", "accounting") == {
        "rows": 3, "evaluated": 1, "dropped": {MARKUP_FAULT: 1, QWEN_REFUSES: 1}}
    samples = [json.loads(line) for path in result["out"].rglob("*_samples_pathbind_vqa_image.jsonl")
               for line in path.read_text().splitlines()]
    assert [sample["pathbind"]["id"] for sample in samples] == ["ok"]
    assert not any("the model could not answer" in str(sample["pathbind"]["reason"]) for sample in samples)
