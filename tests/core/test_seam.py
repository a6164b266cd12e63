"""The lmms-eval seam: models and tasks of every plugin inside lmms-eval's own registries, and the behaviour of
each lmms-eval function it wraps (the fresh-process import orders and the CLI runs are in test_lmms_integration)."""

from __future__ import annotations

import copy
import re
import sys
from importlib.metadata import distribution, requires
from pathlib import Path

import datasets
import pytest
from conftest import write_plugin

import pathbind_autoload
import pathbind_tasks
from pathbind import TaskVariants, hookimpl, make_plugin_manager
from pathbind.catalog import plugin_tasks
from pathbind.lmms import patches
from pathbind.lmms.evaluate import install_evaluate_hook
from pathbind.lmms.marks import FIRST_PARTY_PLUGINS, marked
from pathbind.lmms.marks import patch as seam_patch
from pathbind.lmms.patches import HOOKED_SOURCES, compatibility_problem, hooked_sources_changed
from pathbind.lmms.running import InTask, RunningTask
from pathbind.lmms.table import _pathbind_results, _scalars_only, scalar_view, structured_note
from pathbind.lmms.tasks import (
    TaskBuildError,
    _NamingTheTask,
    install_task_hook,
    merge_plugin_tasks,
    plugin_order,
    task_conflicts,
)
from pathbind.lmms.watch import lmms_eval_models
from pathbind.plugins import Contribution

DEMO = Path(pathbind_tasks.__file__).parent / "demo"  # the installed package the tests run against


def test_the_declared_range_admits_main_branch_installs_and_has_no_upper_bound():
    """Whatever lmms-eval is installed, its hooked functions decide (a main-branch install reports 0.7.2); the
    declared range admits it and the next release."""
    assert compatibility_problem() == ""
    (requirement,) = [r for r in requires("pathbind") or [] if r.startswith("lmms-eval")]
    assert "<" not in requirement and ">=0.7.2" in requirement


def test_a_changed_hooked_function_stops_pathbind_before_any_model_call_whatever_the_version(monkeypatch):
    """A release or install whose hooked function's source PathBind does not run on stops with one message naming
    it, raised from a PathBind task's process_docs as a TaskBuildError naming the task; the version string (which
    a main-branch install gets wrong) does not matter."""
    monkeypatch.setattr(patches, "installed_version", lambda name: "0.7.3")
    changed = {**HOOKED_SOURCES, "lmms_eval.evaluator:evaluate": ("0" * 64,)}
    monkeypatch.setattr(patches, "HOOKED_SOURCES", changed)
    patches.compatibility_problem.cache_clear()
    try:
        problem = compatibility_problem()
        assert problem.startswith("lmms-eval 0.7.3 is not one PathBind runs on (tested: 0.7.3, main 75571cf): "
                                  "lmms-eval functions PathBind hooks changed: lmms_eval.evaluator:evaluate.")
        assert "pip install 'lmms-eval==0.7.3'" in problem
        with pytest.raises(TaskBuildError, match=r"task demo_task: IncompatibleLmmsEval: lmms-eval 0\.7\.3 is not"):
            _NamingTheTask(lambda dataset: dataset, RunningTask("demo_task"))([])
    finally:
        patches.compatibility_problem.cache_clear()


def test_the_lmms_eval_sources_the_seam_relies_on_are_unchanged():
    """Each wrapped or relied-on lmms-eval function has the source the seam was written against (sha256)."""
    assert hooked_sources_changed() == []
    assert "lmms_eval.tasks:TaskManager._get_config" in HOOKED_SOURCES


PATCHED_MODULES = ("lmms_eval.tasks", "lmms_eval.api.task", "lmms_eval.evaluator", "lmms_eval.__main__",
                   "lmms_eval.caching.response_cache", "lmms_eval.utils")


def _seam_patches() -> set[str]:
    """``module:qualname`` of every lmms-eval function a seam wrapper replaced, found by scanning the modules: a
    wrapper is code in pathbind/lmms (or a copy marked by it, as tenacity's retry_with is)."""
    import importlib
    import inspect

    seam = str(Path(patches.__file__).parent)
    found = set()
    for module in map(importlib.import_module, PATCHED_MODULES):
        classes = [v for v in vars(module).values() if isinstance(v, type) and v.__module__ == module.__name__]
        owners = [module, *classes]
        for value in (v for owner in owners for v in vars(owner).values()):
            function = getattr(value, "__func__", value)  # classmethod, staticmethod
            code = getattr(function, "__code__", None)
            if code is not None and (code.co_filename.startswith(seam) or marked(function)):
                original = inspect.unwrap(function)
                found.add(f"{original.__module__}:{original.__qualname__}")
    return found


