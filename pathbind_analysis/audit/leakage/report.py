"""The audit's human-readable outputs: overlap tables (Markdown), the two-panel heat map, the stratified table."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pathbind_metrics.leakage import CLEAN, PARTITIONS, PATIENT

PANELS = (("rho_case", "Case-level overlap ρ_case (%)"), ("rho_tss", "Site-level overlap ρ_TSS (%)"))
COUNTS = ("n_items", "n_patient_leaked", "n_site_leaked", "n_clean", "n_unknown", "n_malformed")


def axes(matrix: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """Training names (rows) and test names (columns) in the order given on the command line."""
    return list(dict.fromkeys(r["train"] for r in matrix)), list(dict.fromkeys(r["test"] for r in matrix))


def overlap_markdown(matrix: list[dict[str, Any]], notes: list[str]) -> str:
    """Both overlap panels as train × test tables, the test items per leak status, and the lower-bound notes."""
    trains, tests = axes(matrix)
    cell = {(r["train"], r["test"]): r for r in matrix}
    lines = ["# Leakage audit: train/test overlap", "",
             "ρ_case = |C_test ∩ C_train| / |C_test| over distinct TCGA cases (TCGA-TSS-participant); ρ_TSS "
             "likewise over tissue source sites. 0 is a clean zero-shot test set."]
    for key, title in PANELS:
        lines += ["", f"## {title}", "", "| train \\ test | " + " | ".join(tests) + " |",
                  "| --- |" + " ---: |" * len(tests)]
        lines += [f"| {t} | " + " | ".join(_percent(cell[t, b][key]) for b in tests) + " |" for t in trains]
    lines += ["", "## Test items by leak status", "",
              "| train | test | items | patient-leaked | site-leaked | clean | unknown | malformed |",
              "| --- | --- |" + " ---: |" * len(COUNTS)]
    lines += [f"| {r['train']} | {r['test']} | " + " | ".join(f"{r[k]:,}" for k in COUNTS) + " |" for r in matrix]
    if notes:
        lines += ["", "## Notes", "", *(f"- {note}" for note in notes)]
    return "\n".join(lines) + "\n"


def write_heatmap(matrix: list[dict[str, Any]], path: Path) -> None:
    """Two panels (ρ_case, ρ_TSS) of training corpora (rows) × test sets (columns), annotated in percent."""
    import numpy as np
    from matplotlib import colormaps
    from matplotlib.figure import Figure  # no pyplot: no GUI backend, no global state

    trains, tests = axes(matrix)
    cell = {(r["train"], r["test"]): r for r in matrix}
    width, height = 1.2 + 1.1 * len(tests), 0.9 + 0.5 * len(trains)
    figure = Figure(figsize=(2 * width + 1.5, height + 0.8), layout="constrained")
    cmap = colormaps["Reds"].with_extremes(bad="0.85")  # grey: no TCGA case in the test set
    for ax, (key, title) in zip(figure.subplots(1, 2), PANELS, strict=True):
        # An undefined overlap (no TCGA case in the test set) is NaN in the audit and null once read from its JSON.
        values = np.array([[100 * _or_nan(cell[t, b][key]) for b in tests] for t in trains])
        image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=0, vmax=100, aspect="auto")
        for (i, j), value in np.ndenumerate(values):
            ax.text(j, i, "n/a" if math.isnan(value) else f"{value:.1f}", ha="center", va="center", fontsize=8,
                    color="white" if value > 60 else "black")
        ax.set_xticks(range(len(tests)), tests, rotation=30, ha="right")
        ax.set_yticks(range(len(trains)), trains)
        ax.set_title(title)
        ax.set_xlabel("test set")
        ax.set_ylabel("training inventory")
        figure.colorbar(image, ax=ax, shrink=0.8)
    figure.savefig(path, dpi=150)


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else value


def stratified_markdown(rows: list[dict[str, Any]], binary: set[str], notes: list[str]) -> str:
    """Table 2 form: per training inventory and metric, each subset's mean (n) per partition and the gap; a cell
    whose interval rests on too few cases (or one dominant case) is marked (!) and listed under the table."""
    lines = ["# Metrics by leak status", "",
             "Means with 95% intervals that resample cases (patients; an id without a TCGA case is its own) within "
             "each partition: Korn–Graubard for accuracies, the cluster jackknife's t otherwise; n/a where a "
             f"partition holds one case. Gap = {PATIENT} − {CLEAN} (points for accuracies), its interval combining "
             "the two partitions' (MOVER); positive means better on what was trained on. (!): the interval rests on "
             "few cases or one dominant case, and is wide for it (the reason below the table)."]
    for (train, metric), group in by_train_and_metric(rows):
        scale = 100.0 if metric in binary else 1.0
        lines += ["", f"## {metric} against training inventory {train}", "",
                  "| subset | " + " | ".join(PARTITIONS) + " | gap [95% CI] | excluded |",
                  "| --- |" + " ---: |" * (len(PARTITIONS) + 2)]
        flagged = []
        for row in group:
            cells, warnings = stratum_cells(row, scale)
            lines.append(f"| {row['subset']} | " + " | ".join(cells) + f" | {row['excluded']['n']} |")
            flagged += warnings
        if flagged:
            lines += ["", *(f"- (!) {entry}" for entry in flagged)]
    if notes:
        lines += ["", "## Notes", "", *(f"- {note}" for note in notes)]
    return "\n".join(lines) + "\n"


def stratum_cells(row: dict[str, Any], scale: float) -> tuple[list[str], list[str]]:
    """One subset's row of the stratified table: each partition's mean with its interval and counts, then the gap;
    a cell whose interval rests on few cases or one dominant case is marked (!), and its reason is returned in the
    second list (``"<subset>, <partition>: <warning>"``). Undefined figures may be NaN or, read back from the
    audit's JSON, null."""
    row = {**row, **{part: _nan_for_null(row[part]) for part in (*PARTITIONS, "gap")}}
    cells = [_mean(row[p], scale) + _flag(row[p]) for p in PARTITIONS]
    gap = row["gap"]
    interval = ("[n/a]" if math.isnan(gap["ci_low"]) else
                f"[{_signed(gap['ci_low'], scale)}, {_signed(gap['ci_high'], scale)}]")
    cells.append("n/a" if math.isnan(gap["mean"]) else f"{_signed(gap['mean'], scale)} {interval}" + _flag(gap))
    return cells, [f"{row['subset']}, {p}: {row[p]['warning']}" for p in PARTITIONS if _flag(row[p])]


