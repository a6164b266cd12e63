"""``pathbind audit-leakage``: TCGA case and site overlap of training inventories with test sets."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathbind.text_table import format_table
from pathbind_analysis.audit.leakage.inventory import InventoryError, Source, parse_source
from pathbind_analysis.json_report import output_problem, write_json_report

if TYPE_CHECKING:
    from pathbind_analysis.audit.leakage.matrix import Audit
    from pathbind_analysis.audit.leakage.samples import Samples

INVENTORY_HELP = ("NAME=FILE or NAME=FILE:column; FILE is a text list of ids, .csv, .tsv, .json, .jsonl, .parquet "
                  "(optionally .gz) or an lmms-eval sample log; repeat a NAME to merge files")


def add_audit_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "audit-leakage", help="TCGA patient/site overlap between training inventories and test sets",
        description="Overlap of TCGA cases (rho_case) and tissue source sites (rho_tss) between training "
                    "inventories and test sets, each test item's leak partition, and with --samples an "
                    "evaluation's per-sample metrics split by leak status.")
    parser.add_argument("--train", action="append", metavar="NAME=FILE", help=INVENTORY_HELP)
    parser.add_argument("--test", action="append", metavar="NAME=FILE", help=INVENTORY_HELP)
    parser.add_argument("--site-split", metavar="NAME=FILE",
                        help="write a site-disjoint (leave-site-out) split of this inventory: every slide's fold, no "
                             "tissue source site in two folds (with or without --train/--test)")
    parser.add_argument("--site-folds", type=int, default=5, metavar="K",
                        help="folds of --site-split, balanced by slides (default 5; 0: one fold per site)")
    parser.add_argument("--samples", metavar="LOG.jsonl[:field]",
                        help="lmms-eval --log_samples file; field = the doc field holding the slide id (found "
                             "when omitted)")
    parser.add_argument("--metric", action="append", metavar="NAME",
                        help="per-sample metric of the log to stratify (repeatable; default: every one)")
    parser.add_argument("--by", action="append", metavar="FIELD",
                        help="doc field whose values split the stratified table (repeatable, e.g. the question "
                             "category)")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR",
                        help="folder for the tables, heat map, partitions and listings")
    parser.add_argument("--json", type=Path, metavar="OUT", help="machine-readable report (default OUT/leakage.json)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except InventoryError as exc:
        print(f"pathbind audit-leakage: error: {exc}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    from pathbind_analysis.audit.leakage.matrix import group_sources, run_audit
    from pathbind_analysis.audit.leakage.samples import read_samples

    if bool(args.train) != bool(args.test) or not (args.train or args.site_split):
        raise InventoryError("give --train and --test inventories (the overlap audit), --site-split (a site-disjoint "
                             "split), or both")
    if args.site_folds < 0:
        raise InventoryError("--site-folds must be 0 (one fold per site) or more")
    if (args.metric or args.by) and not args.samples:
        raise InventoryError("--metric and --by choose what --samples LOG.jsonl stratifies: add --samples")
    for problem in (output_problem(args.out, "--out", folder=True), output_problem(args.json, "--json")):
        if problem:  # before the long inventory pass, not after it
            raise InventoryError(problem)
    split = parse_source(args.site_split, "--site-split") if args.site_split else None
    out: Path = args.out
    json_path: Path = args.json or out / "leakage.json"
    if split is not None and not args.train:
        out.mkdir(parents=True, exist_ok=True)
        return _site_split_only(split, args.site_folds, out, json_path)
    train = group_sources([parse_source(text, "--train") for text in args.train])
    test = group_sources([parse_source(text, "--test") for text in args.test])
    # The sample log is small: read it first so that its errors show before the long inventory pass.
    samples = read_samples(args.samples, metrics=args.metric, by=args.by) if args.samples else None
    out.mkdir(parents=True, exist_ok=True)
    audit = run_audit(train, test, out)
    report = _overlap_report(audit, out)
    if samples is not None:
        report["stratified"] = _stratified_report(samples, audit, args, out)
        report["outputs"]["stratified_table"] = str(out / "stratified.md")
    if split is not None:
        report["site_split"] = _site_split(split, args.site_folds, out)
    write_json_report(json_path, report)
    _print_summary(report, json_path)
    if not any(row["n_test_cases"] for row in report["matrix"]):  # every rho undefined: nothing was measured
        print("pathbind audit-leakage: error: no test set holds a TCGA case: nothing measured (the ids without a "
              f"barcode are listed in {out})", file=sys.stderr)
        return 1
    return 0


def _site_split_only(split: Source, folds: int, out: Path, json_path: Path) -> int:
    write_json_report(json_path, {"site_split": _site_split(split, folds, out)})
    print(f"\nwrote {json_path}")
    return 0


def _site_split(split: Source, folds: int, out: Path) -> dict[str, Any]:
    """Write the split and print its folds."""
    from pathbind_analysis.audit.leakage.site_split import write_site_split

    try:
        summary = write_site_split(split.name, [split], folds, out)
    except ValueError as exc:
        raise InventoryError(str(exc)) from exc
    print(format_table([{"fold": f["fold"], "sites": ", ".join(f["sites"]), "cases": f["cases"], "slides": f["slides"]}
                        for f in summary["per_fold"]]))
    unplaced = f"; {summary['no_site']:,} entries without a TCGA barcode in no fold" if summary["no_site"] else ""
    print(f"site split of {split.name}: {summary['rule']}, written to {summary['file']}{unplaced}")
    return summary


def _overlap_report(audit: Audit, out: Path) -> dict[str, Any]:
    """Write overlap.md and overlap.png; the report's matrix, inventories, notes and outputs."""
    from pathbind_analysis.audit.leakage.report import overlap_markdown, write_heatmap

    notes = [note for census in audit.trains + audit.tests if (note := census.lower_bound_note())]
    (out / "overlap.md").write_text(overlap_markdown(audit.matrix, notes), encoding="utf-8")
    write_heatmap(audit.matrix, out / "overlap.png")
    return {"matrix": audit.matrix, "notes": notes,
            "train": {c.name: c.summary() for c in audit.trains},
            "test": {c.name: {**c.summary(), "partitions": str(audit.partitions[c.name])} for c in audit.tests},
            "outputs": {"overlap_table": str(out / "overlap.md"), "heatmap": str(out / "overlap.png"),
                        "partitions": {name: str(path) for name, path in audit.partitions.items()}},
            "stratified": None}


