"""lmms-eval's ``evaluate`` with PathBind: tasks and conditions a model cannot run are skipped with the reason, and
runs with a PathBind task or model get ``results["pathbind"]`` (skips, token usage per condition, the model's
settings, the data each task read)."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from loguru import logger

from pathbind.capabilities import (
    drop_conditions,
    model_capabilities,
    split_supported,
    unanswerable_conditions,
)
from pathbind.lmms.failures import failed_tasks
from pathbind.lmms.marks import leaf_tasks, marked, patch, pathbind_task, plugin_model, running_tasks
from pathbind.lmms.patches import require_compatible_lmms_eval
from pathbind.lmms.running import RunningTask
from pathbind.lmms.settings import refuse_unusable_settings
from pathbind.lmms_output import RECORD
from pathbind.plugins import get_plugin_manager
from pathbind.provenance import data_provenance
from pathbind.usage import usage_by_condition


def install_evaluate_hook() -> bool:
    """Make lmms-eval's ``evaluate`` skip, with a logged reason, the tasks whose ``metadata.pathbind_requires``
    the model does not offer, and add ``results["pathbind"]`` (skipped tasks, token usage per condition, the data
    each task read) to runs with a PathBind task or model; idempotent. Returns False (and logs why) when this
    lmms-eval release has no such ``evaluate``.
    """
    try:
        evaluator: Any = sys.modules.get("lmms_eval.evaluator") or importlib.import_module("lmms_eval.evaluator")
        original = evaluator.evaluate
        if marked(original):
            return True
        signature = inspect.signature(original)
        if list(signature.parameters)[:2] != ["lm", "task_dict"] or "log_samples" not in signature.parameters:
            logger.error("pathbind: this lmms-eval's evaluator.evaluate is not the one PathBind hooks; tasks a "
                         "model cannot run will fail instead of being skipped")
            return False
        evaluator.evaluate = patch(original, _skipping_unsupported(signature), _runs_pathbind(signature))
        return True
    except Exception:
        logger.exception("pathbind: could not hook lmms_eval.evaluator.evaluate")
        return False


def _runs_pathbind(signature: inspect.Signature) -> Any:
    def claims(*args: Any, **kwargs: Any) -> bool:
        """A call of ``evaluate`` with a PathBind task or a PathBind model."""
        try:
            call = signature.bind(*args, **kwargs)
        except TypeError:
            return False
        task_dict = call.arguments["task_dict"]
        return (isinstance(task_dict, dict) and bool(_pathbind_tasks(task_dict))) or plugin_model(call.arguments["lm"])

    return claims


def _skipping_unsupported(signature: inspect.Signature) -> Any:
    def evaluate(original: Any, *args: Any, **kwargs: Any) -> dict | None:
        call = signature.bind(*args, **kwargs)
        task_dict, lm, cli_args = call.arguments["task_dict"], call.arguments["lm"], call.arguments.get("cli_args")
        require_compatible_lmms_eval()
        refuse_unusable_settings([name for name, task in leaf_tasks(task_dict) if _shows_no_examples(task)],
                                 call.arguments.get("limit"))
        kept, skipped = _supported_tasks(task_dict, lm, cli_args)
        # Before conditions are dropped: the record is of the data as loaded; on rank 0 only, which alone gets
        # the results (the other ranks would hash the same files for nothing).
        data = _data_read(kept) if int(os.environ.get("RANK", 0)) == 0 else {}
        kept, dropped, conditions = _answerable_documents(kept, lm, cli_args)
        skipped.update(dropped)
        call.arguments["task_dict"] = kept
        running = _running(kept)
        # lmms-eval's evaluate fails on an empty task dictionary; with every task skipped there is nothing to run.
        log_samples = call.arguments.get("log_samples", signature.parameters["log_samples"].default)
        results = original(*call.args, **call.kwargs) if kept else _no_results(log_samples)
        if isinstance(results, dict):
            tasks = _pathbind_tasks(kept)
            _one_record_per_sample(results, tasks)
            _no_placeholders(results, tasks)
            failed = failed_tasks(running)
            results["pathbind"] = _run_report(results, skipped, conditions)
            results["pathbind"]["failed_tasks"] = failed
            results["pathbind"]["software"] = {name: _installed(name) for name in ("lmms-eval", "pathbind")}
            results["pathbind"]["model"] = _model_settings(lm)
            results["pathbind"]["data"] = {name: record for name, record in data.items() if name not in dropped}
            baseline = getattr(cli_args, "baseline", None)
            if baseline:
                _compare_with_baseline(results, baseline)
        return results

    return evaluate


def _running(task_dict: Mapping[Any, Any]) -> list[RunningTask]:
    """The PathBind tasks about to run, each told the generation settings its requests carry (its YAML's under
    ``--gen_kwargs``), with no failure yet."""
    running = []
    for _, task in leaf_tasks(task_dict):
        settings = getattr(getattr(task, "config", None), "generation_kwargs", None)
        for found in running_tasks(task):
            found.generation, found.failures = dict(settings or {}), []
            running.append(found)
    return running


def _shows_no_examples(task: Any) -> bool:
    """A PathBind task asked for few-shot examples it has none of (no ``fewshot_config``: no sampler)."""
    wanted = getattr(getattr(task, "config", None), "num_fewshot", None)
    asked = isinstance(wanted, int) and wanted > 0
    return asked and pathbind_task(task) and getattr(task, "sampler", None) is None


def _pathbind_tasks(task_dict: Mapping[Any, Any]) -> set[str]:
    """The names of PathBind's tasks in lmms-eval's task dictionary (:func:`~pathbind.lmms.marks.pathbind_task`)."""
    return {name for name, task in leaf_tasks(task_dict) if pathbind_task(task)}


def _one_record_per_sample(results: dict, tasks: set[str]) -> None:
    """A PathBind task's sample lines hold its record once, under ``"pathbind"``, not once per metric name (its
    ``process_results`` emits one record under every metric); a VQA answer with the image also gets lmms-eval's
    per-sample ``score`` (1 right, 0 wrong), which ``--baseline`` pairs by doc_id."""
    for task in tasks & (results.get("samples") or {}).keys():
        metrics = [entry.get("metric") for entry in results.get("configs", {}).get(task, {}).get("metric_list") or ()
                   if isinstance(entry, Mapping)]
        for sample in results["samples"][task]:
            shared = [name for name in metrics if name in sample]
            record = sample.get(shared[0]) if shared else None
            if not isinstance(record, dict) or any(sample[name] is not record for name in shared):
                continue
            for name in shared:
                del sample[name]
            sample[RECORD] = record
            if record.get("condition") == "image" and isinstance(record.get("correct"), bool):
                sample["score"] = float(record["correct"])


def _no_placeholders(results: dict, tasks: set[str]) -> None:
    """No "N/A" in a PathBind task's results: lmms-eval writes it for every standard error it cannot compute (its
    bootstrap knows none of PathBind's aggregations; its CLT and clustered errors need a per-record ``score``).
    PathBind's intervals are in ``ci95``; a metric without a computed standard error has no stderr field."""
    for table in (results.get("results") or {}, results.get("groups") or {}):
        for name in tasks | _pathbind_groups(results, tasks):
            metrics = table.get(name)
            if isinstance(metrics, dict):
                for key in [key for key, value in metrics.items() if value == "N/A" and "_stderr" in key]:
                    del metrics[key]



