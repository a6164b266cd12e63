"""Where a task's documents come from, and the ``PATHBIND_DATA`` / ``PATHBIND_HUB_<NAME>`` /
``PATHBIND_HUB_REVISION_<NAME>`` overrides."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pathbind.text_files import TEXT_SUFFIXES, text_file_problem

DATA_ENV = "PATHBIND_DATA"
HUB_ENV_PREFIX = "PATHBIND_HUB_"
HUB_REVISION_ENV_PREFIX = "PATHBIND_HUB_REVISION_"
BUILDERS = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".csv": "csv"}
# datasets' packaged builders a task names as dataset_path to read local data_files.
LOCAL_BUILDERS = frozenset({"csv", "json", "parquet", "text", "pandas", "arrow"})
# lmms-eval's download switches (hub snapshots, zip extraction): meaningless for a local copy.
DOWNLOAD_KWARGS = ("video", "cache_dir", "token", "revision", "force_download", "force_unzip", "create_link",
                   "local_files_only", "load_from_disk", "data_files")


class DataLocationError(ValueError):
    """A task's data cannot be located; the message says what to set."""


class DataOverrideError(DataLocationError):
    """``PATHBIND_DATA`` is set but does not give a usable folder; the message names the path tried and what
    is there (a typo must not fall back silently to other data)."""


def data_name(config: dict[str, Any]) -> str:
    """The data a task reads: ``metadata.pathbind_data`` (shared by a task's variants), else the task name."""
    return str((config.get("metadata") or {}).get("pathbind_data") or config.get("task", ""))


def override_dir(name: str) -> Path | None:
    """``$PATHBIND_DATA/<name>/`` when the variable is set and that folder exists, else None.

    Raises DataOverrideError when the variable names no folder, or ``<name>`` there is a file.
    """
    root = data_root()
    if root is None:
        return None
    folder = root / name
    if folder.exists() and not folder.is_dir():
        raise DataOverrideError(f"{DATA_ENV}: tried {folder} for data {name!r}, found a file, not a folder")
    return folder if folder.is_dir() else None


def data_root() -> Path | None:
    """The ``PATHBIND_DATA`` folder, None when unset; DataOverrideError when it is a file or does not exist."""
    value = os.environ.get(DATA_ENV)
    if not value:
        return None
    root = Path(value).expanduser().absolute()  # data files and image paths never follow a later working folder
    if not root.is_dir():
        found = "a file" if root.exists() else "nothing"
        raise DataOverrideError(f"{DATA_ENV}={value}: expected a folder with one folder per data set "
                                f"(<root>/<data name>/), found {found} there")
    return root


def _listing(folder: Path, limit: int = 12) -> str:
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir())
    shown = ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")
    return shown or "nothing"


def hub_env(name: str) -> str:
    """The variable that replaces a hub dataset id, e.g. ``PATHBIND_HUB_PATH_VQA`` (for mirrors)."""
    return HUB_ENV_PREFIX + name.upper()


def hub_revision_env(name: str) -> str:
    """The variable that pins a hub dataset's revision, e.g. ``PATHBIND_HUB_REVISION_PATH_VQA`` (a commit or tag)."""
    return HUB_REVISION_ENV_PREFIX + name.upper()


def is_hub(dataset_path: Any, dataset_kwargs: dict[str, Any] | None = None) -> bool:
    """Whether lmms-eval loads this location from the Hugging Face hub: not a packaged builder over local files,
    not a ``save_to_disk`` folder, not a local path."""
    if not isinstance(dataset_path, str) or dataset_path in LOCAL_BUILDERS:
        return False
    return not (dataset_kwargs or {}).get("load_from_disk") and not os.path.exists(os.path.expanduser(dataset_path))


def apply_data_root(config: dict[str, Any]) -> dict[str, Any]:
    """Apply the overrides to a task config.

    ``$PATHBIND_DATA/<name>/`` replaces the location: with the files the YAML's ``data_files`` name,
    if present there (keeping the YAML's loader options), else its ``<split>.<ext>`` files (parquet,
    json, jsonl or csv, one format) or a ``datasets.save_to_disk`` folder. ``PATHBIND_HUB_<NAME>``
    replaces a hub id and ``PATHBIND_HUB_REVISION_<NAME>`` the revision read from the hub. A task whose
    metadata says ``requires_pathbind_data`` (data with no hub location lmms-eval can load: a gated release, an
    archive ``datasets`` cannot read) fails here, before any model call, when no folder is given; the value, when text,
    says where the data is published and how to get it.
    """
    name = data_name(config)
    folder = override_dir(name)
    if folder is not None:
        return {**config, **_local_location(config, folder)}
    hub = _hub_location(config, name)
    if hub is not None:
        return hub
    access = (config.get("metadata") or {}).get("requires_pathbind_data")
    if access:
        where = access if isinstance(access, str) else "its README"
        root = data_root()
        if root is not None:  # not an override error: a root may hold only the sets a user runs
            raise DataLocationError(f"{DATA_ENV}: tried {root / name}/, found no such folder ({name} is read from a "
                                    f"local copy only; {root} holds {_listing(root)}; where {name} is published "
                                    f"and how to get it: {where})")
        raise DataLocationError(f"{name} is read from a local copy only: set {DATA_ENV}=<root> with the data in "
                                f"<root>/{name}/ (where it is published and how to get it: {where})")
    return config


def saved_dataset(folder: Path) -> bool:
    """Whether ``folder`` is a ``datasets.save_to_disk`` copy, which any data folder may be instead of its files."""
    return (folder / "dataset_dict.json").exists() or (folder / "dataset_info.json").exists()


