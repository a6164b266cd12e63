"""``pathbind filter --specificity``: keep the PathVG expressions every judge calls Specific (paper Appendix B.2)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pathbind.lmms_output import ResultsError, SampleLogError, load_results, read_sample_log, sample_record
from pathbind.summary import read_accounting
from pathbind_analysis.curation.errors import CurationInputError
from pathbind_analysis.curation.logs import read_logs
from pathbind_metrics.parsing import SPECIFICITY_LABELS

RECORD_KEYS = frozenset({"id", "split", "judgement", "reason"})  # what pathbind_pathvg_specificity logs per item
TASK = "pathbind_pathvg_specificity"
TOTAL = "Total"


@dataclass
class Judge:
    """One judge's verdicts, merged over its log files: per item a label, or None with the reason it is invalid."""

    name: str
    labels: dict[str, str | None] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)  # item id -> why its judgement is invalid
    items: dict[str, dict[str, str]] = field(default_factory=dict)  # item id -> its split and expression
    rows: dict[str, int] = field(default_factory=dict)  # split -> items its data gave (the run's accounting)
    files: list[Path] = field(default_factory=list)
    skipped_files: list[str] = field(default_factory=list)  # "file: why", for logs found in a folder


def read_judge(name: str, paths: list[Path]) -> Judge:
    """Merge a judge's logs; an item judged twice or a damaged line is an error naming the file and line. A log
    found in a folder that holds no judgements (another task run beside it) is skipped and listed."""
    judge = Judge(name)
    seen_at: dict[str, str] = {}
    judge.skipped_files = read_logs(paths, lambda file: _read_file(file, judge, seen_at))
    if not judge.labels:
        raise CurationInputError(f"judge '{name}' has no usable log: " + "; ".join(judge.skipped_files))
    return judge


def _read_file(file: Path, judge: Judge, seen_at: dict[str, str]) -> str:
    """Add the file's judgements; return why it has none ("" when it has some)."""
    records, unjudged, splits = 0, "", set()
    try:
        for number, sample in read_sample_log(file):
            record = sample_record(sample)
            if record is None or not record.keys() >= RECORD_KEYS:
                unjudged = unjudged or f"{file}:{number}"
                continue
            records += 1
            _add(judge, record, f"{file}:{number}", seen_at)
            splits.add(str(record["split"]))
    except SampleLogError as exc:
        raise CurationInputError(str(exc)) from exc
    if not records:
        return f"holds no specificity judgements; pass sample logs of {TASK} (lmms_eval --log_samples)"
    if unjudged:
        raise CurationInputError(f"{unjudged}: no specificity judgement, unlike the file's other lines; the log is "
                                 "damaged: write it again with lmms_eval --log_samples")
    judge.files.append(file)
    items = _items_in_data(file) if len(splits) == 1 else None
    if items is not None:
        judge.rows[splits.pop()] = items
    return ""


def _add(judge: Judge, record: dict[str, Any], where: str, seen_at: dict[str, str]) -> None:
    item, label = str(record["id"]), record["judgement"]
    if item in judge.labels:
        raise CurationInputError(f"{where}: item {item!r} is judged twice by '{judge.name}' (also at {seen_at[item]}); "
                                 "if these logs come from different judges name them NAME=LOG, otherwise pass each "
                                 "log once")
    if label is not None and label not in SPECIFICITY_LABELS:
        raise CurationInputError(f"{where}: field 'judgement' is {label!r}, not Specific, Vague or null; re-run "
                                 f"{TASK}")
    judge.labels[item] = label
    if label is None:
        judge.reasons[item] = str(record["reason"])
    judge.items[item] = {"split": str(record["split"]), "expression": str(record.get("expression") or "")}
    seen_at[item] = where


def _items_in_data(log: Path) -> int | None:
    """How many items the task's data gave (kept by its ``process_docs``, whatever the ``--limit``): from the
    ``accounting`` of the results file lmms-eval wrote beside the log in the same run; None without one."""
    from pathbind_tasks.common.accounting import NOT_EVALUATED  # here: it loads datasets, which `--help` must not

    stamp, _, task = log.name.removesuffix(".gz").removesuffix(".jsonl").partition("_samples_")
    results = log.parent / f"{stamp}_results.json"
    try:
        ledger = read_accounting(load_results(results).results.get(task, {}).get("accounting,none"))
    except ResultsError:
        return None
    return None if ledger is None else ledger[1] + ledger[2].get(NOT_EVALUATED, 0)


