"""Readers of lmms-eval output folders: the latest ``*_results.json`` per task and the per-sample logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def sample_log(run_dir: Path, task: str) -> Path | None:
    """The latest ``*_samples_<task>.jsonl`` below ``run_dir`` (lmms-eval prefixes file names with the date)."""
    logs = sorted(run_dir.rglob(f"*_samples_{task}.jsonl"), key=lambda path: path.name)
    return logs[-1] if logs else None


def samples(run_dir: Path, task: str) -> list[dict[str, Any]]:
    """Every line of the latest sample log of ``task``; ValueError naming the folder and the fix when there is none."""
    log = sample_log(run_dir, task)
    if log is None:
        raise ValueError(f"{run_dir}: no sample log of task {task!r} (run lmms_eval with --log_samples "
                         f"and --tasks {task})")
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]


def task_results(run_dir: Path, task: str) -> dict[str, Any]:
    """The latest results.json entry of ``task`` (keys as lmms-eval writes them, ``"acc,none"``)."""
    for file in sorted(run_dir.rglob("*_results.json"), key=lambda path: path.name, reverse=True):
        results = json.loads(file.read_text(encoding="utf-8")).get("results", {})
        if task in results:
            return results[task]
    raise ValueError(f"{run_dir}: no results.json with task {task!r}")