def _nan_for_null(cell: dict[str, Any]) -> dict[str, Any]:
    return {key: math.nan if value is None else value for key, value in cell.items()}


def _flag(cell: dict[str, Any]) -> str:
    """(!) beside a printed interval that rests on few cases or one dominant case (n/a says enough)."""
    return " (!)" if cell["warning"] and not math.isnan(cell["ci_low"]) else ""


def by_train_and_metric(rows: list[dict[str, Any]]) -> list[tuple[tuple[str, str], list[dict[str, Any]]]]:
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault((row["train"], row["metric"]), []).append(row)
    return list(grouped.items())


def _percent(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{100 * value:.1f}"


def _mean(cell: dict[str, float], scale: float) -> str:
    if cell["n"] == 0:
        return "– (n=0)"
    low, mean, high = (scale * cell[k] for k in ("ci_low", "mean", "ci_high"))
    counts = f"(n={cell['n']}, {cell['clusters']} cases)"  # the interval resampled the cases
    if scale == 100.0:
        return f"{mean:.1f}% {_bounds(low, high, '.1f')} {counts}"
    return f"{mean:.3g} {_bounds(low, high, '.3g')} {counts}"


def _bounds(low: float, high: float, spec: str) -> str:
    """The interval, or n/a where it is undefined (a partition of one case)."""
    return "[n/a]" if math.isnan(low) else f"[{format(low, spec)}, {format(high, spec)}]"


def _signed(value: float, scale: float) -> str:
    return f"{scale * value:+.1f}" if scale == 100.0 else f"{value:+.3g}"
