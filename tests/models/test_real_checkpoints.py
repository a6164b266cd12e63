"""``pathbind_hf`` through lmms_eval on checkpoints with real tokenizers, processors and chat templates."""

from __future__ import annotations

import json
import math

import pytest
from conftest import lmms_eval, metric

from pathbind.wire import AttentionResponse

pytestmark = pytest.mark.slow
GRIDS = {"qwen2_5_vl": (9, 9), "llava": (24, 24)}  # the demo's 256×256 images: smart_resize to 252; CLIP to 336


@pytest.mark.parametrize("name", sorted(GRIDS))
def test_vqa_with_limit_and_grounding_run_on_real_files(tmp_path, realtok_model, name):
    """``--limit 4`` answers two whole VQA items with and without the image (the real templates put no image token
    in the text-only prompt), and every grounding item gets three maps on the real processor's grid."""
    result = lmms_eval(tmp_path, "pathbind_hf", "pathbind_demo_vqa,pathbind_demo_grounding", "--model_args",
                       f"pretrained={realtok_model(name)},max_new_tokens=4,dtype=float32", "--limit", "4")
    log = next(result["out"].rglob("*_samples_pathbind_demo_vqa.jsonl"))
    conditions = [json.loads(line)["pathbind"]["condition"] for line in log.read_text().splitlines()]
    assert conditions == ["image", "text", "image", "text"]
    assert math.isfinite(metric(result, "pathbind_demo_vqa", "acc_text"))
    assert math.isfinite(metric(result, "pathbind_demo_vqa", "mg"))
    assert metric(result, "pathbind_demo_grounding", "lost_items")["scored"] == 4
    log = next(result["out"].rglob("*_samples_pathbind_demo_grounding.jsonl"))
    for line in log.read_text().splitlines():
        response = AttentionResponse.decode(json.loads(line)["filtered_resps"])
        assert response.grid == GRIDS[name] and len(response.maps) == 3 and response.view_box == (0, 0, 256, 256)
