"""``pathbind matched``: PathView-Bench perception on the slides each model answered correctly in an external slide
benchmark, against all slides and the ideal (PathView-Bench's Matched-Slide Analysis)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathbind.text_table import format_table
from pathbind_analysis.json_report import output_problem, write_json_report

if TYPE_CHECKING:
    from pathbind_analysis.matched.external import External

DEFAULT_MIN_SLIDES = 10


class MatchedError(ValueError):
    """An input the analysis cannot use, or an overlap too small to say anything; one line naming it."""


def add_matched_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "matched", help="PathView slide perception on the slides a model answered correctly elsewhere (matched slides)",
        description="For each RUN_DIR=EXTERNAL (one model's lmms-eval --output_path folder with PathView slide tasks "
                    "run with --log_samples, and the same model's answers on an external slide benchmark: a CSV of "
                    "slide_id,correct or an lmms-eval sample log whose records or docs name the slide), LGD Dice, "
                    "ARE and DLO macro-F1 and OCL accuracy over all PathView slides, over the slides the model "
                    "answered correctly in the external benchmark, and the ideal 1.0, with 95%% intervals that "
                    "resample slides; then their mean over the models. Slides are matched by identity: TCGA "
                    "barcodes (however written: path, UUID, case) as the leakage audit reads them, else file names.")
    parser.add_argument("pairs", nargs="+", metavar="RUN_DIR=EXTERNAL",
                        help="a PathView run folder and the same model's external answers (FILE.csv, FILE.tsv, or "
                             "LOG.jsonl[:field])")
    parser.add_argument("--external-metric", default="correct", metavar="NAME",
                        help="the per-sample metric of a non-PathBind sample log that is 1 for a right answer "
                             "(default: correct)")
    parser.add_argument("--rule", choices=("all", "any"), default="all",
                        help="a slide with several external questions counts as answered correctly when all of "
                             "them are (default) or any one")
    parser.add_argument("--min-slides", type=int, default=DEFAULT_MIN_SLIDES, metavar="N",
                        help=f"refuse when fewer than N slides are shared, or answered correctly among them "
                             f"(default {DEFAULT_MIN_SLIDES})")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the analysis as JSON (pathbind report "
                                                                   "--matched reads it)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        if args.min_slides < 2:
            raise MatchedError("--min-slides must be at least 2: an interval over slides needs two")
        if problem := output_problem(args.json, "--json"):
            raise MatchedError(problem)
        analysis = analyse([_split(text) for text in args.pairs], metric=args.external_metric, rule=args.rule,
                           min_slides=args.min_slides)
    except (MatchedError, ValueError) as exc:
        print(f"pathbind matched: error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        write_json_report(args.json, analysis)
    print(format_table(display_rows(analysis)))
    print(f"\nvalues are fractions (the ideal is 1.0); intervals 95%, resampling slides; matched: the slides answered "
          f"correctly in the external benchmark (rule: {args.rule})")
    for note in analysis["notes"]:
        print(f"note: {note}")
    return 0


def _split(text: str) -> tuple[Path, str]:
    run_dir, sep, external = text.partition("=")
    if not sep or not run_dir or not external:
        raise MatchedError(f"{text!r} is not RUN_DIR=EXTERNAL (a PathView output folder and the model's external "
                           "answers joined by '=')")
    if not Path(run_dir).is_dir():
        raise MatchedError(f"{run_dir}: no such output folder")
    return Path(run_dir), external


def analyse(pairs: list[tuple[Path, str]], *, metric: str = "correct", rule: str = "all",
            min_slides: int = DEFAULT_MIN_SLIDES) -> dict[str, Any]:
    """Every model's comparison and the macro average; MatchedError for an overlap that is empty or smaller than
    ``min_slides`` (shared slides, or shared slides answered correctly)."""
    from pathbind_analysis.matched.external import ExternalError, read_external
    from pathbind_analysis.matched.measures import IDEAL, macro_average

    models, notes = [], []
    for run_dir, spec in pairs:
        try:
            external = read_external(spec, metric=metric, rule=rule)
        except ExternalError as exc:
            raise MatchedError(str(exc)) from exc
        model = _model(run_dir, external, min_slides)
        models.append(model)
        notes += [f"{model['model']}: {note}" for note in model.pop("notes")]
    return {"ideal": IDEAL, "rule": rule, "cluster": "slide", "models": models, "macro": macro_average(models),
            "notes": notes}


def _model(run_dir: Path, external: External, min_slides: int) -> dict[str, Any]:
    """One model's comparison per Slide-FOV measure, with its overlap counts and notes."""
    from pathbind.lmms_output import sample_record, task_samples
    from pathbind_analysis.matched.measures import MEASURES, compare, pathview_task
    from pathbind_analysis.report.runs import load_runs

    run = load_runs([run_dir])[0]
    tasks = {measure: task for measure, _ in MEASURES if (task := pathview_task(run.results, measure))}
    if not tasks:
        raise MatchedError(f"{run_dir}: no PathView slide task (pathview_slide_lgd, _are, _dlo, _ocl) in its results")
    records = {}
    for measure, task in tasks.items():
        records[measure] = [r for r in map(sample_record, task_samples(run_dir, task)) if r is not None]
    slides = {r["slide_id"] for rows in records.values() for r in rows if r.get("slide_id")}
    if not slides:
        raise MatchedError(f"{run_dir}: the records of {', '.join(tasks.values())} name no slide (a PathView release "
                           "without a slide_id column, or a run before records carried it)")
    shared = slides & set(external.slides)
    correct = {slide for slide in shared if external.slides[slide]}
    where = f"{run.name} ({run_dir}) and {external.path}"
    if not shared:
        raise MatchedError(f"{where} share no slide: PathView names slides like {', '.join(sorted(slides)[:3])}, the "
                           f"external answers like {', '.join(external.examples)}; they name different slides or "
                           "spell them in a way that does not reduce to one barcode")
    if len(shared) < min_slides or len(correct) < min_slides:
        raise MatchedError(f"{where} share {len(shared)} slides, {len(correct)} of them answered correctly: fewer "
                           f"than --min-slides {min_slides}, too few for an interval over slides to mean anything")
    compared = {measure: compare(records[measure], correct) for measure in tasks}
    notes = [f"{external.path}: {n} rows dropped: {reason}" for reason, n in external.dropped.items()]
    notes += [f"{tasks[m]}: {c['without_slide']} of {c['items']} items name no slide (each counts in all slides as "
              "its own, never as matched)" for m, c in compared.items() if c["without_slide"]]
    missing = [label for measure, label in MEASURES if measure not in tasks]
    notes += [f"no PathView task for {', '.join(missing)} in {run_dir}"] if missing else []
    return {"model": run.name, "run": str(run_dir), "external": external.summary(), "tasks": tasks,
            "pathview_slides": len(slides), "shared_slides": len(shared), "correct_slides": len(correct),
            "measures": compared, "notes": notes}


