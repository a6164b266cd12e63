"""Where a task's documents come from, and the ``PATHBIND_DATA`` override of it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

DATA_ENV = "PATHBIND_DATA"
BUILDERS = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".csv": "csv"}


def override_dir(task: str) -> Path | None:
    """``$PATHBIND_DATA/<task>/`` when the variable is set and that folder exists."""
    root = os.environ.get(DATA_ENV)
    folder = Path(root).expanduser() / task if root else None
    return folder if folder is not None and folder.is_dir() else None


def apply_data_root(config: dict[str, Any]) -> dict[str, Any]:
    """Point a task config at ``$PATHBIND_DATA/<task>/`` if present: ``<split>.<ext>`` files, one per
    split (parquet, json, jsonl or csv), or a folder written by ``datasets.save_to_disk``."""
    folder = override_dir(str(config.get("task", "")))
    if folder is None:
        return config
    if (folder / "dataset_dict.json").exists() or (folder / "dataset_info.json").exists():
        return {**config, "dataset_path": str(folder), "dataset_kwargs": {"load_from_disk": True}}
    files = sorted(p for p in folder.iterdir() if p.suffix in BUILDERS)
    builders = {BUILDERS[p.suffix] for p in files}
    if len(builders) != 1:
        found = ", ".join(p.name for p in folder.iterdir()) or "nothing"
        raise ValueError(f"{DATA_ENV} folder {folder} must hold <split>.parquet/.jsonl/.json/.csv files of one "
                         f"format or a save_to_disk dataset; found {found}")
    return {**config, "dataset_path": builders.pop(),
            "dataset_kwargs": {"data_files": {p.stem: str(p) for p in files}}}
