"""Where a task's documents come from, and the ``PATHBIND_DATA`` / ``PATHBIND_HUB_<TASK>`` overrides."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

DATA_ENV = "PATHBIND_DATA"
HUB_ENV_PREFIX = "PATHBIND_HUB_"
BUILDERS = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".csv": "csv"}


class DataLocationError(ValueError):
    """A task's data cannot be located; the message says what to set."""


def override_dir(task: str) -> Path | None:
    """``$PATHBIND_DATA/<task>/`` when the variable is set and that folder exists."""
    root = os.environ.get(DATA_ENV)
    folder = Path(root).expanduser() / task if root else None
    return folder if folder is not None and folder.is_dir() else None


def hub_env(task: str) -> str:
    """The variable that replaces a task's hub dataset id, e.g. ``PATHBIND_HUB_PATH_VQA`` (for mirrors)."""
    return HUB_ENV_PREFIX + task.upper()


def apply_data_root(config: dict[str, Any]) -> dict[str, Any]:
    """Apply the overrides to a task config.

    ``$PATHBIND_DATA/<task>/`` replaces the location with its ``<split>.<ext>`` files (parquet, json,
    jsonl or csv, one format) or a ``datasets.save_to_disk`` folder; ``PATHBIND_HUB_<TASK>`` replaces a
    hub id. A task whose metadata says ``requires_pathbind_data`` (a gated release with no public id)
    fails here, before any model call, when neither is given.
    """
    task = str(config.get("task", ""))
    folder = override_dir(task)
    if folder is None:
        if os.environ.get(hub_env(task)):
            return {**config, "dataset_path": os.environ[hub_env(task)]}
        if (config.get("metadata") or {}).get("requires_pathbind_data"):
            raise DataLocationError(f"task {task!r} reads a gated release with no public location: download it and "
                                    f"set {DATA_ENV}=<root> with {'<root>'}/{task}/test.parquet (see its README)")
        return config
    if (folder / "dataset_dict.json").exists() or (folder / "dataset_info.json").exists():
        return {**config, "dataset_path": str(folder), "dataset_kwargs": {"load_from_disk": True}}
    files = sorted(p for p in folder.iterdir() if p.suffix in BUILDERS)
    builders = {BUILDERS[p.suffix] for p in files}
    if len(builders) != 1:
        found = ", ".join(p.name for p in folder.iterdir()) or "nothing"
        raise DataLocationError(f"{DATA_ENV} folder {folder} must hold <split>.parquet/.jsonl/.json/.csv files of "
                                f"one format or a save_to_disk dataset; found {found}")
    return {**config, "dataset_path": builders.pop(),
            "dataset_kwargs": {"data_files": {p.stem: str(p) for p in files}}}
