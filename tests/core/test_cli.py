"""The ``pathbind`` command line: tasks, models, doctor, demo-data, summary."""

from __future__ import annotations

import json
import math
import re
import sys

import pytest
from conftest import BIN, lmms_eval, metric, run, write_plugin
from source_data import write_path_vqa


def pathbind(tmp_path, *args, env=None):
    return run([str(BIN / "pathbind"), *args], cwd=tmp_path, env=env)


def test_tasks_lists_every_plugin_task_with_plugin_family_and_data(tmp_path):
    """`pathbind tasks --json` names each task's plugin, benchmark family and data location; the PathView demo's
    task variants are listed with the data they read."""
    done = pathbind(tmp_path, "tasks", "--json")
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in json.loads(done.stdout)}
    variants = [row for name, row in rows.items()
                if name.startswith("pathbind_pathview_demo_") and row["kind"] == "task"]
    assert len(variants) == 24 and {row["plugin"] for row in variants} == {"pathbind_tasks"}
    assert rows["pathbind_pathview_demo_slide_lgd_unit"]["data"].endswith(
        "pathbind_tasks/demo/data/pathview/slide_lgd.parquet")
    assert rows["pathbind_demo_vqa"]["plugin"] == "pathbind_tasks"
    assert rows["pathbind_demo_vqa"]["family"] == "demo"
    assert rows["pathbind_demo_vqa"]["data"].endswith("pathbind_tasks/demo/data/vqa.parquet")
    assert rows["pathbind_demo"]["kind"] == "group"
    assert rows["example_stain_check"]["plugin"] == "example"


def test_version_names_pathbind_and_the_lmms_eval_it_runs_with(tmp_path):
    from importlib.metadata import version

    done = pathbind(tmp_path, "--version")
    assert done.returncode == 0
    assert done.stdout == f"pathbind {version('pathbind')} (lmms-eval {version('lmms-eval')})\n"


def test_models_lists_the_controls(tmp_path):
    """`pathbind models` shows both controls with their lmms-eval classes."""
    done = pathbind(tmp_path, "models")
    assert done.returncode == 0
    assert "pathbind_control" in done.stdout and "pathbind_blind" in done.stdout