def test_every_function_the_seam_replaced_is_a_row_of_the_table(monkeypatch):
    """Every lmms-eval function wrapped once lmms-eval is loaded (and by PathBind's lmms_eval command) is listed
    with what wraps it, and every listed wrapper is installed: the table is the complete list of patches."""
    import lmms_eval.__main__  # noqa: F401 - what PathBind's lmms_eval command runs

    from pathbind.lmms import outcome
    monkeypatch.setattr(outcome, "FAILED", [])
    assert outcome.install_outcome_hook()
    assert _seam_patches() == {patch.target for patch in patches.PATCHES if patch.wrapped_by}
    assert all(patch.claims and patch.why and patch.upstream and patch.sources for patch in patches.PATCHES)


def test_a_changed_or_missing_source_is_named(monkeypatch):
    """A different hash (an edited private method) or a function that no longer exists is reported by name."""
    changed = {**HOOKED_SOURCES, "lmms_eval.tasks:TaskManager._get_config": ("0" * 64,),
               "lmms_eval.tasks:TaskManager.no_such_method": ("0" * 64,)}
    monkeypatch.setattr(patches, "HOOKED_SOURCES", changed)
    assert hooked_sources_changed() == ["lmms_eval.tasks:TaskManager._get_config",
                                        "lmms_eval.tasks:TaskManager.no_such_method"]


def test_first_party_plugins_are_the_ones_pathbind_declares():
    """The plugins whose task names come first are exactly PathBind's own ``pathbind`` entry points."""
    declared = {ep.name for ep in distribution("pathbind").entry_points if ep.group == "pathbind"}
    assert set(FIRST_PARTY_PLUGINS) == declared


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


@pytest.fixture(scope="module")
def plugins_only():
    """A TaskManager of the plugins' tasks alone (include_defaults=False), built through the hooked methods."""
    assert install_task_hook()
    from lmms_eval.tasks import TaskManager

    return TaskManager("ERROR", include_defaults=False)


def test_without_defaults_the_plugin_tasks_are_indexed_and_lmms_evals_are_not(plugins_only, pm):
    """include_defaults=False drops lmms-eval's own tasks; installed plugins' tasks stay, each at its YAML."""
    index = plugins_only.task_index
    assert "mme" not in index and "mmmu_val" not in index
    assert index["pathbind_demo_vqa"]["yaml_path"] == str(DEMO / "pathbind_demo_vqa.yaml")
    assert "example_stain_check" in index
    assert all(any(Path(e["yaml_path"]).is_relative_to(c.value) for c in pm.task_dirs())
               for e in index.values() if e["yaml_path"] != -1)


def test_indexing_the_plugins_logs_nothing_about_their_include_only_yamls(plugins_only):
    """lmms-eval logs a DEBUG line for each YAML that is no task (``lmms-eval tasks list`` shows them); a plugin's
    shared ``include:`` bases are that by design, so indexing its folders says nothing about them."""
    from lmms_eval.tasks import TaskManager
    from loguru import logger

    lines: list[str] = []
    sink = logger.add(lambda message: lines.append(message.record["message"]), level="DEBUG")
    try:
        index = TaskManager("DEBUG", include_defaults=False).task_index
    finally:
        logger.remove(sink)
    assert "pathbind_pathview_slide" in index  # the folder of _pathview.yaml was read
    assert not [line for line in lines if "could not be loaded as a task or group" in line], lines


def test_the_hook_is_idempotent_and_keeps_user_include_paths(plugins_only, tmp_path):
    """Installing twice changes nothing; --include_path tasks are indexed beside the plugins'."""
    from lmms_eval.tasks import TaskManager

    assert install_task_hook() and install_task_hook()
    assert not hasattr(TaskManager.initialize_tasks.__wrapped__, "__wrapped__")  # wrapped once
    (tmp_path / "mine.yaml").write_text("task: user_included_task\ndataset_path: json\noutput_type: generate_until\n")
    index = TaskManager("ERROR", include_path=str(tmp_path), include_defaults=False).task_index
    assert index["user_included_task"]["yaml_path"] == str(tmp_path / "mine.yaml")
    assert "pathbind_demo_vqa" in index


