"""``pathbind summary``: the headline metrics of lmms-eval result files, one row per model and task."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ResultsError(ValueError):
    """A file that is not a usable lmms-eval results file; the message names it and says why."""


@dataclass(frozen=True)
class ResultFile:
    """One lmms-eval results file: the model label and each task's metrics (keys with their filter suffix)."""

    path: Path
    model: str
    results: dict[str, dict[str, Any]]
    groups: frozenset[str]  # results entries that are groups (their subtasks carry the row accounting)
    config: dict[str, Any]  # lmms-eval's run configuration (model, model_args, ...)


def find_results(paths: list[Path]) -> list[Path]:
    """lmms-eval result files (``*_results.json``) given directly or found below folders."""
    found: list[Path] = []
    for path in paths:
        found += [path] if path.is_file() else sorted(path.rglob("*results.json"))
    return found


def load_results(path: Path) -> ResultFile:
    """Read and check one results file; ResultsError (naming the file) for anything lmms-eval did not write."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ResultsError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    except UnicodeDecodeError as exc:
        raise ResultsError(f"{path}: not a text file ({exc.reason})") from exc
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: not valid JSON, perhaps truncated ({exc})") from exc
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, dict):
        raise ResultsError(f"{path}: not an lmms-eval results file (no \"results\" object)")
    if not results:
        raise ResultsError(f"{path}: its \"results\" object holds no task")
    malformed = sorted(str(task) for task, metrics in results.items() if not isinstance(metrics, dict))
    if malformed:
        raise ResultsError(f"{path}: the results of {', '.join(malformed)} are not objects of metrics")
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    model = str(config.get("model", "?"))
    if config.get("model_args"):  # e.g. two pathbind_baseline strategies, or two checkpoints of pathbind_hf
        model += f" ({config['model_args']})"
    subtasks = data.get("group_subtasks") if isinstance(data.get("group_subtasks"), dict) else {}
    return ResultFile(path, model, results, frozenset(name for name, tasks in subtasks.items() if tasks), config)


def summary_rows(result: ResultFile, *, accounting: bool = False) -> list[dict[str, Any]]:
    """One row per task: model, task, then each scalar metric (filter suffix and stderr entries dropped), and
    with ``accounting`` the task's row accounting as it is in the file."""
    rows = []
    for task, metrics in sorted(result.results.items()):
        values = {key.split(",")[0]: value for key, value in metrics.items()
                  if "," in key and "_stderr" not in key and isinstance(value, int | float)}
        if accounting and "accounting,none" in metrics:
            values["accounting"] = metrics["accounting,none"]
        if values:
            rows.append({"model": result.model, "task": task, **values})
    return rows


def dimension_rows(result: ResultFile) -> list[dict[str, Any]]:
    """One row per task and diagnostic dimension, from each task's ``by_dimension`` metric."""
    return [{"model": result.model, "task": task, "dimension": dimension, **figures}
            for task, metrics in sorted(result.results.items())
            for dimension, figures in sorted(_mapping(metrics.get("by_dimension,none")).items())
            if isinstance(figures, dict)]


def accounting_rows(result: ResultFile) -> list[dict[str, Any]]:
    """One row per task that reports its ``accounting``: what became of every row it read."""
    return [{"model": result.model, "task": task, "accounting": describe_accounting(metrics["accounting,none"])}
            for task, metrics in sorted(result.results.items()) if "accounting,none" in metrics]


def unaccounted_tasks(result: ResultFile) -> list[str]:
    """Tasks (not groups) whose results carry no ``accounting``: other plugins' tasks, or runs from before it."""
    return sorted(task for task, metrics in result.results.items()
                  if "accounting,none" not in metrics and task not in result.groups)


def read_accounting(value: Any) -> tuple[int, int, dict[str, int]] | None:
    """``(rows, evaluated, dropped)`` of an ``accounting`` value, None when it is not of that form."""
    rows, evaluated, dropped = (_mapping(value).get(key) for key in ("rows", "evaluated", "dropped"))
    if not (isinstance(rows, int) and isinstance(evaluated, int) and isinstance(dropped, dict)
            and all(map(_count, (rows, evaluated, *dropped.values())))):
        return None
    return rows, evaluated, {str(reason): count for reason, count in dropped.items()}


def dropped_reasons(dropped: dict[str, int]) -> str:
    """``repeated id: 1, split not testA: 1``, the most frequent reason first."""
    return ", ".join(f"{reason}: {count}" for reason, count in sorted(dropped.items(), key=lambda i: (-i[1], i[0])))


def describe_accounting(value: Any) -> str:
    """``rows 120: evaluated 118, dropped 2 (repeated id: 1, split not testA: 1)``; a ledger that does not add
    up says by how much, and one of the wrong form is shown as it is."""
    ledger = read_accounting(value)
    if ledger is None:
        return f"unreadable accounting: {json.dumps(value, default=str)[:200]}"
    rows, evaluated, dropped = ledger
    total = sum(dropped.values())
    text = f"rows {rows}: evaluated {evaluated}, dropped {total}"
    text += f" ({dropped_reasons(dropped)})" if dropped else ""
    if rows != evaluated + total:
        text += f"; DOES NOT ADD UP: {rows - evaluated - total:+d} rows"
    return text


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