def _pathbind_groups(results: dict, tasks: set[str]) -> set[str]:
    """The groups in ``results`` whose every subtask is one of PathBind's ``tasks`` or such a group."""
    groups = {group: set(subtasks) for group, subtasks in (results.get("group_subtasks") or {}).items() if subtasks}
    found: set[str] = set()
    while new := {group for group, subtasks in groups.items() if group not in found and subtasks <= tasks | found}:
        found |= new
    return found


def _data_read(task_dict: Mapping[Any, Any]) -> dict[str, Any]:
    """``pathbind.data``: what each PathBind task read; ``{"error": ...}`` when the record cannot be made, which
    never fails the run."""
    try:
        return data_provenance({name: task for name, task in leaf_tasks(task_dict) if pathbind_task(task)})
    except Exception as exc:
        logger.exception("pathbind: could not record the data the tasks read")
        return {"error": f"{type(exc).__name__}: {exc}"}


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


def _compare_with_baseline(results: dict, baseline: str) -> None:
    """lmms-eval's ``--baseline``: the plugins add each task's paired change (``pathbind_analysis.baseline``)."""
    try:
        get_plugin_manager().compare_with_baseline(results, str(baseline))
    except Exception:
        logger.exception("pathbind: could not pair the run with --baseline")


def _installed(distribution: str) -> str:
    """The installed release of ``distribution`` (lmms-eval's own ``lmms_eval_version`` is its git branch and
    commit, ``unknown@unknown`` for a pip install): ``pathbind pairs`` and ``report`` compare runs by it."""
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "not installed"


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

