"""The ``pathbind`` command line: tasks, models, doctor, demo-data, summary."""

from __future__ import annotations

import json

from conftest import BIN, lmms_eval, metric, run, write_plugin


def pathbind(tmp_path, *args, env=None):
    return run([str(BIN / "pathbind"), *args], cwd=tmp_path, env=env)


def test_tasks_lists_every_plugin_task_with_plugin_family_and_data(tmp_path):
    """`pathbind tasks --json` names each task's plugin, benchmark family and data location."""
    done = pathbind(tmp_path, "tasks", "--json")
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in json.loads(done.stdout)}
    assert rows["pathbind_demo_vqa"]["plugin"] == "pathbind_tasks"
    assert rows["pathbind_demo_vqa"]["family"] == "demo"
    assert rows["pathbind_demo_vqa"]["data"].endswith("pathbind_tasks/demo/data/vqa.parquet")
    assert rows["pathbind_demo"]["kind"] == "group"
    assert rows["example_stain_check"]["plugin"] == "example"


def test_models_lists_the_controls(tmp_path):
    """`pathbind models` shows both controls with their lmms-eval classes."""
    done = pathbind(tmp_path, "models")
    assert done.returncode == 0
    assert "pathbind_control" in done.stdout and "pathbind_blind" in done.stdout


def test_doctor_passes_on_a_healthy_install(tmp_path):
    """Every check is OK or WARN: lmms-eval version, torch, plugins, YAMLs, task index, data."""
    done = pathbind(tmp_path, "doctor", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    checks = {c["name"]: c for c in json.loads(done.stdout)}
    assert checks["lmms-eval"]["status"] == "OK"
    assert checks["task hook"]["status"] == "OK"
    assert checks["plugin example"]["status"] == "OK"
    assert checks["data pathbind_demo_vqa"]["status"] == "OK"


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
