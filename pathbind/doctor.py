"""``pathbind doctor``: is everything a PathBind run needs installed, hooked and reachable?"""

from __future__ import annotations

import importlib
import os
import platform
import sys
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, requires, version
from typing import TYPE_CHECKING

from pathbind.catalog import DataLocation, TaskEntry, plugin_tasks
from pathbind.data import DATA_ENV, DataLocationError, DataOverrideError, data_root
from pathbind.lmms.patches import TESTED_LMMS_EVAL
from pathbind.plugins import PluginManager
from pathbind.templates import template_names

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

    from pathbind.data_check import SourceReport

HF_LIBRARIES = ("transformers", "accelerate")  # pathbind_hf imports both
# Below its declared lower bound, pathbind_hf refuses to load a model (pathbind_models.hf.check_transformers).
ENFORCED_FLOORS = ("transformers",)


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # OK, WARN or FAIL
    detail: str


def run_checks(pm: PluginManager, *, check_data: bool = True) -> list[Check]:
    """All checks, cheapest first; each failure names what to do about it."""
    entries = plugin_tasks(pm)
    contributions = [*_templates(pm), *_models(pm), *_metrics(pm)]  # before _plugins: hooks record failures
    checks = [_python(), _lmms_eval(), _torch(), *_hf_libraries(), *_plugins(pm), *contributions,
              *_task_conflicts(pm), *_yaml_loads(entries)]
    checks += [*_task_index(pm, entries), *_hooked_sources()]
    if check_data:
        checks += [_data_root(), *(_data(e) for e in entries if e.data is not None)]
        checks += [Check(f"data {e.name}", e.data_status, e.data_problem) for e in entries if e.data_problem]
        checks += _data_folders(pm)
    return checks


def report_lines(checks: list[Check]) -> list[str]:
    """The text report: a line per check, but one line for the checks of one kind with the same finding (the data
    of every PathView-Bench task) naming how many and which, then a line counting the checks of each status."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for check in checks:
        kind, _, subject = check.name.rpartition(" ")
        groups.setdefault((check.status, kind or subject, check.detail), []).append(check.name)
    lines = []
    for (status, kind, detail), names in groups.items():
        subjects = [name.removeprefix(f"{kind} ") for name in names]
        named = names[0] if len(names) == 1 else f"{kind} ×{len(names)} ({', '.join(subjects)})"
        lines.append(f"[{status:>4}] {named}: {detail}")
    counts = {status: sum(c.status == status for c in checks) for status in ("OK", "WARN", "FAIL")}
    lines.append(f"doctor: {', '.join(f'{n} {status}' for status, n in counts.items())} ({len(checks)} checks)")
    return lines


def _python() -> Check:
    return Check("python", "OK", f"{platform.python_version()} ({platform.machine()})")


def _lmms_eval() -> Check:
    try:
        installed = version("lmms-eval")
    except PackageNotFoundError:
        return Check("lmms-eval", "FAIL", "not installed: pip install 'lmms-eval==0.7.3'")
    # The hooked sources decide (below): a main-branch install reports an older version than the release.
    return Check("lmms-eval", "OK", f"{installed} (PathBind is tested with {', '.join(TESTED_LMMS_EVAL)})")


def _torch() -> Check:
    try:
        import torch
    except Exception as exc:
        return Check("torch", "FAIL", f"cannot import torch: {exc}")
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    device = f"CUDA {torch.version.cuda}, {gpus} GPU(s)" if gpus else "CPU only"
    return Check("torch", "OK", f"{torch.__version__}, {device}")


def _hf_libraries() -> list[Check]:
    """Each installed version against the range PathBind declares (its tested range)."""
    declared = _declared_ranges()
    checks = []
    for name in HF_LIBRARIES:
        spec = declared.get(name)
        try:
            installed = version(name)
        except PackageNotFoundError:
            checks.append(Check(name, "FAIL", f"not installed: pip install '{name}{spec or ''}'"))
            continue
        if spec is not None and name in ENFORCED_FLOORS and _below_floor(spec, installed):
            checks.append(Check(name, "FAIL", f"{installed} is older than the oldest release PathBind works with; "
                                              f"pathbind_hf refuses it: pip install '{name}{spec}'"))
        elif spec is not None and not spec.contains(installed, prereleases=True):
            checks.append(Check(name, "WARN", f"{installed}; PathBind is tested with {name}{spec}"))
        else:
            checks.append(Check(name, "OK", installed))
    return checks


def _below_floor(spec: SpecifierSet, installed: str) -> bool:
    """Whether ``installed`` fails one of the lower bounds (``>=``, ``>``) of ``spec``."""
    return any(s.operator in (">=", ">") and not s.contains(installed, prereleases=True) for s in spec)


def _declared_ranges() -> dict[str, SpecifierSet]:
    """PathBind's unconditional requirements by name: their version specifiers."""
    from packaging.requirements import Requirement

    try:
        requirements = [Requirement(line) for line in requires("pathbind") or []]
    except PackageNotFoundError:
        return {}
    return {r.name: r.specifier for r in requirements if r.marker is None}


