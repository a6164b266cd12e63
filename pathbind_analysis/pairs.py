"""``pathbind pairs``: does pathology tuning improve visual binding, or only answering? (paired comparisons)"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from pathbind.lmms_output import ResultFile, TaskNotRun, sample_record, task_results, task_run, task_samples
from pathbind.provenance import RECORD_FAILED, data_differences, record_failure
from pathbind.strict_json import dumps_strict
from pathbind.text_table import format_table

DEFAULT_VQA, DEFAULT_GROUNDING = "pathbind_vqa", "pathbind_grounding_testa"
DEFAULT_OPTIONS = {"n_permutations": 10000, "seed": 0}


def add_pairs_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "pairs", help="ΔAcc, ΔMG, ΔIoU, ΔRecall of (general, pathology-tuned) model pairs, with clustered paired tests",
        description="For each GENERAL:TUNED pair of lmms-eval --output_path folders (run with --log_samples), the "
                    "tuned model's change in accuracy with the image (ΔAcc) and in multimodal gain (ΔMG) on each VQA "
                    "task, and in attention IoU and recall on each grounding task, over the items both evaluated: "
                    "a two-sided paired sign-flip test that flips the task's clusters (by default images, whose "
                    "questions are not independent) and the 95% interval of changes it does not reject, with "
                    "p-values Holm-adjusted across every row printed (all pairs, tasks and measures). Runs that "
                    "evaluated different items or data, or another version of the task, are refused; runs of "
                    "different lmms-eval or PathBind releases, and a folder holding several runs of a task (the "
                    "latest is taken), are warned about. Then "
                    "Kendall's tau between the model rankings by IoU at q=0.2 and by IoU at the other thresholds "
                    "and by pixel-AP.")
    parser.add_argument("pairs", nargs="+", metavar="GENERAL:TUNED",
                        help="two output folders (or results files in them, to take one of several runs) joined by ':'")
    parser.add_argument("--vqa-task", action="append", metavar="TASK",
                        help="a VQA task giving ΔAcc and ΔMG; repeat for several (default, when neither task option is "
                             f"given: {DEFAULT_VQA})")
    parser.add_argument("--grounding-task", action="append", metavar="TASK",
                        help="a grounding task giving ΔIoU and ΔRecall; repeat for several (default, when neither "
                             f"task option is given: {DEFAULT_GROUNDING})")
    parser.add_argument("--n-permutations", type=int, default=DEFAULT_OPTIONS["n_permutations"],
                        help="sign-flip permutations, where there are more sign patterns than this (default 10000: "
                             "every pattern up to 13 clusters)")
    parser.add_argument("--seed", type=int, default=DEFAULT_OPTIONS["seed"],
                        help="seed of the random sign patterns, beyond 13 clusters (default 0)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathbind_tasks.common.grounding_records import Q_DEFAULT  # scipy: loaded when the command runs

    try:
        if args.n_permutations < 1:
            raise ValueError("--n-permutations must be at least 1")
        pairs = [_split_pair(text) for text in args.pairs]
        given = args.vqa_task or args.grounding_task  # either option alone compares only what it names
        tasks = {"vqa": args.vqa_task or ([] if given else [DEFAULT_VQA]),
                 "grounding": args.grounding_task or ([] if given else [DEFAULT_GROUNDING])}
        rows = [row for general, tuned in pairs for row in compare(general, tuned, tasks, _options(args))]
        family = adjust(rows, "this invocation")
        runs = list(dict.fromkeys(path for pair in pairs for path in pair))
        agreement = {}
        for task in tasks["grounding"]:
            agreement.update(_rankings(runs, task))
    except ValueError as exc:
        print(f"pathbind pairs: error: {exc}", file=sys.stderr)
        return 1
    if not any(row["n"] for row in rows):
        print("pathbind pairs: error: nothing to compare: no item has a value of any measure under both models of "
              "any pair", file=sys.stderr)
        return 1
    if args.json:
        print(dumps_strict({"pairs": rows, "holm_family": family, "kendall_tau_vs_iou_q0.2": agreement}, indent=2))
        return 0
    print(format_table([_display(row) for row in rows]))
    print(f"\np (Holm): adjusted across {family}.")
    for row in (r for r in rows if r["ci95"]["warning"]):
        print(f"warning: {row['general']} → {row['tuned']}, {row['task']} {row['measure']}: {row['ci95']['warning']}")
    if agreement:
        print(f"\nKendall's tau vs the ranking by IoU at q={Q_DEFAULT} ({len(runs)} models):")
        print(format_table([{"ranking": name, "tau": tau} for name, tau in agreement.items()]))
    return 0


def _options(args: argparse.Namespace) -> dict[str, int]:
    return {"n_permutations": args.n_permutations, "seed": args.seed}


def _split_pair(text: str) -> tuple[Path, Path]:
    general, sep, tuned = text.rpartition(":")
    if not sep or not general or not tuned:
        raise ValueError(f"{text!r} is not GENERAL:TUNED (two output folders joined by ':')")
    for path in (Path(general), Path(tuned)):
        if not path.is_dir() and not (path.is_file() and path.name.endswith("results.json")):
            raise ValueError(f"{path}: no such output folder or lmms-eval results file")
    return Path(general), Path(tuned)


def _label(path: Path) -> str:
    """A run's name in the table: its folder's, or ``folder/file`` for a results file given."""
    return f"{path.parent.name}/{path.name}" if path.is_file() else path.name


def compare(general: Path, tuned: Path, tasks: dict[str, list[str]], options: dict[str, int]) -> list[dict[str, Any]]:
    """One row per task and measure: the tuned model's paired change over the general model's (not yet
    Holm-adjusted: :func:`adjust` adjusts across every row shown together). ValueError (one line) for runs on
    different data or items, or a task that is not of the kind asked for."""
    rows = [row for task in tasks["vqa"] for row in _vqa_rows(general, tuned, task, options)]
    rows += [row for task in tasks["grounding"] for row in _grounding_rows(general, tuned, task, options)]
    return [{"general": _label(general), "tuned": _label(tuned), **row} for row in rows]


def adjust(rows: list[dict[str, Any]], where: str) -> str:
    """Set each row's ``p_holm``, Holm-adjusted across all ``rows`` (every pair, task and measure shown together,
    so the chance of any false finding stays at 5%); returns the family's description."""
    from pathbind_metrics.resampling import holm

    for row, adjusted in zip(rows, holm([row["p"] for row in rows]), strict=True):
        row["p_holm"] = adjusted
    tested = sum(1 for row in rows if math.isfinite(row["p"]))
    pairs = len({(row["general"], row["tuned"]) for row in rows})
    return f"the {tested} tests of {where} ({pairs} pair{'s' * (pairs != 1)} × their tasks and measures)"


