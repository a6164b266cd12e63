"""A plugin cannot take the run down: each hook's result is checked, and a malformed part is skipped and reported."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import BIN, lmms_eval, metric, run, write_plugin

from pathbind import ModelSpec, TaskVariants, hookimpl, make_plugin_manager
from pathbind.catalog import plugin_tasks


class Malformed:
    """One contribution of each wrong form next to one right one."""

    def __init__(self, good_dir):
        self.good_dir = good_dir

    @hookimpl
    def pathbind_task_dirs(self):
        return [self.good_dir, str(self.good_dir / "missing"), self.good_dir / "file.txt", "relative/tasks", "/", 7]

    @hookimpl
    def pathbind_template_dirs(self):
        return str(self.good_dir)  # a bare string: iterated, its first entry would be "/"

    @hookimpl
    def pathbind_models(self):
        return [{"model_id": "as_dict", "simple_class_path": "x.Y"}, ModelSpec("no_class"),
                ModelSpec("malformed_ok", simple_class_path="pathbind_models.controls.PositiveControl")]

    @hookimpl
    def pathbind_metrics(self):
        return {"malformed_metric": len, "not_callable": 3, "has space": len}

    @hookimpl
    def pathbind_demo_data(self):
        return {"malformed_items": len, "not_callable": 3}

    @hookimpl
    def pathbind_image_encoders(self):
        return ["not", "a", "dict"]


@pytest.fixture
def malformed(tmp_path):
    (tmp_path / "file.txt").write_text("not a folder")
    return make_plugin_manager(plugins={"malformed": Malformed(tmp_path)}), tmp_path


def test_each_malformed_entry_is_skipped_with_a_reason_naming_the_plugin(malformed):
    """Only the one valid folder, spec, metric and demo function of the plugin are used; each other entry (or
    result) is one failure."""
    pm, folder = malformed
    assert [c.value for c in pm.task_dirs() if c.plugin == "malformed"] == [folder]
    assert pm.template_dirs() and all(d.is_absolute() and str(d) != "/" for d in pm.template_dirs())
    models = pm.models()
    assert models["malformed_ok"].plugin == "malformed" and "pathbind_control" in models
    assert not {"as_dict", "no_class"} & set(models)
    metrics = pm.metrics()
    assert "malformed_metric" in metrics and not {"not_callable", "has space"} & set(metrics)
    assert pm.demo_data()["malformed_items"].value is len and "not_callable" not in pm.demo_data()
    assert set(pm.image_encoders()) == {"pathbind_hf"}
    failures = pm.failures["malformed"]
    assert f"pathbind_task_dirs entry '{folder / 'missing'}' does not exist; skipped" in failures
    assert f"pathbind_task_dirs entry '{folder / 'file.txt'}' is not a folder; skipped" in failures
    assert ("pathbind_task_dirs entry 'relative/tasks' is a relative path (it would depend on the working "
            "directory); skipped") in failures
    assert "pathbind_task_dirs entry '/' is the filesystem root; skipped" in failures
    assert "pathbind_task_dirs entry 7 is a int, not a path; skipped" in failures
    assert f"pathbind_template_dirs returned str '{folder}', not a list of folders; skipped" in failures
    assert ("pathbind_models entry {'model_id': 'as_dict', 'simple_class_path': 'x.Y'} is a dict, not a "
            "pathbind.ModelSpec; skipped") in failures
    assert any(f.startswith("pathbind_models entry ModelSpec(model_id='no_class'") and "needs simple_class_path"
               in f for f in failures)
    assert "pathbind_metrics metric 'not_callable' is a int, not callable; skipped" in failures
    assert "pathbind_demo_data demo function 'not_callable' is a int, not callable; skipped" in failures
    assert ("pathbind_image_encoders returned list ['not', 'a', 'dict'], not a dict of name -> function; "
            "skipped") in failures
    assert len(failures) == 12


def test_failures_are_recorded_once_however_often_a_hook_is_called(malformed):
    """The seam calls pathbind_task_dirs for every task config: the problem is logged and recorded once."""
    pm, _ = malformed
    for _ in range(3):
        pm.task_dirs()
    assert len([f for f in pm.failures["malformed"] if f.startswith("pathbind_task_dirs")]) == 5


class Declares:
    """A plugin whose pathbind_task_variants returns what it is given."""

    def __init__(self, *declarations: object) -> None:
        self.declarations = list(declarations)

    @hookimpl
    def pathbind_task_variants(self):
        return self.declarations


def test_each_malformed_task_variants_declaration_is_skipped_with_its_reason(tmp_path):
    """Only the sound declaration is used; a relative source, a missing data folder, a rename keeping the names
    and a dict each fail with what to fix."""
    good = TaskVariants(tmp_path, ("mine_", "mine_copy_"), tmp_path)
    bad = [TaskVariants(Path("relative"), ("a_", "b_"), tmp_path), TaskVariants(tmp_path, ("a_", "b_"), tmp_path / "x"),
           TaskVariants(tmp_path, ("same_", "same_"), tmp_path), {"source": str(tmp_path)}]
    pm = make_plugin_manager(plugins={"declares": Declares(good, *bad)})
    assert [c.value for c in pm.task_variants() if c.plugin == "declares"] == [good]
    reasons = ["has a source that is a relative path (it would depend on the working directory)",
               "has a data_dir that does not exist", "needs rename as (old prefix, new prefix), two different strings",
               "is a dict, not a pathbind.TaskVariants"]
    failures = pm.failures["declares"]
    assert len(failures) == len(reasons)
    for failure, reason in zip(failures, reasons, strict=True):
        assert failure.startswith("pathbind_task_variants entry ") and failure.endswith(f" {reason}; skipped")


def test_a_source_task_a_declaration_cannot_derive_is_a_catalog_error(tmp_path):
    """A source task whose name lacks the prefix, or whose data lies outside its folder, gets no variant: the
    catalog lists an error naming the task and the fix (`pathbind doctor` fails on it); the others are listed."""
    (tmp_path / "src").mkdir()
    (tmp_path / "data").mkdir()
    data = "dataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {}\n"
    for name, text in {"mine_ok": data.format("sub/ok.jsonl"), "mine_out": data.format("../out.jsonl"),
                       "other": ""}.items():
        (tmp_path / "src" / f"{name}.yaml").write_text(f"task: {name}\n{text}")
    pm = make_plugin_manager(plugins={"declares": Declares(TaskVariants(tmp_path / "src", ("mine_", "copy_"),
                                                                       tmp_path / "data"))})
    entries = {e.name: e for e in plugin_tasks(pm) if e.plugin == "declares"}
    assert entries.keys() == {"copy_ok", "mine_out", "other"}
    assert entries["copy_ok"].kind == "task"
    assert entries["copy_ok"].data.local_files == (tmp_path / "data" / "sub" / "ok.jsonl",)
    assert entries["other"].error == (
        f"pathbind_task_variants: ValueError: task 'other' ({tmp_path / 'src' / 'other.yaml'}) has no variant: its "
        "name does not start with 'mine_', the prefix TaskVariants renames; rename the task or the prefix")
    assert entries["mine_out"].error == (
        f"pathbind_task_variants: ValueError: task copy_out: data file ../out.jsonl is outside its source's folder "
        f"{tmp_path / 'src'}, so it has no place in the variants' data folder {tmp_path / 'data'}")


class Exiting:
    @hookimpl
    def pathbind_models(self):
        sys.exit(4)


def test_sys_exit_in_a_hook_is_a_recorded_failure():
    """SystemExit is a BaseException, not an Exception: it must not end the process either."""
    pm = make_plugin_manager(plugins={"exiting": Exiting()})
    assert "pathbind_control" in pm.models()
    assert pm.failures["exiting"] == ["SystemExit in pathbind_models: the plugin called sys.exit(4)"]


class Interrupted:
    @hookimpl
    def pathbind_metrics(self):
        raise KeyboardInterrupt


def test_ctrl_c_in_a_hook_still_interrupts():
    with pytest.raises(KeyboardInterrupt):
        make_plugin_manager(plugins={"interrupted": Interrupted()}).metrics()


STRING_DIRS_AND_DICT_MODELS = """
    import pathbind

    @pathbind.hookimpl
    def pathbind_task_dirs():
        return "/nonexistent/tasks"

    @pathbind.hookimpl
    def pathbind_models():
        return [{"model_id": "dict_model", "simple_class_path": "dict_model.Model"}]
