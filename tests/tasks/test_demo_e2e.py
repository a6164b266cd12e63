"""The demo end to end through lmms-eval's CLI, Python API and torchrun: the controls must be told apart."""

from __future__ import annotations

import json
import math
import socket
import sys

import pytest
from conftest import BIN, lmms_eval, metric, run

pytestmark = pytest.mark.slow
VQA_TASKS = ("pathbind_demo_vqa", "pathbind_demo_yesno")


@pytest.mark.parametrize("task", VQA_TASKS)
def test_positive_control_gains_from_the_image(demo_control, task):
    """pathbind_control reads the pixels: MG >= 30 points, near-perfect with the image, no invalid answers."""
    assert metric(demo_control, task, "mg") >= 30
    assert metric(demo_control, task, "acc_image") >= 90
    assert metric(demo_control, task, "invalid_rate") == 0


@pytest.mark.parametrize("task", VQA_TASKS)
def test_blind_control_gains_nothing(demo_blind, task):
    """pathbind_blind never looks: |MG| <= 5 points (exactly 0, since its answers ignore the image)."""
    assert abs(metric(demo_blind, task, "mg")) <= 5
    assert metric(demo_blind, task, "acc_image") < 75


@pytest.mark.parametrize("condition", ["blank", "swap_same", "swap_cross", "blur_16"])
def test_positive_control_fails_when_the_image_is_ablated(demo_control, condition):
    """Blank, swapped or strongly blurred images take the control's accuracy down by at least 50 points."""
    assert metric(demo_control, "pathbind_demo_vqa_ablation", f"drop_{condition}") >= 50


@pytest.mark.parametrize("condition", ["blank", "swap_same", "swap_cross", "blur_2", "blur_4", "blur_8", "blur_16"])
def test_blind_control_is_unaffected_by_ablations(demo_blind, condition):
    """The blind control's accuracy does not move under any ablation."""
    assert abs(metric(demo_blind, "pathbind_demo_vqa_ablation", f"drop_{condition}")) <= 5


def test_the_reliance_measures_separate_the_controls(demo_control, demo_blind):
    """Visual Reliance Score and Image Sensitivity (arXiv 2603.03437): the control relies on the image, with the
    whole interval above 0; the blind control's answers never change, so every answer is image-invariant."""
    control = metric(demo_control, "pathbind_demo_vqa_ablation", "reliance")
    blind = metric(demo_blind, "pathbind_demo_vqa_ablation", "reliance")
    for swap in ("swap_same", "swap_cross"):
        assert control["vrs"][swap]["value"] >= 50 and control["vrs"][swap]["ci95"]["low"] > 0
        assert abs(blind["vrs"][swap]["value"]) <= 5
    for condition in ("blank", "swap_same", "swap_cross"):
        assert control["image_sensitivity"][condition]["value"] >= 50
        assert blind["image_sensitivity"][condition]["value"] == 0
    assert blind["invariant"]["value"] == 100 and control["invariant"]["value"] <= 50
    assert blind["invariant"]["conditions"] == ["blank", "swap_same", "swap_cross"]
    text_only = metric(demo_control, "pathbind_demo_vqa", "reliance")
    assert list(text_only) == ["image_sensitivity"] and list(text_only["image_sensitivity"]) == ["text"]


def test_positive_control_localises_what_it_is_asked_about(demo_control):
    """The control's evidence maps overlap the named quadrant and change with the expression."""
    assert metric(demo_control, "pathbind_demo_grounding", "attn_iou") >= 0.5
    assert metric(demo_control, "pathbind_demo_grounding", "cross_query_r") <= 0.5
    interval = metric(demo_control, "pathbind_demo_grounding", "attn_ci")["attn_iou"]
    low, high = interval["low"], interval["high"]
    assert 0.5 <= low <= metric(demo_control, "pathbind_demo_grounding", "attn_iou") <= high
    assert metric(demo_control, "pathbind_demo_grounding", "lost_items") == {"items": 24, "scored": 24}


