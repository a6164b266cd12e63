"""PathBind's Tables 1 and 2: one column per benchmark (Table 1) or per diagnostic dimension (Table 2), the average
of the columns, each model's VLM row ("73.2↑23.6": accuracy with the image ↑ Multimodal Gain) and VLM-text row,
and a Random Choice row from each item's own option count."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pathbind.lmms_output import sample_record, task_samples
from pathbind.summary import coverage_flag
from pathbind_analysis.report.document import BEST_TEXT, Cell, Note, Table
from pathbind_analysis.report.fmt import MISSING, best_marks, bounds, cells, finite, number, with_change
from pathbind_analysis.report.runs import Run

AVERAGE = "Avg."
# Table 1: the five public benchmarks (PathMMU twice: test-tiny and test-all), in the paper's column order.
PUBLIC = (("pathbind_pathmmu_test_tiny", "PathMMU Test-tiny"), ("pathbind_pathmmu_test", "PathMMU Test-all"),
          ("pathbind_quilt_vqa", "Quilt-VQA"), ("pathbind_path_vqa", "Path-VQA"),
          ("pathbind_medxpert_path", "MedXpert Path"), ("pathbind_omnimed_bright", "OmniMed Bright"))
# Table 2: PathBind-VQA's six dimensions, then PathBind-PTA's five.
PATHBIND = (("pathbind_vqa", "PathBind-VQA"), ("pathbind_pta", "PathBind-PTA"))


@dataclass(frozen=True)
class Column:
    """One column of a table: a task, or one diagnostic dimension of it."""

    task: str
    dimension: str | None
    label: str

    def value(self, run: Run, metric: str) -> Any:
        if self.dimension is None:
            return run.metric(self.task, metric)
        return ((run.metric(self.task, "by_dimension") or {}).get(self.dimension) or {}).get(metric)

    def interval(self, run: Run, metric: str) -> Any:
        """The metric's 95% interval in the task's ``ci95`` (per dimension under ``by_dimension``), or None."""
        intervals = run.metric(self.task, "ci95") or {}
        if self.dimension is not None:
            intervals = (intervals.get("by_dimension") or {}).get(self.dimension) or {}
        return intervals.get(metric)


def average(run: Run, columns: Sequence[Column], metric: str) -> float | None:
    """The mean of ``metric`` over the columns, as the paper's Avg. column; None unless the run has every one (an
    average over some columns is not the table's average)."""
    values = [column.value(run, metric) for column in columns]
    return sum(values) / len(values) if values and all(finite(v) for v in values) else None


def vqa_tasks(runs: list[Run]) -> list[str]:
    """The tasks some run reports with and without the image (metric mg)."""
    return sorted({task for run in runs for task, metrics in run.results.items() if "mg" in metrics})


def task_columns(runs: list[Run], task: str, label: str) -> list[Column]:
    """A task's dimension columns ("PathBind-VQA D1" ...), or one column for a task without dimensions."""
    dimensions = sorted({d for run in runs for d in run.metric(task, "by_dimension") or {}})
    return [Column(task, d, f"{label} {d}".strip()) for d in dimensions] or [Column(task, None, label or task)]


def public_columns(runs: list[Run]) -> list[Column]:
    """Table 1's columns: the public benchmarks some run reports, in the paper's order."""
    found = set(vqa_tasks(runs))
    return [Column(task, None, label) for task, label in PUBLIC if task in found]


def pathbind_columns(runs: list[Run]) -> list[Column]:
    """Table 2's columns: the diagnostic dimensions of PathBind-VQA, then of PathBind-PTA, that some run reports."""
    found = set(vqa_tasks(runs))
    return [column for task, label in PATHBIND if task in found for column in task_columns(runs, task, label)]


def other_tasks(runs: list[Run]) -> list[str]:
    """Tasks with and without the image that are neither in Table 1 nor Table 2 (the demo, thinking variants,
    third-party tasks): each gets a table of its own in Table 2's form."""
    known = {task for task, _ in (*PUBLIC, *PATHBIND)}
    return [task for task in vqa_tasks(runs) if task not in known]


