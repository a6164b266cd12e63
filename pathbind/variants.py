"""Task variants (:class:`pathbind.TaskVariants`): a variant's config derived from its source task's, in the one
place both readers of task configs use (the lmms-eval seam and PathBind's catalog)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pathbind.hookspecs import TaskVariants

# The metadata that sends a task to PATHBIND_DATA's copy of a release: a variant reads its own data folder.
DATA_METADATA = ("pathbind_data", "requires_pathbind_data")


def variant_name(variants: TaskVariants, task: str) -> str | None:
    """The variant of source task ``task``; None when its name lacks the prefix the declaration renames."""
    old, new = variants.rename
    return new + task.removeprefix(old) if task.startswith(old) else None


def variant_config(variants: TaskVariants, config: Mapping[str, Any], yaml_path: str | Path) -> dict[str, Any]:
    """The variant's config from its source task's ``config`` as read from ``yaml_path`` (by lmms-eval's loader or
    :func:`pathbind.catalog.read_task_yaml`): renamed, its data files moved to ``data_dir``, its data metadata
    dropped. Raises ValueError naming the task and the fix when the declaration cannot apply."""
    task = str(config.get("task"))
    name = variant_name(variants, task)
    if name is None:
        raise ValueError(f"task {task!r} ({yaml_path}) has no variant: its name does not start with "
                         f"{variants.rename[0]!r}, the prefix TaskVariants renames; rename the task or the prefix")
    derived = {**config, "task": name}
    if isinstance(config.get("metadata"), Mapping):
        derived["metadata"] = {k: v for k, v in config["metadata"].items() if k not in DATA_METADATA}
    kwargs = config.get("dataset_kwargs")
    if isinstance(kwargs, Mapping) and "data_files" in kwargs:
        files = _moved(kwargs["data_files"], Path(yaml_path).parent, variants.data_dir, name)
        derived["dataset_kwargs"] = {**kwargs, "data_files": files}
    return derived


def _moved(files: Any, source_dir: Path, data_dir: Path, name: str) -> Any:
    """``data_files`` (a path, or a list or split mapping of them) read from ``data_dir`` instead of ``source_dir``,
    whether lmms-eval already made a path absolute or not."""
    if isinstance(files, Mapping):
        return {split: _moved(f, source_dir, data_dir, name) for split, f in files.items()}
    if isinstance(files, list):
        return [_moved(f, source_dir, data_dir, name) for f in files]
    relative = Path(os.path.relpath(source_dir / files, source_dir))
    if relative.parts[:1] == ("..",):
        raise ValueError(f"task {name}: data file {files} is outside its source's folder {source_dir}, so it has "
                         f"no place in the variants' data folder {data_dir}")
    return str(data_dir / relative)
