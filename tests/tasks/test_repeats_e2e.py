"""lmms-eval's ``--repeats 3`` through PathBind's VQA tasks: every answer is scored, the headlines stay those of the
first answer, and the ``repeats`` metric reports agreement and spread."""

from __future__ import annotations

import json
import socket

import pytest
from conftest import BIN, lmms_eval, metric, run

pytestmark = pytest.mark.slow
TASK = "pathbind_demo_vqa"


def test_sampled_repeats_disagree_and_deterministic_ones_agree(tmp_path):
    """pathbind_tiny sampling at temperature 5: three different answers on some items, three headline values; the
    blind control answers alike every time: full agreement, no spread. The sample log keeps all three answers and
    acc_image scores the first."""
    sampled = lmms_eval(tmp_path, "pathbind_tiny", TASK, "--repeats", "3", "--limit", "20",
                        "--gen_kwargs", "do_sample=True,temperature=5.0,max_new_tokens=8")
    result = metric(sampled, TASK, "repeats")
    assert result["n"] == 3 and set(result["agreement"]) == {"image", "text"}
    assert result["agreement"]["image"]["value"] < 100 and result["agreement"]["image"]["ci95"]["items"] == 10
    assert len(result["spread"]["acc_image"]["per_repeat"]) == 3 and "mg" in result["spread"]
    log = next(sampled["out"].rglob(f"*_samples_{TASK}.jsonl"))
    samples = [json.loads(line) for line in log.read_text().splitlines()]
    assert all(len(sample["pathbind"]["repeats"]) == 3 for sample in samples)
    first = [s["pathbind"]["repeats"][0]["correct"] for s in samples if s["pathbind"]["condition"] == "image"]
    assert metric(sampled, TASK, "acc_image") == pytest.approx(100 * sum(first) / len(first))
    assert result["spread"]["acc_image"]["per_repeat"][0] == metric(sampled, TASK, "acc_image")

    assert result["decoding"] == "sampled at temperature 5"
    steady = metric(lmms_eval(tmp_path, "pathbind_blind", TASK, "--repeats", "3", "--limit", "20"), TASK, "repeats")
    assert steady["decoding"] == "greedy"
    assert steady["agreement"]["image"]["value"] == steady["agreement"]["text"]["value"] == 100
    assert steady["spread"]["acc_image"]["sd"] == 0 and steady["spread"]["mg"]["per_repeat"] == [0.0, 0.0, 0.0]


def test_a_plain_run_reports_one_repeat(demo_blind):
    assert metric(demo_blind, TASK, "repeats") == {"n": 1}


def answers(result: dict) -> list[tuple[int, list[str]]]:
    log = next(result["out"].rglob(f"*_samples_{TASK}.jsonl"))
    return sorted((s["doc_id"], s["filtered_resps"]) for s in map(json.loads, log.read_text().splitlines()))


def test_a_temperature_alone_samples_the_same_answers_in_one_process_or_two(tmp_path):
    """--gen_kwargs temperature=5.0 without do_sample (the YAML says do_sample: false): pathbind_hf samples, as
    results.json records, and the N answers of every request are the same in one process at batch size 1 and in
    two torchrun processes at batch size 4 (each answer seeded by its task, document and repeat)."""
    args = ("--repeats", "3", "--limit", "12", "--gen_kwargs", "temperature=5.0,max_new_tokens=8")
    one = lmms_eval(tmp_path, "pathbind_tiny", TASK, *args)
    assert one["results"]["config"]["gen_kwargs"] == {"temperature": 5.0, "max_new_tokens": 8}
    assert metric(one, TASK, "repeats")["decoding"] == "sampled at temperature 5"
    assert metric(one, TASK, "repeats")["agreement"]["image"]["value"] < 100
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    launcher = [str(BIN / "torchrun"), "--nproc_per_node", "2", "--master_port", str(port), "-m", "lmms_eval"]
    two = lmms_eval(tmp_path, "pathbind_tiny", TASK, *args, "--batch_size", "4", launcher=launcher)
    assert answers(two) == answers(one) and len(answers(one)) == 12


def test_a_model_that_cannot_sample_refuses_a_temperature_in_words(tmp_path):
    """The blind control answers deterministically: a temperature is refused before any answer, naming the task and
    what to leave out, so that results.json never records a decoding that was not used."""
    for gen_kwargs, words in (("temperature=0.7", "BlindControlModel answers deterministically and cannot sample at "
                                                  "temperature 0.7"),
                              ("do_sample=True", "do_sample=True with temperature 0 names no temperature to sample")):
        done = run([str(BIN / "lmms_eval"), "--model", "pathbind_blind", "--tasks", TASK, "--limit", "2",
                    "--gen_kwargs", gen_kwargs, "--output_path", str(tmp_path / "out")], cwd=tmp_path)
        assert done.returncode == 1 and not (tmp_path / "out").exists()
        assert done.stderr.strip().splitlines()[-1].startswith(f"lmms_eval: error: ValueError: task {TASK}: {words}")
