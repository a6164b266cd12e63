"""Train/test leakage from `pathbind audit-leakage` JSONs given or found beside the runs: the overlap heat map, the
metrics by leak status with a power note on strata too small for their interval, and the published-accuracy
table (the audit's Table 1) joined from a CSV."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pathbind_analysis.report.document import Figure, Note, Section, Table
from pathbind_analysis.report.fmt import cells
from pathbind_analysis.report.published import published_table, read_published
from pathbind_analysis.report.runs import Run
from pathbind_metrics.leakage import CLEAN, PARTITIONS, PATIENT
from pathbind_metrics.resampling import FEW_CLUSTERS


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
    """The audit's metrics by leak status (its Table 2 form), a stratum of fewer than 20 cases marked ``(!)`` and the
    power note saying which rows rest on such strata."""
    rows = stratified.get("rows") or []
    binary = set(stratified.get("binary_metrics") or [])
    blocks: list[Table | Note] = []
    for (train, metric), group in _grouped(rows).items():
        scale = 100.0 if metric in binary else 1.0
        table = [cells([row["subset"], *(_cell(row[p], scale) for p in PARTITIONS), _gap(row["gap"], scale)])
                 for row in group]
        blocks.append(Table(f"{metric} by leak status against {train} ({file.name}; 95% intervals resample cases)",
                            ["subset", *PARTITIONS, f"gap {PATIENT} − {CLEAN} [95% CI]"], table))
        small = [f"{row['subset']} ({few})" for row in group if (few := _few_cases(row))]
        if small:
            blocks.append(Note(f"Power: {metric} against {train}: {'; '.join(small)}. A stratum of fewer than "
                               f"{FEW_CLUSTERS} cases (marked (!)) is too small for its interval: a percentile "
                               "bootstrap over so few cases covers less than its 95%, and one of 2 cases can print a "
                               "point for an interval; such rows cannot show a gap either way (the audit's Table 2 "
                               "reads only the strata with adequate power)."))
    return blocks


def _few_cases(row: dict[str, Any]) -> str:
    """The gap's strata that hold some but fewer than :data:`FEW_CLUSTERS` cases, with their counts ("" if none)."""
    counts = [(part, row[part]["clusters"]) for part in (PATIENT, CLEAN)]
    return ", ".join(f"{part}: {n} case{'s' * (n != 1)}" for part, n in counts if 0 < n < FEW_CLUSTERS)


def _grouped(rows: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault((row["train"], row["metric"]), []).append(row)
    return grouped


def _cell(part: dict[str, Any], scale: float) -> str:
    if not part.get("n"):
        return "– (n=0)"
    flag = " (!)" if part["clusters"] < FEW_CLUSTERS else ""
    bounds = (f" [{_value(part['ci_low'], scale)}, {_value(part['ci_high'], scale)}]"
              if _finite(part.get("ci_low")) else " [n/a]")
    return f"{_value(part['mean'], scale)}{bounds} (n={part['n']}, {part['clusters']} cases){flag}"


def _gap(gap: dict[str, Any], scale: float) -> str:
    if not _finite(gap.get("mean")):
        return "n/a"
    bounds = f"[{_value(gap['ci_low'], scale, '+')}, {_value(gap['ci_high'], scale, '+')}]" \
        if _finite(gap.get("ci_low")) else "[n/a]"
    return f"{_value(gap['mean'], scale, '+')} {bounds}"


def _value(value: float, scale: float, sign: str = "") -> str:
    return format(scale * value, f"{sign}.1f" if scale == 100.0 else f"{sign}.3g")


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


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
