"""lmms-eval's ``--baseline LOG`` for PathBind's VQA and grounding tasks: the paired change of this run over the run
whose sample log ``LOG`` is, computed as ``pathbind pairs`` computes it (the same functions, options and Holm
adjustment), in results.json and on the console.

lmms-eval reads the one ``LOG`` for every task of the run and pairs the per-sample ``score`` of both runs by doc_id
(``paired_baseline_score``, ``paired_ci_lower``/``upper``, ``paired_pvalue``: a t-test over rows). PathBind's
lines carry that score for the answers with the image, so its fields give the same ΔAcc; a task that PathBind
cannot pair with ``LOG`` (another task, other items, other data, a log without scores) loses its scores, so that
lmms-eval pairs nothing wrong either, and the warning says why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loguru import logger

from pathbind.lmms_output import ResultsError, load_results, read_sample_log, sample_record
from pathbind.provenance import data_differences
from pathbind.text_table import format_table
from pathbind_analysis.pairs import (
    DEFAULT_OPTIONS,
    _display,
    adjust,
    grounding_changes,
    vqa_answers,
    vqa_changes,
)

# results["results"][task]: the changes' scalars (shown in the console table) and the whole rows with the log.
DELTAS = {"ΔAcc": "delta_acc", "ΔMG": "delta_mg", "ΔIoU": "delta_iou", "ΔRecall": "delta_recall"}
BASELINE = "baseline"
THIS_RUN = "this run"


def compare_with_baseline(results: dict[str, Any], baseline: str) -> None:
    """Add each PathBind task's paired change against the sample log ``baseline`` to ``results``, or warn why not."""
    samples = results.get("samples")
    if samples is None:
        logger.warning("pathbind: --baseline pairs this run's sample log with the baseline's: add --log_samples")
        return
    tasks = [task for task, lines in samples.items() if lines and sample_record(lines[0]) is not None]
    for task in tasks:
        try:
            rows = _task_changes(results, task, Path(baseline))
        except ValueError as exc:
            for line in samples[task]:
                line.pop("score", None)
            logger.warning(f"pathbind: --baseline: {exc}; no paired change, and lmms-eval's paired_* fields are left "
                           "out")
            continue
        family = adjust(rows, f"{task} against --baseline")
        metrics = results["results"][task]
        metrics.update({f"{DELTAS[row['measure']]},none": row["delta"] for row in rows})
        metrics[f"{BASELINE},none"] = {"log": baseline, "pairs": [{**row, "metric": DELTAS[row["measure"]]}
                                                                 for row in rows], "holm_family": family}
        table = format_table([_display(row) for row in rows])
        logger.info(f"pathbind: {task}: paired change over --baseline {baseline}:\n{table}\np (Holm): adjusted "
                    f"across {family}.")


def _task_changes(results: dict[str, Any], task: str, log: Path) -> list[dict[str, Any]]:
    """The rows ``pathbind pairs`` gives for ``task`` with the baseline as the general model and this run as the
    tuned one (not yet Holm-adjusted); ValueError (why the two cannot be paired) otherwise."""
    if not log.is_file():
        raise ValueError(f"{log} is not a sample log on this machine (PathBind pairs its tasks with a local "
                         "*_samples_<task>.jsonl written by lmms_eval --log_samples)")
    logged = log.name.removesuffix(".gz").removesuffix(".jsonl").partition("_samples_")[2]
    if logged != task:
        raise ValueError(f"task {task} is not paired: {log} is a sample log of task {logged or 'unknown'!r} "
                         "(lmms-eval reads the one --baseline log for every task: evaluate one task per baseline)")
    lines = [line for _, line in read_sample_log(log)]
    before, now = _records(lines, str(log)), _records(results["samples"][task], THIS_RUN)
    _same_data(results, task, log)
    if all({"condition", "correct"} <= record.keys() for record in (*before, *now)):
        rows = vqa_changes(task, (log, THIS_RUN), vqa_answers(before), vqa_answers(now), DEFAULT_OPTIONS)
    elif all("iou" in record for record in (*before, *now)):
        first, second = ({str(record["id"]): record for record in records} for records in (before, now))
        rows = grounding_changes(task, (log, THIS_RUN), first, second, DEFAULT_OPTIONS)
    else:
        raise ValueError(f"task {task}: PathBind pairs VQA tasks (ΔAcc, ΔMG) and grounding tasks (ΔIoU, ΔRecall) only")
    scored = [line for line in results["samples"][task] if "score" in line]
    if scored and not any("score" in line for line in lines):
        for line in scored:
            del line["score"]
        logger.warning(f"pathbind: --baseline: {log} was written before PathBind logged lmms-eval's per-sample score: "
                       f"lmms-eval's paired_* fields are left out for {task}; PathBind's paired change is not")
    return [{"general": "baseline", "tuned": THIS_RUN, **row} for row in rows]


def _records(lines: list[Any], where: str) -> list[dict[str, Any]]:
    records = [sample_record(line) for line in lines]
    found = [record for record in records if record is not None]
    if not lines or len(found) < len(records):
        raise ValueError(f"{where} holds no PathBind record on some line; pass the sample log of a PathBind run")
    return found


def _same_data(results: dict[str, Any], task: str, log: Path) -> None:
    """ValueError when the baseline's results.json (beside its log) records other data for ``task`` than this run;
    a warning when either has no record (then the comparison goes on, as ``pathbind pairs`` does)."""
    now = ((results.get("pathbind") or {}).get("data") or {}).get(task)
    stamp = log.name.partition("_samples_")[0]
    try:
        before = load_results(log.with_name(f"{stamp}_results.json")).data.get(task)
    except ResultsError:  # no results.json beside the log
        before = None
    if not (now and before and "fingerprint" in now and "fingerprint" in before):
        logger.warning(f"pathbind: --baseline: no record of the data task {task} read in "
                       f"{'the baseline run' if now else 'this run'}: cannot check that both runs saw the same data")
        return
    differences = data_differences(before, now)
    if differences:
        raise ValueError(f"task {task}: {log} ran on different data ({'; '.join(differences)})")
