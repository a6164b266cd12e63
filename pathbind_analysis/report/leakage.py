"""Train/test leakage: the overlap heat map of each `pathbind audit-leakage` JSON given or found beside the runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pathbind_analysis.report.document import Figure, Note, Section
from pathbind_analysis.report.runs import Run


def leakage_section(runs: list[Run], audits: list[Path], out: Path) -> Section:
    from pathbind_analysis.audit.leakage.report import write_heatmap

    section = Section("Train/test leakage", "TCGA case (ρ_case) and site (ρ_TSS) overlap of training inventories "
                      "with test sets, from `pathbind audit-leakage` (its leakage.json).")
    files = [p for path in audits for p in ([path] if path.is_file() else sorted(path.rglob("leakage.json")))]
    files += [p for run in runs for p in sorted(run.path.rglob("leakage.json")) if p not in files]
    if not files:
        section.blocks.append(Note("no leakage audit given (--audit) or found beside the runs: skipped"))
    for i, file in enumerate(files):
        matrix = _matrix(file)
        if isinstance(matrix, str):
            section.blocks.append(Note(f"{file}: {matrix}: skipped"))
            continue
        path = out / f"leakage_{i}.png"
        write_heatmap(matrix, path)
        section.blocks.append(Figure(path, f"Overlap matrix from {file}"))
    return section


def _matrix(file: Path) -> list[dict[str, Any]] | str:
    """The audit's overlap rows, or why the file holds none."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"not readable as JSON ({exc})"
    matrix = data.get("matrix") if isinstance(data, dict) else None
    return matrix if isinstance(matrix, list) and matrix else "no 'matrix' of a pathbind audit-leakage JSON"
