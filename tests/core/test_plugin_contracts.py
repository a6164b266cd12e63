"""A plugin cannot take the run down: each hook's result is checked, and a malformed part is skipped and reported."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import BIN, lmms_eval, metric, run, write_plugin

from pathbind import ModelSpec, hookimpl, make_plugin_manager


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
    """The bridge calls pathbind_task_dirs for every task config: the problem is logged and recorded once."""
    pm, _ = malformed
    for _ in range(3):
        pm.task_dirs()
    assert len([f for f in pm.failures["malformed"] if f.startswith("pathbind_task_dirs")]) == 5


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