def _stratified_report(samples: Samples, audit: Audit, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """Write stratified.md; the per-sample metrics by leak status against each training inventory."""
    from pathbind_analysis.audit.leakage.report import stratified_markdown
    from pathbind_analysis.audit.leakage.samples import stratify

    rows, kinds = stratify(samples, audit.trains, by=args.by)
    notes = []
    if kinds["unknown"] or kinds["malformed"]:
        notes.append(f"{kinds['unknown']:,} of {len(samples.ids):,} samples without a TCGA barcode in doc field "
                     f"{samples.id_field!r}, {kinds['malformed']:,} with a malformed one: excluded from every "
                     "stratum.")
    (out / "stratified.md").write_text(stratified_markdown(rows, samples.binary_metrics(), notes), encoding="utf-8")
    return {"samples": str(samples.path), "id_field": samples.id_field, "ids": kinds,
            "binary_metrics": sorted(samples.binary_metrics()),
            "notes": notes, "rows": rows}


def _print_summary(report: dict[str, Any], json_path: Path) -> None:
    rows = [{"train": r["train"], "test": r["test"], "rho_case_%": 100 * r["rho_case"], "rho_tss_%": 100 * r["rho_tss"],
             "cases": r["n_test_cases"], "patient-leaked": r["n_patient_leaked"], "site-leaked": r["n_site_leaked"],
             "clean": r["n_clean"], "unknown": r["n_unknown"], "malformed": r["n_malformed"]}
            for r in report["matrix"]]
    print(format_table(rows))
    for note in report["notes"] + (report["stratified"] or {}).get("notes", []):
        print(f"\nnote: {note}")
    written = [json_path, *(path for key, path in report["outputs"].items() if key != "partitions")]
    print(f"\nwrote {', '.join(map(str, written))} and {len(report['outputs']['partitions'])} partitions file(s)")