def _vqa_rows(general: Path, tuned: Path, task: str, options: dict[str, int]) -> list[dict[str, Any]]:
    _comparable(general, tuned, task, "--vqa-task")
    first, second = (vqa_answers(_records(path, task, "correct", "VQA")) for path in (general, tuned))
    return vqa_changes(task, (general, tuned), first, second, options)


def vqa_changes(task: str, runs: tuple[Any, Any], first: dict[str, dict[str, dict[str, Any]]],
                second: dict[str, dict[str, dict[str, Any]]], options: dict[str, int]) -> list[dict[str, Any]]:
    """ΔAcc and, where both runs asked the items without the image too, ΔMG of the second run over the first
    (their :func:`vqa_answers`); ValueError when they evaluated different items. ``runs`` name them in messages."""
    items = _same_items(*runs, task, first, second)
    g, t = ([a[i] for i in items] for a in (first, second))
    paired = [k for k in range(len(items)) if "image" in g[k] and "image" in t[k]]
    rows = [_row(task, "ΔAcc", [g[k]["image"] for k in paired],
                 [float(t[k]["image"]["correct"]) - float(g[k]["image"]["correct"]) for k in paired], 100, options,
                 bound=1.0)]
    both = [k for k in paired if "text" in g[k] and "text" in t[k]]
    if both:
        rows.append(_row(task, "ΔMG", [g[k]["image"] for k in both], [_gain(t[k]) - _gain(g[k]) for k in both], 100,
                         options, bound=2.0))
    return rows


