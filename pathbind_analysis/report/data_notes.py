"""Notes on what the report compares and took: tasks whose runs read different data (``pathbind.data``
fingerprints) or ran another version of the task or other releases, a task taken from one of several results files,
a task that failed in its run."""

from __future__ import annotations

from pathbind.provenance import data_differences, record_failure
from pathbind_analysis.report.document import Note
from pathbind_analysis.report.runs import Run


def data_notes(runs: list[Run]) -> list[Note]:
    """One note per task whose runs read different data (each run against the first with a record), one naming
    the runs whose record failed (the run warned), and one naming the runs with no record and why: neither is
    checked against the other runs."""
    notes, failed, unchecked = [], [], []
    for task in sorted({task for run in runs for task in run.data}):
        recorded = [run for run in runs if "fingerprint" in run.data.get(task, {})]
        for run in (run for run in runs if task in run.results and run not in recorded):
            if failure := record_failure(run.data.get(task)):
                failed.append(f"{run.name} ({task}: {failure})")
            else:
                unchecked.append(f"{run.name} ({task}: {_why_no_record(run, task)})")
        found = [f"{recorded[0].name} vs {run.name}: {'; '.join(differences)}" for run in recorded[1:]
                 if (differences := data_differences(recorded[0].data[task], run.data[task]))]
        if found:
            notes.append(Note(f"{task} is compared on different data: {' | '.join(found)}. Its rows below do not "
                              "compare like with like."))
    if failed:
        notes.append(Note(f"The record of the data read failed, so these runs are not checked against the other "
                          f"runs and may have read other data: {', '.join(failed)}."))
    if unchecked:
        notes.append(Note(f"No record of the data read, so not checked against the other runs: "
                          f"{', '.join(unchecked)}."))
    return notes


def _why_no_record(run: Run, task: str) -> str:
    if task in run.unrecorded:
        return ("its results file holds no PathBind record of the data: run without PathBind installed, or from "
                "before it recorded data")
    return "its run recorded other tasks' data: not a PathBind task"


def run_notes(runs: list[Run]) -> list[Note]:
    """Notes on what was taken and what differs besides the data: a task in several results files of one folder
    (the latest is shown), a task run in other versions or on other releases by the runs, a task that failed."""
    notes = []
    for run in runs:
        for task, files in sorted(run.files.items()):
            if len(files) > 1:
                notes.append(Note(f"{run.name}: {task} is in {len(files)} results files below {run.path}; shown from "
                                  f"{files[0].name}, the latest by the date lmms-eval puts in its name (not "
                                  f"{', '.join(f.name for f in files[1:])}). Give each run its own folder to show "
                                  "another."))
        notes += [Note(f"{run.name}: {task} failed in its run ({cause}); the metrics it did compute are shown.")
                  for task, cause in sorted(run.failed.items())]
    for task in sorted({task for run in runs for task in run.results}):
        ran = [run for run in runs if task in run.results]
        for field, what in (("versions", "versions of the task"), ("software", "releases")):
            values = {run.name: getattr(run, field).get(task) for run in ran if getattr(run, field).get(task)}
            if len(set(values.values())) > 1:
                shown = ", ".join(f"{name}: {value}" for name, value in values.items())
                notes.append(Note(f"{task} is compared across {what} ({shown}): its rows below may not compare "
                                  "like with like."))
    return notes
