"""``pathbind_demo_faithfulness`` through lmms-eval: the protocol says "yes" for the positive control, "no" for the
blind one, and runs the real Hugging Face adapter path on a tiny checkpoint."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import lmms_eval, metric

import pathbind_tasks
from pathbind_tasks.common.faithfulness_records import NO_CAUSAL_SIGNAL

pytestmark = pytest.mark.slow
TASK = "pathbind_demo_faithfulness"
TASKS_DIR = Path(pathbind_tasks.__file__).parent


def test_positive_control_uses_the_image_and_its_attention_tracks_causal_importance(demo_control):
    """rho > 0.3, causal AMiM > 0.2 and above the box's area share, every interval above its null."""
    ci = metric(demo_control, TASK, "faith_ci")
    assert metric(demo_control, TASK, "attn_occlusion_rho") > 0.3 and ci["attn_occlusion_rho"]["low"] > 0
    assert metric(demo_control, TASK, "causal_amim") > 0.2
    assert ci["causal_amim_minus_area_share"]["low"] > 0 and ci["attn_amim_minus_area_share"]["low"] > 0
    assert ci["attn_occlusion_rho_minus_attn_occlusion_rho_null"]["low"] > 0
    tests = metric(demo_control, TASK, "perm_tests")
    assert tests["attn_occlusion_rho>attn_occlusion_rho_null"]["p"] < 0.001
    assert tests["causal_amim>causal_amim_null"]["p"] < 0.001
    assert set(tests["causal_amim>causal_amim_null"]["by_group"]) == {"atypia", "dab", "fat", "lymphocytes"}
    assert metric(demo_control, TASK, "verdict")["image"] == "uses the image"
    assert metric(demo_control, TASK, "verdict")["attention"] == "attention tracks causal importance"
    assert metric(demo_control, TASK, "faith_lost") == {"items": 24, "scored": 24}
    boxes = metric(demo_control, TASK, "control_boxes")["causal"]
    assert boxes["true"] > max(boxes["shifted"], boxes["far"], boxes["random_size"])
    assert metric(demo_control, TASK, "insertion_auc") > metric(demo_control, TASK, "deletion_auc")


def test_blind_control_does_not_use_the_image(demo_blind):
    """causal_l1 is exactly 0, causal AMiM is NaN with its reason counted, the answer never changes without it."""
    assert metric(demo_blind, TASK, "causal_l1") == 0
    assert math.isnan(metric(demo_blind, TASK, "causal_amim"))
    assert metric(demo_blind, TASK, "faith_lost")[f"causal_amim: {NO_CAUSAL_SIGNAL}"] == 24
    assert metric(demo_blind, TASK, "text_agreement") == 1.0
    verdict = metric(demo_blind, TASK, "verdict")
    assert verdict["image"] == "does not use the image"
    assert verdict["attention"] == "attention does not track causal importance"


def test_hf_adapter_answers_occlusion_requests(tmp_path, tiny_model):
    """pathbind_hf on a tiny Qwen2-VL: every item is scored from real forwards (random weights still move the
    margin a little), and attention on its native 8x8 grid is resampled to the task's grid."""
    result = lmms_eval(tmp_path, "pathbind_hf", TASK, "--model_args",
                       f"pretrained={tiny_model('qwen2_vl')},max_new_tokens=4", "--limit", "2")
    assert metric(result, TASK, "faith_lost")["items"] == 2
    assert metric(result, TASK, "causal_l1") > 0
    assert -1 <= metric(result, TASK, "attn_occlusion_rho") <= 1
    assert metric(result, TASK, "verdict")["image"] in {"uses the image", "does not use the image"}