def test_doctor_passes_on_a_healthy_install(tmp_path):
    """Every check is OK or WARN: lmms-eval version, torch, plugins, YAMLs, task index, data, and each folder of
    PATHBIND_DATA read as its tasks will (`pathbind data check`). lmms-eval's own task index is built once and
    read from the user's cache the next time, with the same checks."""
    write_path_vqa(tmp_path / "data" / "path_vqa")
    env = {"PATHBIND_DATA": str(tmp_path / "data"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done, again = (pathbind(tmp_path, "doctor", "--json", env=env) for _ in range(2))
    assert done.returncode == again.returncode == 0, done.stdout + done.stderr
    checks = {c["name"]: c for c in json.loads(done.stdout)}
    cached = {c["name"]: c for c in json.loads(again.stdout)}
    first, second = checks["task hook"]["detail"], cached["task hook"]["detail"]
    assert {**checks, "task hook": None} == {**cached, "task hook": None}
    assert " task YAMLs indexed in " in first and "; cached in " in first
    assert f"task index read from {tmp_path / 'cache' / 'pathbind'}" in second
    assert first.startswith("lmms-eval indexes ") and first.split(" (")[0] == second.split(" (")[0]
    assert checks["data check path_vqa"] == {"name": "data check path_vqa", "status": "OK",
                                             "detail": "rows kept: pathbind_path_vqa_image 3/4; no problems"}
    assert checks["lmms-eval"]["status"] == "OK"
    assert checks["task hook"]["status"] == "OK"
    assert checks["plugin example"]["status"] == "OK"
    assert checks["data pathbind_demo_vqa"]["status"] == "OK"
    assert checks["hooked sources"]["status"] == checks["data root"]["status"] == "OK"
    gated = {c["detail"] for name, c in checks.items() if name.startswith("data pathbind_pathview_region")}
    root = tmp_path / "data"
    assert gated == {f"PATHBIND_DATA: tried {root / 'pathview'}/, found no such folder (pathview is read from a local "
                     f"copy only; {root} holds path_vqa/; where pathview is published and how to get it: "
                     "docs/data-access.md#pathview)"}


def test_doctor_text_groups_one_finding_about_many_tasks_and_counts_every_check():
    """The tasks reading one gated set are one line naming how many and which; the last line counts the checks
    by status (the JSON keeps one entry per check)."""
    from pathbind.doctor import Check, report_lines

    gated = "pathview is read from a local copy only: set PATHBIND_DATA=<root> ..."
    checks = [Check("python", "OK", "3.11"), *(Check(f"data pathview_{t}", "WARN", gated) for t in ("a", "b", "c")),
              Check("data pathbind_demo_vqa", "OK", "vqa.parquet"), Check("plugin x", "FAIL", "ImportError: y"),
              Check("data pathview_d", "FAIL", gated)]
    assert report_lines(checks) == [
        "[  OK] python: 3.11",
        f"[WARN] data ×3 (pathview_a, pathview_b, pathview_c): {gated}",
        "[  OK] data pathbind_demo_vqa: vqa.parquet",
        "[FAIL] plugin x: ImportError: y",
        f"[FAIL] data pathview_d: {gated}",
        "doctor: 2 OK, 3 WARN, 2 FAIL (7 checks)",
    ]


def test_doctor_names_a_broken_plugin_and_a_broken_yaml(tmp_path):
    """A plugin that fails to import and a YAML pointing at a missing function fail the doctor by name."""
    write_plugin(tmp_path / "site", "broken_plugin", "import not_installed_dependency\n")
    write_plugin(tmp_path / "site2", "badyaml", """
        from pathlib import Path
        import pathbind

        @pathbind.hookimpl
        def pathbind_task_dirs():
            return [Path(__file__).parent / "bad_tasks"]
    """, files={"bad_tasks/badyaml_task.yaml": "task: badyaml_task\ndataset_path: json\n"
                                               "doc_to_text: !function badyaml.no_such_function\n"})
    env = {"PYTHONPATH": f"{tmp_path / 'site'}:{tmp_path / 'site2'}"}
    done = pathbind(tmp_path, "doctor", "--no-data", env=env)
    assert done.returncode == 1
    assert "[FAIL] plugin broken_plugin: ModuleNotFoundError: No module named 'not_installed_dependency'" in done.stdout
    assert "badyaml_task.yaml: ImportError: Failed to import function 'no_such_function'" in done.stdout
    assert "[  OK] plugin pathbind_tasks" in done.stdout


def test_demo_data_regenerates_a_bigger_set_that_lmms_eval_reads_via_pathbind_data(tmp_path):
    """`pathbind demo-data --n 2` + PATHBIND_DATA: lmms-eval evaluates the new items (12 MCQ x 2 conditions)."""
    done = pathbind(tmp_path, "demo-data", "--out", str(tmp_path / "data"), "--n", "2", "--n-yes-no", "4",
                    "--n-grounding", "5", "--seed", "7")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "data" / "pathbind_demo_vqa" / "test.parquet").exists()
    env = {"PATHBIND_DATA": str(tmp_path / "data")}
    listed = json.loads(pathbind(tmp_path, "tasks", "--json", env=env).stdout)
    assert next(r for r in listed if r["name"] == "pathbind_demo_vqa")["data"] == str(
        tmp_path / "data" / "pathbind_demo_vqa" / "test.parquet")
    result = lmms_eval(tmp_path, "pathbind_control", "pathbind_demo_vqa,pathbind_demo_grounding", env=env)
    assert result["results"]["n-samples"]["pathbind_demo_vqa"]["effective"] == 24
    assert metric(result, "pathbind_demo_vqa", "acc_image") >= 90
    assert metric(result, "pathbind_demo_grounding", "lost_items") == {"items": 5, "scored": 5}


def test_demo_data_writes_only_the_sets_asked_for(tmp_path):
    done = pathbind(tmp_path, "demo-data", "--out", str(tmp_path), "--n", "1", "--n-yes-no", "0",
                    "--n-pathview", "0", "--n-grounding", "0")
    assert done.returncode == 0, done.stderr
    assert [p.parent.name for p in tmp_path.rglob("*.parquet")] == ["pathbind_demo_vqa"]


def test_summary_fails_when_there_are_no_results(tmp_path):
    """lmms-eval exits 0 on failure, so the summary says so when no results.json exists."""
    done = pathbind(tmp_path, "summary", str(tmp_path))
    assert done.returncode == 1 and "no lmms-eval results.json" in done.stderr


def test_doctor_fails_on_a_task_name_two_plugins_define_and_on_an_unusable_data_root(tmp_path):
    """A plugin task named like one of ours: lmms-eval would keep one silently, the doctor fails naming both files;
    PATHBIND_DATA pointing at a file fails the data-root check."""
    write_plugin(tmp_path / "site", "dupe", """
        from pathlib import Path
        import pathbind

        @pathbind.hookimpl
        def pathbind_task_dirs():
            return [Path(__file__).parent / "dupe_tasks"]
    """, files={"dupe_tasks/dupe.yaml": "task: pathbind_demo_yesno\ndataset_path: json\n"})
    (tmp_path / "data.txt").write_text("not a folder")
    env = {"PYTHONPATH": str(tmp_path / "site"), "PATHBIND_DATA": str(tmp_path / "data.txt")}
    done = pathbind(tmp_path, "doctor", "--json", env=env)
    assert done.returncode == 1
    checks = [c for c in json.loads(done.stdout) if c["status"] == "FAIL"]
    dupe_yaml = str(tmp_path / "site" / "dupe_tasks" / "dupe.yaml")
    assert any(all(word in c["detail"] for word in ("'pathbind_demo_yesno'", "'dupe'", dupe_yaml, "'pathbind_tasks'"))
               for c in checks), checks
    root = next(c for c in checks if c["name"] == "data root")
    assert root["detail"] == (f"PATHBIND_DATA={tmp_path / 'data.txt'}: expected a folder with one folder per data "
                              "set (<root>/<data name>/), found a file there")
    assert any(c["name"] == "data pathbind_demo_vqa" and c["detail"] == root["detail"] for c in checks)


def write_results(path, results, config=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"config": config or {"model": "m"}, "results": results}))


