"""lmms-eval's ``--baseline`` with PathBind tasks: the paired change equals ``pathbind pairs`` on the same two runs,
lmms-eval's own paired fields agree with it, and a baseline that cannot be paired says why."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import BIN, lmms_eval, metric, run

from pathbind.lmms_output import find_results, read_sample_log
from pathbind.strict_json import dumps_strict
from pathbind_analysis.baseline import compare_with_baseline

OLD = Path(__file__).parents[1] / "fixtures" / "samples_0.x"
YESNO, VQA, GROUNDING = "pathbind_demo_yesno", "pathbind_demo_vqa", "pathbind_demo_grounding"


def _log(folder: Path, task: str) -> Path:
    return next(folder.rglob(f"*_samples_{task}.jsonl"))


def _pairs(general: Path, tuned: Path, *options: str) -> list[dict]:
    done = run([str(BIN / "pathbind"), "pairs", f"{general}:{tuned}", *options, "--json"], cwd=tuned)
    assert done.returncode == 0, done.stderr
    return [{k: v for k, v in row.items() if k not in ("general", "tuned")} for row in json.loads(done.stdout)["pairs"]]


def test_the_change_over_a_baseline_is_pathbind_pairs_and_lmms_evals_fields_agree(tmp_path, demo_blind):
    """The positive control over the blind one on the yes/no task: ΔAcc and ΔMG with their clustered intervals and
    Holm-adjusted p-values are `pathbind pairs`' rows; lmms-eval's paired fields pair the same answers (its
    baseline score is the blind acc_image, its interval is centred on ΔAcc); the console shows the change."""
    blind = _log(demo_blind["out"], YESNO)
    result = lmms_eval(tmp_path, "pathbind_control", YESNO, "--baseline", str(blind))
    task = result["results"]["results"][YESNO]
    rows = [{k: v for k, v in row.items() if k not in ("general", "tuned", "metric")}
            for row in task["baseline,none"]["pairs"]]
    assert rows == _pairs(demo_blind["out"], result["out"], "--vqa-task", YESNO)
    assert [row["measure"] for row in rows] == ["ΔAcc", "ΔMG"] and rows[0]["n"] == 24
    assert (task["delta_acc,none"], task["delta_mg,none"]) == (rows[0]["delta"], rows[1]["delta"])
    assert rows[0]["delta"] == metric(result, YESNO, "acc_image") - metric(demo_blind, YESNO, "acc_image") != 0
    assert task["paired_baseline_score"] == pytest.approx(metric(demo_blind, YESNO, "acc_image"))
    assert (task["paired_ci_lower"] + task["paired_ci_upper"]) / 2 == pytest.approx(rows[0]["delta"])
    console = result["stdout"] + result["stderr"]
    assert "ΔAcc" in console and f"{rows[0]['ci95']['low']:.3g}" in console
    assert "N/A" not in json.dumps(result["results"]["results"])
    # The console table: lmms-eval's paired figure on acc_image alone, PathBind's clustered one on the Δ rows.
    header, *lines = [line for line in result["stdout"].splitlines() if line.startswith("|")]
    names = [cell.strip() for cell in header.split("|")]
    table = {cells[names.index("Metric")]: cells for cells in ([c.strip() for c in line.split("|")] for line in lines)
             if len(cells) == len(names) and YESNO in cells[names.index("Tasks")]}
    assert table["acc_image"][names.index("P_Value")] == f"{task['paired_pvalue']:.4f}*"
    assert table["delta_acc"][names.index("CI")] == f"[{rows[0]['ci95']['low']:+.3g}, {rows[0]['ci95']['high']:+.3g}]"
    assert table["delta_acc"][names.index("P_Value")].endswith(" (Holm)")
    assert all(table[m][names.index(c)] == "" for m in ("acc_text", "invalid_rate") for c in ("Diff", "CI", "P_Value"))
    assert "--baseline: on acc_image, Baseline/Diff/CI/P_Value are lmms-eval's paired t-test" in result["stdout"]


def test_a_grounding_task_pairs_with_a_log_of_the_0x_format(tmp_path):
    """ΔIoU and ΔRecall over a 0.x log of the same items: `pathbind pairs`' rows."""
    result = lmms_eval(tmp_path, "pathbind_control", GROUNDING, "--limit", "6", "--baseline",
                       str(_log(OLD / "pathbind_control", GROUNDING)))
    rows = [{k: v for k, v in row.items() if k not in ("general", "tuned", "metric")}  # NaN as null, as pairs writes
            for row in json.loads(dumps_strict(result["results"]["results"][GROUNDING]["baseline,none"]["pairs"]))]
    assert rows == _pairs(OLD / "pathbind_control", result["out"], "--grounding-task", GROUNDING)
    assert [(row["measure"], row["n"], row["delta"]) for row in rows] == [("ΔIoU", 6, 0.0), ("ΔRecall", 6, 0.0)]


