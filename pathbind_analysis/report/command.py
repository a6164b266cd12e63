"""The ``pathbind report`` subcommand."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_report_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report", help="paper-style tables and figures (Markdown + self-contained HTML) from lmms-eval output folders",
        description="Reads the results.json and, where present, the --log_samples logs of each RUN_DIR (one model "
                    "each) and writes DIR/report.md, DIR/index.html (figures embedded; opens offline), "
                    "DIR/figures/ (each figure as PNG at 300 dpi, SVG and PDF) and DIR/tables/ (each table as CSV and "
                    "LaTeX). Sections a run lacks are skipped with a note.")
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="lmms-eval --output_path folders")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder to write the report to")
    parser.add_argument("--pairs", default="", metavar="A:B,...",
                        help="general:tuned pairs, each side a RUN_DIR or a model name, for the Figure 4 pair plot")
    parser.add_argument("--overlays", type=int, default=6, metavar="N",
                        help="grounding items per task to draw as attention overlays (default 6; 0: none)")
    parser.add_argument("--audit", type=Path, action="append", default=[], metavar="PATH",
                        help="a pathbind audit-leakage JSON or its --out folder (repeatable; leakage.json files "
                             "below the run folders are found too)")
    parser.add_argument("--matched", type=Path, action="append", default=[], metavar="FILE",
                        help="a pathbind matched --json file: the matched-slide analysis (repeatable)")
    parser.add_argument("--published", type=Path, action="append", default=[], metavar="CSV",
                        help="published accuracies (model,venue,training,benchmark,accuracy,note) to set beside the "
                             "audited leakage of --audit, in the leakage audit's Table 1 form (repeatable)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathbind_analysis.report import ReportError, build_report

    try:
        written = build_report(args.run_dirs, args.out, pairs=args.pairs, overlays=args.overlays, audits=args.audit,
                               matched=args.matched, published=args.published)
    except ReportError as exc:
        print(f"pathbind report: error: {exc}", file=sys.stderr)
        return 1
    figures = sum(file.parent.name == "figures" for file in written)
    print(f"pathbind report: wrote {written[0]}, {written[1]}, {figures} figure file(s) (PNG, SVG, PDF) and "
          f"{len(written) - 2 - figures} table file(s) (CSV, LaTeX)")
    return 0