def _row(task: str, measure: str, records: list[dict[str, Any]], differences: list[float], scale: float,
         options: dict[str, int], bound: float | None = None) -> dict[str, Any]:
    """The paired change over ``records`` (whose clusters are resampled) with per-item ``differences``, a
    difference of proportions within [−``bound``, ``bound``] where one is given."""
    from pathbind_metrics.pairs import paired_delta
    from pathbind_tasks.common.clusters import cluster_keys

    keys, cluster = cluster_keys(records)
    return {"task": task, "measure": measure,
            **paired_delta(differences, keys, cluster=cluster, scale=scale, bound=bound, **options)}


def _gain(answers: dict[str, dict[str, Any]]) -> float:
    return float(answers["image"]["correct"]) - float(answers["text"]["correct"])


def _grounding_rows(general: Path, tuned: Path, task: str, options: dict[str, int]) -> list[dict[str, Any]]:
    _comparable(general, tuned, task, "--grounding-task")
    first, second = (_records_by_id(path, task, "iou", "grounding") for path in (general, tuned))
    return grounding_changes(task, (general, tuned), first, second, options)


def grounding_changes(task: str, runs: tuple[Any, Any], first: dict[str, dict[str, Any]],
                      second: dict[str, dict[str, Any]], options: dict[str, int]) -> list[dict[str, Any]]:
    """ΔIoU and ΔRecall at the default threshold of the second run over the first (records by item id);
    ValueError when they evaluated different items. ``runs`` name them in messages."""
    from pathbind_tasks.common.grounding_records import Q_DEFAULT

    items = _same_items(*runs, task, first, second)
    return [_row(task, label, [first[i] for i in items],
                 [_at_default(second[i], measure, Q_DEFAULT) - _at_default(first[i], measure, Q_DEFAULT)
                  for i in items], 1, options)
            for measure, label in (("iou", "ΔIoU"), ("recall", "ΔRecall"))]


def _at_default(record: dict[str, Any], measure: str, q: float) -> float:
    value = record[measure][str(q)]
    return math.nan if value is None else float(value)


def _comparable(general: Path, tuned: Path, task: str, option: str) -> None:
    """ValueError (one line: the task and the cause) when the two runs of ``task`` cannot be compared: either run
    lacks the task, was a ``--predict_only`` run, ran another version of the task or other data, or its data record
    failed. A warning, and the comparison goes on, for a folder holding several runs of the task (the one taken
    and why), runs of different lmms-eval or PathBind releases, and a run without a record of its data."""
    try:
        found = {path: task_run(path, task) for path in (general, tuned)}
    except TaskNotRun as exc:
        raise ValueError(f"{exc}; choose the task with {option}") from None
    for path, run in found.items():
        if run.chosen.predict_only:
            raise ValueError(f"{run.chosen.path}: a --predict_only run: lmms-eval logged the answers of task {task} "
                             "and scored none; rerun it without --predict_only to compare it")
        if choice := run.choice():
            _warn(f"{path}: {choice}")
    first, second = found[general].chosen, found[tuned].chosen
    if first.versions.get(task) != second.versions.get(task):
        raise ValueError(f"task {task}: {general} ran version {first.versions.get(task)} of it and {tuned} version "
                         f"{second.versions.get(task)} (its YAML's metadata.version: another version asks or scores "
                         "otherwise); rerun both with one release of the task")
    if first.software and second.software and first.software != second.software:
        _warn(f"{general} ran {first.software_text()} and {tuned} {second.software_text()}: the prompts and "
              f"scoring of task {task} may differ between them")
    records = {}
    for path, run in found.items():
        record = run.chosen.data.get(task)
        if failure := record_failure(record):
            raise ValueError(f"{run.chosen.path}: task {task}: {RECORD_FAILED} ({failure}): cannot check that both "
                             "runs read the same data; fix the data and rerun")
        records[path] = record if record and "fingerprint" in record else None
        if records[path] is None:
            _warn(f"{path} has no record of the data task {task} read ({_why_no_record(run.chosen, task)}): cannot "
                  "check that both models saw the same data")
    first_record, second_record = records[general], records[tuned]
    differences = data_differences(first_record, second_record) if first_record and second_record else []
    if differences:
        raise ValueError(f"task {task}: {general} and {tuned} ran on different data ({'; '.join(differences)}); "
                         "rerun both on the same data")


