"""The lmms-eval bridge: PathBind plugins' models and task directories inside lmms-eval.

lmms-eval 0.7.3 has one extension point, the ``lmms_eval.models`` entry points it loads while importing
``lmms_eval.models``, and no task entry-point group. So the bridge installs its hooks lazily, once lmms-eval
defines what they wrap (:func:`watch_lmms_eval`): ``TaskManager`` (index the plugins' task directories,
``PATHBIND_DATA``, task build errors that name the task), ``evaluator.evaluate`` (skip what the model cannot
run, add ``results["pathbind"]`` with the data each task read) and the CLI's ``make_table`` (scalars only).
Two callers start the watch: the model entry point (:func:`lmms_eval_models`) and torch's extension autoload
(``pathbind_autoload``), which also runs in processes that never import ``lmms_eval.models`` (``lmms-eval tasks
list``, ``TaskManager()`` built first). Nothing here may raise: lmms-eval drops every entry-point model if one entry
point does, and torch fails its own import if an autoloaded extension raises.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.abc
import importlib.machinery
import inspect
import os
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import version as installed_version
from pathlib import Path
from typing import Any

from loguru import logger

from pathbind.capabilities import (
    REQUIRES_KEY,
    class_path,
    drop_conditions,
    model_capabilities,
    split_supported,
    unanswerable_conditions,
)
from pathbind.data import apply_data_root
from pathbind.plugins import Contribution, PluginManager, get_plugin_manager
from pathbind.provenance import data_provenance, record_raw_split
from pathbind.task_context import InTask, RunningTask
from pathbind.usage import usage_by_condition

_HOOK_MARK = "__pathbind_task_hook__"
# The plugins PathBind itself ships (pyproject's [project.entry-points.pathbind]): their task names come first.
FIRST_PARTY_PLUGINS = ("pathbind_tasks", "pathbind_models", "pathbind_metrics", "pathbind_analysis")
# The lmms-eval releases PathBind's tests run against (`make test`: the release; `make compat`: the main branch).
TESTED_LMMS_EVAL = ("0.7.3", "main 75571cf")
# sha256 of inspect.getsource of each lmms-eval function the bridge wraps or whose behaviour it relies on: the
# sources PathBind runs on, 0.7.3's first, then the main branch's where it differs (commit 75571cf, which reports
# version 0.7.2). Any other source stops a PathBind run before any model call (require_compatible_lmms_eval);
# a version string alone cannot tell a main-branch install from a release.
HOOKED_SOURCES: dict[str, tuple[str, ...]] = {
    "lmms_eval.tasks:TaskManager.__init__": (
        "f580db828e8ea2b5ea53285d65d564a6b14a9eb625b5e067ba209ba597844940",),
    "lmms_eval.tasks:TaskManager.initialize_tasks": (
        "a337111dbcf5e705299340f5544b400867a1ab2b558b606f54455ee784181641",),
    "lmms_eval.tasks:TaskManager._get_config": (
        "edf0c290475595e8a65d34a54594caa4cafb22c424cacfa8713463ad26633cf2",),
    "lmms_eval.tasks:TaskManager._get_task_and_group": (
        "eeac30a395937993712475265a5eb97e79a78e3de6363fa9e54f26a1aefbf990",
        "446735b725a647f323a548fad8f7b84902156216d24689782196e341871a6fee"),
    "lmms_eval.tasks:TaskManager._load_individual_task_or_group": (
        "8f90d5ae3d448758894746d2d1528a21f55a30ff56ff7fa6a8f2aae0d63dfcfe",),
    "lmms_eval.api.task:ConfigurableTask.download": (
        "92e6e3e572f19789bf8c901b64432e9283be483904660cb017c5e4443406fbd9",),
    "lmms_eval.evaluator:simple_evaluate": (
        "1b3c3feda517631d0efde10febef21c839d6323fe34e87ffbe91a7f885892f94",
        "eb82b9d222eeb699437b70f053ec39c940285cef51c1ec44656a68ae77208cb3"),
    "lmms_eval.evaluator:evaluate": (
        "17c70978141ea7a5882ea018d739c1dede908615cd6cc42cc2c7bd49d8fc905f",
        "3bfc63133de12c55914b81766455561a1ff9255174631ea7a6cf13548e3bd67e"),
    "lmms_eval.utils:make_table": (
        "9b57aad72e6d74fbb21b5d3f54f87860af9477100c76f1ecd493e857165379f9",),
    "lmms_eval.__main__:cli_evaluate": (
        "3dc4c52220265285dd9cbfac8192d6ca1cb18082b0d4c7b6bebb824cd2a135db",
        "c2449f720c12938671fb2ffa1a86caa18f602f0d3eacd9e5ef2694acaf875d18"),
    "lmms_eval.__main__:cli_evaluate_single": (
        "b93ab192598fdf168c64902b3165bb27c9ca4ca9ab25686b3b180b2d68daf352",
        "1e1736ff42c739f7f6c52e1d3af691916d68f82ccfb4b0a350a1dc9d1142857e"),
    "lmms_eval.cli.tasks_cmd:run_tasks": (
        "920bfe137fdbb0699eb0b15f0f7253c9865847a281dfa5092eb82926c4dc6bbc",),
    "lmms_eval.models.registry_v2:ModelRegistryV2.load_entrypoint_manifests": (
        "ebe48be47f6f1552199bff14d0c8355aa9b2a6e89e48cd1a06d2ed0c161d9a6c",),
    # --use_cache for PathBind models (pathbind_models.cache wraps these three)
    "lmms_eval.caching.response_cache:ResponseCache.create": (
        "4657055a88cd8258cfc74cb25689437277d6455e840786fc11f7ddc24e6043b9",
        "ab02fed9f20230fc8fbc435e8b275f9a498bf99e21ae72904de5f6bdc3320f21"),
    "lmms_eval.caching.response_cache:ResponseCache.execute": (
        "e552c11a2139e999906b828717318dab7c2fdb7274c4bd08b3166215b575a103",),
    "lmms_eval.caching.response_cache:ResponseCache._is_valid_response": (
        "b3d6ad6783051708fe76d8e297c71023a16f550baca2bb7724ac364b4b0c4937",),
}


# --- entry points ---------------------------------------------------------------------------------------------


def lmms_eval_models() -> list[Any]:
    """Entry point of group ``lmms_eval.models``: every plugin's models as ModelManifests; starts the watch.

    Imports neither ``lmms_eval.tasks`` nor torch: those would make ``lmms-eval models`` about 9 s slower.
    """
    try:
        from lmms_eval.models.registry_v2 import ModelManifest

        watch_lmms_eval()
        return [
            ModelManifest(model_id=spec.model_id, simple_class_path=spec.simple_class_path,
                          chat_class_path=spec.chat_class_path, aliases=spec.aliases)
            for spec in (c.value for c in get_plugin_manager().models().values())
        ]
    except KeyboardInterrupt:
        raise
    except BaseException:  # SystemExit from a plugin too: lmms-eval would drop every entry-point model
        logger.exception("pathbind: could not register PathBind models with lmms-eval")
        return []


def lmms_eval_task_dirs() -> list[str]:
    """Entry point of group ``lmms_eval.tasks`` (for lmms-eval releases that read it), in plugin order."""
    try:
        return [str(c.value) for c in plugin_order(get_plugin_manager().task_dirs())]
    except KeyboardInterrupt:
        raise
    except BaseException:
        logger.exception("pathbind: could not list PathBind task directories")
        return []


def watch_lmms_eval() -> None:
    """Install each hook once lmms-eval defines what it wraps, whichever of its modules is imported first."""
    when_defined("lmms_eval.tasks", "TaskManager", install_task_hook)
    when_defined("lmms_eval.evaluator", "evaluate", install_evaluate_hook)
    when_defined("lmms_eval.__main__", "make_table", install_table_hook)


# --- installing a hook once a module defines a name ----------------------------------------------------------

_PENDING: dict[str, dict[str, Callable[[], object]]] = {}  # module -> attribute -> install


def when_defined(module_name: str, attribute: str, install: Callable[[], object]) -> None:
    """Call ``install`` once module ``module_name`` defines ``attribute``: now if it does, at the end of the
    module's import if it is not imported yet, or, while it is being imported, at the first attribute lookup on
    it after the definition (the module's class is swapped, as ``importlib.util.LazyLoader`` does)."""
    module = sys.modules.get(module_name)
    if module is not None and attribute in vars(module):
        _guarded(install)
        return
    _PENDING.setdefault(module_name, {})[attribute] = install
    if module is None:
        if not any(isinstance(finder, _ImportWatcher) for finder in sys.meta_path):
            sys.meta_path.insert(0, _ImportWatcher())
    elif type(module) is types.ModuleType:
        module.__class__ = _WatchedModule


def _run_ready(module_name: str, namespace: Mapping[str, Any]) -> None:
    """Call the pending installs whose attribute ``namespace`` now defines (each once)."""
    pending = _PENDING.get(module_name, {})
    for attribute in [a for a in pending if a in namespace]:
        _guarded(pending.pop(attribute))


def _guarded(install: Callable[[], object]) -> None:
    try:
        install()
    except Exception:
        logger.exception(f"pathbind: could not hook lmms-eval ({getattr(install, '__name__', install)})")


class _WatchedModule(types.ModuleType):
    """A module being imported whose definitions a hook waits for; plain again once none is pending."""

    def __getattribute__(self, name: str) -> Any:
        namespace = object.__getattribute__(self, "__dict__")
        module_name = namespace.get("__name__", "")
        if not _PENDING.get(module_name):
            object.__setattr__(self, "__class__", types.ModuleType)
        else:
            _run_ready(module_name, namespace)
        return types.ModuleType.__getattribute__(self, name)


class _ImportWatcher(importlib.abc.MetaPathFinder):
    """Finds nothing itself: gives a watched module's own loader a step after executing the module."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not _PENDING.get(fullname):
            return None
        spec = next((s for s in _other_specs(self, fullname, path, target) if s is not None), None)
        loader = getattr(spec, "loader", None)
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec

        def exec_and_install(module: types.ModuleType) -> None:
            exec_module(module)
            _run_ready(fullname, vars(module))

        try:
            loader.exec_module = exec_and_install  # type: ignore[union-attr]  # this spec's own loader object
        except Exception:
            logger.debug(f"pathbind: cannot watch the import of {fullname}")
        return spec


def _other_specs(watcher: _ImportWatcher, fullname: str, path: Any, target: Any) -> Iterator[Any]:
    for finder in [f for f in sys.meta_path if f is not watcher]:
        find_spec = getattr(finder, "find_spec", None)
        yield find_spec(fullname, path, target) if find_spec else None


# --- TaskManager: plugin task directories, data root, task build errors --------------------------------------


class TaskBuildError(ValueError):
    """A PathBind task's documents cannot be built; the message names the task and the cause."""


def install_task_hook(pm: PluginManager | None = None) -> bool:
    """Make lmms-eval's TaskManager index the plugins' task directories, honour ``PATHBIND_DATA`` for their
    tasks and name the task in a build error; idempotent. ``pm`` defaults to the process-wide plugin manager.

    Returns False (and logs why) when this lmms-eval release no longer has the expected hook points.
    """
    try:
        from lmms_eval.api.task import ConfigurableTask
        from lmms_eval.tasks import TaskManager
    except Exception:
        logger.exception("pathbind: lmms_eval.tasks cannot be imported; PathBind tasks are unavailable")
        return False
    if getattr(TaskManager.initialize_tasks, _HOOK_MARK, False):
        return True
    expected = {"initialize_tasks": ("self", "include_path", "include_defaults"), "_get_config": ("self", "name"),
                "_load_individual_task_or_group": ("self", "name_or_config")}
    for method, arguments in expected.items():
        code = getattr(getattr(TaskManager, method, None), "__code__", None)
        if code is None or code.co_varnames[: len(arguments)] != arguments:
            logger.error(f"pathbind: this lmms-eval's TaskManager.{method} is not the one PathBind hooks; PathBind "
                         "tasks are unavailable (pass their folders with --include_path; see `pathbind doctor`)")
            return False
    manager: Callable[[], PluginManager] = (lambda: pm) if pm is not None else get_plugin_manager
    TaskManager._get_config = _with_data_root(TaskManager._get_config, manager)
    TaskManager._load_individual_task_or_group = _naming_failed_tasks(TaskManager._load_individual_task_or_group)
    _no_retry_for_build_errors(ConfigurableTask)
    TaskManager.initialize_tasks = _indexing_plugin_dirs(TaskManager.initialize_tasks, manager)
    when_defined("lmms_eval.evaluator", "evaluate", install_evaluate_hook)
    when_defined("lmms_eval.__main__", "make_table", install_table_hook)
    return True


def _indexing_plugin_dirs(original: Any, manager: Callable[[], PluginManager]) -> Any:
    @functools.wraps(original)
    def initialize_tasks(self: Any, include_path: Any = None, include_defaults: bool = True) -> dict:
        # lmms-eval's own index (built-ins unless include_defaults=False, then --include_path), then the plugins'
        # tasks: installed plugins are indexed whatever include_defaults says, like entry-point models.
        index = original(self, include_path=include_path, include_defaults=include_defaults)
        merged, conflicts = merge_plugin_tasks(self._get_task_and_group, index, manager().task_dirs())
        for conflict in conflicts:
            logger.warning(f"pathbind: {conflict.message}")
        return merged

    setattr(initialize_tasks, _HOOK_MARK, True)
    return initialize_tasks


def plugin_order(dirs: list[Contribution]) -> list[Contribution]:
    """Task directories in the order their names are claimed: PathBind's own plugins, then the others by name."""
    def rank(item: tuple[int, Contribution]) -> tuple[bool, int, str, int]:
        position, contribution = item
        first_party = contribution.plugin in FIRST_PARTY_PLUGINS
        return (not first_party, FIRST_PARTY_PLUGINS.index(contribution.plugin) if first_party else 0,
                contribution.plugin, position)

    return [contribution for _, contribution in sorted(enumerate(dirs), key=rank)]


@dataclass(frozen=True)
class TaskNameConflict:
    """A plugin task name that is defined elsewhere too; ``kept`` is the definition lmms-eval runs."""

    name: str
    plugin: str  # the plugin whose definition is skipped
    skipped: str  # its YAML
    kept: str  # the YAML (or "tag") that keeps the name
    kept_by: str  # "plugin <name>", "lmms-eval" (a built-in task) or "--include_path" (the user's folder)

    @property
    def message(self) -> str:
        if self.kept_by == "--include_path":
            return (f"task {self.name!r}: your --include_path definition ({self.kept}) replaces the one from plugin "
                    f"{self.plugin!r} ({self.skipped})")
        return (f"task {self.name!r} of plugin {self.plugin!r} ({self.skipped}) is skipped: {self.kept_by} "
                f"defines it ({self.kept}); rename one of them")


def merge_plugin_tasks(read_dir: Callable[[str], dict], index: dict,
                       dirs: list[Contribution]) -> tuple[dict, list[TaskNameConflict]]:
    """``index`` (lmms-eval's built-ins and ``--include_path`` folders) plus each plugin task whose name is free.

    A name keeps its first definition: lmms-eval's index, then the plugins in :func:`plugin_order`; a tag
    named in several places lists the tasks of all of them. ``read_dir`` is ``TaskManager._get_task_and_group``.
    """
    merged, owners, conflicts = dict(index), {}, []
    for contribution in plugin_order(dirs):
        for name, entry in sorted(read_dir(str(contribution.value)).items()):
            kept = merged.get(name)
            if kept is None:
                merged[name], owners[name] = entry, contribution.plugin
            elif kept["type"] == entry["type"] == "tag":
                merged[name] = {**kept, "task": [*kept["task"], *entry["task"]]}
            else:
                conflicts.append(TaskNameConflict(name, contribution.plugin, _where(entry), _where(kept),
                                                  f"plugin {owners[name]!r}" if name in owners else _origin(kept)))
    return merged, conflicts


def _where(entry: dict) -> str:
    return "a tag" if entry.get("yaml_path", -1) == -1 else str(entry["yaml_path"])


def _origin(entry: dict) -> str:
    import lmms_eval.tasks

    builtin = Path(lmms_eval.tasks.__file__).parent
    path = entry.get("yaml_path", -1)
    return "lmms-eval" if path == -1 or Path(path).is_relative_to(builtin) else "--include_path"


def task_conflicts(pm: PluginManager | None = None) -> list[str]:
    """Task names that two plugins define, one message each naming both plugins and files (the later plugin's
    task is skipped); ``pathbind doctor`` fails on them."""
    from lmms_eval.tasks import TaskManager

    reader = TaskManager.__new__(TaskManager)  # only its YAML indexing is used, which reads nothing else but this
    reader.logger = logger
    _, conflicts = merge_plugin_tasks(reader._get_task_and_group, {}, (pm or get_plugin_manager()).task_dirs())
    return [c.message for c in conflicts]


_PLUGIN_TASKS: dict[str, str] = {}  # task name -> YAML, for the tasks whose last loaded config is a plugin's


def _with_data_root(original: Any, manager: Callable[[], PluginManager]) -> Any:
    @functools.wraps(original)
    def get_config(self: Any, name: str) -> dict:
        config = original(self, name)
        yaml_path = self.task_index[name]["yaml_path"]
        if not (isinstance(yaml_path, str) and _in_plugin_dir(yaml_path, manager())):
            _PLUGIN_TASKS.pop(name, None)
            if _declares_data(config) or _uses_pathbind(config):  # e.g. a copy via --include_path
                return _in_task(config, name, _RecordingRows)
            return config
        _PLUGIN_TASKS[name] = yaml_path
        return _in_task(apply_data_root(config), name, _NamingTheTask)

    return get_config


def _in_task(config: dict, name: str, process_docs: type[_RecordingRows]) -> dict:
    """``config`` whose ``process_docs`` and ``process_results`` run with their task set (pathbind.task_context)."""
    task = RunningTask(name, (config.get("dataset_kwargs") or {}).get("data_files"), config.get("dataset_path"))
    config = dict(config)
    if callable(config.get("process_docs")):
        config["process_docs"] = process_docs(config["process_docs"], task)
    if callable(config.get("process_results")):
        config["process_results"] = InTask(config["process_results"], task)
    return config


def _in_plugin_dir(yaml_path: str, manager: PluginManager) -> bool:
    return any(Path(yaml_path).is_relative_to(c.value) for c in manager.task_dirs())


def _uses_pathbind(config: Mapping[str, Any]) -> bool:
    """A third party's task built on PathBind's own process_docs or process_results."""
    return any(str(getattr(config.get(key), "__module__", "")).startswith("pathbind")
               for key in ("process_docs", "process_results"))


def _declares_data(config: Mapping[str, Any]) -> bool:
    metadata = config.get("metadata")
    return isinstance(metadata, Mapping) and bool(metadata.get("pathbind_data"))


class _RecordingRows(InTask):
    """``process_docs`` that first notes the split's rows as loaded (lmms-eval keeps only the converted split; the
    run's data record needs the raw count)."""

    def __call__(self, dataset: Any) -> Any:
        try:
            record_raw_split(self.task.name, dataset)
        except Exception:
            logger.exception(f"pathbind: could not count the rows task {self.task.name} loaded")
        return super().__call__(dataset)


class _NamingTheTask(_RecordingRows):
    """``process_docs`` whose error names the task (and is not retried: see _no_retry_for_build_errors); it first
    makes sure this lmms-eval is one PathBind can run on."""

    def __call__(self, dataset: Any) -> Any:
        try:
            require_compatible_lmms_eval()
            return super().__call__(dataset)
        except Exception as exc:
            raise TaskBuildError(f"task {self.task.name}: {type(exc).__name__}: {exc}") from exc


def _no_retry_for_build_errors(task_class: Any) -> None:
    """lmms-eval retries a task's whole ``download`` (load and ``process_docs``) 5 times, 2 s apart, then raises
    ``RetryError[<Future ...>]``; a TaskBuildError is deterministic, so it is raised at once, as it is."""
    from tenacity import retry_if_not_exception_type

    download = task_class.download
    if getattr(download, _HOOK_MARK, False) or not callable(getattr(download, "retry_with", None)):
        return
    hooked = download.retry_with(retry=download.retry.retry & retry_if_not_exception_type(TaskBuildError))
    setattr(hooked, _HOOK_MARK, True)
    task_class.download = hooked


def _naming_failed_tasks(original: Any) -> Any:
    """Turn the ``RetryError`` a PathBind task's failed build ends in into ``ValueError("task <name>: <cause>")``,
    chained from the cause (the load error after lmms-eval's retries)."""
    from tenacity import RetryError

    @functools.wraps(original)
    def load(self: Any, name_or_config: Any = None, *args: Any, **kwargs: Any) -> Any:
        name = name_or_config.get("task") if isinstance(name_or_config, dict) else name_or_config
        try:
            return original(self, name_or_config, *args, **kwargs)
        except RetryError as exc:
            cause = exc.last_attempt.exception()
            if not isinstance(name, str) or name not in _PLUGIN_TASKS or cause is None:
                raise
            raise TaskBuildError(f"task {name}: {type(cause).__name__}: {cause}") from cause

    return load


# --- evaluate: skipped tasks and conditions, the run report --------------------------------------------------


def install_evaluate_hook() -> bool:
    """Make lmms-eval's ``evaluate`` skip, with a logged reason, the tasks whose ``metadata.pathbind_requires``
    the model does not offer, and add ``results["pathbind"]`` (skipped tasks, token usage per condition, the data
    each task read) to runs with a PathBind task or model; idempotent. Returns False (and logs why) when this
    lmms-eval release has no such ``evaluate``.
    """
    try:
        evaluator: Any = sys.modules.get("lmms_eval.evaluator") or importlib.import_module("lmms_eval.evaluator")
        original = evaluator.evaluate
        if getattr(original, _HOOK_MARK, False):
            return True
        signature = inspect.signature(original)
        if list(signature.parameters)[:2] != ["lm", "task_dict"] or "log_samples" not in signature.parameters:
            logger.error("pathbind: this lmms-eval's evaluator.evaluate is not the one PathBind hooks; tasks a "
                         "model cannot run will fail instead of being skipped")
            return False
        evaluator.evaluate = _skipping_unsupported(original, signature)
        return True
    except Exception:
        logger.exception("pathbind: could not hook lmms_eval.evaluator.evaluate")
        return False


def _skipping_unsupported(original: Any, signature: inspect.Signature) -> Any:
    @functools.wraps(original)
    def evaluate(*args: Any, **kwargs: Any) -> dict | None:
        call = signature.bind(*args, **kwargs)
        task_dict, lm, cli_args = call.arguments["task_dict"], call.arguments["lm"], call.arguments.get("cli_args")
        if _pathbind_in_run(task_dict, lm):
            require_compatible_lmms_eval()
        kept, skipped = _supported_tasks(task_dict, lm, cli_args)
        # Before conditions are dropped: the record is of the data as loaded; on rank 0 only, which alone gets
        # the results (the other ranks would hash the same files for nothing).
        data = _data_read(kept) if int(os.environ.get("RANK", 0)) == 0 else {}
        kept, dropped, conditions = _answerable_documents(kept, lm, cli_args)
        skipped.update(dropped)
        call.arguments["task_dict"] = kept
        # lmms-eval's evaluate fails on an empty task dictionary; with every task skipped there is nothing to run.
        log_samples = call.arguments.get("log_samples", signature.parameters["log_samples"].default)
        results = original(*call.args, **call.kwargs) if kept else _no_results(log_samples)
        if isinstance(results, dict) and (skipped or conditions or _pathbind_in_run(task_dict, lm)):
            results["pathbind"] = _run_report(results, skipped, conditions)
            results["pathbind"]["model"] = _model_settings(lm)
            results["pathbind"]["data"] = {name: record for name, record in data.items() if name not in dropped}
        return results

    setattr(evaluate, _HOOK_MARK, True)
    return evaluate


def _pathbind_in_run(task_dict: Mapping[Any, Any], lm: Any) -> bool:
    """A plugin's task (its YAML in a plugin task folder, or one declaring ``metadata.pathbind_requires``) or a
    plugin's model (the class a ModelSpec names) is in the run."""
    for name, task in _leaf_tasks(task_dict):
        metadata = getattr(getattr(task, "config", None), "metadata", None)
        if name in _PLUGIN_TASKS or (isinstance(metadata, Mapping) and REQUIRES_KEY in metadata):
            return True
    try:
        specs = [c.value for c in get_plugin_manager().models().values()]
        return class_path(lm) in {path for s in specs for path in (s.simple_class_path, s.chat_class_path)}
    except Exception:
        logger.exception("pathbind: could not tell whether the model is a PathBind model")
        return False


def _data_read(task_dict: Mapping[Any, Any]) -> dict[str, Any]:
    """``pathbind.data``: what each PathBind task (a plugin's, or one naming ``metadata.pathbind_data``) read;
    ``{"error": ...}`` when the record cannot be made, which never fails the run."""
    try:
        tasks = {name: task for name, task in _leaf_tasks(task_dict) if name in _PLUGIN_TASKS or _declares_data(
            {"metadata": getattr(getattr(task, "config", None), "metadata", None)})}
        return data_provenance(tasks)
    except Exception as exc:
        logger.exception("pathbind: could not record the data the tasks read")
        return {"error": f"{type(exc).__name__}: {exc}"}


def _leaf_tasks(task_dict: Mapping[Any, Any]) -> Iterator[tuple[str, Any]]:
    for key, value in task_dict.items():
        if isinstance(value, Mapping):
            yield from _leaf_tasks(value)
        else:
            yield str(key), value


def _supported_tasks(task_dict: dict, lm: Any, cli_args: Any) -> tuple[dict, dict[str, str]]:
    """The tasks ``lm`` can run and, logged, why the others are skipped; every task if the check itself fails."""
    try:
        kept, skipped = split_supported(task_dict, model_capabilities(lm), _model_label(lm, cli_args))
    except Exception:
        logger.exception("pathbind: could not check the tasks' pathbind_requires; running every task")
        return task_dict, {}
    for reason in skipped.values():
        logger.error(f"pathbind: {reason}")
    return kept, skipped


def _answerable_documents(task_dict: dict, lm: Any, cli_args: Any) -> tuple[dict, dict[str, str],
                                                                          dict[str, dict[str, str]]]:
    """``task_dict`` without the documents of conditions ``lm`` is known to fail on, logged; all of it if the
    check itself fails."""
    try:
        unanswerable = unanswerable_conditions(lm)
        if not unanswerable:
            return task_dict, {}, {}
        kept, tasks, conditions = drop_conditions(task_dict, unanswerable, _model_label(lm, cli_args))
    except Exception:
        logger.exception("pathbind: could not check which conditions the model answers; running every document")
        return task_dict, {}, {}
    for reason in tasks.values():
        logger.error(f"pathbind: {reason}")
    for reason in (r for task_reasons in conditions.values() for r in task_reasons.values()):
        logger.warning(f"pathbind: {reason}")
    return kept, tasks, conditions


def _run_report(results: dict, skipped: dict[str, str],
                conditions: dict[str, dict[str, str]] | None = None) -> dict[str, Any]:
    """``results["pathbind"]``: the skipped tasks and conditions with their reasons, token usage per task and
    condition. A task's skipped conditions also sit beside its metrics, as ``skipped_conditions``."""
    for task, reasons in (conditions or {}).items():
        if isinstance(results.get("results", {}).get(task), dict):
            results["results"][task]["skipped_conditions,none"] = reasons
    try:
        usage = usage_by_condition(results.get("samples") or {})
    except Exception:
        logger.exception("pathbind: could not sum token usage per condition")
        usage = {}
    return {"skipped_tasks": skipped, "skipped_conditions": conditions or {}, "usage_by_condition": usage}


def _model_settings(lm: Any) -> Any:
    """What the model reports it ran with (``pathbind_settings``: for ``pathbind_hf`` its dtype, placement, image
    limits and the generation settings that apply), as JSON; None for a model that reports nothing."""
    try:
        return getattr(lm, "pathbind_settings", None)
    except Exception:
        logger.exception("pathbind: could not read the model's settings")
        return None


def _model_label(lm: Any, cli_args: Any = None) -> str:
    """How messages name the model: the ``--model`` name when run from the CLI, and the class."""
    cls = type(lm)
    name = getattr(cli_args, "model", None)
    return f"{name!r} ({cls.__module__}.{cls.__qualname__})" if name else f"{cls.__module__}.{cls.__qualname__}"


def _no_results(log_samples: Any) -> dict | None:
    """What lmms-eval's evaluate returns for a run of zero tasks: the results dict on rank 0, None elsewhere."""
    if int(os.environ.get("RANK", 0)) != 0:
        return None
    empty: dict[str, Any] = {key: {} for key in ("results", "group_subtasks", "configs", "versions", "n-shot",
                                                 "higher_is_better", "n-samples")}
    return {**empty, "samples": {}} if log_samples else empty


# --- the console table -----------------------------------------------------------------------------------------


def install_table_hook() -> bool:
    """Make the lmms-eval CLI's results table show only scalar metrics in runs with ``results["pathbind"]``, with
    one line naming the structured ones left out; idempotent. The CLI saves results.json before it prints."""
    main = sys.modules.get("lmms_eval.__main__")
    original = getattr(main, "make_table", None)
    if original is None or getattr(original, _HOOK_MARK, False):
        return original is not None
    main.make_table = _scalars_only(original)  # type: ignore[union-attr]  # looked up as a global at print time
    return True


def _scalars_only(original: Any) -> Any:
    @functools.wraps(original)
    def make_table(result_dict: dict, column: str = "results", sort_results: bool = False) -> str:
        if "pathbind" not in result_dict:
            return original(result_dict, column, sort_results)
        shown, left_out = scalar_view(result_dict, column)
        table = original(shown, column, sort_results)
        return f"{table}\n{structured_note(left_out, result_dict)}\n" if left_out else table

    setattr(make_table, _HOOK_MARK, True)
    return make_table


def scalar_view(result_dict: dict, column: str = "results") -> tuple[dict, list[str]]:
    """A copy of ``result_dict`` whose ``column`` keeps only scalar metric values, and the metric names left out;
    ``result_dict`` itself is not changed."""
    left_out: set[str] = set()
    table: dict[str, dict] = {}
    for task, metrics in (result_dict.get(column) or {}).items():
        table[task] = {}
        for key, value in metrics.items():
            if value is None or isinstance(value, (str, int, float)):
                table[task][key] = value
            else:
                left_out.add(key.partition(",")[0])
    return {**result_dict, column: table}, sorted(left_out)


def structured_note(names: list[str], result_dict: dict) -> str:
    """The line under the table naming the structured metrics and where to read them."""
    output = ((result_dict.get("config") or {}).get("resolved_cli_args") or {}).get("output_path")
    where = (f"are in results.json; `pathbind summary {output}` shows them" if output else
             "are not in this table; run with --output_path to save them to results.json for `pathbind summary`")
    return f"structured metrics ({', '.join(names)}) {where}"


# --- the lmms-eval sources the bridge was written against -----------------------------------------------------


def source_hash(qualified: str) -> str:
    """sha256 of the source of ``module:qualname`` (lmms-eval's own, under any wrapper PathBind added)."""
    module, _, qualname = qualified.partition(":")
    target: Any = importlib.import_module(module)
    for part in qualname.split("."):
        target = target.__dict__[part] if isinstance(target, type) else getattr(target, part)
    return hashlib.sha256(inspect.getsource(inspect.unwrap(target)).encode()).hexdigest()


class IncompatibleLmmsEval(RuntimeError):
    """This lmms-eval is not one PathBind can run on; the message names what changed and what to install."""


@functools.cache
def compatibility_problem() -> str:
    """Why PathBind cannot run on the installed lmms-eval, or "" when it can: every function it hooks has a source it
    runs on (HOOKED_SOURCES), whatever the version says. Checked once per process (about 0.1 s)."""
    changed = hooked_sources_changed()
    if not changed:
        return ""
    installed = installed_version("lmms-eval")
    tested = ", ".join(TESTED_LMMS_EVAL)
    return (f"lmms-eval {installed} is not one PathBind runs on (tested: {tested}): lmms-eval functions PathBind "
            f"hooks changed: {', '.join(changed)}. PathBind stops rather than risk a wrong run: install lmms-eval "
            f"{TESTED_LMMS_EVAL[0]} (pip install 'lmms-eval=={TESTED_LMMS_EVAL[0]}') or a PathBind release that "
            f"supports this one")


def require_compatible_lmms_eval() -> None:
    """Raise :class:`IncompatibleLmmsEval` when :func:`compatibility_problem` finds one."""
    problem = compatibility_problem()
    if problem:
        raise IncompatibleLmmsEval(problem)


def hooked_sources_changed() -> list[str]:
    """The lmms-eval functions in HOOKED_SOURCES whose source is none PathBind runs on (or that no longer exist);
    empty when all match."""
    changed = []
    for qualified, accepted in HOOKED_SOURCES.items():
        try:
            found = source_hash(qualified)
        except Exception:
            found = ""
        if found not in accepted:
            changed.append(qualified)
    return changed
