"""Notes for tasks the report compares across runs that read different data (``pathbind.data`` fingerprints)."""

from __future__ import annotations

from pathbind.provenance import data_differences, record_failure
from pathbind_analysis.report.document import Note
from pathbind_analysis.report.runs import Run


def data_notes(runs: list[Run]) -> list[Note]:
    """One note per task whose runs read different data (each run against the first with a record), one naming
    the runs whose record failed (the run warned), and one naming the runs with no record (runs before PathBind
    recorded it): neither is checked against the other runs."""
    notes, failed, unchecked = [], [], []
    for task in sorted({task for run in runs for task in run.data}):
        recorded = [run for run in runs if "fingerprint" in run.data.get(task, {})]
        for run in (run for run in runs if task in run.results and run not in recorded):
            if failure := record_failure(run.data.get(task)):
                failed.append(f"{run.name} ({task}: {failure})")
            else:
                unchecked.append(f"{run.name} ({task})")
        found = [f"{recorded[0].name} vs {run.name}: {'; '.join(differences)}" for run in recorded[1:]
                 if (differences := data_differences(recorded[0].data[task], run.data[task]))]
        if found:
            notes.append(Note(f"{task} is compared on different data: {' | '.join(found)}. Its rows below do not "
                              "compare like with like."))
    if failed:
        notes.append(Note(f"The record of the data read failed, so these runs are not checked against the other "
                          f"runs and may have read other data: {', '.join(failed)}."))
    if unchecked:
        notes.append(Note(f"No record of the data read (runs before PathBind recorded it), so not checked against "
                          f"the other runs: {', '.join(unchecked)}."))
    return notes