def _why_no_record(run: ResultFile, task: str) -> str:
    if not run.data:
        return (f"{run.path} holds no PathBind record of the data: run without PathBind installed, or from before it "
                "recorded data")
    return f"{run.path} records other tasks' data ({', '.join(sorted(run.data))}): {task} is not a PathBind task"


def _warn(message: str) -> None:
    print(f"pathbind pairs: warning: {message}", file=sys.stderr)


def _same_items(general: Any, tuned: Any, task: str, first: dict[str, Any], second: dict[str, Any]) -> list[str]:
    """The items both runs evaluated, in id order; ValueError when either evaluated an item the other did not (a
    different --limit, or a run cut short): a paired comparison over part of the items would not say so."""
    only = {path: sorted(set(a) - set(b)) for path, a, b in ((general, first, second), (tuned, second, first))}
    if any(only.values()):
        detail = "; ".join(f"{len(ids)} only in {path} (first {ids[0]!r})" for path, ids in only.items() if ids)
        raise ValueError(f"task {task}: {general} and {tuned} evaluated different items ({len(first)} vs "
                         f"{len(second)}: {detail}); rerun both on the same items (the same data and --limit)")
    return sorted(first)


def vqa_answers(records: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """item id -> condition -> its record, for the image and text conditions."""
    answers: dict[str, dict[str, dict[str, Any]]] = {}
    for record in records:
        if record.get("condition") in ("image", "text"):
            answers.setdefault(str(record["id"]), {})[record["condition"]] = record
    return answers


def _records_by_id(run_dir: Path, task: str, field: str, kind: str) -> dict[str, dict[str, Any]]:
    return {str(record["id"]): record for record in _records(run_dir, task, field, kind)}


def _records(run_dir: Path, task: str, field: str, kind: str) -> list[dict[str, Any]]:
    """The PathBind record of each sample of the task's latest log, every one holding ``field``."""
    option = "--vqa-task" if kind == "VQA" else "--grounding-task"
    try:
        samples = task_samples(run_dir, task)
    except TaskNotRun as exc:
        raise ValueError(f"{exc}; choose the task with {option}") from exc
    records = [sample_record(sample) for sample in samples]
    found = [r for r in records if r is not None and field in r]
    if not found or len(found) < len(records):
        raise ValueError(f"{run_dir}: the samples of task {task!r} hold no PathBind {kind} record (with {field!r}; "
                         f"not a PathBind {kind} task?); choose a {kind} task with {option}")
    return found


def _rankings(runs: list[Path], task: str) -> dict[str, float]:
    """τ of each threshold's and pixel-AP's model ranking against IoU at the default threshold."""
    from pathbind_metrics.pairs import ranking_agreement
    from pathbind_tasks.common.grounding_records import Q_DEFAULT, Q_SWEEP

    scores: dict[str, list[float]] = {f"iou@q={q}": [] for q in Q_SWEEP}
    scores["pixel_ap"] = []
    for run_dir in runs:
        results = task_results(run_dir, task)
        for q in Q_SWEEP:
            scores[f"iou@q={q}"].append(results.get("q_sweep,none", {}).get(str(q), {}).get("iou", math.nan))
        scores["pixel_ap"].append(results.get("pixel_ap,none", math.nan))
    return ranking_agreement(scores, f"iou@q={Q_DEFAULT}") if len(runs) >= 2 else {}


def _display(row: dict[str, Any]) -> dict[str, Any]:
    interval = row["ci95"]
    bounds = (f"[{interval['low']:.3g}, {interval['high']:.3g}]" if math.isfinite(interval["low"])
              else "[no interval]")
    change = f"{row['delta']:+.3g} {bounds}" if math.isfinite(row["delta"]) else "n/a"
    return {"general": row["general"], "tuned": row["tuned"], "task": row["task"], "measure": row["measure"],
            "change [95% CI]": change, "resampled": f"{interval['clusters']} {interval['cluster']} clusters"
                                                    + (" (!)" if interval["warning"] else ""),
            "design effect": _shown(interval["design_effect"], ".2f"), "p": _shown(row["p"], ".2g"),
            "p (Holm)": _shown(row["p_holm"], ".2g"), "n": row["n"]}


def _shown(value: float, spec: str) -> str:
    return format(value, spec) if math.isfinite(value) else "n/a"
