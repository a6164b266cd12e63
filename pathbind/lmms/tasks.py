"""lmms-eval's ``TaskManager`` with PathBind: the plugins' task folders and task variants indexed, ``PATHBIND_DATA``
applied, task functions run with their task and ledger (:mod:`pathbind.lmms.running`), build errors that name the
task. What PathBind's commands ask of the task machinery is :mod:`pathbind.lmms.queries`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loguru import logger

from pathbind.data import DataLocationError, apply_data_root
from pathbind.hookspecs import TaskVariants
from pathbind.lmms.failures import CheckedAggregation
from pathbind.lmms.marks import FIRST_PARTY_PLUGINS, marked, patch, pathbind_config, pathbind_task
from pathbind.lmms.patches import require_compatible_lmms_eval
from pathbind.lmms.running import InTask, RunningTask
from pathbind.plugins import Contribution, PluginManager, get_plugin_manager
from pathbind.provenance import record_raw_split
from pathbind.variants import variant_config, variant_name

VARIANTS_KEY = "pathbind_variants"  # in a task's index entry: the TaskVariants that derive it from the entry's YAML
PLUGIN_KEY = "pathbind_plugin"  # in the index entry of each plugin task, group and variant: the plugin's name

class TaskError(ValueError):
    """A task's function failed, deterministically (not retried); the message names the task and the cause."""


class TaskBuildError(TaskError):
    """A PathBind task's documents cannot be built; the message names the task and the cause."""


def install_task_hook(pm: PluginManager | None = None) -> bool:
    """Make lmms-eval's TaskManager index the plugins' task directories and task variants, and build PathBind's
    tasks' configs (``PATHBIND_DATA``, task functions run with their task, errors that name the task, not retried);
    idempotent. ``pm`` defaults to the process-wide plugin manager.

    Returns False (and logs why) when this lmms-eval release no longer has the expected hook points.
    """
    try:
        from lmms_eval.api.task import ConfigurableTask
        from lmms_eval.tasks import TaskManager
    except Exception:
        logger.exception("pathbind: lmms_eval.tasks cannot be imported; PathBind tasks are unavailable")
        return False
    if marked(TaskManager.initialize_tasks):
        return True
    expected = {"initialize_tasks": ("self", "include_path", "include_defaults"), "_get_config": ("self", "name")}
    for method, arguments in expected.items():
        code = getattr(getattr(TaskManager, method, None), "__code__", None)
        if code is None or code.co_varnames[: len(arguments)] != arguments:
            logger.error(f"pathbind: this lmms-eval's TaskManager.{method} is not the one PathBind hooks; PathBind "
                         "tasks are unavailable (pass their folders with --include_path; see `pathbind doctor`)")
            return False

    def a_task_manager(task_manager: Any, *args: Any, **kwargs: Any) -> bool:
        return isinstance(task_manager, TaskManager)

    manager: Callable[[], PluginManager] = (lambda: pm) if pm is not None else get_plugin_manager
    TaskManager._get_config = patch(TaskManager._get_config, _get_config, a_task_manager)
    for method in ("download", "process_results"):
        setattr(ConfigurableTask, method, patch(getattr(ConfigurableTask, method), _no_retry(method), a_pathbind_task))
    TaskManager.initialize_tasks = patch(TaskManager.initialize_tasks, _indexing_plugin_dirs(manager), a_task_manager)
    return True


def _indexing_plugin_dirs(manager: Callable[[], PluginManager]) -> Callable[..., dict]:
    def initialize_tasks(original: Any, task_manager: Any, *args: Any, **kwargs: Any) -> dict:
        # lmms-eval's own index (built-ins unless include_defaults=False, then --include_path), then the plugins'
        # tasks: installed plugins are indexed whatever include_defaults says, like entry-point models.
        index = original(task_manager, *args, **kwargs)
        pm = manager()
        merged, conflicts = merge_plugin_tasks(plugin_dir_reader(task_manager), index, pm.task_dirs(),
                                               pm.task_variants())
        for conflict in conflicts:
            logger.warning(f"pathbind: {conflict.message}")
        return merged

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


def merge_plugin_tasks(read_dir: Callable[[str], dict], index: dict, dirs: list[Contribution],
                       variants: Sequence[Contribution] = ()) -> tuple[dict, list[TaskNameConflict]]:
    """``index`` (lmms-eval's built-ins and ``--include_path`` folders) plus each plugin task and task variant whose
    name is free.

    A name keeps its first definition: lmms-eval's index, then the plugins in :func:`plugin_order` (a plugin's
    folders before its variants); a tag named in several places lists the tasks of all of them. Each plugin entry
    names its plugin (``PLUGIN_KEY``): that is what makes its task PathBind's. ``read_dir`` is
    ``TaskManager._get_task_and_group``.
    """
    merged, owners, conflicts = dict(index), {}, []
    for contribution in plugin_order([*dirs, *variants]):
        for name, entry in sorted(_plugin_entries(read_dir, contribution.value).items()):
            kept = merged.get(name)
            if kept is None:
                merged[name], owners[name] = {**entry, PLUGIN_KEY: contribution.plugin}, contribution.plugin
            elif kept["type"] == entry["type"] == "tag":
                merged[name] = {**kept, "task": [*kept["task"], *entry["task"]]}
            else:
                conflicts.append(TaskNameConflict(name, contribution.plugin, _where(entry), _where(kept),
                                                  f"plugin {owners[name]!r}" if name in owners else _origin(kept)))
    return merged, conflicts


