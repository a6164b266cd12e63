"""The lmms-eval bridge: models and tasks of every plugin inside lmms-eval's own registries."""

from __future__ import annotations

from importlib.metadata import version

from conftest import write_plugin

from pathbind import make_plugin_manager
from pathbind.bridge import install_task_hook, lmms_eval_models, lmms_eval_task_dirs, shadowed_tasks
from pathbind.catalog import plugin_tasks
from pathbind.doctor import TESTED_LMMS_EVAL


def test_the_pinned_lmms_eval_is_the_tested_one():
    """Widening the lmms-eval pin needs this test (and the hook tests below) to pass first."""
    assert version("lmms-eval") in TESTED_LMMS_EVAL


def test_lmms_eval_registry_has_the_plugin_models():
    """lmms-eval's own model registry resolves the controls through the entry point."""
    from lmms_eval.models import MODEL_REGISTRY_V2

    assert MODEL_REGISTRY_V2.resolve("pathbind_control").class_path.endswith("PositiveControlModel")
    assert MODEL_REGISTRY_V2.resolve("pathbind_blind").model_type == "simple"


def test_every_plugin_yaml_is_indexed_by_lmms_eval(task_manager, pm):
    """Each task and group of each plugin resolves, in lmms-eval's index, to its own YAML file."""
    entries = [e for e in plugin_tasks(pm) if e.kind in ("task", "group")]
    expected = {"pathbind_demo", "pathbind_demo_vqa", "pathbind_demo_yesno", "example_stain_check"}
    assert expected <= {e.name for e in entries}
    for entry in entries:
        assert task_manager.task_index[entry.name]["yaml_path"] == str(entry.yaml_path), entry.name
    assert not [e for e in plugin_tasks(pm) if e.kind == "error"]


def test_the_hook_is_idempotent_and_keeps_user_include_paths(task_manager, tmp_path):
    """Installing twice changes nothing; --include_path tasks are still indexed after the plugins'."""
    from lmms_eval.tasks import TaskManager

    assert install_task_hook() and install_task_hook()
    (tmp_path / "mine.yaml").write_text("task: user_included_task\ndataset_path: json\noutput_type: generate_until\n")
    index = TaskManager("ERROR", include_path=str(tmp_path)).task_index
    assert index["user_included_task"]["yaml_path"] == str(tmp_path / "mine.yaml")
    assert "pathbind_demo_vqa" in index


def test_name_clashes_with_builtins_and_other_plugins_are_reported(task_manager, tmp_path, monkeypatch):
    """A plugin task named like a built-in (mme) or like our task is reported as shadowed."""
    write_plugin(tmp_path, "clashing", """
        from pathlib import Path
        import pathbind

        @pathbind.hookimpl
        def pathbind_task_dirs():
            return [Path(__file__).parent / "clash_tasks"]
    """, files={"clash_tasks/a.yaml": "task: mme\ndataset_path: json\n",
                "clash_tasks/b.yaml": "task: pathbind_demo_vqa\ndataset_path: json\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    pm = make_plugin_manager()
    dirs = pm.task_dirs()
    index = task_manager.initialize_tasks.__wrapped__(task_manager, include_path=[str(c.value) for c in dirs])
    messages = shadowed_tasks(task_manager, index, dirs)
    assert any("'mme' of plugin 'clashing'" in m and "lmms_eval/tasks" in m for m in messages)
    assert any("'pathbind_demo_vqa' of plugin" in m for m in messages)


def test_the_entry_points_never_raise(monkeypatch):
    """A failure inside the bridge is logged and yields an empty list: lmms-eval would drop all models otherwise."""
    def explode():
        raise RuntimeError("boom")

    monkeypatch.setattr("pathbind.bridge.get_plugin_manager", explode)
    assert lmms_eval_models() == []
    assert lmms_eval_task_dirs() == []
