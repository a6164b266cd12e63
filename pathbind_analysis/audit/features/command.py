"""``pathbind audit-features``: do frozen slide embeddings give away the tissue source site or the patient?"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pathbind.text_table import format_table
from pathbind_analysis.audit.features.read import FORMATS_HELP, FeatureInputError
from pathbind_analysis.json_report import output_problem, write_json_report

PERMUTE_STREAM = 0  # random stream of --seed for the label permutation (see probes)
DESCRIPTION = """\
Feature-space leakage audit (§4.2 of the WSI leakage audit): do frozen slide (or patch) embeddings give away
the tissue source site (TSS) or the patient? Site and patient come from the TCGA barcode in each id, or from
--site-column/--case-column.

  TSS detection     logistic-regression probe for the site, on the sites with at least --min-slides slides
                    and 2 patients; one-vs-rest macro AUROC (tss_auroc_macro)
  patient re-id     logistic-regression probe for the patient, on the patients with at least 2 slides; top-1
                    accuracy of the held-out slides (reid_top1) against chance 1/#patients (reid_chance)
  pair similarity   cosine similarity of l2-normalised embeddings: same patient, same site/other patient,
                    different sites; means, excess over the cross-site mean, one-sided permutation tests of
                    cross-site < same site < same patient whose unit is the patient (sites permuted across
                    patients) or the slide (slides permuted across the patients of a site), never the pair

