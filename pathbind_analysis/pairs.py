"""``pathbind pairs``: does pathology tuning improve visual binding, or only answering? (paired comparisons)"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from pathbind.lmms_output import task_data, task_results, task_samples
from pathbind.provenance import data_differences
from pathbind.table import format_table


def add_pairs_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "pairs", help="ΔMG, ΔIoU, ΔRecall of (general, pathology-tuned) model pairs from lmms-eval output folders",
        description="For each GENERAL:TUNED pair of lmms-eval --output_path folders (run with --log_samples), "
                    "the tuned model's change in multimodal gain, attention IoU and attention recall over the "
                    "items both answered, with paired-bootstrap 95%% CIs; then Kendall's tau between the model "
                    "rankings by IoU at q=0.2 and by IoU at the other thresholds and by pixel-AP.")
    parser.add_argument("pairs", nargs="+", metavar="GENERAL:TUNED", help="two output folders joined by ':'")
    parser.add_argument("--vqa-task", default="pathbind_vqa", help="task giving MG (default pathbind_vqa)")
    parser.add_argument("--grounding-task", default="pathbind_grounding_testa",
                        help="task giving IoU and recall (default pathbind_grounding_testa)")
    parser.add_argument("--n-resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathbind_tasks.common.grounding_aggregations import Q_DEFAULT  # scipy: loaded when the command runs

    try:
        pairs = [_split_pair(text) for text in args.pairs]
        rows = [_compare(general, tuned, args) for general, tuned in pairs]
        runs = list(dict.fromkeys(path for pair in pairs for path in pair))
        agreement = _rankings(runs, args.grounding_task)
    except ValueError as exc:
        print(f"pathbind pairs: error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"pairs": rows, "kendall_tau_vs_iou_q0.2": agreement}, indent=2))
        return 0
    print(format_table([_display(row) for row in rows]))
    if agreement:
        print(f"\nKendall's tau vs the ranking by IoU at q={Q_DEFAULT} ({len(runs)} models):")
        print(format_table([{"ranking": name, "tau": tau} for name, tau in agreement.items()]))
    return 0


def _split_pair(text: str) -> tuple[Path, Path]:
    general, sep, tuned = text.rpartition(":")
    if not sep or not general or not tuned:
        raise ValueError(f"{text!r} is not GENERAL:TUNED (two output folders joined by ':')")
    for path in (Path(general), Path(tuned)):
        if not path.is_dir():
            raise ValueError(f"{path}: no such output folder")
    return Path(general), Path(tuned)


def _compare(general: Path, tuned: Path, args: argparse.Namespace) -> dict[str, Any]:
    from pathbind_metrics.pairs import delta_mean, delta_mg
    from pathbind_tasks.common.grounding_aggregations import Q_DEFAULT

    for task in (args.vqa_task, args.grounding_task):
        _same_data(general, tuned, task)
    options = {"n_resamples": args.n_resamples, "seed": args.seed}
    row: dict[str, Any] = {"general": general.name, "tuned": tuned.name}
    vqa = [_vqa_answers(path, args.vqa_task) for path in (general, tuned)]
    items = sorted(set(vqa[0]) & set(vqa[1]))
    row["mg"] = delta_mg(*[([v[i][0] for i in items], [v[i][1] for i in items]) for v in vqa], **options)
    grounding = [_grounding_records(path, args.grounding_task) for path in (general, tuned)]
    items = sorted(set(grounding[0]) & set(grounding[1]))
    for measure in ("iou", "recall"):
        general_values, tuned_values = ([g[i][measure][str(Q_DEFAULT)] for i in items] for g in grounding)
        row[measure] = delta_mean(general_values, tuned_values, **options)
    return row


def _same_data(general: Path, tuned: Path, task: str) -> None:
    """ValueError (one line: the task and what differs) when the two runs' records of ``task`` name different
    data; a warning when a run has no record (a run before PathBind recorded its data), then the comparison goes
    on."""
    records = {path: task_data(path, task) for path in (general, tuned)}
    for path in (p for p, record in records.items() if record is None):
        print(f"pathbind pairs: warning: {path} has no record of the data task {task} read (a run before PathBind "
              "recorded it): cannot check that both models saw the same data", file=sys.stderr)
    first, second = records[general], records[tuned]
    differences = data_differences(first, second) if first and second else []
    if differences:
        raise ValueError(f"task {task}: {general} and {tuned} ran on different data ({'; '.join(differences)}); "
                         "rerun both on the same data")


def _vqa_answers(run_dir: Path, task: str) -> dict[str, tuple[bool, bool]]:
    """item id -> (correct with the image, correct without it), for items answered in both conditions."""
    by_condition: dict[str, dict[str, bool]] = {"image": {}, "text": {}}
    for record in _records(run_dir, task, "acc_image"):
        if record.get("condition") in by_condition:
            by_condition[record["condition"]][str(record["id"])] = bool(record["correct"])
    image, text = by_condition["image"], by_condition["text"]
    return {item: (image[item], text[item]) for item in image if item in text}


def _grounding_records(run_dir: Path, task: str) -> dict[str, dict[str, Any]]:
    return {str(record["id"]): record for record in _records(run_dir, task, "attn_iou")}


def _records(run_dir: Path, task: str, metric: str) -> list[dict[str, Any]]:
    try:
        return [sample[metric] for sample in task_samples(run_dir, task)]
    except ValueError as exc:
        raise ValueError(f"{exc}, or choose the task with --vqa-task / --grounding-task") from exc


def _rankings(runs: list[Path], task: str) -> dict[str, float]:
    """τ of each threshold's and pixel-AP's model ranking against IoU at the default threshold."""
    from pathbind_metrics.pairs import ranking_agreement
    from pathbind_tasks.common.grounding_aggregations import Q_DEFAULT, Q_SWEEP

    scores: dict[str, list[float]] = {f"iou@q={q}": [] for q in Q_SWEEP}
    scores["pixel_ap"] = []
    for run_dir in runs:
        results = task_results(run_dir, task)
        for q in Q_SWEEP:
            scores[f"iou@q={q}"].append(results.get("q_sweep,none", {}).get(str(q), {}).get("iou", math.nan))
        scores["pixel_ap"].append(results.get("pixel_ap,none", math.nan))
    return ranking_agreement(scores, f"iou@q={Q_DEFAULT}") if len(runs) >= 2 else {}


def _display(row: dict[str, Any]) -> dict[str, Any]:
    shown = {"general": row["general"], "tuned": row["tuned"]}
    for measure, label in (("mg", "ΔMG (points)"), ("iou", "ΔIoU"), ("recall", "ΔRecall")):
        value = row[measure]
        shown[label] = f"{value['delta']:+.3g} [{value['low']:.3g}, {value['high']:.3g}]"
        shown[f"n {measure}"] = value["n"]
    return shown