def paper_table(runs: list[Run], columns: list[Column], title: str) -> list[Table | Note]:
    """The table in the paper's form over ``columns``, then a note where the chance row is incomplete."""
    ran = sorted((run for run in runs if any(finite(c.value(run, "acc_image")) for c in columns)),
                 key=lambda run: not run.baseline)
    image = [[*(c.value(run, "acc_image") for c in columns), average(run, columns, "acc_image")] for run in ran]
    text = [[*(c.value(run, "acc_text") for c in columns), average(run, columns, "acc_text")] for run in ran]
    gains = [[*(c.value(run, "mg") for c in columns), average(run, columns, "mg")] for run in ran]
    competing = [not run.baseline for run in ran]
    image_marks, text_marks = _column_marks(image, competing, "best"), _column_marks(text, competing, BEST_TEXT)
    chance, unknown = chance_row(runs, columns)
    rows = [[Cell("Random Choice"), Cell("-"), *cells(chance)]]
    for i, run in enumerate(ran):
        shown = [with_change(value, gain) for value, gain in zip(image[i], gains[i], strict=True)]
        rows.append([Cell(_flagged(run, columns)), Cell("VLM"), *cells(shown, image_marks[i])])
        rows.append([Cell(""), Cell("VLM-text"), *cells([number(v) for v in text[i]], text_marks[i])])
    blocks: list[Table | Note] = [Table(title, ["Model", "Strategy", *(c.label for c in columns), AVERAGE], rows),
                                  _interval_table(ran, columns, title)]
    if unknown:
        blocks.append(Note(f"{title}: no Random Choice for {', '.join(unknown)}: no sample log of the task records "
                           "its items' option counts (run with --log_samples; runs before PathBind stored "
                           "n_options have none)"))
    partial = [run.name for run in ran if average(run, columns, "acc_image") is None]
    if partial:
        blocks.append(Note(f"{title}: no {AVERAGE} for {', '.join(partial)}: the run lacks a column of the table"))
    return blocks


INTERVALS = (("acc_image", "VLM"), ("mg", "MG"), ("acc_text", "VLM-text"))


def _interval_table(ran: list[Run], columns: list[Column], title: str) -> Table:
    """The 95% intervals of the table's values (accuracy with the image, its MG, accuracy without), each column's
    from its task's ``ci95``; the paper's cells above stay in its form. Avg. has none: a mean over columns whose
    items differ is no one resampling's statistic."""
    clusters = sorted({str(i.get("cluster")) for run in ran for c in columns for metric, _ in INTERVALS
                       if isinstance(i := c.interval(run, metric), dict) and i.get("cluster")})
    rows = [cells([run.name if k == 0 else "", label, *(bounds(c.interval(run, metric)) for c in columns)])
            for run in ran for k, (metric, label) in enumerate(INTERVALS)]
    return Table(f"{title}: 95% intervals (resampling {', '.join(clusters) or 'cluster'}s)",
                 ["Model", "measure", *(c.label for c in columns)], rows)


def _flagged(run: Run, columns: Sequence[Column]) -> str:
    """The run's name, flagged where a task of the table evaluated too few of its rows (:meth:`Run.name_on`; with
    several tasks each flag names its column)."""
    tasks = list(dict.fromkeys(c.task for c in columns))
    if len(tasks) == 1:
        return run.name_on(tasks[0])
    labels = {c.task: c.label for c in reversed(columns)}
    flags = [f"{labels[task]}: {flag}" for task in tasks if (flag := coverage_flag(run.metric(task, "accounting")))]
    return f"{run.name} [{'; '.join(flags)}]" if flags else run.name


def _column_marks(values: list[list[Any]], competing: list[bool], mark: str) -> list[list[str]]:
    """Per row the marks of the best competing value of each column (baseline rows are never marked)."""
    if not values:
        return []
    marks_by_column = [best_marks([v if ok else None for v, ok in zip(column, competing, strict=True)], mark=mark)
                       for column in zip(*values, strict=True)]
    return [list(row) for row in zip(*marks_by_column, strict=True)]


def chance_row(runs: list[Run], columns: Sequence[Column]) -> tuple[list[str], list[str]]:
    """Random Choice per column, the mean over its items of 100 / their option count (the items answered with the
    image in the first sample log of the task), and its average over the columns; and the columns without one."""
    records: dict[str, list[dict[str, Any]]] = {}
    values: list[float | None] = []
    for column in columns:
        if column.task not in records:
            records[column.task] = image_records(runs, column.task)
        counts = [r.get("n_options") for r in records[column.task]
                  if column.dimension is None or str(r.get("dimension")) == column.dimension]
        usable = [n for n in counts if isinstance(n, int) and n > 0]
        values.append(sum(100.0 / n for n in usable) / len(usable) if usable and len(usable) == len(counts) else None)
    unknown = [column.label for column, value in zip(columns, values, strict=True) if value is None]
    mean = sum(v for v in values if v is not None) / len(values) if values and not unknown else math.nan
    return [*(number(v) if v is not None else MISSING for v in values), number(mean) if not unknown else MISSING], \
        unknown


def image_records(runs: list[Run], task: str) -> list[dict[str, Any]]:
    """The scored image-condition records of the first run that logged samples of ``task`` (an item whose data was
    at fault has no reference and is left out, as the task left it out of its accuracy's items)."""
    for run in runs:
        try:
            logged = task_samples(run.path, task)
        except ValueError:
            continue
        records = [sample_record(sample) for sample in logged]
        return [r for r in records if r is not None and r.get("condition", "image") == "image" and r.get("reference")]
    return []
