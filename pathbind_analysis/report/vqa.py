"""VQA in the paper's Table 2 form ("73.2↑23.6": accuracy with the image ↑ gain over text-only) and the ablations."""

from __future__ import annotations

from typing import Any

from pathbind.lmms_output import sample_record, task_samples
from pathbind_analysis.report.document import BEST_TEXT, Cell, Note, Section, Table
from pathbind_analysis.report.fmt import MISSING, best_marks, cells, number, with_change
from pathbind_analysis.report.runs import Run

AVERAGE = "Avg."
YES_NO = {"yes", "no"}
CHANCE_NOTE = ("Random Choice: the expected accuracy of a uniform guess over each item's options, from the first "
               "sample log of the task (two options for yes/no answers, four for option letters, as in PathBind).")


def vqa_section(runs: list[Run]) -> Section:
    section = Section("VQA: accuracy with the image and Multimodal Gain",
                      "Per benchmark and diagnostic dimension: accuracy (%) with the image, and after the arrow the "
                      "Multimodal Gain over the same items without the image (VLM row); accuracy without the image "
                      "(VLM-text row). Bold: best VLM value of a column; underlined: best VLM-text value.")
    tasks = _tasks_with(runs, "mg")
    section.blocks += [_table_2(runs, task) for task in tasks] or [Note("no run has a VQA task with text-only "
                                                                        "accuracy (metric mg)")]
    if tasks:
        section.blocks.append(Note(CHANCE_NOTE))
    section.blocks += _missing(runs, tasks, "VQA")
    ablations = _tasks_with(runs, "drop_blank")
    section.blocks += [_ablation_table(runs, task) for task in ablations]
    return section


def _tasks_with(runs: list[Run], metric: str) -> list[str]:
    return sorted({task for run in runs for task, metrics in run.results.items() if metric in metrics})


def _missing(runs: list[Run], tasks: list[str], what: str) -> list[Note]:
    return [Note(f"{run.name}: no {what} task in its results ({run.path})") for run in runs
            if tasks and not any(task in run.results for task in tasks)]


def _table_2(runs: list[Run], task: str) -> Table:
    ran = sorted((run for run in runs if run.metric(task, "mg") is not None), key=lambda run: not run.baseline)
    dimensions = sorted({d for run in ran for d in run.metric(task, "by_dimension") or {}})
    columns = [*dimensions, AVERAGE]
    image = [[_figure(run, task, column, "acc_image") for column in columns] for run in ran]
    text = [[_figure(run, task, column, "acc_text") for column in columns] for run in ran]
    competing = [not run.baseline for run in ran]
    image_marks = _column_marks(image, competing, "best")
    text_marks = _column_marks(text, competing, BEST_TEXT)
    rows = [[Cell("Random Choice"), Cell("-"), *cells(_chance_row(ran, task, columns))]]
    for i, run in enumerate(ran):
        gains = [with_change(value, _figure(run, task, column, "mg")) for value, column in zip(image[i], columns,
                                                                                                 strict=True)]
        rows.append([Cell(run.name_on(task)), Cell("VLM"), *cells(gains, image_marks[i])])
        rows.append([Cell(""), Cell("VLM-text"), *cells([number(v) for v in text[i]], text_marks[i])])
    return Table(f"{task}", ["Model", "Strategy", *columns], rows)


def _figure(run: Run, task: str, column: str, metric: str) -> Any:
    if column == AVERAGE:
        return run.metric(task, metric)
    return ((run.metric(task, "by_dimension") or {}).get(column) or {}).get(metric)


def _column_marks(values: list[list[Any]], competing: list[bool], mark: str) -> list[list[str]]:
    """Per row the marks of the best competing value of each column (baseline rows are never marked)."""
    if not values:
        return []
    marks_by_column = [best_marks([v if ok else None for v, ok in zip(column, competing, strict=True)], mark=mark)
                       for column in zip(*values, strict=True)]
    return [list(row) for row in zip(*marks_by_column, strict=True)]


def _chance_row(runs: list[Run], task: str, columns: list[str]) -> list[str]:
    records = _image_records(runs, task)
    if not records:
        return [MISSING] * len(columns)
    by_column: dict[str, list[float]] = {}
    for record in records:
        chance = 50.0 if str(record.get("reference", "")).lower() in YES_NO else 25.0
        by_column.setdefault(str(record.get("dimension")), []).append(chance)
        by_column.setdefault(AVERAGE, []).append(chance)
    return [number(sum(v) / len(v)) if (v := by_column.get(c)) else MISSING for c in columns]


def _image_records(runs: list[Run], task: str) -> list[dict[str, Any]]:
    """The scored image-condition records of the first run that logged samples of ``task``."""
    for run in runs:
        try:
            logged = task_samples(run.path, task)
        except ValueError:
            continue
        records = [sample_record(sample) for sample in logged]
        return [r for r in records if r is not None and r.get("condition", "image") == "image" and r.get("reference")]
    return []


def _ablation_table(runs: list[Run], task: str) -> Table:
    ran = [run for run in runs if task in run.results]
    conditions = list(dict.fromkeys(metric.removeprefix("drop_") for run in ran for metric in run.results[task]
                                    if metric.startswith("drop_")))
    rows = []
    for run in ran:
        shown = [with_change(run.metric(task, f"acc_{c}"), _negated(run.metric(task, f"drop_{c}"))) for c in conditions]
        rows.append(cells([run.name_on(task), number(run.metric(task, "acc_image")), *shown,
                           number(run.metric(task, "invalid_rate"))]))
    return Table(f"{task}: accuracy (%) under image ablations, ↓ points lost from the original image",
                 ["Model", "image", *conditions, "invalid %"], rows)


def _negated(value: Any) -> Any:
    return -value if isinstance(value, int | float) else value