def test_overlap_controls_separate_the_controls(demo_control, demo_blind):
    """Seed 004's controlled overlap: the control's attention beats the shifted, far and random-size boxes with
    Holm-adjusted p below 0.05; the blind control's uniform map has no attended region, so nothing is tested."""
    control = metric(demo_control, "pathbind_demo_grounding", "overlap_controls")["groups"]["mid"]
    assert all(test["delta"] > 0.2 and test["p_holm"] < 0.05 for test in control["tests"].values())
    blind = metric(demo_blind, "pathbind_demo_grounding", "overlap_controls")["groups"]["mid"]
    assert all(test["n"] == 0 and math.isnan(test["p"]) for test in blind["tests"].values())


def test_blind_control_attends_everywhere_and_localises_nothing(demo_blind):
    """A uniform map has full effective support; it cannot localise, so IoU is NaN with the reason counted."""
    assert metric(demo_blind, "pathbind_demo_grounding", "eff_support") >= 0.99
    assert math.isnan(metric(demo_blind, "pathbind_demo_grounding", "attn_iou"))
    lost = metric(demo_blind, "pathbind_demo_grounding", "lost_items")
    assert lost["scored"] == 0 and lost["iou: attention map is constant after smoothing"] == 24


def test_dimensions_and_confidence_intervals_are_reported(demo_control):
    """by_dimension has D1-D6 with 10 items each; ci95 brackets acc_image and mg."""
    table = metric(demo_control, "pathbind_demo_vqa", "by_dimension")
    assert sorted(table) == [f"D{i}" for i in range(1, 7)] and {row["n"] for row in table.values()} == {10}
    ci = metric(demo_control, "pathbind_demo_vqa", "ci95")
    assert ci["mg"]["low"] <= metric(demo_control, "pathbind_demo_vqa", "mg") <= ci["mg"]["high"]
    assert ci["mg"]["low"] > 30 and ci["mg"]["cluster"] == "image" and ci["mg"]["items"] == 60
    assert set(ci["by_dimension"]) == set(table) and ci["by_dimension"]["D1"]["acc_image"]["items"] == 10
    # 60 of 60 right is Clopper–Pearson's [94.0, 100], not the certainty [100, 100]
    assert 93 < ci["acc_image"]["low"] < 95 and ci["acc_image"]["high"] == 100 and ci["acc_image"]["warning"] == ""
    assert ci["by_dimension"]["D1"]["mg"]["warning"] == "only 10 image clusters (< 20)"
    assert ci["by_dimension_adjustment"].startswith("none: each of the 18 per-dimension intervals holds 95% on its own")


@pytest.mark.parametrize("task", VQA_TASKS)
def test_the_reported_metrics_are_those_of_the_logged_answers(demo_control, task):
    """Recomputed from the sample log (one record per item and condition): accuracy under each condition, their
    difference (every item is answered in both) and the invalid share equal what results.json reports."""
    log = next(demo_control["out"].rglob(f"*_samples_{task}.jsonl"))
    records = [json.loads(line)["pathbind"] for line in log.read_text().splitlines()]
    assert {"id", "condition", "parsed", "valid", "correct", "reference"} <= set(records[0])
    correct = {c: {r["id"]: r["correct"] for r in records if r["condition"] == c} for c in ("image", "text")}
    assert correct["image"].keys() == correct["text"].keys() and len(records) == 2 * len(correct["image"])
    acc = {c: 100 * sum(answers.values()) / len(answers) for c, answers in correct.items()}
    assert metric(demo_control, task, "acc_image") == pytest.approx(acc["image"])
    assert metric(demo_control, task, "acc_text") == pytest.approx(acc["text"])
    assert metric(demo_control, task, "mg") == pytest.approx(acc["image"] - acc["text"])
    assert metric(demo_control, task, "invalid_rate") == pytest.approx(100 * sum(not r["valid"] for r in records)
                                                                  / len(records))


