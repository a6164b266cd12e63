"""PathBind inside lmms-eval, each in a fresh process: tasks whatever the import order, a light model entry
point, and what the CLI prints and saves (the results report, the table, task-name precedence, build errors)."""

from __future__ import annotations

import json
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import datasets
import pytest
from conftest import BIN, lmms_eval, run

import pathbind_tasks

DEMO = Path(pathbind_tasks.__file__).parent / "demo"  # the installed package the tests run against
INDEX_PLUGIN_TASKS = """
import json, sys
from lmms_eval.tasks import TaskManager
index = TaskManager("ERROR", include_defaults=False).task_index
evaluator = sys.modules.get("lmms_eval.evaluator")
print(json.dumps({"plugin": index.get("pathbind_demo_vqa", {}).get("yaml_path"), "builtin": "mme" in index,
                  "evaluate_hooked": getattr(getattr(evaluator, "evaluate", None), "__pathbind_patch__", None)}))
"""


def python(tmp_path: Path, source: str) -> dict:
    done = run([sys.executable, "-c", textwrap.dedent(source)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_install_declares_the_torch_autoload_entry_point():
    """The import-order tests below need pyproject's torch.backends entry point in the installed metadata."""
    declared = {ep.value for ep in entry_points(group="torch.backends")}
    assert "pathbind_autoload:start" in declared, "re-install PathBind: its metadata predates the entry point"


@pytest.mark.parametrize("first", ["", "import torch", "import lmms_eval.models", "import lmms_eval.evaluator"])
def test_plugin_tasks_are_indexed_whatever_lmms_eval_imports_first(tmp_path, first):
    """A TaskManager built straight from lmms_eval.tasks (torch's autoload runs the seam), or after the model
    entry point ran, indexes the plugin tasks; include_defaults=False leaves lmms-eval's own out."""
    found = python(tmp_path, first + "\n" + INDEX_PLUGIN_TASKS)
    assert found["plugin"] == str(DEMO / "pathbind_demo_vqa.yaml") and not found["builtin"]
    assert found["evaluate_hooked"] is (True if first == "import lmms_eval.evaluator" else None)


def test_evaluate_is_hooked_when_the_evaluator_is_imported_after_the_task_manager(tmp_path):
    found = python(tmp_path, INDEX_PLUGIN_TASKS + "\nimport lmms_eval.evaluator as e\n"
                   "print(json.dumps({'evaluate_hooked': getattr(e.evaluate, '__pathbind_patch__', None)}))")
    assert found["evaluate_hooked"] is True


def test_lmms_eval_tasks_list_shows_plugin_and_builtin_tasks(tmp_path):
    """The `lmms-eval tasks list` subcommand, which never imports lmms_eval.models."""
    done = run([str(BIN / "lmms-eval"), "tasks", "list"], cwd=tmp_path)
    names = {line.strip() for line in done.stdout.splitlines()}
    assert done.returncode == 0 and {"pathbind_demo_vqa", "example_stain_check", "mme"} <= names


def test_the_model_entry_point_imports_neither_lmms_eval_tasks_nor_torch(tmp_path):
    """Listing models (what `lmms-eval models` imports) stays light: the task hook waits for lmms_eval.tasks."""
    found = python(tmp_path, """
        import json, sys
        from lmms_eval.models import MODEL_REGISTRY_V2
        print(json.dumps({"control": MODEL_REGISTRY_V2.resolve("pathbind_control").class_path,
                          "heavy": sorted({"lmms_eval.tasks", "torch", "datasets"} & set(sys.modules))}))
    """)
    assert found == {"control": "pathbind_models.controls.models.PositiveControlModel", "heavy": []}


@pytest.mark.slow
@pytest.mark.smoke
def test_a_pathbind_run_prints_scalars_and_keeps_structured_metrics_in_results(limited_control):
    """The console table has no dict-valued cell and one line naming the structured metrics of every task in the
    run; results.json keeps them, and the run report."""
    result = limited_control
    saved = result["results"]["results"]["pathbind_demo_vqa"]
    assert isinstance(saved["by_dimension,none"], dict) and isinstance(saved["accounting,none"], dict)
    assert "pathbind" in result["results"]
    rows = [line for line in result["stdout"].splitlines() if line.startswith("|pathbind_demo_")]
    assert rows and not any("{" in row or "by_dimension" in row for row in rows)
    structured = sorted({key.partition(",")[0] for metrics in result["results"]["results"].values()
                         for key, value in metrics.items() if isinstance(value, (dict, list))})
    assert {"accounting", "by_dimension", "ci95"} <= set(structured)
    assert (f"structured metrics ({', '.join(structured)}) are in results.json; `pathbind summary "
            f"{result['out']}` shows them") in result["stdout"]


@pytest.mark.slow
def test_a_users_task_named_like_a_plugin_task_runs_without_pathbinds_report(tmp_path):
    """The user's --include_path task wins over PathBind's of the same name (with a warning); with no PathBind task
    or model in the run, results carry no "pathbind" entry and the table no note."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "rows.jsonl").write_text("".join(json.dumps({"question": f"Say {c}", "answer": c}) + "\n" for c in "ABC"))
    (mine / "utils.py").write_text("def no_images(doc):\n    return []\n")
    (mine / "task.yaml").write_text(textwrap.dedent(f"""
        task: pathbind_demo_yesno
        dataset_path: json
        dataset_kwargs:
          data_files:
            test: {mine / 'rows.jsonl'}
        test_split: test
        output_type: generate_until
        doc_to_visual: !function utils.no_images
        doc_to_text: "{{{{question}}}}"
        doc_to_target: answer
        metric_list:
          - metric: exact_match
            aggregation: mean
            higher_is_better: true
    """))
    result = lmms_eval(tmp_path, "dummy", "pathbind_demo_yesno", "--include_path", str(mine))
    assert result["results"]["n-samples"]["pathbind_demo_yesno"] == {"original": 3, "effective": 3}
    assert "pathbind" not in result["results"]
    logged = result["stdout"] + result["stderr"]  # loguru writes where lmms-eval's log goes
    assert f"your --include_path definition ({mine / 'task.yaml'}) replaces the one from plugin" in logged
    assert "structured metrics" not in result["stdout"]


@pytest.mark.slow
def test_a_data_copy_missing_a_column_fails_naming_the_task_and_the_cause(tmp_path):
    """A PATHBIND_DATA copy without the 'expression' column: lmms-eval's error names the task and the underlying
    error at once, not RetryError[<Future ...>] after five attempts; the installed ``lmms_eval`` exits 1 with that
    cause as its last line."""
    rows = datasets.Dataset.from_parquet(str(DEMO / "data" / "grounding.parquet"))
    (tmp_path / "data" / "pathbind_demo_grounding").mkdir(parents=True)
    rows.remove_columns(["expression"]).to_parquet(tmp_path / "data" / "pathbind_demo_grounding" / "test.parquet")
    done = run([str(BIN / "lmms_eval"), "--model", "pathbind_control", "--tasks", "pathbind_demo_grounding",
                "--output_path", str(tmp_path / "out")], cwd=tmp_path, env={"PATHBIND_DATA": str(tmp_path / "data")})
    output = done.stdout + done.stderr
    assert ("Error during evaluation: task pathbind_demo_grounding: ValueError: grounding: the raw data has no column "
            "'expression'") in output
    assert "RetryError" not in output and not list((tmp_path / "out").rglob("*_results.json"))
    assert done.returncode == 1 and done.stderr.splitlines()[-1].startswith(
        "lmms_eval: error: TaskBuildError: task pathbind_demo_grounding: ValueError: grounding: the raw data has no "
        "column 'expression'")


BROKEN_TASK = """
    task: broken_third_party
    dataset_path: json
    dataset_kwargs:
      data_files:
        test: {rows}
    test_split: test
    output_type: generate_until
    doc_to_visual: !function utils.no_images
    doc_to_text: !function utils.prompt
    doc_to_target: answer
    metric_list:
      - metric: exact_match
        aggregation: mean
        higher_is_better: true
"""
BROKEN_UTILS = """
    def no_images(doc):
        return []


    def prompt(doc):
        return doc["question"] + " " + doc["context"]  # the rows have no context
"""


@pytest.mark.slow
def test_a_broken_third_party_task_exits_1_from_lmms_eval_and_0_from_python_m_lmms_eval(tmp_path):
    """A task of the user's that raises while its requests are built: PathBind's ``lmms_eval`` exits 1, its last
    line the cause; lmms-eval's own ``python -m lmms_eval`` logs the same error and exits 0."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "rows.jsonl").write_text('{"question": "Is it?", "answer": "yes"}\n')
    (mine / "task.yaml").write_text(textwrap.dedent(BROKEN_TASK.format(rows=mine / "rows.jsonl")))
    (mine / "utils.py").write_text(textwrap.dedent(BROKEN_UTILS))
    arguments = ["--model", "dummy", "--tasks", "broken_third_party", "--include_path", str(mine), "--output_path",
                 str(tmp_path / "out")]
    ours = run([str(BIN / "lmms_eval"), *arguments], cwd=tmp_path)
    theirs = run([sys.executable, "-m", "lmms_eval", *arguments], cwd=tmp_path)
    for done in (ours, theirs):
        assert "Error during evaluation: 'context'" in done.stdout + done.stderr
    assert ours.returncode == 1 and ours.stderr.splitlines()[-1] == "lmms_eval: error: KeyError: 'context'"
    assert theirs.returncode == 0 and not list((tmp_path / "out").rglob("*_results.json"))


def test_a_broken_pathbind_install_does_not_break_import_torch(tmp_path):
    """torch fails its own import when an autoloaded extension raises: PathBind's start reports and returns."""
    broken = "import sys; sys.modules['pathbind.lmms.watch'] = None; import torch; print('ok')"
    done = run([sys.executable, "-c", broken], cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
    assert "pathbind: lmms-eval seam not started (ModuleNotFoundError" in done.stderr
