"""Assembles the report: each section from the runs, then report.md, index.html, the figures (PNG, SVG, PDF) and
the tables (CSV, LaTeX) in one folder."""

from __future__ import annotations

import os
from pathlib import Path

from pathbind_analysis.report.accounting import accounting_section
from pathbind_analysis.report.data_notes import data_notes, run_notes
from pathbind_analysis.report.document import Section, Table, write_html, write_markdown, write_tables
from pathbind_analysis.report.faithfulness import faithfulness_section
from pathbind_analysis.report.figures import FORMATS
from pathbind_analysis.report.fmt import cells
from pathbind_analysis.report.grounding import grounding_section
from pathbind_analysis.report.leakage import leakage_section
from pathbind_analysis.report.matched import matched_section
from pathbind_analysis.report.overlap_controls import overlap_controls_section
from pathbind_analysis.report.overlays import overlay_section
from pathbind_analysis.report.pairs_plot import pairs_section, resolve_pairs
from pathbind_analysis.report.pathview import pathview_section
from pathbind_analysis.report.runs import ReportError, Run, load_runs
from pathbind_analysis.report.vqa import vqa_section

TITLE = "PathBind report"


def build_report(run_dirs: list[Path], out: Path, *, pairs: str = "", overlays: int = 6,
                 audits: list[Path] | None = None, matched: list[Path] | None = None,
                 published: list[Path] | None = None) -> list[Path]:
    """Write ``out/report.md``, ``out/index.html``, the figures (``figures/``) and the tables (``tables/``); return
    the written files, report.md and index.html first.

    Raises ReportError (naming the folder or argument) for a run folder that does not exist or holds no results,
    an ``--audit`` path or a ``--matched`` or ``--published`` file that does not exist, a ``--published`` CSV
    without its columns, or a ``--pairs`` side that names no given run.
    Anything else missing becomes a note in the report.
    """
    missing = [path for path in audits or [] if not path.exists()]
    if missing:
        raise ReportError(f"--audit {missing[0]}: no such file or folder")
    for option, paths in (("--matched", matched), ("--published", published)):
        absent = [path for path in paths or [] if not path.is_file()]
        if absent:
            raise ReportError(f"{option} {absent[0]}: no such file")
    runs = load_runs(run_dirs)
    chosen_pairs = resolve_pairs(pairs, runs) if pairs else []
    out.mkdir(parents=True, exist_ok=True)
    figures = out / "figures"
    for stale in (file for suffix in FORMATS for file in figures.glob(f"*.{suffix}")) if figures.is_dir() else []:
        stale.unlink()  # a reused --out: only this report's figures
    # The headlines first; what was read and dropped (the accounting) after them.
    sections = [_runs_section(runs, out), vqa_section(runs, figures), grounding_section(runs, figures),
                overlay_section(runs, figures, overlays), pathview_section(runs),
                faithfulness_section(runs, figures, overlays), overlap_controls_section(runs, figures),
                matched_section(matched or []), leakage_section(runs, audits or [], figures, published),
                accounting_section(runs)]
    if chosen_pairs:
        sections.insert(3, pairs_section(chosen_pairs, figures))
    write_markdown(sections, TITLE, out / "report.md")
    write_html(sections, TITLE, out / "index.html")
    tables = write_tables(sections, out / "tables")
    return [out / "report.md", out / "index.html", *sorted(file for suffix in FORMATS
                                                           for file in figures.glob(f"*.{suffix}")), *tables]


def _runs_section(runs: list[Run], out: Path) -> Section:
    """The runs read, each folder relative to the report (the two move together)."""
    rows = [cells([run.name, run.model, Path(os.path.relpath(run.path.resolve(), out.resolve())).as_posix(),
                   ", ".join(sorted(run.results))]) for run in runs]
    return Section("Runs", blocks=[Table("Runs read", ["Model", "lmms-eval model", "folder", "tasks"], rows),
                                   *data_notes(runs), *run_notes(runs)])