def display_rows(analysis: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per model and measure, then the macro average over the models."""
    from pathbind_analysis.matched.measures import MEASURES

    labels = dict(MEASURES)
    rows = []
    for model in analysis["models"]:
        for measure, compared in model["measures"].items():
            rows.append({"model": model["model"], "measure": labels[measure], "all slides": _shown(compared["all"]),
                         "matched correct": _shown(compared["matched"]), "ideal": f"{analysis['ideal']:.3f}",
                         "gap": _shown(compared["gap"], signed=True),
                         "slides (matched)": f"{compared['slides']} ({compared['matched_slides']})"})
    for measure, macro in analysis["macro"].items():
        count = len(macro["models"])
        rows.append({"model": f"macro average ({count} model{'s' * (count != 1)})", "measure": labels[measure],
                     "all slides": _number(macro["all"]), "matched correct": _number(macro["matched"]),
                     "ideal": f"{analysis['ideal']:.3f}", "gap": "", "slides (matched)": ""})
    return rows


def _shown(estimate: dict[str, Any], *, signed: bool = False) -> str:
    """``0.274 [0.210, 0.338]``; the value alone where the interval is undefined (fewer than two slides)."""
    low, high = estimate["ci95"]["low"], estimate["ci95"]["high"]
    bounds = f" [{_number(low, signed=signed)}, {_number(high, signed=signed)}]" if _finite(low) and _finite(high) \
        else ""
    value = _number(estimate["value"], signed=signed)
    return value if value == "n/a" else value + bounds


def _number(value: Any, *, signed: bool = False) -> str:
    """Three decimals; ``n/a`` for an undefined value (NaN, or null in the JSON)."""
    return format(value, "+.3f" if signed else ".3f") if _finite(value) else "n/a"


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)