def _plugins(pm: PluginManager) -> list[Check]:
    checks = [Check(f"plugin {name}", "OK", getattr(plugin, "__name__", type(plugin).__name__))
              for name, plugin in sorted(pm.list_name_plugin()) if plugin is not None and name not in pm.failures]
    checks += [Check(f"plugin {name}", "FAIL", error) for name, errors in sorted(pm.failures.items())
               for error in errors]
    checks += [Check(f"plugin {name}", "WARN", "disabled by PATHBIND_DISABLE_PLUGINS")
               for name, plugin in sorted(pm.list_name_plugin()) if plugin is None]
    return checks


def _templates(pm: PluginManager) -> list[Check]:
    names = template_names(pm.template_dirs())
    shadowed = {n: files for n, files in names.items() if len(files) > 1}
    checks = [Check("templates", "OK", f"{len(names)} found: {', '.join(sorted(names))}")]
    checks += [Check(f"template {n}", "WARN", f"{files[0]} shadows {', '.join(map(str, files[1:]))}")
               for n, files in sorted(shadowed.items())]
    return checks


def _models(pm: PluginManager) -> list[Check]:
    checks = []
    for contribution in sorted(pm.models().values(), key=lambda c: c.name):
        spec = contribution.value
        for class_path in filter(None, (spec.simple_class_path, spec.chat_class_path)):
            module, _, attr = class_path.rpartition(".")
            try:
                getattr(importlib.import_module(module), attr)
                checks.append(Check(f"model {spec.model_id}", "OK", class_path))
            except Exception as exc:
                checks.append(Check(f"model {spec.model_id}", "FAIL", f"{class_path}: {type(exc).__name__}: {exc}"))
    checks += [Check("conflict", "WARN", message) for message in pm.conflicts]
    return checks


def _metrics(pm: PluginManager) -> list[Check]:
    metrics = pm.metrics()
    return [Check("metrics", "OK", f"{len(metrics)} found: {', '.join(sorted(metrics))}")]


def _task_conflicts(pm: PluginManager) -> list[Check]:
    """A task or group name defined by more than one plugin: lmms-eval can run only one of them (one message per
    conflict, naming both plugins and files)."""
    from pathbind.lmms.tasks import task_conflicts

    try:
        return [Check("task names", "FAIL", message) for message in task_conflicts(pm)]
    except Exception as exc:
        return [Check("task names", "FAIL", f"cannot check task-name conflicts: {type(exc).__name__}: {exc}")]


def _hooked_sources() -> list[Check]:
    """lmms-eval functions PathBind wraps or relies on whose source is none PathBind runs on (its runs stop on such
    an install)."""
    from pathbind.lmms.patches import hooked_sources_changed

    try:
        found = hooked_sources_changed()
    except Exception as exc:
        return [Check("hooked sources", "FAIL", f"cannot compare lmms-eval's hooked methods: {exc}")]
    if not found:
        return [Check("hooked sources", "OK", "lmms-eval's hooked methods are the ones PathBind was written for")]
    tested = ", ".join(TESTED_LMMS_EVAL)
    return [Check(f"hooked source {name}", "FAIL", f"not a source PathBind runs on (tested: lmms-eval {tested}); "
                  f"PathBind tasks and models stop before any model call on this lmms-eval")
            for name in found]