def test_get_config_applies_the_data_root_to_plugin_tasks_only(plugins_only, tmp_path, monkeypatch):
    """With PATHBIND_DATA/<task>/ present the task reads it; without, the YAML's own location."""
    (tmp_path / "pathbind_demo_vqa").mkdir()
    (tmp_path / "pathbind_demo_vqa" / "test.parquet").write_bytes((DEMO / "data" / "vqa.parquet").read_bytes())
    monkeypatch.setenv("PATHBIND_DATA", str(tmp_path))
    config = plugins_only._get_config("pathbind_demo_vqa")
    assert config["dataset_kwargs"]["data_files"] == {"test": str(tmp_path / "pathbind_demo_vqa" / "test.parquet")}
    monkeypatch.delenv("PATHBIND_DATA")
    own = plugins_only._get_config("pathbind_demo_vqa")["dataset_kwargs"]["data_files"]["test"]
    assert Path(own) == DEMO / "data" / "vqa.parquet"


def test_a_plugin_tasks_process_docs_error_names_the_task(plugins_only):
    """process_docs comes back wrapped: its error says which task, chained from the cause."""
    process_docs = plugins_only._get_config("pathbind_demo_grounding")["process_docs"]
    rows = datasets.Dataset.from_list([{"id": "a", "bbox": [0, 0, 1, 1]}])
    with pytest.raises(TaskBuildError, match=r"^task pathbind_demo_grounding: ValueError: grounding: .*'image'") as e:
        process_docs(rows)
    assert isinstance(e.value.__cause__, ValueError)


def test_a_build_error_is_raised_at_once_not_retried(plugins_only):
    """lmms-eval retries a task's download five times, 2 s apart, then hides the error in a RetryError;
    a TaskBuildError leaves at the first attempt, as it is."""
    from lmms_eval.api.task import ConfigurableTask

    calls = []

    def failing(dataset):
        calls.append(1)
        raise TaskBuildError("task t: ValueError: no column 'image'")

    config = {**plugins_only._get_config("pathbind_demo_vqa"), "process_docs": failing}
    with pytest.raises(TaskBuildError, match="no column 'image'"):
        ConfigurableTask(config=config)
    assert calls == [1]


def test_a_plugin_tasks_load_failing_after_the_retries_names_the_task(plugins_only, tmp_path, monkeypatch):
    """A data file that cannot be read is retried as lmms-eval retries any load (the waits skipped here), then
    raised as a TaskBuildError naming the task and the cause, not RetryError[<Future ...>]."""
    from lmms_eval.api.task import ConfigurableTask

    monkeypatch.setattr(ConfigurableTask.download.retry, "sleep", lambda seconds: None)
    config = plugins_only._get_config("pathbind_demo_vqa")
    config["dataset_kwargs"] = {"data_files": {"test": str(tmp_path / "missing.parquet")}}
    with pytest.raises(TaskBuildError, match=r"^task pathbind_demo_vqa: FileNotFoundError: .*missing\.parquet"):
        ConfigurableTask(config=config)


def test_the_seam_marks_what_is_pathbinds_and_nothing_else(plugins_only, tmp_path):
    """Each plugin entry of the index names its plugin, a user's entry does not; the task objects built from a
    plugin's config are PathBind's, a user's task and a MagicMock are not."""
    from unittest.mock import MagicMock

    from lmms_eval.tasks import TaskManager, get_task_dict

    from pathbind.lmms.marks import pathbind_config, pathbind_task
    from pathbind.lmms.tasks import PLUGIN_KEY
    from pathbind_tasks.common.vqa import image_only, process_results

    (tmp_path / "mine.yaml").write_text(f"task: mine\ndataset_path: json\ndataset_kwargs:\n  data_files:\n"
                                        f"    test: {tmp_path / 'rows.jsonl'}\ntest_split: test\n"
                                        "output_type: generate_until\ndoc_to_text: q\ndoc_to_target: a\n")
    (tmp_path / "rows.jsonl").write_text('{"q": "Say A", "a": "A"}\n')
    manager = TaskManager("ERROR", include_path=str(tmp_path), include_defaults=False)
    assert manager.task_index["pathbind_demo_vqa"][PLUGIN_KEY] == "pathbind_tasks"
    assert manager.task_index["example_stain_check"][PLUGIN_KEY] == "example"
    assert PLUGIN_KEY not in manager.task_index["mine"]
    tasks = get_task_dict(["pathbind_demo_yesno", "mine"], manager)
    assert pathbind_task(tasks["pathbind_demo_yesno"])
    assert not pathbind_task(tasks["mine"]) and not pathbind_task(MagicMock())
    # A user's config asks for PathBind with PathBind's own functions (by identity) or a pathbind_ metadata key.
    assert pathbind_config({"process_docs": image_only}) and pathbind_config({"process_results": process_results})
    assert pathbind_config({"metadata": {"pathbind_requires": ["attention"]}})
    assert not pathbind_config({"process_docs": lambda dataset: dataset, "metadata": {"version": 1}})
    assert not pathbind_config({"process_results": MagicMock(__module__="pathbind_tasks.common.vqa")})


