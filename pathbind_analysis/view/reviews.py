"""A reviewer's CSV from the viewer's export, read back: every row checked, counted per task."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path
from typing import Any

COLUMNS = ("task", "id", "verdict", "note", "runs")
VERDICTS = ("agree", "disagree", "")  # "": a note without a verdict


class ReviewsError(ValueError):
    """A reviews file the viewer did not write: names the row and the field."""


def read_reviews(path: Path) -> list[dict[str, str]]:
    """The rows of a reviews CSV; ReviewsError naming the line and field of the first bad one."""
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [column for column in COLUMNS if column not in (reader.fieldnames or [])]
        if missing:
            raise ReviewsError(f"{path}: no column {', '.join(missing)} (a reviews CSV has {', '.join(COLUMNS)}, "
                               "as the viewer's export button writes it)")
        rows = []
        for line, row in enumerate(reader, start=2):
            if not row["task"] or not row["id"]:
                raise ReviewsError(f"{path}:{line}: empty task or id (each row reviews one item of one task)")
            if row["verdict"] not in VERDICTS:
                raise ReviewsError(f"{path}:{line}: verdict {row['verdict']!r} of {row['task']} {row['id']} is "
                                   "not agree, disagree or empty")
            rows.append({column: row[column] or "" for column in COLUMNS})
    return rows


def review_counts(rows: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Per task: items reviewed, agreed, disagreed, and with a note."""
    tasks = sorted({row["task"] for row in rows})
    counts: dict[str, Counter[str]] = {task: Counter() for task in tasks}
    for row in rows:
        counts[row["task"]].update(reviewed=1, agree=row["verdict"] == "agree",
                                   disagree=row["verdict"] == "disagree", notes=bool(row["note"].strip()))
    return [{"task": task, **{key: counts[task][key] for key in ("reviewed", "agree", "disagree", "notes")}}
            for task in tasks]