def _yaml_loads(entries: list[TaskEntry]) -> list[Check]:
    """Each YAML through lmms-eval's own loader, ``!function`` targets included."""
    from pathbind.lmms.queries import load_task_yaml

    checks = []
    for entry in entries:
        try:
            if entry.error:
                raise ValueError(entry.error)
            load_task_yaml(entry.yaml_path)
        except Exception as exc:
            checks.append(Check(f"yaml {entry.yaml_path}", "FAIL", f"{type(exc).__name__}: {exc}"))
    return checks or [Check("yaml", "OK", f"{len({e.yaml_path for e in entries})} YAML files load")]


def _task_index(pm: PluginManager, entries: list[TaskEntry]) -> list[Check]:
    """The hook works when lmms-eval's own TaskManager resolves every plugin task to its YAML. Indexing lmms-eval's
    own tasks is nearly all of the doctor's time the first time (about 10 s), and is cached for the next."""
    from pathbind.lmms.queries import task_index

    print("pathbind doctor: indexing lmms-eval's tasks (about 10 s once per lmms-eval install, then cached)...",
          file=sys.stderr, flush=True)
    try:
        index, origin = task_index(pm)
    except ValueError:
        return [Check("task hook", "FAIL", "lmms-eval changed TaskManager; pass plugin task dirs with --include_path")]
    checks = []
    for entry in (e for e in entries if e.kind in ("task", "group")):
        found = index.get(entry.name, {}).get("yaml_path")
        if found != str(entry.yaml_path):
            checks.append(Check(f"task {entry.name}", "FAIL", f"lmms-eval resolves it to {found or 'nothing'}, "
                                f"not {entry.yaml_path} (name clash or unindexable YAML); rename the task"))
    ok = sum(e.kind in ("task", "group") for e in entries) - len(checks)
    return [Check("task hook", "OK", f"lmms-eval indexes {ok} PathBind tasks and groups ({origin})"), *checks]


def _data_root() -> Check:
    try:
        root = data_root()
    except DataOverrideError as exc:
        return Check("data root", "FAIL", str(exc))
    return Check("data root", "OK", f"{DATA_ENV}={root}" if root else f"{DATA_ENV} not set: tasks read the "
                 "locations their YAMLs give")


def _data_folders(pm: PluginManager) -> list[Check]:
    """``pathbind data check`` of each source folder under ``PATHBIND_DATA``: one check per problem, else its
    summary (a root that is not a folder is the data-root check's failure)."""
    from pathbind.data_check import check, source_tasks, unused_folders

    try:
        root = data_root()
    except DataOverrideError:
        return []
    if root is None:
        return []
    print(f"pathbind doctor: reading the data folders in {root} as the tasks will...", file=sys.stderr, flush=True)
    sources = source_tasks(pm)
    try:
        reports = check(sources, root)
    except DataLocationError as exc:  # no source folder in it
        return [Check("data check", "WARN", str(exc))]
    checks = [found for report in reports for found in _folder_checks(report)]
    checks += [Check(f"data check {name}", "WARN", f"{root / name} is named after no data source or task: no task "
                     "reads it") for name in unused_folders(sources, root)]
    return checks


def _folder_checks(report: SourceReport) -> list[Check]:
    """One FAIL per problem of a source folder's check, else one OK with its summary."""
    name = f"data check {report.source}"
    problems = report.problems()
    return [Check(name, "FAIL", problem) for problem in problems] or [Check(name, "OK", report.summary())]


def _data(entry: TaskEntry) -> Check:
    location = entry.data
    assert location is not None
    status, detail = _reach(location)
    return Check(f"data {entry.name}", status, detail)


def _reach(location: DataLocation) -> tuple[str, str]:
    if location.hub_id:
        try:
            from huggingface_hub import snapshot_download

            path = snapshot_download(location.hub_id, repo_type="dataset", local_files_only=True)
            return "OK", f"hub:{location.hub_id} cached at {path}"
        except Exception:
            offline = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("HF_DATASETS_OFFLINE")
            hint = "offline mode is on" if offline else "downloaded on first use (gated sets need `hf auth login`)"
            return "WARN", f"hub:{location.hub_id} not in the local cache; {hint}"
    missing = [str(p) for p in location.local_files if not p.exists()]
    if missing:
        return "FAIL", f"missing: {', '.join(missing)}"
    return "OK", location.describe()
