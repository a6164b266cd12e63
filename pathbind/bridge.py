"""The lmms-eval bridge: PathBind plugins' models and task directories inside lmms-eval.

lmms-eval 0.7.3 loads the ``lmms_eval.models`` entry points while importing
``lmms_eval.models``, before any TaskManager exists, and has no task entry-point group.
So :func:`lmms_eval_models` also wraps ``TaskManager.initialize_tasks`` to index the plugins'
task directories after the built-ins and before ``--include_path``; building a TaskManager in
turn wraps ``lmms_eval.evaluator.evaluate`` to skip tasks the model cannot run and documents of conditions
it is known to fail on (:mod:`pathbind.capabilities`), and to add PathBind's run report to the results.
Nothing here may raise: lmms-eval drops every entry-point model if one entry point does.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
from pathlib import Path
from typing import Any

from pathbind.capabilities import drop_conditions, model_capabilities, split_supported, unanswerable_conditions
from pathbind.data import apply_data_root
from pathbind.plugins import PluginManager, get_plugin_manager
from pathbind.usage import usage_by_condition

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
        # Here, not at entry-point time: lmms_eval.evaluator is still mid-import when the model entry point
        # runs, and every run builds a TaskManager before it evaluates.
        install_evaluate_hook()
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


def install_evaluate_hook() -> bool:
    """Make lmms-eval's ``evaluate`` skip, with a logged reason, the tasks whose ``metadata.pathbind_requires``
    the model does not offer, and add ``results["pathbind"]`` (skipped tasks, token usage per condition);
    idempotent. Returns False (and logs why) when this lmms-eval release has no such ``evaluate``.
    """
    try:
        import lmms_eval.evaluator as evaluator

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
        kept, skipped = _supported_tasks(call.arguments["task_dict"], call.arguments["lm"],
                                         call.arguments.get("cli_args"))
        kept, dropped, conditions = _answerable_documents(kept, call.arguments["lm"], call.arguments.get("cli_args"))
        skipped.update(dropped)
        call.arguments["task_dict"] = kept
        # lmms-eval's evaluate fails on an empty task dictionary; with every task skipped there is nothing to run.
        log_samples = call.arguments.get("log_samples", signature.parameters["log_samples"].default)
        results = original(*call.args, **call.kwargs) if kept else _no_results(log_samples)
        if isinstance(results, dict):
            results["pathbind"] = _run_report(results, skipped, conditions)
            results["pathbind"]["model"] = _model_settings(call.arguments["lm"])
        return results

    setattr(evaluate, _HOOK_MARK, True)
    return evaluate


def _supported_tasks(task_dict: dict, lm: Any, cli_args: Any) -> tuple[dict, dict[str, str]]:
    """The tasks ``lm`` can run and, logged, why the others are skipped; every task if the check itself fails."""
    try:
        kept, skipped = split_supported(task_dict, model_capabilities(lm), _model_label(lm, cli_args))
    except Exception:
        logger.exception("pathbind: could not check the tasks' pathbind_requires; running every task")
        return task_dict, {}
    for reason in skipped.values():
        logger.error("pathbind: %s", reason)
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
        logger.error("pathbind: %s", reason)
    for reason in (r for task_reasons in conditions.values() for r in task_reasons.values()):
        logger.warning("pathbind: %s", reason)
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