def test_evaluate_skips_what_the_model_cannot_run_and_records_it(plugins_only):
    """The hooked evaluate, given a real PathBind task needing attention and lmms-eval's dummy model, runs nothing
    and reports the skip in results["pathbind"]."""
    import lmms_eval.evaluator as evaluator
    from lmms_eval.models.simple.dummy import Dummy
    from lmms_eval.tasks import get_task_dict

    assert install_evaluate_hook()
    task_dict = get_task_dict(["pathbind_demo_grounding"], plugins_only)
    results = evaluator.evaluate(lm=Dummy(), task_dict=task_dict, log_samples=False)
    assert results["results"] == {}
    assert "needs attention maps" in results["pathbind"]["skipped_tasks"]["pathbind_demo_grounding"]


def test_plugin_order_puts_pathbinds_own_plugins_first():
    """PathBind's plugins in their declared order, then the others by name; a plugin's folders keep their order."""
    dirs = [Contribution(p, p, Path(p)) for p in ("aaa", "pathbind_analysis", "zzz/1", "pathbind_tasks", "zzz/0")]
    dirs = [Contribution(c.name, c.plugin.split("/")[0], c.value) for c in dirs]
    assert [c.name for c in plugin_order(dirs)] == ["pathbind_tasks", "pathbind_analysis", "aaa", "zzz/1", "zzz/0"]


