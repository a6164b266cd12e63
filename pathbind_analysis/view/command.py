"""The ``pathbind view`` subcommand."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_view_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "view", help="a static site to page through each item: image, expert box, heat map, every condition's answer",
        description="Reads the results.json and --log_samples logs of each RUN_DIR and writes DIR/index.html (opens "
                    "from the file system, no server), its script, data.js and the thumbnails and heat-map overlays. "
                    "With --reviews FILE: reads a reviewer's CSV exported from the site and counts its verdicts.")
    parser.add_argument("run_dirs", nargs="*", type=Path, metavar="RUN_DIR", help="lmms-eval --output_path folders")
    parser.add_argument("--out", type=Path, metavar="DIR", help="folder to write the site to")
    parser.add_argument("--reviews", type=Path, metavar="FILE", help="a reviews CSV from the site's export button")
    parser.add_argument("--json", action="store_true", help="with --reviews: every row as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.reviews is not None:
        return _reviews(args.reviews, as_json=args.json)
    if not args.run_dirs or args.out is None:
        return _error("give RUN_DIR... --out DIR to write a site, or --reviews FILE to read a reviewer's CSV")
    from pathbind_analysis.report import ReportError
    from pathbind_analysis.view.site import write_site

    try:
        written = write_site(args.run_dirs, args.out)
    except ReportError as exc:
        return _error(str(exc))
    for note in written["notes"]:
        print(f"pathbind view: warning: {note}", file=sys.stderr)
    print(f"pathbind view: wrote {args.out / 'index.html'}: {written['items']} item(s) of {written['runs']} run(s)")
    return 0


def _reviews(path: Path, *, as_json: bool) -> int:
    from pathbind.strict_json import dumps_strict
    from pathbind.text_table import format_table
    from pathbind_analysis.view.reviews import ReviewsError, read_reviews, review_counts

    try:
        rows = read_reviews(path)
    except ReviewsError as exc:
        return _error(str(exc))
    if as_json:
        print(dumps_strict(rows, indent=2))
        return 0
    print(format_table(review_counts(rows), ["task", "reviewed", "agree", "disagree", "notes"]) if rows
          else f"{path}: no review")
    disagreements = [row for row in rows if row["verdict"] == "disagree" or row["note"].strip()]
    for row in disagreements:
        print(f"{row['task']} {row['id']} ({row['verdict'] or 'no verdict'}; {row['runs']}): {row['note']}")
    return 0


def _error(message: str) -> int:
    print(f"pathbind view: error: {message}", file=sys.stderr)
    return 1
