"""What a run read: each PathBind task's data source, files, rows and one fingerprint (``results["pathbind"]["data"]``).

A task's record: ``source`` (``"local"`` or ``"hub"``); for local data the builder or folder (``dataset_path``),
the data files read (``files``: split, name, path, bytes, sha256) and, when it came from ``$PATHBIND_DATA/<name>/``,
that folder (``data_dir``), its other top-level files hashed the same way (``other_files``) and its subfolders
summarised (``folders``: file count, bytes and the sha256 of their sorted (relative path, size) listing, not hashed
file by file: image folders hold tens of thousands of files); for hub data the id, ``dataset_name``, the requested
``revision`` and the commit the ``datasets`` cache holds (``resolved_revision``); the rows per split before
``process_docs`` (``rows``); and a ``fingerprint`` over the parts two labs can compare (never the paths).
"""

from __future__ import annotations

import errno
import glob
import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from loguru import logger

from pathbind.data import data_name, is_hub, override_dir
from pathbind.faults import path_fault

CHUNK = 1 << 20  # data files can be GBs: read them 1 MiB at a time
_COMMIT = re.compile(r"[0-9a-f]{40}")
# datasets writes the output of ``map`` beside a ``save_to_disk`` folder's own files: a by-product, not data.
_DATASETS_CACHE_FILE = re.compile(r"cache-[0-9a-f]+\.arrow")
_HASHES: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> sha256, for this process
_RAW: dict[str, dict[str, tuple[int, tuple[str, ...]]]] = {}  # task -> split -> (rows, cache files) before conversion


def record_raw_split(task: str, dataset: Any) -> None:
    """Note a split's rows and ``datasets`` cache files as loaded, before ``process_docs`` converts it (lmms-eval
    keeps only the converted split)."""
    files = tuple(str(f["filename"]) for f in getattr(dataset, "cache_files", None) or ())
    _RAW.setdefault(task, {})[str(getattr(dataset, "split", None))] = (len(dataset), files)


def data_provenance(tasks: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each lmms-eval task's record (after its ``download``); a task whose record fails gets ``{"error": cause}``,
    warned at once: such a run cannot be compared with another (``pairs`` refuses it, ``report`` flags it)."""
    records = {}
    for name, task in tasks.items():
        try:
            records[name] = task_provenance(name, task)
        except Exception as exc:
            records[name] = {"error": record_error(exc)}
            logger.warning(f"pathbind: task {name}: {RECORD_FAILED} ({records[name]['error']}); this run cannot "
                           "be checked against another run's data")
    return records


RECORD_FAILED = "the record of the data it read failed"


def record_error(exc: Exception) -> str:
    """Why a data record failed: a path that cannot be read in the words of :func:`pathbind.faults.path_fault`."""
    if isinstance(exc, OSError) and exc.filename:
        return path_fault(Path(exc.filename), exc)
    return f"{type(exc).__name__}: {exc}"


def record_failure(record: Mapping[str, Any] | None) -> str:
    """Why ``record`` (one task's ``pathbind.data`` entry) failed, "" for a record or none (a run made before
    PathBind recorded data)."""
    return str(record["error"]) if isinstance(record, Mapping) and "error" in record else ""


def task_provenance(name: str, task: Any) -> dict[str, Any]:
    """The record of one loaded lmms-eval ``ConfigurableTask`` (its ``config`` and ``dataset``)."""
    config = task.config
    kwargs = dict(config.dataset_kwargs or {})
    rows, cache_files = _splits(name, task)
    if is_hub(config.dataset_path, kwargs):
        record: dict[str, Any] = {
            "source": "hub", "hub_id": config.dataset_path, "dataset_name": config.dataset_name,
            "revision": kwargs.get("revision"), "resolved_revision": hub_commit(cache_files)}
        _warn_if_not_pinned(name, record)
    else:
        record = {"source": "local", "dataset_path": config.dataset_path,
                  **local_files(_read_paths(kwargs, cache_files), _data_folder(config))}
    record["rows"] = rows
    record["fingerprint"] = fingerprint(record)
    return record


def _warn_if_not_pinned(name: str, record: Mapping[str, Any]) -> None:
    # Offline, datasets reads the latest cached commit whatever revision is asked for.
    requested, resolved = record["revision"], record["resolved_revision"]
    if isinstance(requested, str) and _COMMIT.fullmatch(requested) and isinstance(resolved, str) \
            and requested != resolved:
        logger.warning(f"pathbind: task {name} asked for hub revision {requested} but datasets read commit "
                       f"{resolved} (its cache; offline it reads the latest cached commit)")


def _splits(name: str, task: Any) -> tuple[dict[str, int], list[str]]:
    """Rows per split as loaded (the raw count where ``process_docs`` converted the split) and the cache files."""
    raw = _RAW.get(name, {})
    rows, files = {}, []
    for split, dataset in (task.dataset or {}).items():
        count, cached = raw.get(split, (len(dataset), tuple(f["filename"] for f in dataset.cache_files or ())))
        rows[split] = count
        files += cached
    return rows, files


def _data_folder(config: Any) -> Path | None:
    """``$PATHBIND_DATA/<name>/`` when the task's data name has one (the seam then read the task from it)."""
    metadata = config.metadata if isinstance(config.metadata, Mapping) else {}
    return override_dir(data_name({"task": config.task, "metadata": metadata}))


def _read_paths(kwargs: Mapping[str, Any], cache_files: list[str]) -> list[tuple[str | None, Path]]:
    """(split, path) of each file the loader read: the ``data_files`` (globs expanded), else, for a
    ``save_to_disk`` folder, the arrow files ``datasets`` maps."""
    declared = kwargs.get("data_files")
    if declared is None:
        return [(None, Path(f)) for f in cache_files] if kwargs.get("load_from_disk") else []
    by_split = declared.items() if isinstance(declared, Mapping) else [(None, declared)]
    return [(split, Path(path)) for split, group in by_split
            for pattern in ([group] if isinstance(group, str) else group)
            for path in (sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern])]


