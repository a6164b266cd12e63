"""``pathbind summary``: the headline metrics of lmms-eval result files, one row per model and task."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def find_results(paths: list[Path]) -> list[Path]:
    """lmms-eval result files (``*_results.json``) given directly or found below folders."""
    found: list[Path] = []
    for path in paths:
        found += [path] if path.is_file() else sorted(path.rglob("*results.json"))
    return found


def _load(result_file: Path) -> tuple[str, dict[str, dict[str, Any]]]:
    data = json.loads(result_file.read_text(encoding="utf-8"))
    config = data.get("config", {})
    model = str(config.get("model", "?"))
    if config.get("model_args"):  # e.g. two pathbind_baseline strategies, or two checkpoints of pathbind_hf
        model += f" ({config['model_args']})"
    return model, data.get("results", {})


def summary_rows(result_file: Path) -> list[dict[str, Any]]:
    """One row per task: model, task, then each scalar metric (filter suffix and stderr entries dropped)."""
    model, results = _load(result_file)
    rows = []
    for task, metrics in sorted(results.items()):
        values = {key.split(",")[0]: value for key, value in metrics.items()
                  if "," in key and "_stderr" not in key and isinstance(value, int | float)}
        if values:
            rows.append({"model": model, "task": task, **values})
    return rows


def dimension_rows(result_file: Path) -> list[dict[str, Any]]:
    """One row per task and diagnostic dimension, from each task's ``by_dimension`` metric."""
    model, results = _load(result_file)
    return [{"model": model, "task": task, "dimension": dimension, **figures}
            for task, metrics in sorted(results.items())
            for dimension, figures in sorted((metrics.get("by_dimension,none") or {}).items())]
