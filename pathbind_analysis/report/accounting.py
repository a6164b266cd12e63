"""Rows accounted for: per run and task, the rows read, evaluated and dropped with each reason."""

from __future__ import annotations

from pathbind.summary import dropped_reasons, read_accounting
from pathbind_analysis.report.document import Cell, Note, Section, Table
from pathbind_analysis.report.fmt import MISSING, cells
from pathbind_analysis.report.runs import Run


def accounting_section(runs: list[Run]) -> Section:
    section = Section("Rows accounted for", "Each task's rows as read from its data (before --limit): evaluated, "
                      "or dropped with a named reason.")
    rows = [_row(run, task) for run in runs for task in sorted(run.results) if run.metric(task, "accounting")
            is not None]
    if rows:
        section.blocks.append(Table("Rows accounted for", ["Model", "task", "rows", "evaluated", "dropped",
                                                           "reasons"], rows))
    for run in runs:
        missing = sorted(task for task in run.results if task not in run.groups | run.unscored
                         and run.metric(task, "accounting") is None)
        if missing:
            section.blocks.append(Note(f"{run.name}: no row accounting for {', '.join(missing)} (not a PathBind "
                                       "task, or a run from before accounting)"))
        if run.unscored:
            section.blocks.append(Note(f"{run.name}: {', '.join(sorted(run.unscored))} come from a --predict_only "
                                       "run: lmms-eval logged the answers and scored none, so nothing of them is "
                                       "shown"))
        section.blocks += [Note(f"{run.name}: skipped {problem}") for problem in run.skipped]
    return section


def _row(run: Run, task: str) -> list[Cell]:
    ledger = read_accounting(run.metric(task, "accounting"))
    if ledger is None:
        return cells([run.name, task, MISSING, MISSING, MISSING, "unreadable accounting value"])
    total, evaluated, dropped = ledger
    reasons = dropped_reasons(dropped) or MISSING
    if total != evaluated + sum(dropped.values()):
        reasons += f"; does not add up: {total - evaluated - sum(dropped.values()):+d} rows"
    return cells([run.name, task, str(total), str(evaluated), str(sum(dropped.values())), reasons])
