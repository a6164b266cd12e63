"""What the installed plugins provide: their task YAMLs and task variants, read without importing lmms-eval."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pathbind.data import LOCAL_BUILDERS, DataLocationError, DataOverrideError, apply_data_root
from pathbind.hookspecs import TaskVariants
from pathbind.plugins import PluginManager
from pathbind.variants import variant_config


@dataclass(frozen=True)
class TaskEntry:
    """One task or group defined by a plugin's YAML, or one task variant (at its source's YAML)."""

    name: str
    kind: str  # "task", "group", "include" (shared config) or "error"
    plugin: str
    family: str  # the benchmark folder below the plugin's task directory
    yaml_path: Path
    data: DataLocation | None = None
    error: str = ""  # the YAML cannot be read, or its variant cannot be derived
    data_problem: str = ""  # the data location cannot be resolved (e.g. a gated set without PATHBIND_DATA)
    data_status: str = "WARN"  # of data_problem: FAIL when PATHBIND_DATA is set but unusable for this task
    variants: TaskVariants | None = None  # the declaration deriving this task from the task at yaml_path


@dataclass(frozen=True)
class DataLocation:
    """Where a task reads its documents: local files or a Hugging Face hub dataset."""

    dataset_path: str
    local_files: tuple[Path, ...] = field(default_factory=tuple)
    hub_id: str | None = None

    def describe(self) -> str:
        if self.hub_id:
            return f"hub:{self.hub_id}"
        return ", ".join(str(p) for p in self.local_files) or self.dataset_path


class _SimpleLoader(yaml.SafeLoader):
    """Reads lmms-eval YAML without resolving ``!function`` (kept as its dotted path)."""


def _function_path(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))


_SimpleLoader.add_constructor("!function", _function_path)


def read_task_yaml(path: Path) -> dict[str, Any]:
    """Load one task YAML, merging ``include:`` files as lmms-eval does: the file's own keys win,
    then the includes in the order listed."""
    config = yaml.load(path.read_text(encoding="utf-8"), Loader=_SimpleLoader)
    if not isinstance(config, dict):
        raise ValueError(f"{path}: expected a mapping at top level, got {type(config).__name__}")
    includes = config.pop("include", [])
    merged: dict[str, Any] = {}
    for include in reversed([includes] if isinstance(includes, str) else includes):
        merged.update(read_task_yaml(path.parent / include))
    return {**merged, **config}


def data_location(config: dict[str, Any], yaml_dir: Path) -> DataLocation | None:
    """Resolve a task config's data source the way lmms-eval's loader does."""
    dataset_path = config.get("dataset_path")
    if not isinstance(dataset_path, str):
        return None
    kwargs = config.get("dataset_kwargs") or {}
    if dataset_path in LOCAL_BUILDERS:
        files = kwargs.get("data_files", [])
        flat = files.values() if isinstance(files, dict) else [files] if isinstance(files, str) else files
        paths = [Path(f) if os.path.isabs(f) else yaml_dir / f for group in flat
                 for f in ([group] if isinstance(group, str) else group)]
        return DataLocation(dataset_path, tuple(paths))
    if kwargs.get("load_from_disk") or os.path.isabs(dataset_path):
        return DataLocation(dataset_path, (Path(dataset_path),))
    return DataLocation(dataset_path, hub_id=dataset_path)


def task_config(entry: TaskEntry) -> dict[str, Any]:
    """The config of a task as lmms-eval runs it: its YAML's, or for a variant the one derived from its source's."""
    config = read_task_yaml(entry.yaml_path)
    return config if entry.variants is None else variant_config(entry.variants, config, entry.yaml_path)


def plugin_tasks(pm: PluginManager) -> list[TaskEntry]:
    """Every task and group in every plugin's task directories, and every task variant, sorted by name."""
    entries = [_entry(path, c.plugin, _family(path, c.value)) for c in pm.task_dirs()
               for path in sorted(c.value.rglob("*.yaml"))]
    variants = [_variant(path, c.plugin, _family(path, c.value.source), c.value) for c in pm.task_variants()
                for path in sorted(c.value.source.rglob("*.yaml"))]
    return sorted([*entries, *filter(None, variants)], key=lambda e: (e.name, str(e.yaml_path)))


def _family(path: Path, root: Path) -> str:
    return path.relative_to(root).parts[0] if path.parent != root else root.name


def _entry(path: Path, plugin: str, family: str) -> TaskEntry:
    try:
        config = read_task_yaml(path)
    except Exception as exc:  # a broken YAML is listed, not fatal
        return TaskEntry(path.stem, "error", plugin, family, path, error=f"{type(exc).__name__}: {exc}")
    if "group" in config and "task" in config and isinstance(config["task"], list):
        return TaskEntry(str(config["group"]), "group", plugin, family, path)
    if "task" in config:
        return _task_entry(config, plugin, family, path)
    return TaskEntry(path.stem, "include", plugin, family, path)


def _variant(path: Path, plugin: str, family: str, variants: TaskVariants) -> TaskEntry | None:
    """The variant of the task a source YAML defines (None for a group or a shared config)."""
    try:
        source = read_task_yaml(path)
        if not isinstance(source.get("task"), str):
            return None
        config = variant_config(variants, source, path)
    except Exception as exc:  # a broken source YAML, a declaration that cannot apply: listed, not fatal
        return TaskEntry(path.stem, "error", plugin, family, path, variants=variants,
                         error=f"pathbind_task_variants: {type(exc).__name__}: {exc}")
    return _task_entry(config, plugin, family, path, variants)


def _task_entry(config: dict[str, Any], plugin: str, family: str, path: Path,
                variants: TaskVariants | None = None) -> TaskEntry:
    name = str(config["task"])
    try:
        location = data_location(apply_data_root(config), path.parent)
    except DataLocationError as exc:
        status = "FAIL" if isinstance(exc, DataOverrideError) else "WARN"
        return TaskEntry(name, "task", plugin, family, path, data_problem=str(exc), data_status=status,
                         variants=variants)
    except Exception as exc:  # a malformed dataset section: listed with its error, not fatal
        return TaskEntry(name, "task", plugin, family, path, data_problem=f"{type(exc).__name__}: {exc}",
                         data_status="FAIL", variants=variants)
    return TaskEntry(name, "task", plugin, family, path, location, variants=variants)