def test_summary_skips_files_that_are_not_results_and_fails_when_none_is_left(tmp_path):
    """A non-results JSON, a truncated file and `{}`: each named in a warning; nothing usable left: exit 1."""
    (tmp_path / "other_results.json").write_text(json.dumps({"pairs": [1, 2]}))
    (tmp_path / "cut_results.json").write_text('{"results": {"pathbind_demo_vqa": {"acc_image,none": 10')
    (tmp_path / "empty_results.json").write_text("{}")
    done = pathbind(tmp_path, "summary", str(tmp_path), str(tmp_path / "nope"))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert (f"pathbind summary: warning: {tmp_path / 'other_results.json'}: not an lmms-eval results file "
            "(no \"results\" object); skipped") in lines
    assert any(line.startswith(f"pathbind summary: warning: {tmp_path / 'cut_results.json'}: not valid JSON, "
                               "perhaps truncated") for line in lines)
    assert (f"pathbind summary: warning: {tmp_path / 'empty_results.json'}: not an lmms-eval results file "
            "(no \"results\" object); skipped") in lines
    assert f"pathbind summary: warning: {tmp_path / 'nope'}: no such file or folder" in lines
    assert lines[-1].startswith("pathbind summary: error: no usable lmms-eval results file under")


def test_summary_shows_each_tasks_row_accounting(tmp_path):
    """One line per task: rows, evaluated, dropped with each reason; a ledger that does not add up is marked, and
    a task without accounting is named."""
    write_results(tmp_path / "run" / "a_results.json", {
        "vqa": {"acc_image,none": 80.0, "accounting,none": {
            "rows": 120, "evaluated": 118, "dropped": {"split not testA": 1, "repeated id": 1}}},
        "grounding": {"attn_iou,none": 0.5, "accounting,none": {"rows": 10, "evaluated": 7, "dropped": {"x": 1}}},
        "mmmu_val": {"acc,none": 0.3}})
    (tmp_path / "run" / "b_results.json").write_text("{}")
    done = pathbind(tmp_path, "summary", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    assert f"{tmp_path / 'run' / 'b_results.json'}: not an lmms-eval results file" in done.stderr
    table = next(block for block in done.stdout.split("\n\n") if block.startswith("MODEL  TASK       ACCOUNTING"))
    assert table.splitlines()[1:] == [
        "m      grounding  rows 10: evaluated 7, dropped 1 (x: 1); DOES NOT ADD UP: +2 rows",
        "m      vqa        rows 120: evaluated 118, dropped 2 (repeated id: 1, split not testA: 1)"]
    assert "no row accounting (not a PathBind task, or an older run): mmmu_val" in done.stdout
    rows = json.loads(pathbind(tmp_path, "summary", str(tmp_path / "run"), "--json").stdout)
    assert next(r for r in rows if r["task"] == "vqa")["accounting"]["dropped"] == {"split not testA": 1,
                                                                                   "repeated id": 1}


def test_summary_json_is_strict_and_a_file_without_a_metric_fails(tmp_path):
    """NaN and infinite metrics (as lmms-eval writes them) come out as null, which a strict parser accepts; a results
    file whose tasks hold no number is an error, exit 1, not an empty table."""
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "a_results.json").write_text(
        '{"config": {"model": "m"}, "results": {"vqa": {"acc_image,none": NaN, "mg,none": Infinity, "n,none": 3}}}')
    done = pathbind(tmp_path, "summary", str(tmp_path / "run"), "--json")
    assert done.returncode == 0, done.stderr
    assert "NaN" not in done.stdout and "Infinity" not in done.stdout

    def refuse(token):
        raise ValueError(token)

    rows = json.loads(done.stdout, parse_constant=refuse)
    assert rows == [{"model": "m", "task": "vqa", "acc_image": None, "mg": None, "n": 3}]
    write_results(tmp_path / "empty" / "b_results.json", {"vqa": {"alias": "vqa"}})
    for extra in ([], ["--json"]):
        empty = pathbind(tmp_path, "summary", str(tmp_path / "empty"), *extra)
        assert empty.returncode == 1 and empty.stdout == ""
        assert empty.stderr.startswith("pathbind summary: error: no metric in ") and len(empty.stderr.splitlines()) == 1


