"""``pathbind summary``: the headline metrics of lmms-eval result files, one row per model and task."""

from __future__ import annotations

import json
from typing import Any

from pathbind.lmms_output import ResultFile
from pathbind.text_table import cell_text, quoted

COVERED = 0.9  # a headline over fewer than this share of the rows its task read is flagged
# Where a task's results keep its headlines' 95% intervals: VQA and PathView (``ci95``), grounding (``attn_ci``),
# faithfulness (``faith_ci``); each maps a metric's name to ``{"low", "high", "cluster", "clusters", ...}``.
INTERVALS = ("ci95", "attn_ci", "faith_ci")
SHOWN = ("low", "high", "cluster", "clusters", "warning")  # what a row says of each interval


def summary_rows(result: ResultFile, *, accounting: bool = False) -> list[dict[str, Any]]:
    """One row per task: model, task, then each scalar metric (filter suffix and stderr entries dropped), their
    95% intervals under ``intervals`` (see :func:`headline_intervals`), and with ``accounting`` the task's row
    accounting as it is in the file; without it, a task that evaluated too few of its rows is flagged beside its
    name ("pathbind_x [2 of 12 evaluated]", see :func:`coverage_flag`)."""
    rows = []
    for task, metrics in sorted(result.results.items()) if not result.predict_only else ():
        values: dict[str, Any] = {name: value for name, value in result.metrics(task).items()
                                  if isinstance(value, int | float)}
        if intervals := headline_intervals(result.metrics(task), values):
            values["intervals"] = intervals
        if accounting and "accounting,none" in metrics:
            values["accounting"] = metrics["accounting,none"]
        flag = "" if accounting else coverage_flag(metrics.get("accounting,none"))
        if values:
            rows.append({"model": result.model, "task": f"{task} [{flag}]" if flag else task, **values})
    return rows


def headline_intervals(metrics: dict[str, Any], values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The 95% interval of each of ``values``' metrics that the task's results hold one for (in one of
    ``INTERVALS``), as ``SHOWN``; a metric without one is left out."""
    found: dict[str, dict[str, Any]] = {}
    for container in INTERVALS:
        for name, interval in _mapping(metrics.get(container)).items():
            if name in values and isinstance(interval, dict) and {"low", "high"} <= interval.keys():
                found.setdefault(name, {key: interval.get(key) for key in SHOWN})
    return found


def with_intervals(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` as the text table shows it: each metric with an interval as ``65.0 [50.2, 77.0]``."""
    intervals = row.get("intervals") or {}
    shown = {key: value for key, value in row.items() if key != "intervals"}
    for name, interval in intervals.items():
        bounds = f"[{cell_text(interval['low'])}, {cell_text(interval['high'])}]"
        shown[name] = f"{cell_text(shown[name])} {bounds}{'!' if interval.get('warning') else ''}"
    return shown


def coverage_flag(value: Any) -> str:
    """``"2 of 12 evaluated"`` when a task's ``accounting`` evaluated under ``COVERED`` of the rows it read (its
    headline is over those few), else "".

    >>> coverage_flag({"rows": 12, "evaluated": 2, "dropped": {"image file not found": 10}})
    '2 of 12 evaluated'
    """
    ledger = read_accounting(value)
    if ledger is None:
        return ""
    rows, evaluated, _ = ledger
    return f"{evaluated} of {rows} evaluated" if evaluated < COVERED * rows else ""


def dimension_rows(result: ResultFile) -> list[dict[str, Any]]:
    """One row per task and diagnostic dimension, from each task's ``by_dimension`` metric, with the intervals of
    its ``ci95["by_dimension"]``."""
    rows = []
    for task, metrics in sorted(result.results.items()):
        by_dimension = _mapping(_mapping(metrics.get("ci95,none")).get("by_dimension"))
        for dimension, figures in sorted(_mapping(metrics.get("by_dimension,none")).items()):
            if isinstance(figures, dict):
                row = {"model": result.model, "task": task, "dimension": dimension, **figures}
                if intervals := headline_intervals({"ci95": by_dimension.get(dimension)}, figures):
                    row["intervals"] = intervals
                rows.append(row)
    return rows


def accounting_rows(result: ResultFile) -> list[dict[str, Any]]:
    """One row per task that reports its ``accounting``: what became of every row it read."""
    return [{"model": result.model, "task": task, "accounting": describe_accounting(metrics["accounting,none"])}
            for task, metrics in sorted(result.results.items()) if "accounting,none" in metrics]


def unaccounted_tasks(result: ResultFile) -> list[str]:
    """Tasks (not groups) whose results carry no ``accounting``: other plugins' tasks, or runs from before it
    (a ``--predict_only`` run is :func:`unshown`'s)."""
    return [] if result.predict_only else sorted(task for task, metrics in result.results.items()
                                                 if "accounting,none" not in metrics and task not in result.groups)


def unshown(result: ResultFile) -> list[str]:
    """What the tables cannot show, one line each: a ``--predict_only`` run (nothing scored; its metric is
    lmms-eval's placeholder 999), a task that failed in its run (why, naming the metric and the plugin's
    aggregation), a metric whose value is neither a number nor an object (None, text: what its aggregation
    returned)."""
    if result.predict_only:
        return [f"{result.path}: a --predict_only run of {', '.join(sorted(result.results))}: lmms-eval logged the "
                "answers and scored none (rerun without --predict_only to score them)"]
    lines = [f"{task} failed in its run: {cause}" for task, cause in sorted(result.failed.items())]
    for task in sorted(result.results):
        for name, value in sorted(result.metrics(task).items()):
            if value is None or isinstance(value, str):
                lines.append(f"{task}: metric {name!r} is {quoted(value)}, not a number or an object: what its "
                             f"aggregation ({_aggregation(result, task, name)}) returned")
    return lines


def _aggregation(result: ResultFile, task: str, metric: str) -> str:
    """The aggregation results.json's ``configs`` names for a task's metric, as lmms-eval wrote it."""
    configs = result.config_of(task).get("metric_list") or []
    named = [str(m.get("aggregation")) for m in configs if isinstance(m, dict) and m.get("metric") == metric]
    return named[0] if named else "not named in the results file"


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
