"""Sample logs: a PathBind line holds its record once; every reader reads these logs and those of PathBind 0.x, whose
lines repeat the record under each metric name (``tests/fixtures/samples_0.x``: the blind and the positive control on
the demo yes/no and grounding tasks with ``--limit 6``, written by the 0.x release; the grounding lines' attention maps
are cut out)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import BIN, run

from pathbind.lmms_output import RECORD, sample_record, task_samples
from pathbind_analysis.audit.leakage.samples import _metric_values
from pathbind_analysis.curation.logs import read_model_answers
from pathbind_analysis.report.overlays import _item_maps
from pathbind_analysis.report.paper_tables import image_records
from pathbind_tasks.common.metrics import names

OLD = Path(__file__).parents[1] / "fixtures" / "samples_0.x"
MODELS = ("pathbind_blind", "pathbind_control")
TASKS = ("pathbind_demo_yesno", "pathbind_demo_grounding")


@pytest.fixture(scope="module")
def new(shared_lmms_eval) -> dict[str, Path]:
    """The fixture's runs again, by this release."""
    return {model: shared_lmms_eval(model, ",".join(TASKS), "--limit", "6")["out"] for model in MODELS}


def _log(folder: Path, task: str) -> Path:
    return next(folder.rglob(f"*_samples_{task}.jsonl"))


@pytest.mark.parametrize("task", TASKS)
def test_a_line_holds_the_record_once_and_it_is_the_old_logs_record(new, task):
    """No metric name on a line; the record is the one the 0.x release repeated under each; a VQA answer with the
    image carries lmms-eval's per-sample score (1 right, 0 wrong), other lines none."""
    old, fresh = (task_samples(folder, task) for folder in (OLD / "pathbind_control", new["pathbind_control"]))
    kind = "vqa_full" if task.endswith("yesno") else "grounding"
    repeated = {name for line in old for name in line if name in names(kind)}  # the metrics the 0.x release had
    assert repeated and all(name in line for line in old for name in repeated)
    assert not any(name in line for line in fresh for name in names(kind))
    before = [sample_record(line) for line in old]
    assert _as_0x(fresh, before) == before  # this release's records may carry fields the 0.x ones lack
    assert [line.get("score") for line in fresh] == [
        float(line[RECORD]["correct"]) if line[RECORD].get("condition") == "image" else None for line in fresh]
    assert sum("score" in line for line in fresh) == (3 if kind == "vqa_full" else 0)


def test_a_yes_no_line_is_within_its_budget(demo_blind):
    """The blind control's yes/no log: under 1.5 KB a line (0.x: 3.3 KB, the record 9 times)."""
    lines = _log(demo_blind["out"], "pathbind_demo_yesno").read_text().splitlines()
    assert len(lines) == 48 and sum(len(line.encode()) for line in lines) / len(lines) <= 1536


def test_no_placeholder_in_a_pathbind_run(demo_blind):
    """lmms-eval's "N/A" for the standard errors it cannot compute is left out of every PathBind task and group
    (yes/no, VQA, ablation, grounding, faithfulness, PathView)."""
    results = demo_blind["results"]
    assert {"pathbind_demo_yesno", "pathbind_demo_grounding",
            "pathbind_pathview_demo_region_ocl"} <= results["results"].keys()
    assert "N/A" not in json.dumps({key: results[key] for key in ("results", "groups") if key in results})


def _as_0x(lines_or_records: list[dict], old: list[dict]) -> list[dict]:
    """This release's records (or lines' records) with only the fields of the 0.x records they are compared with."""
    records = [sample_record(item) if RECORD in item else item for item in lines_or_records]
    return [{key: record[key] for key in before} for record, before in zip(records, old, strict=True)]


def _pairs(general: Path, tuned: Path, *options: str) -> list[dict]:
    done = run([str(BIN / "pathbind"), "pairs", f"{general}:{tuned}", *options, "--json",
                "--n-permutations", "200"], cwd=general.parent)
    assert done.returncode == 0, done.stderr
    return [{k: v for k, v in row.items() if k not in ("general", "tuned")} for row in json.loads(done.stdout)["pairs"]]


def test_pairs_reads_both_formats_alike(new):
    """``pathbind pairs`` gives the same VQA rows from the 0.x runs and from this release's, and pairs a 0.x
    grounding run with this release's (the blind control has no attention: nothing to pair on grounding)."""
    vqa = [_pairs(folders[MODELS[0]], folders[MODELS[1]], "--vqa-task", TASKS[0])
           for folders in ({model: OLD / model for model in MODELS}, new)]
    assert vqa[0] == vqa[1] and [(row["measure"], row["n"]) for row in vqa[0]] == [("ΔAcc", 3), ("ΔMG", 3)]
    grounding = _pairs(OLD / MODELS[1], new[MODELS[1]], "--grounding-task", TASKS[1])
    assert [(row["measure"], row["n"], row["delta"]) for row in grounding] == [("ΔIoU", 6, 0.0), ("ΔRecall", 6, 0.0)]


def test_filter_audit_and_report_read_both_formats(new):
    """The curation filter's answers, the audit's per-sample metrics and the report's records are the same from
    either format."""
    logs = [_log(OLD / MODELS[1], TASKS[0]), _log(new[MODELS[1]], TASKS[0])]
    answers = [read_model_answers("control", [log]) for log in logs]
    assert answers[0].correct == answers[1].correct and len(answers[0].correct) == 3
    audited = [[_metric_values(line) for line in task_samples(log.parent, TASKS[0])] for log in logs]
    assert audited[0] == audited[1] and {name for line in audited[0] for name in line} == {"correct"}
    records = [image_records([SimpleNamespace(path=folder)], TASKS[0]) for folder in (OLD / MODELS[1], new[MODELS[1]])]
    assert _as_0x(records[1], records[0]) == records[0] and len(records[0]) == 3
    maps = [_item_maps(task_samples(folder, TASKS[1])) for folder in (OLD / MODELS[1], new[MODELS[1]])]
    np.testing.assert_array_equal([m.iou for m in maps[0].values()], [m.iou for m in maps[1].values()])