def test_summary_names_what_its_tables_cannot_show(tmp_path):
    """A metric whose aggregation returned None or text (named from the run's configs), a task that failed in its
    run, and a --predict_only run (lmms-eval's placeholder 999 is no score): each a warning, none a silent gap."""
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "a_results.json").write_text(json.dumps({
        "config": {"model": "m"},
        "results": {"mine": {"acc,none": 0.5, "label,none": None, "verdict,none": "fine"},
                    "faulty_key": {"answered,none": 25.0, "label_accuracy,none": math.nan}},
        "configs": {"mine": {"metric_list": [{"metric": "label", "aggregation": "<function label at 0x7f>"}]}},
        "pathbind": {"failed_tasks": {"faulty_key": "metric 'label_accuracy': its aggregation "
                                                    "faulty_scoring.label_accuracy raised KeyError: 'label'"}}}))
    (tmp_path / "predicted" / "m").mkdir(parents=True)
    predicted = tmp_path / "predicted" / "m" / "b_results.json"
    predicted.write_text(json.dumps({"config": {"model": "m", "resolved_cli_args": {"predict_only": True}},
                                     "results": {"pathbind_demo_vqa": {"bypass,none": 999}}}))
    done = pathbind(tmp_path, "summary", str(tmp_path / "run"), str(tmp_path / "predicted"))
    assert done.returncode == 0 and "999" not in done.stdout and "mine" in done.stdout
    assert done.stderr.splitlines() == [
        "pathbind summary: warning: faulty_key failed in its run: metric 'label_accuracy': its aggregation "
        "faulty_scoring.label_accuracy raised KeyError: 'label'",
        "pathbind summary: warning: mine: metric 'label' is NoneType None, not a number or an object: what its "
        "aggregation (<function label at 0x7f>) returned",
        "pathbind summary: warning: mine: metric 'verdict' is str 'fine', not a number or an object: what its "
        "aggregation (not named in the results file) returned",
        f"pathbind summary: warning: {predicted}: a --predict_only run of pathbind_demo_vqa: lmms-eval logged the "
        "answers and scored none (rerun without --predict_only to score them)"]
    alone = pathbind(tmp_path, "summary", str(predicted))
    assert alone.returncode == 1 and alone.stderr.startswith(f"pathbind summary: error: no metric in {predicted}")
    assert "a --predict_only run of pathbind_demo_vqa" in alone.stderr


def test_demo_data_on_an_unusable_out_is_one_line_not_a_traceback(tmp_path):
    """--out below a file: exit 1 naming the file; --n 0: a usage error, exit 2."""
    (tmp_path / "file").write_text("")
    done = pathbind(tmp_path, "demo-data", "--out", str(tmp_path / "file" / "data"))
    assert (done.returncode, done.stderr) == (1, f"pathbind demo-data: error: --out {tmp_path / 'file' / 'data'}: "
                                                 f"{tmp_path / 'file'} is a file, not a folder\n")
    usage = pathbind(tmp_path, "demo-data", "--out", str(tmp_path / "data"), "--n", "0")
    assert usage.returncode == 2 and "argument --n: must be at least 1, got 0" in usage.stderr