def test_what_cannot_be_paired_is_said(tmp_path, logged_warnings):
    """Another task's log, other items, other data: a warning naming the cause, no change, no lmms-eval fields
    (their scores are taken out of the samples); a 0.x log pairs, but lmms-eval, which would pair other fields of
    it, gets no scores."""
    result = lmms_eval(tmp_path, "pathbind_blind", f"{YESNO},{VQA}", "--limit", "6", "--baseline",
                       str(_log(OLD / "pathbind_control", YESNO)))
    tasks = result["results"]["results"]
    assert [row["n"] for row in tasks[YESNO]["baseline,none"]["pairs"]] == [3, 3]
    assert "baseline,none" not in tasks[VQA] and not any(key.startswith("paired_") for t in tasks.values() for key in t)
    console = result["stdout"] + result["stderr"]
    assert f"task {VQA} is not paired" in console and "written before PathBind logged" in console
    assert not any("score" in line for _, line in read_sample_log(_log(result["out"], YESNO)))

    # The same run's results and samples, paired again with other items and other data.
    results = json.loads(find_results([result["out"]])[0].read_text())
    samples = {YESNO: [line for _, line in read_sample_log(_log(result["out"], YESNO))]}
    other = tmp_path / "other"
    shutil.copytree(OLD / "pathbind_blind", other)
    (stamped,) = other.glob("*_results.json")
    record = json.loads(stamped.read_text())
    record["pathbind"]["data"][YESNO].update(fingerprint="changed", rows={"test": 25})
    stamped.write_text(json.dumps(record))
    compare_with_baseline({**results, "samples": samples}, str(_log(other, YESNO)))
    compare_with_baseline({**results, "samples": {YESNO: samples[YESNO][:4]}}, str(_log(OLD / "pathbind_blind", YESNO)))
    warned = "\n".join(logged_warnings)
    assert f"task {YESNO}: {_log(other, YESNO)} ran on different data (rows test: 25 vs 24" in warned
    assert "and this run evaluated different items (3 vs 2: 1 only in" in warned


def test_a_baseline_that_cannot_be_read_stops_the_run_before_the_model_loads(tmp_path):
    """A pattern that matched no file, as the shell passes it on: exit 1, the last line saying what was given and
    what a sample log is, before the model loads (a checkpoint that does not exist is never reached)."""
    given = str(tmp_path / "out" / "*_samples_pathbind_demo_yesno.jsonl")
    done = run([str(BIN / "lmms_eval"), "--model", "pathbind_hf", "--model_args", f"pretrained={tmp_path / 'none'}",
                "--tasks", YESNO, "--output_path", str(tmp_path / "run"), "--baseline", given], cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        f"lmms_eval: error: BaselineError: --baseline {given}: no such file (a shell pattern that matches no file is "
        "passed on as written); give the sample log of an earlier run written with --log_samples: "
        "<output_path>/<date>_samples_<task>.jsonl for a model without pretrained=, "
        "<output_path>/<checkpoint>/<date>_samples_<task>.jsonl with it")


def test_what_a_baseline_that_cannot_be_read_is_told(tmp_path):
    """A folder (its logs listed), a file that is not a sample log, an empty one; a log, lmms-eval's presets and hub
    addresses pass (lmms-eval reads those itself)."""
    from pathbind.lmms.baseline import BaselineError, require_readable_baseline

    for accepted in (None, "", str(_log(OLD / "pathbind_control", YESNO)), "qwen25vl", "qwen25vl:mmbench",
                     "hf://org/runs/log.jsonl"):
        require_readable_baseline(accepted)
    (tmp_path / "empty.jsonl").write_text("\n")
    (tmp_path / "results.json").write_text('{\n  "results": {}\n}\n')
    told = {}
    for given in (OLD / "pathbind_control", tmp_path / "empty.jsonl", tmp_path / "results.json", tmp_path / "no.jsonl"):
        with pytest.raises(BaselineError) as error:
            require_readable_baseline(str(given))
        told[given.name] = str(error.value)
    assert told["pathbind_control"].startswith(f"--baseline {OLD / 'pathbind_control'}: a folder, not a sample log "
                                               f"(sample logs below it: {OLD / 'pathbind_control'}/")
    assert told["empty.jsonl"].startswith(f"--baseline {tmp_path / 'empty.jsonl'}: is empty, so it is not a sample log")
    assert told["results.json"].startswith(f"--baseline {tmp_path / 'results.json'}:1: not valid JSON")
    assert told["no.jsonl"].startswith(f"--baseline {tmp_path / 'no.jsonl'}: no such file; give the sample log")
