"""PathView-Bench: every ``pathbind_pathview_*`` task's deterministic metrics (also under the old names,
``pathview_*``), read by name, baselines beside the models."""

from __future__ import annotations

from pathbind.summary import coverage_flag
from pathbind_analysis.report.document import Cell, Note, Section, Table
from pathbind_analysis.report.fmt import best_marks, bounds, cells, number
from pathbind_analysis.report.runs import BASELINE_MODEL, Run

# metric -> (label, higher is better); shown in this order when a task reports it.
METRICS = {"dice": ("Dice", True), "accuracy": ("accuracy %", True), "mae": ("MAE", False),
           "macro_f1": ("macro-F1", True), "entity_recall": ("entity recall", True), "srr": ("SRR %", True),
           "false_refusal_rate": ("false refusals %", False), "invalid_rate": ("invalid %", False)}


def pathview_section(runs: list[Run]) -> Section:
    section = Section("PathView-Bench", "One row per task and metric, one column per model, each value with its 95% "
                      "interval where the task computes one (resampling its clusters, images by default); bold: the "
                      "best model "
                      f"(baselines, runs of {BASELINE_MODEL}, are not ranked). SRR: safe refusal rate on the "
                      "field-of-view traps; false refusals: refusals on answerable items.")
    tasks = sorted({task for run in runs for task in run.results
                    if task.removeprefix("pathbind_").startswith("pathview")})
    rows = [(task, metric) for task in tasks for metric in METRICS if any(
        run.metric(task, metric) is not None for run in runs)]
    if not rows:
        section.blocks.append(Note("no run has a PathView task (pathbind_pathview_*): skipped"))
        return section
    ordered = sorted((run for run in runs if any(task in run.results for task in tasks)),
                     key=lambda run: not run.baseline)
    firsts = {task: metric for task, metric in reversed(rows)}  # a task's flag stands beside its first metric
    table = [_row(ordered, task, metric, flagged=firsts[task] == metric) for task, metric in rows]
    names = [f"{run.name} (baseline)" if run.baseline else run.name for run in ordered]
    section.blocks.append(Table("PathView-Bench", ["task", "metric", *names], table))
    return section


def _row(runs: list[Run], task: str, metric: str, *, flagged: bool = False) -> list[Cell]:
    label, higher = METRICS[metric]
    values = [run.metric(task, metric) for run in runs]
    marks = best_marks([None if run.baseline else v for run, v in zip(runs, values, strict=True)],
                       higher_is_better=higher)
    flags = [coverage_flag(run.metric(task, "accounting")) if flagged else "" for run in runs]
    intervals = [(run.metric(task, "ci95") or {}).get(metric) for run in runs]
    texts = [number(v) + (f" {bounds(i)}" if i else "") + (f" [{flag}]" if flag else "")
             for v, i, flag in zip(values, intervals, flags, strict=True)]
    return [Cell(task), Cell(label), *cells(texts, marks)]