@pytest.fixture
def clashing_pm(tmp_path, monkeypatch):
    """The installed plugins plus ``clashing`` (sorted before ``pathbind_tasks``), defining mme and our task."""
    write_plugin(tmp_path, "clashing", """
        from pathlib import Path
        import pathbind

        @pathbind.hookimpl
        def pathbind_task_dirs():
            return [Path(__file__).parent / "clash_tasks"]
    """, files={"clash_tasks/a.yaml": "task: mme\ndataset_path: json\n",
                "clash_tasks/b.yaml": "task: pathbind_demo_vqa\ndataset_path: json\n",
                "clash_tasks/c.yaml": "task: clashing_own\ndataset_path: json\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "clashing", raising=False)  # a previous test's copy, in another tmp_path
    return make_plugin_manager()


def test_a_plugin_task_named_like_a_first_party_or_builtin_task_is_skipped(plugins_only, clashing_pm, tmp_path):
    """PathBind's task keeps its name though 'clashing' sorts first; lmms-eval's mme keeps its; each skip is
    reported naming both files; the plugin's other tasks are indexed."""
    from lmms_eval.tasks import TaskManager

    builtin = TaskManager.initialize_tasks.__wrapped__(plugins_only)
    merged, conflicts = merge_plugin_tasks(plugins_only._get_task_and_group, builtin, clashing_pm.task_dirs())
    assert merged["pathbind_demo_vqa"]["yaml_path"] == str(DEMO / "pathbind_demo_vqa.yaml")
    assert merged["mme"] == builtin["mme"]
    assert merged["clashing_own"]["yaml_path"] == str(tmp_path / "clash_tasks" / "c.yaml")
    messages = {c.name: c.message for c in conflicts}
    assert set(messages) == {"mme", "pathbind_demo_vqa"}
    assert messages["pathbind_demo_vqa"] == (
        f"task 'pathbind_demo_vqa' of plugin 'clashing' ({tmp_path / 'clash_tasks' / 'b.yaml'}) is skipped: plugin "
        f"'pathbind_tasks' defines it ({DEMO / 'pathbind_demo_vqa.yaml'}); rename one of them")
    assert "is skipped: lmms-eval defines it (" in messages["mme"] and "lmms_eval/tasks/mme" in messages["mme"]


def test_a_tag_used_by_two_plugins_lists_the_tasks_of_both():
    """A tag is a label, not a definition: nothing is skipped, the tag runs every task carrying it."""
    folders = {"a": {"shared": {"type": "tag", "task": ["t1"], "yaml_path": -1}},
               "b": {"shared": {"type": "tag", "task": ["t2"], "yaml_path": -1}}}
    dirs = [Contribution(name, f"plugin_{name}", Path(name)) for name in folders]
    merged, conflicts = merge_plugin_tasks(lambda folder: folders[folder], {}, dirs)
    assert merged["shared"]["task"] == ["t1", "t2"] and conflicts == []


def test_task_conflicts_lists_plugin_against_plugin_clashes_for_doctor(clashing_pm, tmp_path):
    """What `pathbind doctor` fails on: names two plugins define (not a clash with lmms-eval's own tasks)."""
    assert task_conflicts(clashing_pm) == [
        f"task 'pathbind_demo_vqa' of plugin 'clashing' ({tmp_path / 'clash_tasks' / 'b.yaml'}) is skipped: plugin "
        f"'pathbind_tasks' defines it ({DEMO / 'pathbind_demo_vqa.yaml'}); rename one of them"]


def test_the_installed_plugins_have_no_task_name_conflicts(pm):
    assert task_conflicts(pm) == []


def test_the_pathview_demo_tasks_are_variants_indexed_at_the_real_tasks_yamls(plugins_only):
    """Each of the 24 PathView-Bench tasks has its demo variant, a task at the real task's YAML, also under the
    demo's old name (pathview_demo_*); the demo folder keeps only its three groups."""
    index = plugins_only.task_index
    tasks = {name: (entry["type"], entry["yaml_path"]) for name, entry in index.items()
             if name.startswith("pathbind_pathview_") and entry["type"] == "task"}
    real = {name: found for name, found in tasks.items() if not name.startswith("pathbind_pathview_demo_")}
    assert len(real) == 24
    for prefix in ("pathbind_pathview_demo_", "pathview_demo_"):
        assert {name.replace("pathbind_pathview_", prefix, 1): found for name, found in real.items()} == \
            {name: (entry["type"], entry["yaml_path"]) for name, entry in index.items()
             if name.startswith(prefix) and entry["type"] == "task"}
    assert sorted(p.name for p in DEMO.glob("pathbind_pathview_demo*.yaml")) == [
        "pathbind_pathview_demo.yaml", "pathbind_pathview_demo_per_mille.yaml", "pathbind_pathview_demo_unit.yaml"]


class MyVariants:
    """A third party's variants of its own tasks (in ``root/src``), renamed into PathBind's demo names."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @hookimpl
    def pathbind_task_variants(self):
        return [TaskVariants(self.root / "src", ("mine_", "pathbind_demo_"), self.root)]


def test_a_variant_named_like_a_task_is_skipped_and_reported_like_one(plugins_only, tmp_path):
    """The variant named like PathBind's task is skipped, naming its source; the plugin's other variant is
    indexed at its source YAML; a source task the rename cannot name gets none."""
    (tmp_path / "src").mkdir()
    for task in ("mine_vqa", "mine_other", "unprefixed"):
        (tmp_path / "src" / f"{task}.yaml").write_text(f"task: {task}\ndataset_path: json\n")
    pm = make_plugin_manager(plugins={"mine": MyVariants(tmp_path)})
    merged, conflicts = merge_plugin_tasks(plugins_only._get_task_and_group, {}, pm.task_dirs(), pm.task_variants())
    assert merged["pathbind_demo_vqa"]["yaml_path"] == str(DEMO / "pathbind_demo_vqa.yaml")
    assert merged["pathbind_demo_other"]["yaml_path"] == str(tmp_path / "src" / "mine_other.yaml")
    assert not [name for name in merged if "unprefixed" in name]
    assert [c.message for c in conflicts] == [
        f"task 'pathbind_demo_vqa' of plugin 'mine' (a variant of {tmp_path / 'src' / 'mine_vqa.yaml'}) is skipped: "
        f"plugin 'pathbind_tasks' defines it ({DEMO / 'pathbind_demo_vqa.yaml'}); rename one of them"]


def test_a_users_include_path_task_wins_over_a_plugin_task_with_a_warning(plugins_only, tmp_path, logged_warnings):
    """The user's explicit folder defines what runs under a plugin task's name, and the log says so."""
    from lmms_eval.tasks import TaskManager

    (tmp_path / "mine.yaml").write_text("task: pathbind_demo_yesno\ndataset_path: json\n")
    index = TaskManager("ERROR", include_path=[str(tmp_path)], include_defaults=False).task_index
    assert index["pathbind_demo_yesno"]["yaml_path"] == str(tmp_path / "mine.yaml")
    assert (f"pathbind: task 'pathbind_demo_yesno': your --include_path definition ({tmp_path / 'mine.yaml'}) replaces "
            f"the one from plugin 'pathbind_tasks' ({DEMO / 'pathbind_demo_yesno.yaml'})") in logged_warnings


RESULTS = {
    "results": {"pathbind_demo_vqa": {"alias": "pathbind_demo_vqa", "acc_image,none": 100.0, "acc_image_stderr,none":
                                      "N/A", "by_dimension,none": {"stain": {"acc": 1.0}}, "ci95,none": [90.0, 100.0],
                                      "accounting,none": {"rows": 60, "evaluated": 4, "dropped": {}}}},
    "n-shot": {"pathbind_demo_vqa": 0},
    "config": {"resolved_cli_args": {"output_path": "out/run1"}},
    "pathbind": {"skipped_tasks": {}},
}


def test_the_table_keeps_scalars_and_names_the_structured_metrics_without_touching_the_results():
    """The console table gets a copy with scalar metrics only, a task that evaluated 4 of its 60 rows flagged
    beside its name; the results themselves keep every figure."""
    before = copy.deepcopy(RESULTS)
    shown, left_out = scalar_view(RESULTS)
    assert shown["results"]["pathbind_demo_vqa"] == {"alias": "pathbind_demo_vqa [4 of 60 evaluated]",
                                                     "acc_image,none": 100.0,
                                                     "acc_image_stderr,none": "N/A"}
    assert left_out == ["accounting", "by_dimension", "ci95"]
    assert before == RESULTS  # unchanged
    assert structured_note(left_out, RESULTS) == ("structured metrics (accounting, by_dimension, ci95) are in "
                                                  "results.json; `pathbind summary out/run1` shows them")


def test_the_cli_table_hook_prints_scalars_and_the_note_only_for_pathbind_runs():
    """lmms-eval's own make_table, as the CLI calls it, behind the hook; a run without PathBind is untouched."""
    from lmms_eval.utils import make_table

    hooked = seam_patch(make_table, _scalars_only, _pathbind_results)
    table = hooked(copy.deepcopy(RESULTS))
    *rows, note = table.rstrip().splitlines()
    assert "acc_image" in table and not any("{" in row or "by_dimension" in row for row in rows)
    assert note == structured_note(["accounting", "by_dimension", "ci95"], RESULTS)
    assert "N/A" not in table and "Stderr" not in table and "±" not in table  # no metric has a standard error
    plain = {k: v for k, v in copy.deepcopy(RESULTS).items() if k != "pathbind"}
    assert hooked(copy.deepcopy(plain)) == make_table(copy.deepcopy(plain))
    mixed = copy.deepcopy(RESULTS)  # beside a task with a standard error, the column stays, "N/A" where none
    mixed["results"]["mme"] = {"alias": "mme", "acc,none": 0.5, "acc_stderr,none": 0.01}
    mixed["n-shot"]["mme"] = 0
    assert "|Stderr|" in hooked(mixed).replace(" ", "") and "0.0100" in hooked(mixed)


@pytest.mark.parametrize("error", [RuntimeError("boom"), SystemExit(3)])
def test_the_entry_points_never_raise(monkeypatch, error):
    """A failure inside the seam is logged and yields an empty list: lmms-eval would drop all models otherwise,
    and torch would fail its own import."""
    def explode(*args):
        raise error

    monkeypatch.setattr("pathbind.plugins.get_plugin_manager", explode)
    monkeypatch.setattr("pathbind.lmms.watch.when_defined", explode)
    assert lmms_eval_models() == []
    assert pathbind_autoload.start() is None


def test_the_seam_hands_each_task_function_its_task_in_the_calling_thread():
    """process_results runs in lmms-eval's worker threads: the record names the task there, from the task the
    seam handed over (no call-stack walking), and nothing leaks to a call outside the task."""
    from concurrent.futures import ThreadPoolExecutor

    from pathbind_tasks.common.vqa import process_results

    task = RunningTask("pathbind_demo_yesno", {"test": "/data/demo/test.parquet"}, "parquet")
    scored = InTask(process_results, task)
    doc = {"id": "a", "question": "Is it?", "answer": "yes", "condition": "image", "answer_format": "yesno"}
    with ThreadPoolExecutor(max_workers=2) as pool:
        records = list(pool.map(lambda _: scored(doc, ["<answer>yes</answer>"])["acc_image"], range(4)))
    assert {record["task"] for record in records} == {"pathbind_demo_yesno"}
    assert process_results(doc, ["yes"])["acc_image"]["task"] is None
    assert repr(scored) == repr(process_results)  # what lmms-eval writes into the results' configs
    assert task.source("test") == "task pathbind_demo_yesno, file /data/demo/test.parquet"


def test_lmms_eval_internals_are_imported_only_under_the_seam():
    """Outside pathbind/lmms, product code imports only lmms-eval's public model and request classes."""
    import ast

    import pathbind

    public = {"lmms_eval.api.model", "lmms_eval.api.instance"}
    root = Path(pathbind.__file__).parent.parent
    seam = Path(pathbind.__file__).parent / "lmms"
    outside = []
    for package in ("pathbind", "pathbind_tasks", "pathbind_models", "pathbind_metrics", "pathbind_analysis"):
        for path in (p for p in (root / package).rglob("*.py") if not p.is_relative_to(seam)):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
                outside += [f"{path.relative_to(root)}: {name}" for name in names
                            if name.split(".")[0] == "lmms_eval" and name not in public]
    assert outside == []


def test_an_evaluation_that_returns_without_evaluating_or_writing_is_recorded_as_failed(monkeypatch, tmp_path):
    """What the ``lmms_eval`` command's exit code reads: an evaluation that raised, evaluated no task (each reason
    named) or wrote no results file under --output_path failed; one that wrote its results did not."""
    from argparse import Namespace

    from pathbind.lmms import outcome

    monkeypatch.setattr(outcome, "FAILED", [])
    args = Namespace(output_path=str(tmp_path))

    def evaluation(results: dict, write: bool = False):
        def cli_evaluate_single(args):
            if write:
                (tmp_path / "model" / "20260101_results.json").parent.mkdir(exist_ok=True)
                (tmp_path / "model" / "20260101_results.json").write_text("{}")
            return results, None
        return outcome._recording_failures(cli_evaluate_single)

    skipped = {"results": {}, "pathbind": {"skipped_tasks": {"probe": "task probe: the model offers no attention"}}}
    assert evaluation(skipped)(args) == (skipped, None)
    evaluation({"results": {"vqa": {"acc,none": 1.0}}})(args)
    evaluation({"results": {"vqa": {"acc,none": 1.0}}}, write=True)(args)

    def broken(args):
        raise KeyError("context")

    with pytest.raises(KeyError):  # lmms-eval's cli_evaluate catches it and logs it
        outcome._recording_failures(broken)(args)
    failed = outcome.FAILED
    assert failed == ["no task was evaluated; task probe: the model offers no attention",
                      f"no results file was written under {tmp_path} (lmms-eval's log says why)",
                      "KeyError: 'context'"]


def test_the_architecture_page_lists_every_patch():
    """docs/architecture.md's table of patches has one row per patched function of PATCHES, and no other."""
    page = (Path(__file__).parents[2] / "docs" / "architecture.md").read_text()
    rows = re.findall(r"^\| `([\w.]+)`", page.split("## The lmms-eval seam", 1)[1], flags=re.MULTILINE)
    assert sorted(name.rsplit(".", 1)[-1] for name in rows) == sorted(
        patch.target.rsplit(".", 1)[-1].rsplit(":", 1)[-1] for patch in patches.PATCHES if patch.wrapped_by)
