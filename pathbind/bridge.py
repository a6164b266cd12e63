"""The lmms-eval bridge: PathBind plugins' models and task directories inside lmms-eval.

lmms-eval 0.7.3 loads the ``lmms_eval.models`` entry points while importing
``lmms_eval.models``, before any TaskManager exists, and has no task entry-point group.
So :func:`lmms_eval_models` also wraps ``TaskManager.initialize_tasks`` to index the plugins'
task directories after the built-ins and before ``--include_path``. Nothing here may raise:
lmms-eval drops every entry-point model if one entry point does.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Any

from pathbind.data import apply_data_root
from pathbind.plugins import PluginManager, get_plugin_manager

logger = logging.getLogger("pathbind")

_HOOK_MARK = "__pathbind_task_hook__"


def lmms_eval_models() -> list[Any]:
    """Entry point of group ``lmms_eval.models``: every plugin's models as ModelManifests."""
    try:
        from lmms_eval.models.registry_v2 import ModelManifest

        pm = get_plugin_manager()
        install_task_hook(pm)
        return [
            ModelManifest(model_id=spec.model_id, simple_class_path=spec.simple_class_path,
                          chat_class_path=spec.chat_class_path, aliases=spec.aliases)
            for spec in (c.value for c in pm.models().values())
        ]
    except Exception:
        logger.exception("pathbind: could not register PathBind models with lmms-eval")
        return []


def lmms_eval_task_dirs() -> list[str]:
    """Entry point of group ``lmms_eval.tasks`` (for lmms-eval releases that read it)."""
    try:
        return [str(c.value) for c in get_plugin_manager().task_dirs()]
    except Exception:
        logger.exception("pathbind: could not list PathBind task directories")
        return []


def install_task_hook(pm: PluginManager | None = None) -> bool:
    """Make lmms-eval's TaskManager index the plugins' task directories and honour
    ``PATHBIND_DATA`` for their tasks; idempotent.

    Returns False (and logs why) when this lmms-eval release no longer has the expected hook points.
    """
    try:
        from lmms_eval.tasks import TaskManager
    except Exception:
        logger.exception("pathbind: lmms_eval.tasks cannot be imported; PathBind tasks are unavailable")
        return False
    if getattr(TaskManager.initialize_tasks, _HOOK_MARK, False):
        return True
    expected = {"initialize_tasks": ("self", "include_path", "include_defaults"), "_get_config": ("self", "name")}
    for method, arguments in expected.items():
        code = getattr(getattr(TaskManager, method, None), "__code__", None)
        if code is None or code.co_varnames[: len(arguments)] != arguments:
            logger.error("pathbind: this lmms-eval's TaskManager.%s is not the one PathBind hooks; PathBind tasks "
                         "are unavailable (pass their folders with --include_path; see `pathbind doctor`)", method)
            return False
    manager = pm or get_plugin_manager()
    TaskManager.initialize_tasks = _indexing_plugin_dirs(TaskManager.initialize_tasks, manager)
    TaskManager._get_config = _with_data_root(TaskManager._get_config, manager)
    return True


def _indexing_plugin_dirs(original: Any, manager: PluginManager) -> Any:
    @functools.wraps(original)
    def initialize_tasks(self: Any, include_path: Any = None, include_defaults: bool = True) -> dict:
        user_paths = [include_path] if isinstance(include_path, str) else list(include_path or [])
        dirs = manager.task_dirs()
        index = original(self, include_path=[str(c.value) for c in dirs] + user_paths,
                         include_defaults=include_defaults)
        for message in shadowed_tasks(self, index, dirs):
            logger.warning("pathbind: %s", message)
        return index

    setattr(initialize_tasks, _HOOK_MARK, True)
    return initialize_tasks


def _with_data_root(original: Any, manager: PluginManager) -> Any:
    @functools.wraps(original)
    def get_config(self: Any, name: str) -> dict:
        config = original(self, name)
        yaml_path = self.task_index[name]["yaml_path"]
        if isinstance(yaml_path, str) and any(Path(yaml_path).is_relative_to(c.value) for c in manager.task_dirs()):
            return apply_data_root(config)
        return config

    return get_config


def shadowed_tasks(task_manager: Any, index: dict, dirs: list) -> list[str]:
    """Plugin task names that lmms-eval resolved to another definition (a built-in or another plugin)."""
    messages = []
    for contribution in dirs:
        own = task_manager._get_task_and_group(str(contribution.value))
        for name, entry in sorted(own.items()):
            winner = index.get(name, {}).get("yaml_path")
            if entry["yaml_path"] != -1 and winner != entry["yaml_path"]:
                messages.append(f"task {name!r} of plugin {contribution.plugin!r} ({entry['yaml_path']}) is shadowed "
                                f"by {winner}; rename it")
    return messages
