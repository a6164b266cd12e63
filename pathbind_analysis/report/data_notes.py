"""Notes for tasks the report compares across runs that read different data (``pathbind.data`` fingerprints)."""

from __future__ import annotations

from pathbind.provenance import data_differences
from pathbind_analysis.report.document import Note
from pathbind_analysis.report.runs import Run


def data_notes(runs: list[Run]) -> list[Note]:
    """One note per task whose runs read different data (each run against the first with a record), and one
    naming the runs whose data could not be checked (no record: runs before PathBind recorded it)."""
    notes, unchecked = [], []
    for task in sorted({task for run in runs for task in run.data}):
        recorded = [run for run in runs if "fingerprint" in run.data.get(task, {})]
        unchecked += [f"{run.name} ({task})" for run in runs if task in run.results and run not in recorded]
        found = [f"{recorded[0].name} vs {run.name}: {'; '.join(differences)}" for run in recorded[1:]
                 if (differences := data_differences(recorded[0].data[task], run.data[task]))]
        if found:
            notes.append(Note(f"{task} is compared on different data: {' | '.join(found)}. Its rows below do not "
                              "compare like with like."))
    if unchecked:
        notes.append(Note(f"No record of the data read (runs before PathBind recorded it), so not checked against "
                          f"the other runs: {', '.join(unchecked)}."))
    return notes
