"""benchmarks/real_width.py: its text dimensions are Qwen2.5-0.5B's, and its smoke run measures every figure."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import torch
from conftest import OFFLINE

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "real_width.py"
sys.path.insert(0, str(SCRIPT.parent))
_spec = importlib.util.spec_from_file_location("real_width", SCRIPT)
assert _spec is not None and _spec.loader is not None
real_width = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(real_width)


def test_the_proxy_has_qwen2_5_0_5b_text_dimensions_and_about_1_3k_image_tokens():
    """Hidden 896, 24 layers, GQA 14/2, MLP 4,864 as published; the image gives 1,296 tokens; built on the meta
    device, the text model has Qwen2.5-0.5B's 494 M parameters (tied embeddings)."""
    from pathbind_models.hf.tiny_checkpoints import build_tiny

    text = real_width.TEXT_05B
    assert (text["hidden_size"], text["num_hidden_layers"], text["num_attention_heads"],
            text["num_key_value_heads"], text["intermediate_size"]) == (896, 24, 14, 2, 4864)
    head_dim = text["hidden_size"] // text["num_attention_heads"]
    assert 2 * sum(text["rope_parameters"]["mrope_section"]) == head_dim
    size = len(build_tiny("qwen2_5_vl")[2].tokenizer)
    adapter, side = real_width.gpu_scale.build("qwen2_5_vl", False, torch.device("meta"), torch.float32,
                                               real_width.dims(False, size))
    language = sum(p.numel() for p in adapter.model.model.language_model.parameters())
    assert language == 494_032_768  # Qwen2.5-0.5B's parameter count (embeddings tied to the output layer)
    image = real_width.gpu_scale.noise_image(side, 0)
    ids = adapter.processor(text=[adapter._prompt(1, "x")], images=[[image]], return_tensors="pt")["input_ids"]
    assert int((ids == adapter.config.image_token_id).sum()) == 1296


def test_smoke_run_reports_every_figure_and_its_equivalences_hold():
    done = subprocess.run([sys.executable, str(SCRIPT), "--smoke"], capture_output=True, text=True,
                          env={**os.environ, **OFFLINE}, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, done.stdout  # one JSON line; progress went to stderr
    result = json.loads(lines[0])
    assert result["benchmark"] == "real_width" and result["smoke"] is True
    for key in ("time_ratio_probe_vs_sdpa", "time_ratio_k_queries_vs_one_forward", "occlusion_speedup_auto_vs_1",
                "forward_s_sdpa", "grounding_one_forward_s"):
        assert result[key] > 0, key
    assert result["extra_peak_mb_probe"] >= 0 and isinstance(result["mem_ratio_eager_vs_probe"], float)
    assert result["image_tokens"] == 64 and result["grounding_failures"] == [] and result["errors"] == {}
    assert result["occlusion_max_abs_diff"] < 1e-4 and result["occlusion_scores_finite"]
    assert result["generation_lengths_exact"] and result["generation_tokens_per_s"]["1"] > 0
    assert result["machine"]["torch_threads"] >= 1 and len(result["machine"]["load_average_before"]) == 3
