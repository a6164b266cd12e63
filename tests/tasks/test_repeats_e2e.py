"""lmms-eval's ``--repeats 3`` through PathBind's VQA tasks: every answer is scored, the headlines stay those of the
first answer, and the ``repeats`` metric reports agreement and spread."""

from __future__ import annotations

import json

import pytest
from conftest import lmms_eval, metric

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

    steady = metric(lmms_eval(tmp_path, "pathbind_blind", TASK, "--repeats", "3", "--limit", "20"), TASK, "repeats")
    assert steady["agreement"]["image"]["value"] == steady["agreement"]["text"]["value"] == 100
    assert steady["spread"]["acc_image"]["sd"] == 0 and steady["spread"]["mg"]["per_repeat"] == [0.0, 0.0, 0.0]


def test_a_plain_run_reports_one_repeat(demo_blind):
    assert metric(demo_blind, TASK, "repeats") == {"n": 1}