def local_files(read: list[tuple[str | None, Path]], folder: Path | None) -> dict[str, Any]:
    """``files`` (those read) and, when they lie in ``folder``, ``data_dir``, ``other_files`` and ``folders``."""
    inside = folder is not None and any(path.is_relative_to(folder) for _, path in read)
    files = [{"split": split, **file_entry(path, folder if inside else None)} for split, path in read]
    if not inside or folder is None:
        return {"files": files}
    paths_read = {path.resolve() for _, path in read}
    entries = sorted(folder.iterdir())
    return {"files": files, "data_dir": str(folder),
            "other_files": [file_entry(p, folder) for p in entries if p.is_file() and p.resolve() not in paths_read],
            "folders": [folder_summary(p, folder) for p in entries if p.is_dir()]}


def file_entry(path: Path, folder: Path | None = None) -> dict[str, Any]:
    """Name (relative to ``folder`` when given), path, bytes and sha256 of a file; no hash when it is not one."""
    name = path.relative_to(folder).as_posix() if folder is not None else path.name
    if not path.is_file():
        return {"name": name, "path": str(path), "bytes": None, "sha256": None}
    return {"name": name, "path": str(path), "bytes": path.stat().st_size, "sha256": file_sha256(path)}


def file_sha256(path: Path) -> str:
    """sha256 of the file's bytes, read in chunks; computed once per process per (path, size, mtime)."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _HASHES:
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(CHUNK), b""):
                digest.update(chunk)
        _HASHES[key] = digest.hexdigest()
    return _HASHES[key]


def folder_summary(folder: Path, root: Path) -> dict[str, Any]:
    """A subfolder as its file count, total bytes and the sha256 of its sorted (relative path, size) lines;
    OSError naming the file for one that cannot be read (a link to nothing, a link loop)."""
    listing = sorted((path.relative_to(folder).as_posix(), path.stat().st_size) for path in _files_below(folder))
    digest = hashlib.sha256("".join(f"{name}\t{size}\n" for name, size in listing).encode())
    return {"name": folder.relative_to(root).as_posix(), "files": len(listing),
            "bytes": sum(size for _, size in listing), "listing_sha256": digest.hexdigest()}


def _files_below(folder: Path) -> Iterable[Path]:
    for directory, _, names in os.walk(folder, followlinks=True):
        # A linked folder that leads back up: os.walk would follow it until the path is too long.
        if directory != str(folder) and Path(os.path.realpath(Path(directory).parent)).is_relative_to(
                os.path.realpath(directory)):
            raise OSError(errno.ELOOP, "symbolic link loop", directory)
        yield from (Path(directory, name) for name in names if not _DATASETS_CACHE_FILE.fullmatch(name))


def hub_commit(cache_files: Iterable[str]) -> str | list[str] | None:
    """The hub commit ``datasets`` loaded: the folder holding its cache files,
    ``.../<org>___<name>/<config>/<version>/<commit sha>/...``; None when no cache file names one."""
    commits = sorted({Path(f).parent.name for f in cache_files if _COMMIT.fullmatch(Path(f).parent.name)})
    return commits[0] if len(commits) == 1 else commits or None


def fingerprint(record: Mapping[str, Any]) -> str:
    """sha256 over what identifies the data, not where it lies: file hashes (by split), the other files and
    folder listings (by name), rows per split, and the hub id, config and commit (the requested revision when
    the cache names none)."""
    def stable_list(key: str, fields: tuple[str, ...]) -> list[str]:
        return sorted(json.dumps([entry.get(field) for field in fields]) for entry in record.get(key, []))

    stable = {"source": record.get("source"), "rows": record.get("rows"),
              "files": stable_list("files", ("split", "bytes", "sha256")),
              "other_files": stable_list("other_files", ("name", "bytes", "sha256")),
              "folders": stable_list("folders", ("name", "files", "bytes", "listing_sha256"))}
    if record.get("source") == "hub":
        stable["hub"] = [record.get("hub_id"), record.get("dataset_name"),
                         record.get("resolved_revision") or record.get("revision")]
    return hashlib.sha256(json.dumps(stable, sort_keys=True, default=str).encode()).hexdigest()


# --- comparing two runs' records ----------------------------------------------------------------------------------


def data_differences(first: Mapping[str, Any], second: Mapping[str, Any]) -> list[str]:
    """What differs between two records of one task (``"rows test: 24 vs 23"``, ``"test.parquet sha256: 1a2b3c4d
    vs 5e6f7a8b"``, ``"hub revision: ... vs ..."``); empty when their fingerprints match."""
    if first.get("fingerprint") == second.get("fingerprint"):
        return []
    found = [f"{label}: {a} vs {b}" for label, a, b in _pairs(first, second) if a != b]
    return found or [f"fingerprint: {_short(first.get('fingerprint'))} vs {_short(second.get('fingerprint'))}"]


def _pairs(first: Mapping[str, Any], second: Mapping[str, Any]) -> Iterable[tuple[str, Any, Any]]:
    """(label, first value, second value) of every compared part."""
    for key, label in (("source", "source"), ("hub_id", "hub id"), ("dataset_name", "hub config")):
        yield label, first.get(key), second.get(key)
    yield ("hub revision", first.get("resolved_revision") or first.get("revision"),
           second.get("resolved_revision") or second.get("revision"))
    rows = [first.get("rows") or {}, second.get("rows") or {}]
    for split in sorted(set(rows[0]) | set(rows[1])):
        yield f"rows {split}", rows[0].get(split, "none"), rows[1].get(split, "none")
    for key, fields in (("files", ("sha256",)), ("other_files", ("sha256",)),
                        ("folders", ("files", "bytes", "listing_sha256"))):
        yield from _entry_pairs(_keyed(first.get(key, [])), _keyed(second.get(key, [])), fields)


def _entry_pairs(first: dict[Any, dict], second: dict[Any, dict],
                 fields: tuple[str, ...]) -> Iterable[tuple[str, Any, Any]]:
    for key in sorted(set(first) | set(second), key=str):
        a, b = first.get(key), second.get(key)
        name = (b or a or {}).get("name", key)
        if a is None or b is None:
            yield name, "absent" if a is None else "present", "absent" if b is None else "present"
            continue
        for field in fields:
            yield f"{name} {'file count' if field == 'files' else field}", _short(a.get(field)), _short(b.get(field))


def _keyed(entries: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    """Entries by name; a split's only data file by its split, so that two copies named differently compare."""
    per_split = Counter(entry.get("split") for entry in entries if "split" in entry)
    return {("split", entry["split"]) if per_split.get(entry.get("split")) == 1 and "split" in entry
            else ("name", entry.get("name")): entry for entry in entries}


def _short(value: Any) -> Any:
    """A sha256 cut to 12 characters: enough to tell two apart in a one-line message."""
    return value[:12] if isinstance(value, str) and len(value) == 64 else value