"""


@pytest.fixture
def bad_site(tmp_path):
    """Three installed plugins: one returns a string and dicts, one calls sys.exit(3) at import, one adds a
    command without a func."""
    write_plugin(tmp_path / "site", "stringy", STRING_DIRS_AND_DICT_MODELS)
    write_plugin(tmp_path / "site", "exits", "import sys\nsys.exit(3)\n")
    write_plugin(tmp_path / "site", "funcless", """
        import pathbind

        @pathbind.hookimpl
        def pathbind_add_commands(subparsers):
            subparsers.add_parser("funcless-cmd")
    """)
    return {"PYTHONPATH": str(tmp_path / "site")}


def test_models_tasks_and_doctor_report_broken_plugins_instead_of_crashing(tmp_path, bad_site):
    """`pathbind models` and `tasks` list the healthy plugins' items and exit 1 naming the broken ones; the doctor
    shows each failure."""
    models = run([str(BIN / "pathbind"), "models", "--json"], cwd=tmp_path, env=bad_site)
    assert models.returncode == 1 and "Traceback" not in models.stderr
    assert "pathbind_control" in {row["name"] for row in json.loads(models.stdout)}
    assert "pathbind models: error: plugin(s) exits, funcless, stringy failed" in models.stderr
    tasks = run([str(BIN / "pathbind"), "tasks", "--json"], cwd=tmp_path, env=bad_site)
    assert tasks.returncode == 1 and "pathbind_demo_vqa" in {row["name"] for row in json.loads(tasks.stdout)}
    doctor = run([str(BIN / "pathbind"), "doctor", "--no-data"], cwd=tmp_path, env=bad_site)
    assert doctor.returncode == 1, doctor.stdout
    lines = doctor.stdout.splitlines()
    assert "[FAIL] plugin exits: SystemExit: the plugin called sys.exit(3)" in lines
    assert ("[FAIL] plugin stringy: pathbind_task_dirs returned str '/nonexistent/tasks', not a list of folders; "
            "skipped") in lines
    assert ("[FAIL] plugin stringy: pathbind_models entry {'model_id': 'dict_model', 'simple_class_path': "
            "'dict_model.Model'} is a dict, not a pathbind.ModelSpec; skipped") in lines
    assert ("[FAIL] plugin funcless: pathbind_add_commands added command 'funcless-cmd' without a callable func "
            "default") in lines
    assert "[  OK] plugin pathbind_tasks: pathbind_tasks.plugin" in lines


def test_a_command_added_without_a_func_fails_with_a_message(tmp_path, bad_site):
    done = run([str(BIN / "pathbind"), "funcless-cmd"], cwd=tmp_path, env=bad_site)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "pathbind funcless-cmd: error: plugin 'funcless' added this command without a func to run it" in done.stderr


@pytest.mark.slow
def test_lmms_eval_runs_with_broken_plugins_installed(tmp_path, bad_site):
    """sys.exit(3) at one plugin's import and a string of task dirs in another: lmms-eval still runs the demo
    task with PathBind's models, and logs each failure by plugin name."""
    result = lmms_eval(tmp_path, "pathbind_control", "pathbind_demo_yesno", env=bad_site)
    assert metric(result, "pathbind_demo_yesno", "acc_image") == 100.0
    log = result["stdout"] + result["stderr"]  # loguru writes to either, as lmms-eval configures it
    assert "pathbind plugin 'exits': SystemExit: the plugin called sys.exit(3)" in log
    assert "pathbind plugin 'stringy': pathbind_task_dirs returned str" in log
