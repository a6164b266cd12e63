"""The leakage audit's Table 1: published accuracies (a CSV the user writes) beside the audited case- and site-level
overlap of each model's training data with each benchmark, coloured as the paper colours them."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from pathbind_analysis.report.document import LEAK_CLEAN, LEAK_HIGH, LEAK_MID, Cell, Note, Table
from pathbind_analysis.report.runs import ReportError

COLUMNS = ("model", "training", "benchmark", "accuracy")  # required; "venue" and "note" are optional
HIGH, MID = 0.80, 0.20  # red above 80%, orange from 20% to 80%, white at 0 (audited clean)


def read_published(path: Path) -> list[dict[str, str]]:
    """The rows of a published-accuracy CSV; ReportError naming the file, line and column for a row the table cannot
    use."""
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ReportError(f"--published {path}: no column {', '.join(missing)} (columns: "
                              f"{', '.join(reader.fieldnames or []) or 'none'}); write model,venue,training,"
                              "benchmark,accuracy,note with training and benchmark named as in the audit")
        rows = []
        for line, row in enumerate(reader, start=2):
            empty = [c for c in COLUMNS[:3] if not (row.get(c) or "").strip()]
            if empty:
                raise ReportError(f"--published {path}:{line}: empty {', '.join(empty)}")
            rows.append({key: (value or "").strip() for key, value in row.items() if key})
    return rows


def published_table(rows: list[dict[str, str]], matrix: list[dict[str, Any]], path: Path) -> list[Table | Note]:
    """Model × (accuracy per benchmark, ρ_case per benchmark, ρ_TSS per benchmark), models in the CSV's order."""
    benchmarks = list(dict.fromkeys(row["benchmark"] for row in rows))
    models = list(dict.fromkeys((row["model"], row.get("venue", ""), row["training"]) for row in rows))
    cell = {(r["train"], r["test"]): r for r in matrix}
    given = {(row["model"], row["training"], row["benchmark"]): row for row in rows}
    table_rows, unaudited = [], set()
    for model, venue, training in models:
        accuracy = [_accuracy(given.get((model, training, b))) for b in benchmarks]
        overlap = [cell.get((training, b)) for b in benchmarks]
        unaudited |= {(training, b) for b, found in zip(benchmarks, overlap, strict=True) if found is None}
        rhos = [_rho(found, key) for key in ("rho_case", "rho_tss") for found in overlap]
        table_rows.append([Cell(model), Cell(venue or "–"), Cell(training), *(Cell(a) for a in accuracy), *rhos])
    blocks: list[Table | Note] = [Table(
        f"Published accuracy (%) and audited case- and site-level leakage (%), from {path.name} (the leakage "
        "audit's Table 1 form)",
        ["Model", "Venue", "Training data", *(f"Acc. {b}" for b in benchmarks), *(f"ρ_case {b}" for b in benchmarks),
         *(f"ρ_TSS {b}" for b in benchmarks)], table_rows)]
    blocks.append(Note("Colours as in the audit's Table 1: 🟥 ρ above 80%, 🟧 from 20% to 80%, ⬜ audited clean (0); "
                       "the paper colours ρ_case, the same scale marks ρ_TSS here. –: not audited (no inventory of "
                       "that name in the audit's matrix)."))
    if unaudited:
        names = "; ".join(f"{training} × {benchmark}" for training, benchmark in sorted(unaudited))
        blocks.append(Note(f"{path.name}: no audited overlap for {names}: the audit has no training inventory and "
                           "test set of those names (audit-leakage --train NAME=… --test NAME=…)"))
    return blocks


def _accuracy(row: dict[str, str] | None) -> str:
    if row is None or not row.get("accuracy"):
        return "–"
    return row["accuracy"] + (f" {row['note']}" if row.get("note") else "")


def _rho(found: dict[str, Any] | None, key: str) -> Cell:
    value = None if found is None else found.get(key)
    if not isinstance(value, int | float) or math.isnan(value):
        return Cell("–" if found is None else "n/a")
    mark = LEAK_HIGH if value > HIGH else LEAK_MID if value >= MID else LEAK_CLEAN if value == 0 else ""
    return Cell(f"{100 * value:.1f}", mark)
