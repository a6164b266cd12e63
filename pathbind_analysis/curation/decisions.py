"""Reviewers' retain/exclude decisions from CSV files, and their agreement in the paper's Table B.8 form."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import numpy as np

from pathbind_analysis.curation.errors import CurationInputError
from pathbind_metrics.agreement import cohen_kappa, percent_agreement

RETAIN = ("retain", "keep", "yes", "1")
EXCLUDE = ("exclude", "drop", "no", "0")


def read_decisions(path: Path, columns: list[str], *, id_column: str | None = None) -> dict[str, list[bool]]:
    """Item -> one decision per column (True: retain); items are named by ``id_column``, else ``line N``.

    Values are matched case-insensitively after trimming spaces; anything else, an empty cell, a repeated
    id or a missing column is an error naming the file, line and column.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")  # utf-8-sig: spreadsheets often prepend a byte-order mark
    except (OSError, UnicodeDecodeError) as exc:
        raise CurationInputError(f"{path}: cannot read ({exc}); pass a CSV file with a header row") from exc
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    for column in [*columns, *([id_column] if id_column else [])]:
        if column not in header:
            raise CurationInputError(f"{path}: no column {column!r} (columns: {', '.join(header) or 'none'}); "
                                     "name one of the header's columns")
    decisions: dict[str, list[bool]] = {}
    first_line: dict[str, int] = {}
    for row in reader:
        line = reader.line_num
        item = (row[id_column] or "").strip() if id_column else f"line {line}"
        if not item:
            raise CurationInputError(f"{path}:{line}: column {id_column!r} is empty; give every row an id")
        if item in decisions:
            raise CurationInputError(f"{path}:{line}: id {item!r} repeats line {first_line[item]}; "
                                     "keep one decision row per item")
        decisions[item] = [_decision(row[column], path, line, column) for column in columns]
        first_line[item] = line
    if not decisions:
        raise CurationInputError(f"{path}: no decision rows below the header")
    return decisions


def join_decisions(first: dict[str, list[bool]], second: dict[str, list[bool]], first_name: str,
                   second_name: str) -> dict[str, list[bool]]:
    """Pair two reviewers' files by id; an item only one of them decided is an error listing such ids."""
    only_first, only_second = first.keys() - second.keys(), second.keys() - first.keys()
    if only_first or only_second:
        raise CurationInputError(f"the reviewers decided different items: {_few(only_first)} only in {first_name}, "
                                 f"{_few(only_second)} only in {second_name}; both must decide the same items")
    return {item: first[item] + second[item] for item in first}


def agreement_row(component: str, r1: np.ndarray, r2: np.ndarray) -> dict[str, Any]:
    """Counts, percentage agreement and Cohen's kappa of two boolean (retain) decision arrays."""
    kappa = cohen_kappa(r1, r2)
    return {"component": component, "reviewed": int(r1.size), "both_retain": int(np.sum(r1 & r2)),
            "both_exclude": int(np.sum(~r1 & ~r2)), "r1_retain_r2_exclude": int(np.sum(r1 & ~r2)),
            "r1_exclude_r2_retain": int(np.sum(~r1 & r2)),
            "agreement_percent": round(percent_agreement(r1, r2), 2),
            "kappa": None if np.isnan(kappa) else round(kappa, 4),
            "kappa_note": "undefined: both reviewers gave every item the same decision, so chance agreement is "
                          "100%" if np.isnan(kappa) else ""}


def _decision(value: str | None, path: Path, line: int, column: str) -> bool:
    text = (value or "").strip().lower()
    if text in RETAIN:
        return True
    if text in EXCLUDE:
        return False
    raise CurationInputError(f"{path}:{line}: column {column!r} is {value or ''!r}, not a decision; write "
                             f"{'/'.join(RETAIN)} to retain or {'/'.join(EXCLUDE)} to exclude (any case)")


def _few(ids: set[str]) -> str:
    shown = sorted(ids)[:5]
    return f"{len(ids)} ({', '.join(shown)}{', ...' if len(ids) > len(shown) else ''})" if ids else "0"