def consensus(judges: list[Judge]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Decide every item any judge's log holds: one row per item, and the report with the flow per split.

    ``kept``: every judge says Specific. ``vague``: every judge answered and one or more say Vague. ``excluded``:
    a judge has no answer for it, or an invalid one; never kept, and each such judge's reason is listed.
    """
    items = _items(judges)
    rows = [_decide(item, meta, judges) for item, meta in items.items()]
    splits = sorted({row["split"] for row in rows})
    flow = {split: _flow([r for r in rows if r["split"] == split], judges) for split in splits}
    flow[TOTAL] = _flow(rows, judges)
    data_rows = {split: max(j.rows[split] for j in judges if split in j.rows)
                 for split in splits if any(split in j.rows for j in judges)}
    report = {
        "mode": "specificity",
        "judges": [{**_judge_summary(judge), "missing": len(items) - len(judge.labels)} for judge in judges],
        "rule": "kept when every judge answers Specific; excluded when a judge has no valid answer",
        "flow": flow,
        "not_in_any_log": {split: n - flow[split]["candidates"] for split, n in data_rows.items()
                           if n > flow[split]["candidates"]},
        # no results.json of the run beside any judge's log: what the data gave, and so what no judge saw, is unknown
        "data_items_unknown": [split for split in splits if split not in data_rows],
        "excluded": [{"id": r["id"], "split": r["split"], "reason": r["reason"]}
                     for r in rows if r["decision"] == "excluded"],
    }
    return rows, report


def _items(judges: list[Judge]) -> dict[str, dict[str, str]]:
    """Every judged item with its split and expression, in log order; judges disagreeing on them judged other data."""
    items: dict[str, dict[str, str]] = {}
    owner: dict[str, str] = {}
    for judge in judges:
        for item, meta in judge.items.items():
            if item not in items:
                items[item], owner[item] = meta, judge.name
            elif items[item] != meta:
                raise CurationInputError(f"item {item!r} is {items[item]} in the logs of '{owner[item]}' but {meta} in "
                                         f"those of '{judge.name}'; judge the same PathVG files")
    return items


def _decide(item: str, meta: dict[str, str], judges: list[Judge]) -> dict[str, Any]:
    verdicts = {judge.name: judge.labels.get(item, "missing") or "invalid" for judge in judges}
    problems = [f"{judge.name}: " + ("no answer in its logs" if item not in judge.labels
                                     else f"invalid ({judge.reasons[item]})")
                for judge in judges if verdicts[judge.name] in ("missing", "invalid")]
    vague = [name for name, verdict in verdicts.items() if verdict == "Vague"]
    if problems:
        decision, reason = "excluded", "; ".join(problems)
    elif vague:
        decision, reason = "vague", "Vague by " + ", ".join(vague)
    else:
        decision, reason = "kept", f"Specific by all {len(judges)} judges"
    return {"id": item, "split": meta["split"], "expression": meta["expression"],
            **{f"{name}_judgement": verdict for name, verdict in verdicts.items()},
            "decision": decision, "reason": reason}


def _flow(rows: list[dict[str, Any]], judges: list[Judge]) -> dict[str, Any]:
    decisions = Counter(row["decision"] for row in rows)
    return {"candidates": len(rows),
            "specific_by": {j.name: sum(row[f"{j.name}_judgement"] == "Specific" for row in rows) for j in judges},
            "kept": decisions["kept"], "vague": decisions["vague"], "excluded": decisions["excluded"],
            "retention_percent": round(100 * decisions["kept"] / len(rows), 1) if rows else None}


def _judge_summary(judge: Judge) -> dict[str, Any]:
    labels = Counter(judge.labels.values())
    return {"name": judge.name, "files": [str(f) for f in judge.files], "answers": len(judge.labels),
            **{label: labels[label] for label in SPECIFICITY_LABELS},
            "invalid": dict(sorted(Counter(judge.reasons.values()).items())), "skipped_files": judge.skipped_files}
