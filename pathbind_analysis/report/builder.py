"""Assembles the report: each section from the runs, then report.md, index.html and the PNGs in one folder."""

from __future__ import annotations

from pathlib import Path

from pathbind_analysis.report.accounting import accounting_section
from pathbind_analysis.report.data_notes import data_notes, run_notes
from pathbind_analysis.report.document import Section, Table, write_html, write_markdown
from pathbind_analysis.report.faithfulness import faithfulness_section
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
    """Write ``out/report.md``, ``out/index.html`` and the figures; return the written files.

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
    for stale in figures.glob("*.png") if figures.is_dir() else []:  # a reused --out: only this report's figures
        stale.unlink()
    sections = [_runs_section(runs), accounting_section(runs), vqa_section(runs, figures),
                grounding_section(runs, figures), overlay_section(runs, figures, overlays), pathview_section(runs),
                faithfulness_section(runs, figures, overlays), overlap_controls_section(runs, figures),
                matched_section(matched or []), leakage_section(runs, audits or [], figures, published)]
    if chosen_pairs:
        sections.insert(4, pairs_section(chosen_pairs, figures))
    write_markdown(sections, TITLE, out / "report.md")
    write_html(sections, TITLE, out / "index.html")
    return [out / "report.md", out / "index.html", *sorted(figures.glob("*.png"))]


def _runs_section(runs: list[Run]) -> Section:
    rows = [cells([run.name, run.model, str(run.path), ", ".join(sorted(run.results))]) for run in runs]
    return Section("Runs", blocks=[Table("Runs read", ["Model", "lmms-eval model", "folder", "tasks"], rows),
                                   *data_notes(runs), *run_notes(runs)])