Probes: standardised features (scaled on the training slides) and scikit-learn's multinomial
LogisticRegression (C=1), on a stratified 70/30 split made within every class. TSS detection splits by
patient within site: round(30%) of each site's patients, at least one and never all, are held out with all
their slides, so sibling slides never fall on both sides (split by slide, as in the paper, the probe
recognises the patient and reads it as the site: a false site signal). Re-identification holds out round(30%)
of each patient's slides. 95% intervals bootstrap the held-out slides with the probe fixed:
for the AUROC, patients are resampled within each site (every site stays present, a patient's slides are drawn
together) and the interval is the estimate ± Student's t (for the smallest site's held-out patients) × the
bootstrap spread; it is refused when a site holds out fewer than 4 patients. The similarity means bootstrap
their pairs. Slides are ordered by id, so the same --seed gives the same figures whatever the row
order or file format. One slide counts once however its id is spelled (case, folders, UUID, file suffix).
Every input row is used or dropped with a counted reason (empty id, a slide already read, no
TCGA barcode, missing/NaN/all-zero embedding, wrong dimension); the JSON lists them with examples.
Control: --permute-labels must give AUROC ~ 0.5 and re-identification ~ chance.
"""


def add_features_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "audit-features", help="linear probes for site and patient identity in frozen slide embeddings",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=DESCRIPTION)
    parser.add_argument("embeddings", type=Path, metavar="EMBEDDINGS", help=FORMATS_HELP + ". N×D patch "
                        "features of a slide are l2-normalised per patch and mean-pooled (the paper's slide "
                        "representation for patch encoders)")
    parser.add_argument("--json", type=Path, required=True, metavar="OUT", help="machine-readable report")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="also write DIR/features_audit.md and the similarity plot DIR/similarity.png")
    parser.add_argument("--encoder", metavar="NAME", help="encoder name for the report (default: the input's name)")
    parser.add_argument("--ids", type=Path, metavar="FILE", help="row ids of a .npy (or one-tensor .pt): one per line")
    parser.add_argument("--id-column", metavar="NAME", help="slide id column (default: the one of TCGA barcodes)")
    parser.add_argument("--vector-column", metavar="NAME",
                        help="embedding column or array (default: the only one), or the prefix of per-dimension "
                             "columns")
    parser.add_argument("--site-column", metavar="NAME", help="tissue source site labels (default: from the barcode)")
    parser.add_argument("--case-column", metavar="NAME", help="patient labels (default: from the barcode)")
    parser.add_argument("--min-slides", type=int, default=2, metavar="N",
                        help="TSS detection keeps sites with at least N slides (default 2, the paper's rule; "
                             "at least 2: one to train on, one to test)")
    parser.add_argument("--max-pairs", type=int, default=20_000, metavar="N",
                        help="pairs per similarity group, sampled when there are more (default 20000, as the paper)")
    parser.add_argument("--n-resamples", type=int, default=1000, metavar="N",
                        help="bootstrap resamples and permutations of each test (default 1000)")
    parser.add_argument("--seed", type=int, default=0, metavar="N",
                        help="seed of the splits, bootstrap, pair sampling and permutation (default 0)")
    parser.add_argument("--permute-labels", action="store_true",
                        help="control: shuffle the (site, patient) labels across slides first; expect AUROC ≈ 0.5, "
                             "re-id ≈ chance and no similarity excess")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except FeatureInputError as exc:
        message = " ".join(str(exc).splitlines())  # one line, whatever a library's message holds
        print(f"pathbind audit-features: error: {message}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    import numpy as np

    from pathbind_analysis.audit.features.probes import patient_reid, tss_detection
    from pathbind_analysis.audit.features.read import read_table
    from pathbind_analysis.audit.features.similarity import pair_similarities
    from pathbind_analysis.audit.features.slides import choose_slides, unit_scaled

    for option, value, least in (("--min-slides", args.min_slides, 2), ("--max-pairs", args.max_pairs, 1),
                                 ("--n-resamples", args.n_resamples, 1)):
        if value < least:
            raise FeatureInputError(f"{option} must be at least {least}")
    for problem in (output_problem(args.json, "--json"), output_problem(args.out, "--out", folder=True)):
        if problem:  # before reading and fitting, not after
            raise FeatureInputError(problem)
    table = read_table(args.embeddings, args.ids)
    slides = choose_slides(table, args.id_column, args.vector_column, args.site_column, args.case_column)
    if not slides.ids:
        raise FeatureInputError(f"{args.embeddings.name}: none of its {slides.rows_read:,} rows is usable "
                                f"({_dropped(slides.dropped)})")
    sites, cases, vectors = slides.sites, slides.cases, unit_scaled(slides.vectors)
    if args.permute_labels:  # jointly: each patient stays within one site, and keeps its number of slides
        order = np.random.default_rng((args.seed, PERMUTE_STREAM)).permutation(len(sites))
        sites, cases = sites[order], cases[order]
    _progress(f"{len(slides.ids):,} slides ({slides.vectors.shape[1]}-d), {len(set(sites)):,} sites, "
              f"{len(set(cases)):,} patients: fitting the TSS probe")
    tss = tss_detection(vectors, sites, args.min_slides, args.seed, args.n_resamples, cases)
    _progress("fitting the patient re-identification probe")
    reid = patient_reid(vectors, cases, args.seed, args.n_resamples)
    _progress("pair similarities")
    similarity, values = pair_similarities(vectors, sites, cases, args.max_pairs, args.seed,
                                           args.n_resamples)
    report = _report(args, table, slides, tss, reid, similarity)
    if args.out:
        _write_outputs(report, values, args.out)
    write_json_report(args.json, report)
    _print_summary(report, args.json)
    return _measured(report)


def _measured(report: dict[str, Any]) -> int:
    """1 with an error line when no probe could be fitted and no pair compared: the report says why each is
    undefined, but the audit measured nothing."""
    groups = report["similarity"]["groups"].values()
    if "undefined" not in report["tss"] or "undefined" not in report["reid"] or any(g["pairs_used"] for g in groups):
        return 0
    print(f"pathbind audit-features: error: nothing measured: TSS detection {report['tss']['undefined']}; "
          f"re-identification {report['reid']['undefined']}; no pair of slides", file=sys.stderr)
    return 1


def _report(args: argparse.Namespace, table: Any, slides: Any, tss: dict[str, Any], reid: dict[str, Any],
            similarity: dict[str, Any]) -> dict[str, Any]:
    return {
        "encoder": args.encoder or args.embeddings.stem, "seed": args.seed, "n_resamples": args.n_resamples,
        "permuted_labels": args.permute_labels,
        "tss_auroc_macro": tss["auroc_macro"], "tss_auroc_macro_ci95": tss["auroc_macro_ci95"],
        "reid_top1": reid["top1"], "reid_top1_ci95": reid["top1_ci95"], "reid_chance": reid["chance"],
        "reid_multiple_of_chance": reid["multiple_of_chance"],
        "input": {"path": str(args.embeddings), "format": table.format, "id_column": slides.id_column,
                  "vector_column": slides.vector_column, "site_column": args.site_column,
                  "case_column": args.case_column, "dimension": int(slides.vectors.shape[1]),
                  "pooled_patch_features": table.pooled, "ignored": table.ignored},
        "rows": slides.row_summary(), "tss": tss, "reid": reid, "similarity": similarity, "outputs": {}}


def _write_outputs(report: dict[str, Any], values: dict[str, Any], out: Path) -> None:
    from pathbind_analysis.audit.features.report import markdown
    from pathbind_analysis.audit.features.similarity import write_similarity_plot

    out.mkdir(parents=True, exist_ok=True)
    report["outputs"] = {"table": str(out / "features_audit.md"), "similarity_plot": str(out / "similarity.png")}
    (out / "features_audit.md").write_text(markdown(report), encoding="utf-8")
    control = " (labels permuted)" if report["permuted_labels"] else ""
    write_similarity_plot(values, out / "similarity.png", f"{report['encoder']}{control}")


def _print_summary(report: dict[str, Any], json_path: Path) -> None:
    from pathbind_analysis.audit.features.report import summary_rows

    rows = report["rows"]
    print(format_table(summary_rows(report)))
    print(f"\nTSS detection split {report['tss']['split']}")
    print(f"{rows['read']:,} rows read, {rows['used']:,} used"
          + (f"; dropped: {_dropped(rows['dropped'])}" if rows["dropped"] else ""))
    if rows["repeated_slides"]:
        first, entry = next(iter(rows["repeated_slides"].items()))
        print(f"{len(rows['repeated_slides']):,} slide(s) read in several rows, each counted once (rows per slide: "
              + ", ".join(f"{count:,} × {n}" for n, count in rows["slides_by_rows"].items())
              + f"); e.g. {first}: {' | '.join(entry['ids'])}")
    if "interval_undefined" in report["tss"]:
        print(f"TSS AUROC interval refused: {report['tss']['interval_undefined']}")
    if "interval_note" in report["tss"]:
        print(f"TSS AUROC interval {report['tss']['interval_note']}")
    if report["permuted_labels"]:
        print("labels permuted (control): expect AUROC ≈ 0.5 and re-identification ≈ chance")
    print(f"wrote {', '.join(map(str, [json_path, *report['outputs'].values()]))}")


def _dropped(counts: dict[str, int]) -> str:
    return ", ".join(f"{count:,} {reason}" for reason, count in counts.items()) or "no rows"


def _progress(message: str) -> None:
    print(f"audit-features: {message}", file=sys.stderr, flush=True)