def _hub_location(config: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The config with the hub id and revision the variables give; None when neither is set."""
    hub_id, revision = os.environ.get(hub_env(name)), os.environ.get(hub_revision_env(name))
    if not hub_id and not revision:
        return None
    located = {**config, "dataset_path": hub_id} if hub_id else dict(config)
    if revision:
        kwargs = located.get("dataset_kwargs") or {}
        if not is_hub(located.get("dataset_path"), kwargs):  # a pin that nothing reads must not pass unnoticed
            raise DataLocationError(f"{hub_revision_env(name)}={revision}: task {config.get('task')!r} does not "
                                    f"read its data from the hub (dataset_path {located.get('dataset_path')!r})")
        located["dataset_kwargs"] = {**kwargs, "revision": revision}
    return located


def files_read(config: dict[str, Any], folder: Path) -> list[str] | None:
    """The files of ``folder`` a run of the task reads as its data (relative names; ``["a save_to_disk copy"]`` for
    one), None when it would read none (the task's own error says why)."""
    try:
        location = _located(config, folder)
    except DataLocationError:
        return None
    if location["dataset_kwargs"].get("load_from_disk") or location["dataset_path"] == "arrow":
        return ["a save_to_disk copy"]
    files = (location["dataset_kwargs"].get("data_files") or {}).values()
    return sorted({os.path.relpath(path, folder) for group in files for path in ([group] if isinstance(group, str)
                                                                                 else group)})


def _local_location(config: dict[str, Any], folder: Path) -> dict[str, Any]:
    location = _located(config, folder)
    for split, paths in (location["dataset_kwargs"].get("data_files") or {}).items():
        for path in [paths] if isinstance(paths, str) else paths:
            _require_rows(Path(path), config, split)
    return location


def _require_rows(path: Path, config: dict[str, Any], split: str) -> None:
    """An empty or unreadable data file is an error naming it, the line and the cause (datasets' loader fails
    without naming them): a parquet file's metadata, a text file's encoding and syntax (:mod:`text_files`)."""
    import pyarrow.parquet as pq  # here: the seam imports this module at lmms-eval's start

    where = f"{DATA_ENV}: {path} (split {split!r} of task {config.get('task')!r})"
    if path.suffix in TEXT_SUFFIXES and path.is_file() and (problem := text_file_problem(path)):
        raise DataOverrideError(f"{where}: {problem}")
    if path.suffix != ".parquet" or not path.is_file():
        return
    try:
        rows = pq.ParquetFile(path).metadata.num_rows
    except Exception as exc:  # pyarrow's errors do not name the file
        raise DataOverrideError(f"{where} is not a readable parquet file ({type(exc).__name__}: {exc})") from None
    if rows == 0:
        raise DataOverrideError(f"{where} has no rows; nothing to evaluate")


def _located(config: dict[str, Any], folder: Path) -> dict[str, Any]:
    kwargs = dict(config.get("dataset_kwargs") or {})
    declared = kwargs.get("data_files")
    if isinstance(declared, dict) and declared and all(
            isinstance(f, str) and not os.path.isabs(f) and (folder / f).exists() for f in declared.values()):
        builders = {BUILDERS.get(Path(f).suffix) for f in declared.values()}
        if len(builders) == 1 and None not in builders:
            options = {k: v for k, v in kwargs.items() if k not in DOWNLOAD_KWARGS}
            return {"dataset_path": builders.pop(),
                    "dataset_kwargs": {**options, "data_files": {s: str(folder / f) for s, f in declared.items()}}}
    if saved_dataset(folder):
        return _saved_location(config, folder)
    files = sorted(p for p in folder.iterdir() if p.suffix in BUILDERS)
    builders = {BUILDERS[p.suffix] for p in files}
    if len(builders) != 1:
        splits = sorted(declared) if isinstance(declared, dict) and declared else ["<split>"]
        named = [str(folder / f) for f in (declared.values() if isinstance(declared, dict) else [])
                 if isinstance(f, str) and not os.path.isabs(f) and "PATHBIND_DATA-not-set" not in f]
        tried = ", ".join([*named, *(f"{folder / s}.parquet/.jsonl/.json/.csv" for s in splits)])
        raise DataOverrideError(f"{DATA_ENV}: tried {tried} (one format) and a save_to_disk dataset in {folder}, "
                                f"found {_listing(folder)}")
    split = _split(config)
    if split not in {p.stem for p in files}:  # lmms-eval would end in a bare KeyError naming the split
        raise DataOverrideError(f"{DATA_ENV}: {folder} has no file for split {split!r}, which task "
                                f"{config.get('task')!r} evaluates (it holds {', '.join(p.name for p in files)}); "
                                f"a file named {split}{files[0].suffix} is read as that split")
    return {"dataset_path": builders.pop(), "dataset_kwargs": {"data_files": {p.stem: str(p) for p in files}}}


def _split(config: dict[str, Any]) -> str:
    return str(config.get("test_split") or "test")


def _saved_location(config: dict[str, Any], folder: Path) -> dict[str, Any]:
    """A ``save_to_disk`` folder: a DatasetDict as lmms-eval loads it; one split's Dataset (lmms-eval's loader
    wants a DatasetDict) as its arrow files, read as the task's split."""
    if (folder / "dataset_dict.json").exists():
        return {"dataset_path": str(folder), "dataset_kwargs": {"load_from_disk": True}}
    try:
        names = [entry["filename"] for entry in json.loads((folder / "state.json").read_text())["_data_files"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataOverrideError(f"{DATA_ENV}: {folder} has a dataset_info.json but no readable state.json listing "
                                f"its arrow files ({type(exc).__name__}: {exc}); save it again with "
                                "Dataset.save_to_disk") from None
    return {"dataset_path": "arrow", "dataset_kwargs": {"data_files": {_split(config): [str(folder / name)
                                                                                         for name in names]}}}
