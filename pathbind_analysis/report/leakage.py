"""Train/test leakage from `pathbind audit-leakage` JSONs given or found beside the runs: the overlap heat map, the
metrics by leak status with a power note on strata too small for their interval, and the published-accuracy
table (the audit's Table 1) joined from a CSV."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pathbind_analysis.report.document import Figure, Note, Section, Table
from pathbind_analysis.report.fmt import cells
from pathbind_analysis.report.published import published_table, read_published
from pathbind_analysis.report.runs import Run
from pathbind_metrics.leakage import CLEAN, PARTITIONS, PATIENT


def leakage_section(runs: list[Run], audits: list[Path], out: Path, published: list[Path] | None = None) -> Section:
    from pathbind_analysis.audit.leakage.report import write_heatmap

    section = Section("Train/test leakage", "TCGA case (ρ_case) and site (ρ_TSS) overlap of training inventories "
                      "with test sets, from `pathbind audit-leakage` (its leakage.json).")
    files = [p for path in audits for p in ([path] if path.is_file() else sorted(path.rglob("leakage.json")))]
    files += [p for run in runs for p in sorted(run.path.rglob("leakage.json")) if p not in files]
    if not files:
        section.blocks.append(Note("no leakage audit given (--audit) or found beside the runs: skipped"))
    matrix: list[dict[str, Any]] = []
    for i, file in enumerate(files):
        data = _audit(file)
        if isinstance(data, str):
            section.blocks.append(Note(f"{file}: {data}: skipped"))
            continue
        path = out / f"leakage_{i}.png"
        out.mkdir(parents=True, exist_ok=True)  # the first figure of a report may be this one
        write_heatmap(data["matrix"], path)
        section.blocks.append(Figure(path, f"Overlap matrix from {file}"))
        section.blocks += stratified_blocks(data.get("stratified") or {}, file)
        matrix += data["matrix"]
    for path in published or []:
        section.blocks += published_table(read_published(path), matrix, path)
    return section


def stratified_blocks(stratified: dict[str, Any], file: Path) -> list[Table | Note]:
    """The audit's metrics by leak status (its Table 2 form), a stratum whose interval rests on few cases or one
    dominant case marked ``(!)``, and the power note saying why for each such stratum."""
    from pathbind_analysis.audit.leakage.report import by_train_and_metric, stratum_cells

    rows = stratified.get("rows") or []
    binary = set(stratified.get("binary_metrics") or [])
    blocks: list[Table | Note] = []
    for (train, metric), group in by_train_and_metric(rows):
        scale = 100.0 if metric in binary else 1.0
        table, flagged = [], []
        for row in group:
            shown, warnings = stratum_cells(row, scale)
            table.append(cells([row["subset"], *shown]))
            flagged += warnings
        blocks.append(Table(f"{metric} by leak status against {train} ({file.name}; 95% intervals resample cases)",
                            ["subset", *PARTITIONS, f"gap {PATIENT} − {CLEAN} [95% CI]"], table))
        if flagged:
            blocks.append(Note(f"Power: {metric} against {train}: {'; '.join(flagged)}. A stratum marked (!) has "
                               "an interval that rests on few cases or one dominant case: it is wide for that "
                               "reason, and a gap beside it cannot be shown either way (the audit's Table 2 reads "
                               "only the strata with adequate power)."))
    return blocks


def _audit(file: Path) -> dict[str, Any] | str:
    """The audit's JSON, or why the file holds no overlap matrix."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"not readable as JSON ({exc})"
    matrix = data.get("matrix") if isinstance(data, dict) else None
    if not (isinstance(matrix, list) and matrix):
        return "no 'matrix' of a pathbind audit-leakage JSON"
    return data