def test_an_os_error_in_any_command_is_one_line_naming_the_path(tmp_path):
    """`pathbind report --out` below a file: the command's OSError becomes `pathbind report: error: PATH: why`."""
    write_results(tmp_path / "run" / "a_results.json", {"vqa": {"acc_image,none": 80.0}})
    (tmp_path / "file").write_text("")
    done = pathbind(tmp_path, "report", str(tmp_path / "run"), "--out", str(tmp_path / "file" / "report"),
                    "--overlays", "0")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"pathbind report: error: {tmp_path / 'file' / 'report'}: ")


@pytest.mark.slow
def test_summary_and_report_show_the_accounting_of_a_real_run(tmp_path, limited_control):
    """A --limit run of the demo yes/no task: summary and report show its 24 rows, evaluated or dropped (the
    items beyond --limit), adding up."""
    out = limited_control["out"]
    done = pathbind(tmp_path, "summary", str(out))
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines()
                if re.match(r"pathbind_control +pathbind_demo_yesno +rows", line))
    found = re.search(r"rows 24: evaluated (\d+), dropped (\d+) \((.*--limit.*): (\d+)\)$", line)
    assert found, line
    evaluated, dropped, reason, count = found.groups()
    assert 0 < int(evaluated) < 24 and int(evaluated) + int(dropped) == 24 and count == dropped
    report = pathbind(tmp_path, "report", str(out), "--out", str(tmp_path / "report"), "--overlays", "0")
    assert report.returncode == 0, report.stderr
    assert (f"| pathbind_control | pathbind_demo_yesno | 24 | {evaluated} | {dropped} | {reason}: {dropped} |"
            in (tmp_path / "report" / "report.md").read_text())


def test_doctor_fails_on_each_hooked_lmms_eval_function_whose_source_changed(monkeypatch):
    """The seam's recorded source hash of one hooked function no longer matches: one FAIL naming it (PathBind's
    runs stop on such an install)."""
    from pathbind.doctor import _hooked_sources
    from pathbind.lmms import patches

    monkeypatch.setitem(patches.HOOKED_SOURCES, "lmms_eval.utils:make_table", ("0" * 64,))
    [check] = _hooked_sources()
    assert (check.name, check.status) == ("hooked source lmms_eval.utils:make_table", "FAIL")


def test_the_command_line_starts_without_the_libraries_its_commands_use(tmp_path):
    """Every `pathbind` call builds the parser of every command: none may load torch, scipy, scikit-learn, datasets
    or matplotlib before a command that needs them runs (each costs a second or more at every call)."""
    code = ("import sys\nfrom pathbind.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted({'torch', 'scipy', 'sklearn', 'datasets', 'matplotlib'} & set(sys.modules)))")
    done = run([sys.executable, "-c", code], cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip().splitlines()[-1] == "[]", done.stderr[-2000:]


def test_summary_prints_each_headlines_interval(tmp_path):
    """Each metric with a 95% interval in the task's results (``ci95``, per dimension too) is shown with it, one on
    few clusters marked; a metric without one is shown bare; --json carries the bounds, cluster and warning."""
    ci95 = {"acc_image": {"low": 61.3, "high": 90.5, "cluster": "image", "clusters": 12, "warning": "only 12"},
            "mg": {"low": -4.0, "high": 30.1, "cluster": "patient", "clusters": 40, "warning": ""},
            "by_dimension": {"D1": {"mg": {"low": 2.0, "high": 9.0, "cluster": "image", "clusters": 30,
                                           "warning": ""}}}}
    write_results(tmp_path / "run" / "a_results.json", {"vqa": {
        "acc_image,none": 80.0, "mg,none": 12.5, "invalid_rate,none": 4.0, "ci95,none": ci95,
        "by_dimension,none": {"D1": {"acc_image": 70.0, "mg": 5.5, "n": 30}}}})
    done = pathbind(tmp_path, "summary", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert re.search(r" 80\.0 \[61\.3, 90\.5\]! +12\.5 \[-4\.0, 30\.1\] +4\.0$", lines[1]), lines[1]
    assert re.search(r"D1 +70\.0 +5\.5 \[2\.0, 9\.0\] +30$", done.stdout, re.MULTILINE), done.stdout
    assert "[low, high]: the 95% interval" in done.stdout
    [row] = json.loads(pathbind(tmp_path, "summary", str(tmp_path / "run"), "--json").stdout)
    assert row["acc_image"] == 80.0 and set(row["intervals"]) == {"acc_image", "mg"}
    assert row["intervals"]["mg"] == ci95["mg"] and row["intervals"]["acc_image"]["warning"] == "only 12"