def plugin_dir_reader(task_manager: Any) -> Callable[[str], dict]:
    """``task_manager._get_task_and_group`` without its DEBUG line for each YAML that is neither a task nor a group:
    in a plugin's folder those are its shared ``include:`` bases (``_pathview.yaml``) and data files, by design."""
    reader = copy.copy(task_manager)
    reader.logger = _WithoutDebug(task_manager.logger)
    return reader._get_task_and_group


class _WithoutDebug:
    """A logger that drops DEBUG messages and passes every other call through."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def debug(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _plugin_entries(read_dir: Callable[[str], dict], contributed: Path | TaskVariants) -> dict:
    """The index entries of a task folder, or of the variants a TaskVariants declares: each task of its source
    folder renamed, at its source's YAML (a task the rename cannot name has none; the catalog reports it)."""
    if not isinstance(contributed, TaskVariants):
        return read_dir(str(contributed))
    return {name: {**entry, VARIANTS_KEY: contributed} for task, entry in read_dir(str(contributed.source)).items()
            if entry["type"] == "task" and (name := variant_name(contributed, task)) is not None}


def _where(entry: dict) -> str:
    if entry.get("yaml_path", -1) == -1:
        return "a tag"
    return f"a variant of {entry['yaml_path']}" if VARIANTS_KEY in entry else str(entry["yaml_path"])


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
    pm = pm or get_plugin_manager()
    _, conflicts = merge_plugin_tasks(plugin_dir_reader(reader), {}, pm.task_dirs(), pm.task_variants())
    return [c.message for c in conflicts]


def _get_config(original: Any, task_manager: Any, name: str) -> dict:
    """lmms-eval's config of task ``name``; a plugin's (a variant's derived from its source's, ``PATHBIND_DATA``
    applied) and one that asks for PathBind (:func:`~pathbind.lmms.marks.pathbind_config`) with their functions run
    in their task. Any other is lmms-eval's config object as it is."""
    config = original(task_manager, name)
    entry = task_manager.task_index[name]
    if PLUGIN_KEY not in entry:
        return _in_task(config, name) if pathbind_config(config) else config
    try:
        located = apply_data_root(_as_variant(entry, config))
    except DataLocationError as exc:  # the message names the data and what to set; the run's names the task
        raise TaskBuildError(f"task {name}: {exc}") from exc
    return _in_task(located, name)


def _as_variant(entry: dict, config: dict) -> dict:
    """A variant's config, derived from its source's as PathBind's catalog derives it; any other unchanged."""
    variants = entry.get(VARIANTS_KEY)
    return config if variants is None else variant_config(variants, config, entry["yaml_path"])


def _in_task(config: dict, name: str) -> dict:
    """``config`` whose ``process_docs``, ``process_results`` and aggregations run with their task set
    (:mod:`pathbind.lmms.running`)."""
    metadata = config.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    task = RunningTask(name, (config.get("dataset_kwargs") or {}).get("data_files"), config.get("dataset_path"),
                       cluster=str(metadata.get("pathbind_cluster") or "image"))
    config = dict(config)
    if callable(config.get("process_docs")):
        config["process_docs"] = _NamingTheTask(config["process_docs"], task)
    for key in ("doc_to_text", "process_results"):  # lmms-eval calls both for every document, and stops on a raise
        if callable(config.get(key)):
            config[key] = _NamingTheDocument(config[key], task, key)
    if isinstance(config.get("metric_list"), list):  # the aggregations read the task's ledger
        config["metric_list"] = [{**m, "aggregation": CheckedAggregation(m["aggregation"], task, str(m.get("metric")))}
                                 if isinstance(m, Mapping) and callable(m.get("aggregation")) else m
                                 for m in config["metric_list"]]
    return config


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
    """``process_docs`` whose error names the task (and is not retried: see _no_retry); it first
    makes sure this lmms-eval is one PathBind can run on."""

    def __call__(self, dataset: Any) -> Any:
        try:
            require_compatible_lmms_eval()
            return super().__call__(dataset)
        except Exception as exc:
            raise TaskBuildError(f"task {self.task.name}: {type(exc).__name__}: {exc}") from exc


class _NamingTheDocument(InTask):
    """A task function of one document (``doc_to_text``, ``process_results``) whose error names the task, the
    function, the document and the cause (and is not retried). A template's missing variable is named by
    :func:`pathbind.templates.render`, with its fix."""

    def __init__(self, function: Any, task: RunningTask, role: str) -> None:
        super().__init__(function, task)
        self.role = role

    def __call__(self, doc: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(doc, *args, **kwargs)
        except Exception as exc:
            item = doc.get("id", "?") if isinstance(doc, Mapping) else "?"
            raise TaskError(f"task {self.task.name}: {self.role} failed on document {item}: "
                            f"{type(exc).__name__}: {exc}") from exc


def a_pathbind_task(task: Any, *args: Any, **kwargs: Any) -> bool:
    return pathbind_task(task)


def _no_retry(method: str) -> Callable[..., Any]:
    """``ConfigurableTask.<method>`` for PathBind's tasks. lmms-eval retries a task's whole ``download`` (load and
    ``process_docs``) and each ``process_results`` 5 times, 2 s apart, then raises ``RetryError[<Future ...>]``:
    a TaskError is deterministic, so it leaves at once, as it is, and a ``download`` that still fails after the
    retries raises a TaskBuildError naming the task and the cause."""
    from tenacity import RetryError, retry_if_not_exception_type

    def run(original: Any, task: Any, *args: Any, **kwargs: Any) -> Any:
        once = original.retry_with(retry=original.retry.retry & retry_if_not_exception_type(TaskError))
        try:
            return once(task, *args, **kwargs)
        except RetryError as exc:
            cause = exc.last_attempt.exception()
            if method != "download" or cause is None:
                raise
            raise TaskBuildError(f"task {task.config.task}: {type(cause).__name__}: {cause}") from cause

    return run
