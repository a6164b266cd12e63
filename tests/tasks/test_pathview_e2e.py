"""PathView through lmms-eval's CLI: the controls are told apart, boxes follow the task's frame, baselines run."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import lmms_eval, metric

from pathbind.lmms_output import sample_record
from pathbind_tasks.demo import pathview_synth

pytestmark = pytest.mark.slow
DEMO_TASKS = [f"pathbind_pathview_demo_{task}" for task in pathview_synth.TASKS]
HEADLINE = {"ogd": "dice", "lgd": "dice", "ocn": "mae", "rds": "entity_recall", "are": "macro_f1",
            "dlo": "macro_f1", "trap": "srr"}


def headline(task: str) -> str:
    return HEADLINE.get(task.rsplit("_", 1)[1], "accuracy")


def test_positive_control_grounds_counts_and_refuses_traps(demo_control):
    """pathbind_control: Dice >= 50 on both grounding tasks, MAE <= 2, SRR >= 90 on both traps."""
    assert metric(demo_control, "pathbind_pathview_demo_region_ogd", "dice") >= 50
    assert metric(demo_control, "pathbind_pathview_demo_slide_lgd", "dice") >= 50
    assert metric(demo_control, "pathbind_pathview_demo_region_ocn", "mae") <= 2
    assert metric(demo_control, "pathbind_pathview_demo_region_trap", "srr") >= 90
    assert metric(demo_control, "pathbind_pathview_demo_slide_trap", "srr") >= 90
    assert metric(demo_control, "pathbind_pathview_demo", "false_refusal_rate") == 0


def test_blind_control_answers_traps_without_looking(demo_blind):
    """pathbind_blind never refuses: SRR <= 10 on both traps."""
    assert metric(demo_blind, "pathbind_pathview_demo_region_trap", "srr") <= 10
    assert metric(demo_blind, "pathbind_pathview_demo_slide_trap", "srr") <= 10


def test_every_task_reports_its_metrics_and_the_group_its_means(demo_control):
    """Each task has its headline, invalid_rate and (when answerable) false_refusal_rate; the group averages."""
    for task in DEMO_TASKS:
        names = [headline(task), "invalid_rate"] + ([] if task.endswith("trap") else ["false_refusal_rate"])
        for name in names:
            assert math.isfinite(metric(demo_control, task, name)), (task, name)
    traps = [metric(demo_control, f"pathbind_pathview_demo_{trap}", "srr") for trap in ("region_trap", "slide_trap")]
    assert metric(demo_control, "pathbind_pathview_demo", "srr") == pytest.approx(sum(traps) / 2)


def test_sample_logs_keep_each_answer_outcome_and_reason(demo_blind):
    """The sample log holds every record: reference, parsed answer, outcome, reason."""
    log = next(demo_blind["out"].rglob("*pathbind_pathview_demo_region_ocn.jsonl"))
    records = [json.loads(line)["pathbind"] for line in log.read_text().splitlines()]
    assert len(records) == 8 and {"id", "reference", "parsed", "outcome", "reason"} <= set(records[0])


def _samples(result: dict, task: str) -> dict[str, dict]:
    """The task's sample log, by item id: each line's record and its prompt."""
    log = next(result["out"].rglob(f"*_{task}.jsonl"))
    records = [(sample_record(line), line["input"]) for line in map(json.loads, log.read_text().splitlines())]
    return {record["id"]: {**record, "input": prompt} for record, prompt in records}


def test_box_frame_is_the_tasks_and_every_record_states_it(demo_control, tmp_path):
    """The per_mille variants ask in 0-1000 and read in 0-1000: each record names its frame and holds the same
    pixel boxes as the pixel task's record of that item; results.json names each task's frame."""
    boxed = ("region_ogd", "slide_lgd", "region_ocl")
    per_mille = lmms_eval(tmp_path, "pathbind_control",
                          ",".join(f"pathbind_pathview_demo_{t}_per_mille" for t in boxed))
    for task in boxed:
        pixel_task, frame_task = f"pathbind_pathview_demo_{task}", f"pathbind_pathview_demo_{task}_per_mille"
        assert metric(per_mille, frame_task, headline(task)) == pytest.approx(metric(demo_control, pixel_task,
                                                                                     headline(task)), abs=1.0)
        assert "box_frame=per_mille" in per_mille["results"]["configs"][frame_task]["process_docs"]
        assert "box_frame=pixel" in demo_control["results"]["configs"][pixel_task]["process_docs"]
        pixel, thousandths = _samples(demo_control, pixel_task), _samples(per_mille, frame_task)
        assert pixel.keys() == thousandths.keys() and len(pixel) == 8
        for item, record in thousandths.items():
            assert (record["box_frame"], pixel[item]["box_frame"]) == ("per_mille", "pixel")
            assert "scale of 0 to 1000" in record["input"] and "in pixels of this" in pixel[item]["input"]
            if task != "region_ocl":  # grounding answers are boxes, kept as written and in pixels
                assert record["parsed"] != pixel[item]["parsed"]
                assert np.allclose(record["box_pixels"], pixel[item]["box_pixels"], atol=0.5)


def test_baseline_writes_boxes_in_the_items_frame(tmp_path):
    """pathbind_baseline answers the unit variant in fractions: every box is placed (no invalid answers)."""
    result = lmms_eval(tmp_path, "pathbind_baseline", "pathbind_pathview_demo_slide_lgd_unit")
    assert metric(result, "pathbind_pathview_demo_slide_lgd_unit", "invalid_rate") == 0
    records = _samples(result, "pathbind_pathview_demo_slide_lgd_unit").values()
    assert {r["box_frame"] for r in records} == {"unit"} and all(max(map(max, r["parsed"])) <= 1 for r in records)


@pytest.mark.parametrize("strategy", ["random", "frequent"])
def test_baselines_run_every_demo_task_and_never_refuse(tmp_path, strategy):
    """pathbind_baseline answers all 14 tasks from their data: every headline is finite, SRR is 0."""
    result = lmms_eval(tmp_path, "pathbind_baseline", "pathbind_pathview_demo", "--model_args", f"strategy={strategy}")
    assert result["results"]["config"]["model_args"] == f"strategy={strategy}"
    for task in DEMO_TASKS:
        assert math.isfinite(metric(result, task, headline(task))), task
        assert metric(result, task, "invalid_rate") == 0
    assert metric(result, "pathbind_pathview_demo", "srr") == 0


def test_release_layout_runs_from_pathbind_data(tmp_path):
    """The real tasks read a release copy under PATHBIND_DATA and score it like the demo."""
    pathview_synth.write_pathview_data(tmp_path / "root", 4, 5, layout=pathview_synth.RELEASE_LAYOUT)
    result = lmms_eval(tmp_path, "pathbind_control", "pathbind_pathview_region_ogd,pathbind_pathview_fov_trap",
                       env={"PATHBIND_DATA": str(tmp_path / "root")})
    assert metric(result, "pathbind_pathview_region_ogd", "dice") >= 50
    assert metric(result, "pathbind_pathview_fov_trap", "srr") == 100