def test_every_row_of_every_demo_task_is_evaluated(demo_control):
    """The accounting metric of each task: all rows read, all evaluated, none dropped."""
    tasks = {task: figures for task, figures in demo_control["results"]["results"].items()
             if "accounting,none" in figures}
    assert len(tasks) >= 5
    for task, figures in tasks.items():
        accounting = figures["accounting,none"]
        assert accounting["rows"] == accounting["evaluated"] > 0 and accounting["dropped"] == {}, task


def test_two_processes_give_exactly_the_one_process_metrics(demo_control, tmp_path):
    """torchrun --nproc_per_node 2 strides docs across ranks; gathered metrics equal the single-process run."""
    with socket.socket() as probe:  # a free port for the rendezvous
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    launcher = [str(BIN / "torchrun"), "--nproc_per_node", "2", "--master_port", str(port), "-m", "lmms_eval"]
    distributed = lmms_eval(tmp_path, "pathbind_control", "pathbind_demo", launcher=launcher)
    for task, results in distributed["results"]["results"].items():
        assert results == demo_control["results"]["results"][task], task


def test_python_api_runs_the_demo(tmp_path):
    """lmms_eval.evaluator.simple_evaluate finds the plugin model and tasks without include paths (limit 4: two
    whole VQA items, with and without the image)."""
    code = ("import json; from lmms_eval.evaluator import simple_evaluate; "
            "r = simple_evaluate(model='pathbind_control', tasks=['pathbind_demo'], limit=4); "
            "print('RESULT', json.dumps(r['results']['pathbind_demo_vqa']['mg,none']))")
    done = run([sys.executable, "-c", code], cwd=tmp_path)
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line is not None, done.stderr[-3000:]
    assert float(line.split()[1]) >= 30


def test_third_party_example_task_runs_with_its_own_template(tmp_path):
    """The example plugin's task runs via the `lmms-eval` script; prompts come from its own template."""
    result = lmms_eval(tmp_path, "pathbind_blind", "example_stain_check", launcher=[str(BIN / "lmms-eval")])
    assert 0 <= metric(result, "example_stain_check", "stain_accuracy") <= 100
    log = next(result["out"].rglob("*example_stain_check.jsonl"))
    first = json.loads(log.read_text().splitlines()[0])
    assert first["input"].startswith("[example plugin] Look at the stained tissue tile.")


def test_controls_answer_tasks_that_are_not_ours(tmp_path):
    """The positive control answers another plugin's generate_until task: one non-empty answer per document."""
    result = lmms_eval(tmp_path, "pathbind_control", "example_stain_check")
    log = next(result["out"].rglob("*example_stain_check.jsonl"))
    answers = [json.loads(line)["filtered_resps"] for line in log.read_text().splitlines()]
    assert len(answers) == 4 and all(isinstance(a, str) and a.strip() for a in answers)


def test_summary_prints_headline_ablation_and_dimension_tables(demo_control, tmp_path):
    """`pathbind summary` gives one table per metric set (headline, ablations, grounding, ...) and one per dimension."""
    done = run([str(BIN / "pathbind"), "summary", str(demo_control["out"])], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    tables = {table.splitlines()[0]: table for table in done.stdout.split("\n\n")}
    headers = [header.split() for header in tables]
    assert ["MODEL", "TASK", "ACC_IMAGE", "ACC_TEXT", "MG", "INVALID_RATE"] in headers
    assert any("DROP_BLUR_16" in header for header in headers)
    assert any("ATTN_IOU" in header for header in headers)
    dimensions = next(table for header, table in tables.items() if "DIMENSION" in header.split())
    rows = [line.split() for line in dimensions.splitlines()[1:]]
    assert rows[3][:4] == ["pathbind_control", "pathbind_demo_vqa", "D4", "100.0"]
