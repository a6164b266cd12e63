"""Shared-prefix attention (one prefill per image, batched suffixes) equals each query's own forward, every family."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import OFFLINE
from PIL import Image

from pathbind_models.adapter import EntityAttention
from pathbind_models.hf.adapter import HFAdapter
from pathbind_models.hf.families import NAMES

TOLERANCE = 1e-5
# Three suffix lengths; the third query's entity is not in its text.
QUERIES = [("Look at the image and locate: nuclei with prominent nucleoli", "nuclei with prominent nucleoli"),
           ("Look at the image and locate: tumour cells", "tumour cells"),
           ("Look at the image and locate: stroma", "giraffe"),
           ("Look at the image and locate: the mitotic figure in the centre of the field",
            "the mitotic figure in the centre of the field")]


def noise(seed: int, width: int, height: int) -> Image.Image:
    return Image.fromarray((np.random.default_rng(seed).random((height, width, 3)) * 255).astype("uint8"))


def assert_same_as_unshared(adapter: HFAdapter, items: list, answers: list) -> None:
    """Every answer equals ``entity_attention`` of its query alone: maps to TOLERANCE, positions and inputs exactly;
    a failing query carries the error ``entity_attention`` raises."""
    assert [len(a) for a in answers] == [len(queries) for _, queries in items]
    for (image, queries), item_answers in zip(items, answers, strict=True):
        for (text, entity), got in zip(queries, item_answers, strict=True):
            try:
                want = adapter.entity_attention(image, text, entity, layers="all")
            except ValueError as exc:
                assert isinstance(got, ValueError) and str(got) == str(exc)
                continue
            assert isinstance(got, EntityAttention), got
            assert got.layers == want.layers and got.token_positions == want.token_positions
            assert got.image_token_positions == want.image_token_positions and got.view_box == want.view_box
            assert np.abs(got.map - want.map).max() <= TOLERANCE
            for layer in want.layers:
                assert np.abs(got.per_layer[layer] - want.per_layer[layer]).max() <= TOLERANCE, layer
            assert (got.global_map is None) == (want.global_map is None)
            if want.global_map is not None:
                assert np.abs(got.global_map - want.global_map).max() <= TOLERANCE
            assert sorted(got.inputs) == sorted(want.inputs)
            assert all(torch.equal(got.inputs[k], want.inputs[k]) for k in want.inputs)


@pytest.fixture(scope="module", params=NAMES)
def adapter(request, tiny_model) -> HFAdapter:
    return HFAdapter(str(tiny_model(request.param)))


def test_one_item_of_three_queries(adapter):
    """Three suffix lengths against one prefill of a non-square image."""
    items = [(noise(1, 300, 160), [QUERIES[0], QUERIES[1], QUERIES[3]])]
    assert_same_as_unshared(adapter, items, adapter.entity_attention_batch(items))


def test_items_of_different_sizes_in_one_batch_and_a_failing_query(adapter):
    """Prefixes of different lengths (left-padded together), a query in the middle that fails alone, and an item
    whose only query fails (no prefill for it)."""
    other_text = [("Where are the tumour cells?", "tumour cells"), ("Where is the stroma?", "stroma")]
    items = [(noise(1, 300, 160), QUERIES), (noise(2, 224, 224), other_text), (noise(3, 180, 400), QUERIES[1:]),
             (noise(4, 224, 224), [QUERIES[2]])]
    answers = adapter.entity_attention_batch(items)
    assert isinstance(answers[0][2], ValueError) and isinstance(answers[3][0], ValueError)
    assert_same_as_unshared(adapter, items, answers)


def test_chosen_layers_and_no_queries(adapter):
    items = [(noise(5, 200, 260), QUERIES[:2]), (noise(6, 224, 224), [])]
    answers = adapter.entity_attention_batch(items, layers="mid")
    assert answers[1] == []
    for (text, entity), got in zip(QUERIES[:2], answers[0], strict=True):
        want = adapter.entity_attention(image=items[0][0], text=text, entity=entity, layers="mid")
        assert isinstance(got, EntityAttention) and got.layers == want.layers
        assert np.abs(got.map - want.map).max() <= TOLERANCE


def test_gemma3_sliding_window_cache_drops_keys_outside_the_window(tiny_model, tmp_path):
    """A window shorter than the prompt: the sliding cache layers keep only the window's last keys, which hold part
    of the image block; the rows still equal the unshared forward's (0 on image tokens outside the window)."""
    folder = tmp_path / "gemma3_window"
    shutil.copytree(tiny_model("gemma3"), folder)
    config = json.loads((folder / "config.json").read_text())
    config["text_config"]["sliding_window"] = 24
    (folder / "config.json").write_text(json.dumps(config))
    adapter = HFAdapter(str(folder))
    items = [(noise(1, 300, 160), QUERIES), (noise(2, 224, 224), QUERIES[:2])]
    answers = adapter.entity_attention_batch(items)
    assert_same_as_unshared(adapter, items, answers)
    seen = [int((answers[1][1].per_layer[layer] > 0).sum(axis=(1, 2)).min()) for layer in answers[1][1].layers]
    assert 0 < min(seen) < max(seen) == answers[1][1].map.size  # sliding layers see part of the image, full all


@pytest.mark.parametrize("name", ["qwen2_5_vl", "llava"])
def test_real_tokenizer_checkpoints(realtok_model, name):
    adapter = HFAdapter(str(realtok_model(name)))
    items = [(noise(1, 300, 160), QUERIES), (noise(2, 224, 224), QUERIES[1:3])]
    assert_same_as_unshared(adapter, items, adapter.entity_attention_batch(items))


@pytest.mark.slow
def test_benchmark_smoke_run_prints_its_figures():
    """benchmarks/grounding_prefix.py --smoke: one JSON line with the ratios, item rates and an exact equivalence."""
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "grounding_prefix.py"
    done = subprocess.run([sys.executable, str(script), "--smoke"], capture_output=True, text=True,
                          env={**os.environ, **OFFLINE}, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    for key in ("time_ratio_k_queries_vs_one_forward", "time_ratio_unshared_vs_one_forward", "items_per_s_batch1",
                "items_per_s_batch8"):
        assert figures[key] > 0, key
    assert figures["max_abs_diff"] <= TOLERANCE
