"""``pathbind filter`` and ``pathbind agreement``: the PathBind curation steps over lmms-eval logs and reviews."""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path
from typing import Any

import numpy as np

from pathbind.strict_json import dumps_strict
from pathbind_analysis.curation.decisions import agreement_row, join_decisions, read_decisions
from pathbind_analysis.curation.errors import CurationInputError
from pathbind_analysis.curation.logs import parse_model_argument, read_model_answers
from pathbind_analysis.curation.report import agreement_markdown, filter_markdown, specificity_markdown
from pathbind_analysis.curation.specificity import consensus, read_judge
from pathbind_analysis.curation.text_filter import Stage, filter_items


def add_curation_commands(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``filter`` and ``agreement`` subcommands."""
    flt = subparsers.add_parser(
        "filter", help="consensus filters over lmms-eval sample logs: two-stage text-only (paper Appendix B.1) or "
                       "PathVG expression specificity (B.2)",
        description="Drop the items models answer correctly without the image. Stage 1 drops items that all "
                    "(or --stage1-k) stage-1 models answer correctly; stage 2 drops, among the rest, items that "
                    "at least --k stage-2 models answer correctly. Or, with --specificity instead of the stages, "
                    "keep the PathVG expressions every judge calls Specific (pathbind_pathvg_specificity logs). "
                    "LOG is a *_samples_<task>.jsonl file written by lmms_eval --log_samples, or a folder of them; "
                    "repeat NAME to merge a model's task logs.")
    flt.add_argument("--stage1", nargs="+", action="extend", metavar="NAME=LOG",
                     help="stage-1 models' logs (without NAME=, the log's folder names the model)")
    flt.add_argument("--stage2", nargs="+", action="extend", metavar="NAME=LOG",
                     help="stage-2 models' logs; they may omit the items stage 1 drops")
    flt.add_argument("--specificity", nargs="+", action="extend", metavar="NAME=LOG",
                     help="the specificity judges' logs, instead of --stage1/--stage2: keep items every judge "
                          "answers Specific; an item a judge did not answer validly is excluded with its reason")
    flt.add_argument("--stage1-k", type=int, metavar="K",
                     help="drop items at least K stage-1 models answer correctly (default: all of them)")
    flt.add_argument("--k", "--stage2-k", dest="k", type=int, default=3, metavar="K",
                     help="drop items at least K stage-2 models answer correctly (default 3)")
    flt.add_argument("--condition", default="text",
                     help="the condition whose answers count (default: text, the item without its image)")
    flt.add_argument("--out", type=Path, required=True, metavar="DIR",
                     help="writes kept_ids.txt, item_decisions.csv, filter_report.json and filter_report.md")
    flt.set_defaults(func=run_filter)

    agr = subparsers.add_parser(
        "agreement", help="percentage agreement and Cohen's kappa of two reviewers' retain/exclude decisions",
        description="Decisions read retain/keep/yes/1 or exclude/drop/no/0 (any case). Prints the paper's "
                    "Table B.8 row: counts, agreement (%) and Cohen's kappa.")
    agr.add_argument("files", nargs="+", type=Path, metavar="DECISIONS.csv",
                     help="one CSV holding both reviewers' columns, or one CSV per reviewer (paired by --id)")
    agr.add_argument("--a", required=True, metavar="COLUMN", help="reviewer 1's decision column (first file)")
    agr.add_argument("--b", required=True, metavar="COLUMN", help="reviewer 2's decision column (last file)")
    agr.add_argument("--id", dest="id_column", metavar="COLUMN",
                     help="item id column (required with two files; errors then name items by it)")
    agr.add_argument("--label", help="component name in the table (default: the first file's name)")
    agr.add_argument("--json", action="store_true", help="machine-readable output")
    agr.set_defaults(func=run_agreement)


def run_filter(args: argparse.Namespace) -> int:
    from pathbind_analysis.json_report import output_problem

    if problem := output_problem(args.out, "--out", folder=True):  # before every log is read, not after
        raise SystemExit(f"pathbind filter: error: {problem}")
    try:
        rows, report, markdown, sources, excluded_why = _filter(args)
    except CurationInputError as exc:
        raise SystemExit(f"pathbind filter: error: {exc}") from None
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    kept = [row["id"] for row in rows if row["decision"] == "kept"]
    (out / "kept_ids.txt").write_text("".join(f"{item}\n" for item in kept))
    with (out / "item_decisions.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (out / "filter_report.json").write_text(dumps_strict(report, indent=2, ensure_ascii=False) + "\n")
    (out / "filter_report.md").write_text(markdown)
    print(markdown)
    for source in sources:
        for skipped in source["skipped_files"]:
            print(f"pathbind filter: warning: skipped {skipped}", file=sys.stderr)
    if report["excluded"]:
        print(f"pathbind filter: warning: {len(report['excluded'])} item(s) excluded because {excluded_why} for "
              f"them (listed in {out / 'filter_report.json'})", file=sys.stderr)
    print(f"wrote {out / 'kept_ids.txt'} ({len(kept)} ids), item_decisions.csv, filter_report.json, filter_report.md")
    return 0


def run_agreement(args: argparse.Namespace) -> int:
    files: list[Path] = args.files
    try:
        if len(files) == 1:
            if args.a == args.b:
                raise CurationInputError(f"--a and --b both name column {args.a!r}; name each reviewer's column")
            decisions = read_decisions(files[0], [args.a, args.b], id_column=args.id_column)
            reviewers = [f"column '{args.a}' of {files[0]}", f"column '{args.b}' of {files[0]}"]
        elif len(files) == 2:
            if not args.id_column:
                raise CurationInputError("two files are paired item by item: name the id column with --id")
            decisions = join_decisions(read_decisions(files[0], [args.a], id_column=args.id_column),
                                       read_decisions(files[1], [args.b], id_column=args.id_column),
                                       str(files[0]), str(files[1]))
            reviewers = [f"column '{args.a}' of {files[0]}", f"column '{args.b}' of {files[1]}"]
        else:
            raise CurationInputError(f"got {len(files)} files; give one CSV with both reviewers' columns or "
                                     "one CSV per reviewer")
    except CurationInputError as exc:
        raise SystemExit(f"pathbind agreement: error: {exc}") from None
    values = np.array(list(decisions.values()), dtype=bool)
    row = agreement_row(args.label or files[0].stem, values[:, 0], values[:, 1])
    row.update(r1=reviewers[0], r2=reviewers[1])
    print(dumps_strict(row, indent=2, ensure_ascii=False) if args.json else agreement_markdown(row))
    return 0


def _filter(args: argparse.Namespace) -> tuple[list[dict[str, Any]], dict[str, Any], str, list[dict[str, Any]], str]:
    """The filter the options choose: item rows, report, its markdown, the log readers' summaries, and why an
    excluded item is excluded."""
    if args.specificity:
        if args.stage1 or args.stage2:
            raise CurationInputError("--specificity is a filter of its own: give it without --stage1/--stage2 (run "
                                     "the two filters separately, each with its own --out)")
        rows, report = consensus([read_judge(name, logs) for name, logs in _named_logs(args.specificity).items()])
        return rows, report, specificity_markdown(report), report["judges"], "a judge has no valid answer"
    if not (args.stage1 and args.stage2):
        raise CurationInputError("give --stage1 and --stage2 (the text-only filter) or --specificity (the PathVG "
                                 "expression filter)")
    stage1 = _stage(args.stage1, args.stage1_k, "--stage1-k", args.condition)
    stage2 = _stage(args.stage2, args.k, "--k", args.condition)
    rows, report = filter_items(stage1, stage2)
    return rows, report, filter_markdown(report), report["models"], "a model has no answer"


def _named_logs(arguments: list[str]) -> dict[str, list[Path]]:
    """``NAME=LOG`` arguments grouped by name, in order (a name repeated merges its logs)."""
    paths: dict[str, list[Path]] = {}
    for argument in arguments:
        name, path = parse_model_argument(argument)
        paths.setdefault(name, []).append(path)
    return paths


def _stage(arguments: list[str], k: int | None, option: str, condition: str) -> Stage:
    paths = _named_logs(arguments)
    models = [read_model_answers(name, logs, condition=condition) for name, logs in paths.items()]
    drop_at = len(models) if k is None else k
    if not 1 <= drop_at <= len(models):
        raise CurationInputError(f"{option} {k}: choose 1 to {len(models)}, the number of models in that stage "
                                 f"({', '.join(paths)})")
    return Stage(models=models, drop_at=drop_at)
