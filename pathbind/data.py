"""Where a task's documents come from, and the ``PATHBIND_DATA`` / ``PATHBIND_HUB_<NAME>`` overrides."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

DATA_ENV = "PATHBIND_DATA"
HUB_ENV_PREFIX = "PATHBIND_HUB_"
BUILDERS = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".csv": "csv"}
# lmms-eval's download switches (hub snapshots, zip extraction): meaningless for a local copy.
DOWNLOAD_KWARGS = ("video", "cache_dir", "token", "revision", "force_download", "force_unzip", "create_link",
                   "local_files_only", "load_from_disk", "data_files")


class DataLocationError(ValueError):
    """A task's data cannot be located; the message says what to set."""


def data_name(config: dict[str, Any]) -> str:
    """The data a task reads: ``metadata.pathbind_data`` (shared by a task's variants), else the task name."""
    return str((config.get("metadata") or {}).get("pathbind_data") or config.get("task", ""))


def override_dir(name: str) -> Path | None:
    """``$PATHBIND_DATA/<name>/`` when the variable is set and that folder exists."""
    root = os.environ.get(DATA_ENV)
    folder = Path(root).expanduser() / name if root else None
    return folder if folder is not None and folder.is_dir() else None


def hub_env(name: str) -> str:
    """The variable that replaces a hub dataset id, e.g. ``PATHBIND_HUB_PATH_VQA`` (for mirrors)."""
    return HUB_ENV_PREFIX + name.upper()


def apply_data_root(config: dict[str, Any]) -> dict[str, Any]:
    """Apply the overrides to a task config.

    ``$PATHBIND_DATA/<name>/`` replaces the location: with the files the YAML's ``data_files`` name,
    if present there (keeping the YAML's loader options), else its ``<split>.<ext>`` files (parquet,
    json, jsonl or csv, one format) or a ``datasets.save_to_disk`` folder. ``PATHBIND_HUB_<NAME>``
    replaces a hub id. A task whose metadata says ``requires_pathbind_data`` (a gated release with no
    public location) fails here, before any model call, when no folder is given.
    """
    name = data_name(config)
    folder = override_dir(name)
    if folder is not None:
        return {**config, **_local_location(config, folder)}
    if os.environ.get(hub_env(name)):
        return {**config, "dataset_path": os.environ[hub_env(name)]}
    if (config.get("metadata") or {}).get("requires_pathbind_data"):
        raise DataLocationError(f"gated release with no public location: set {DATA_ENV}=<root> with the data "
                                f"in <root>/{name}/ (task {config.get('task')!r}; see its README)")
    return config


def _local_location(config: dict[str, Any], folder: Path) -> dict[str, Any]:
    kwargs = dict(config.get("dataset_kwargs") or {})
    declared = kwargs.get("data_files")
    if isinstance(declared, dict) and declared and all(
            isinstance(f, str) and not os.path.isabs(f) and (folder / f).exists() for f in declared.values()):
        builders = {BUILDERS.get(Path(f).suffix) for f in declared.values()}
        if len(builders) == 1 and None not in builders:
            options = {k: v for k, v in kwargs.items() if k not in DOWNLOAD_KWARGS}
            return {"dataset_path": builders.pop(),
                    "dataset_kwargs": {**options, "data_files": {s: str(folder / f) for s, f in declared.items()}}}
    if (folder / "dataset_dict.json").exists() or (folder / "dataset_info.json").exists():
        return {"dataset_path": str(folder), "dataset_kwargs": {"load_from_disk": True}}
    files = sorted(p for p in folder.iterdir() if p.suffix in BUILDERS)
    builders = {BUILDERS[p.suffix] for p in files}
    if len(builders) != 1:
        found = ", ".join(p.name for p in folder.iterdir()) or "nothing"
        raise DataLocationError(f"{DATA_ENV} folder {folder} must hold the files the task's data_files name, "
                                f"<split>.parquet/.jsonl/.json/.csv files of one format, or a save_to_disk "
                                f"dataset; found {found}")
    return {"dataset_path": builders.pop(), "dataset_kwargs": {"data_files": {p.stem: str(p) for p in files}}}
