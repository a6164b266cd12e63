"""``lmms_eval --model pathbind_hf`` on a tiny checkpoint: VQA answers and grounding maps from one model."""

from __future__ import annotations

import json
import socket

import pytest
from conftest import BIN, lmms_eval, metric

from pathbind.wire import AttentionResponse

pytestmark = pytest.mark.slow
TASKS = "pathbind_demo_vqa,pathbind_demo_grounding"


@pytest.fixture(scope="module")
def checkpoint(tiny_model):
    return tiny_model("qwen2_vl")


def run(tmp_path, checkpoint, batch_size: int) -> dict:
    return lmms_eval(tmp_path, "pathbind_hf", TASKS, "--model_args", f"pretrained={checkpoint},max_new_tokens=6",
                     "--batch_size", str(batch_size), "--limit", "4")


def samples(result: dict, task: str) -> list[dict]:
    log = next(result["out"].rglob(f"*_samples_{task}.jsonl"))
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.fixture(scope="module")
def single(tmp_path_factory, checkpoint):
    return run(tmp_path_factory.mktemp("hf1"), checkpoint, 1)


def test_vqa_and_grounding_run_through_lmms_eval(single):
    """Both task kinds score: VQA answers are generated (random weights: mostly unparseable), every grounding
    item gets three maps on the model's 8x8 grid, and each sample log line stays under 50 KB."""
    assert all(sample["filtered_resps"] for sample in samples(single, "pathbind_demo_vqa"))  # "" marks a failure
    assert 0 <= metric(single, "pathbind_demo_vqa", "acc_image") <= 100
    assert metric(single, "pathbind_demo_grounding", "lost_items")["scored"] == 4
    assert 0 < metric(single, "pathbind_demo_grounding", "eff_support") <= 1
    layers = metric(single, "pathbind_demo_grounding", "layer_sweep")
    assert sorted(layers) == ["all", "deep", "mid", "shallow"]
    for sample in samples(single, "pathbind_demo_grounding"):
        response = AttentionResponse.decode(sample["filtered_resps"])
        assert response.grid == (8, 8) and len(response.maps) == 3
        ninths = {f"ninth_{k}": [layer] for k, layer in enumerate((0, 0, 1, 2, 2, 3, 4, 4, 5), start=1)}
        assert response.layers == {"shallow": [0, 1], "mid": [2, 3], "deep": [4, 5], "all": [0, 1, 2, 3, 4, 5],
                                   **ninths}
        assert list(response.maps[0]) == list(response.layers) and [list(m) for m in response.maps[1:]] == [["mid"]] * 2
        assert len(json.dumps(sample)) < 50_000


def test_batch_size_two_gives_the_batch_one_answers(single, tmp_path, checkpoint):
    batched = run(tmp_path, checkpoint, 2)
    for task in ("pathbind_demo_vqa", "pathbind_demo_grounding"):
        answers = [(s["doc_id"], s["filtered_resps"]) for s in samples(batched, task)]
        assert answers == [(s["doc_id"], s["filtered_resps"]) for s in samples(single, task)], task


def test_two_processes_give_the_one_process_results(single, tmp_path, checkpoint):
    """torchrun strides the items across two ranks, each with its own copy of the model; gathered metrics match."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    launcher = [str(BIN / "torchrun"), "--nproc_per_node", "2", "--master_port", str(port), "-m", "lmms_eval"]
    distributed = lmms_eval(tmp_path, "pathbind_hf", TASKS, "--model_args", f"pretrained={checkpoint},max_new_tokens=6",
                            "--limit", "4", launcher=launcher)
    for task in ("pathbind_demo_vqa", "pathbind_demo_grounding"):
        assert distributed["results"]["results"][task] == single["results"]["results"][task], task
