"""benchmarks/gpu_scale.py: its full-size dimensions are the published ones, and its smoke run holds end to end."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import OFFLINE
from realtok import REALTOK, skip_reason

from pathbind_models.hf.adapter import HFAdapter

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_scale.py"
_spec = importlib.util.spec_from_file_location("gpu_scale", SCRIPT)
assert _spec is not None and _spec.loader is not None
gpu_scale = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_scale)

MEASURES = ("forward", "grounding", "occlusion", "generation")


def smoke(*args: str) -> dict:
    done = subprocess.run([sys.executable, str(SCRIPT), "--smoke", *args], capture_output=True, text=True,
                          env={**os.environ, **OFFLINE}, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, done.stdout  # one JSON line; progress went to stderr
    assert "building the model" in done.stderr
    return json.loads(lines[0])


def _subset(expected: object, actual: object, where: str) -> None:
    if isinstance(expected, dict):
        assert isinstance(actual, dict), where
        for key, value in expected.items():
            _subset(value, actual.get(key), f"{where}.{key}")
    else:
        assert expected == actual, f"{where}: benchmark {expected!r}, published {actual!r}"


@pytest.mark.parametrize("family", list(gpu_scale.FULL))
def test_full_size_dimensions_are_the_published_ones(family):
    """Every dimension written in the benchmark equals the real config.json's, and the model it builds has exactly
    the real architecture's parameter count (so no written dimension is silently dropped) and image tokens."""
    from transformers import AutoConfig, AutoModelForImageTextToText

    if not (REALTOK / family / "config.json").is_file():
        pytest.skip(skip_reason())
    real = AutoConfig.from_pretrained(REALTOK / family)
    dims = gpu_scale.FULL[family]
    for key, value in dims["text"].items():
        _subset(value, getattr(real.get_text_config(), key), f"text.{key}")
    for key, value in dims["vision"].items():
        _subset(value, getattr(real.vision_config, key), f"vision.{key}")
    for key, value in dims["top"].items():
        _subset(value, getattr(real, key), key)

    adapter, side = gpu_scale.build(family, False, torch.device("meta"), torch.bfloat16)
    with torch.device("meta"):
        reference = AutoModelForImageTextToText.from_config(real)
    assert sum(p.numel() for p in adapter.model.parameters()) == sum(p.numel() for p in reference.parameters())
    image = gpu_scale.noise_image(side, 0)
    ids = adapter.processor(text=[adapter._prompt(1, "x")], images=[[image]], return_tensors="pt")["input_ids"]
    assert int((ids == adapter.config.image_token_id).sum()) == {"qwen2_5_vl": 1024, "llava": 576}[family]


def test_smoke_run_measures_every_row_and_its_equivalences_hold():
    result = smoke("--budget-s", "3600")  # a loaded machine must not turn into skipped measures
    assert result["benchmark"] == "gpu_scale" and result["smoke"] is True
    assert (result["device"], result["dtype"]) == ("cpu", "float32")
    assert result["torch"] == torch.__version__ and result["transformers"]
    tokens = gpu_scale.RUNS["smoke"]["tokens"]
    assert [(r["family"], r["tokens"]) for r in result["rows"]] == [(f, t) for f in gpu_scale.FULL for t in tokens]
    for row in result["rows"]:
        assert row["errors"] == {} and row["skipped"] == {}, row
        assert row["image_tokens"] == 64 and abs(row["sequence_tokens"] - row["tokens"]) <= 10
        # the probe's rows are softmax rows, equal to eager attention's head mean
        assert row["probe_rows_finite"] and row["probe_row_sum_max_dev"] <= 1e-5
        assert row["probe_vs_eager_max_abs_diff"] <= 1e-5
        assert row["time_ratio_probe_vs_sdpa"] > 0 and row["time_ratio_eager_vs_sdpa"] > 0
        assert row["peak_mb_probe"] is None and row["mem_ratio_eager_vs_probe"] is None  # no CUDA memory on a CPU
        # shared-prefix grounding gives the unshared maps
        assert row["grounding_failures"] == [] and row["grounding_max_abs_diff"] <= 1e-4
        assert row["grounding_items_per_s_shared"] > 0 and row["grounding_items_per_s_unshared"] > 0
        assert row["occlusion_images"] == 10 and row["occlusion_scores_finite"]
        assert row["occlusion_max_abs_diff"] <= 1e-4 and row["occlusion_speedup_auto_vs_1"] > 0
        assert row["generation_lengths_exact"]
        assert set(row["generation_tokens_per_s"]) == {"1", "8", "32"}
        assert all(v > 0 for v in row["generation_tokens_per_s"].values())


def test_a_spent_budget_skips_the_measures_with_the_reason():
    result = smoke("--families", "llava", "--tokens", "100", "--budget-s", "0")
    (row,) = result["rows"]
    assert (row["family"], row["tokens"]) == ("llava", 100)
    assert sorted(row["skipped"]) == sorted(MEASURES)
    assert all("--budget-s 0" in reason for reason in row["skipped"].values())


def test_an_adapter_around_a_built_model_answers_as_the_loaded_one(tiny_model):
    """``HFAdapter.from_model`` (what the benchmark builds on) switches an SDPA model to the probe and then gives
    the attention map and option scores of ``HFAdapter(path)``."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    path = str(tiny_model("qwen2_vl"))
    loaded = HFAdapter(path)
    built = HFAdapter.from_model(AutoModelForImageTextToText.from_pretrained(path, attn_implementation="sdpa"),
                                 AutoProcessor.from_pretrained(path), "built qwen2_vl", occlusion_batch=2)
    assert built.config._attn_implementation == loaded.config._attn_implementation
    assert (built.family, built.occlusion_batch, built.pretrained) == (loaded.family, 2, "built qwen2_vl")
    image = gpu_scale.noise_image(224, 0)
    text = "Look at the image and locate: nuclei with prominent nucleoli"
    a, b = (x.entity_attention(image, text, "nuclei with prominent nucleoli", layers="all") for x in (loaded, built))
    np.testing.assert_allclose(a.map, b.map, atol=1e-6)
    np.testing.assert_allclose(loaded.option_logprobs([image], text, ["Yes", "No"]),
                               built.option_logprobs([image], text, ["Yes", "No"]), atol=1e-5)
