"""PathView-Bench's Matched-Slide Analysis in the seed's form, from the JSON `pathbind matched --json` writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pathbind_analysis.matched.command import display_rows
from pathbind_analysis.matched.measures import MEASURES
from pathbind_analysis.report.document import Cell, Note, Section, Table
from pathbind_analysis.report.fmt import cells, finite

SUBSETS = (("all", "All slides (unconditioned)"), ("matched", "Matched correct"))


def matched_section(files: list[Path]) -> Section:
    section = Section("Matched slides (PathView-Bench ablation)",
                      "Slide-FOV perception over every PathView slide and over the slides each model answered "
                      "correctly in an external slide benchmark, as fractions with the ideal 1.0, averaged over the "
                      "models (the seed's table), then per model with 95% intervals that resample slides; from "
                      "`pathbind matched --json`.")
    if not files:
        section.blocks.append(Note("no matched-slide analysis given (--matched FILE from pathbind matched --json): "
                                   "skipped"))
    for file in files:
        analysis = _read(file)
        if isinstance(analysis, str):
            section.blocks.append(Note(f"{file}: {analysis}: skipped"))
            continue
        section.blocks += [_seed_table(analysis, file), _model_table(analysis, file),
                           *(Note(note) for note in analysis.get("notes", []))]
    return section


def _seed_table(analysis: dict[str, Any], file: Path) -> Table:
    macro = analysis["macro"]
    rows = [[Cell(label), *cells([_fraction(macro[measure][part]) for measure, _ in MEASURES])]
            for part, label in SUBSETS]
    rows.append([Cell("Ideal upper bound"), *cells([f"{analysis['ideal']:.3f}"] * len(MEASURES))])
    models = max((len(macro[measure]["models"]) for measure, _ in MEASURES), default=0)
    return Table(f"Matched-slide analysis, macro average over {models} model(s) ({file.name})",
                 ["Subset", *(label for _, label in MEASURES)], rows)


def _model_table(analysis: dict[str, Any], file: Path) -> Table:
    rows = [row for row in display_rows(analysis) if not row["model"].startswith("macro average")]
    columns = ["model", "measure", "all slides", "matched correct", "gap", "slides (matched)"]
    return Table(f"Matched-slide analysis per model ({file.name}): value [95% interval over slides]",
                 ["Model", "measure", "all slides", "matched correct", "gap (matched − all)", "slides (matched)"],
                 [cells([str(row[column]) for column in columns]) for row in rows])


def _fraction(value: Any) -> str:
    return f"{value:.3f}" if finite(value) else "n/a"


def _read(file: Path) -> dict[str, Any] | str:
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"not readable as JSON ({exc})"
    if not (isinstance(data, dict) and isinstance(data.get("models"), list) and isinstance(data.get("macro"), dict)):
        return "not a pathbind matched --json file (no 'models' and 'macro')"
    return data
