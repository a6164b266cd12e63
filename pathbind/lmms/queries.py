"""The queries PathBind's commands make of lmms-eval's task machinery, with the seam installed: the task index
(``pathbind doctor``), a task YAML through lmms-eval's loader, a task's documents (the report's overlays)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from loguru import logger

from pathbind.lmms.tasks import install_task_hook, merge_plugin_tasks, plugin_dir_reader
from pathbind.lmms.watch import watch_lmms_eval
from pathbind.plugins import PluginManager, get_plugin_manager


def _seam(pm: PluginManager | None = None) -> bool:
    """Install the task hook (``pm`` defaults to the process-wide plugin manager) and watch for the other patches;
    False when this lmms-eval's TaskManager cannot be hooked."""
    installed = install_task_hook(pm)
    watch_lmms_eval()
    return installed


def task_index(pm: PluginManager | None = None, include_path: Sequence[str] = ()) -> tuple[dict[str, dict], str]:
    """The index lmms-eval's hooked ``TaskManager("ERROR", include_path=...)`` builds (its own tasks, the
    ``include_path`` folders, then the plugins' folders and variants, merged by the hook's own
    :func:`merge_plugin_tasks`), and where its own tasks' index came from (the cache, or indexed now and how long it
    took); ValueError when the hook cannot install."""
    if not _seam(pm):
        raise ValueError("this lmms-eval's TaskManager cannot index PathBind tasks (see `pathbind doctor`)")
    from lmms_eval.tasks import TaskManager

    reader = TaskManager.__new__(TaskManager)  # only its YAML indexing is used, which reads nothing else but this
    reader.logger = logger
    builtin, origin = builtin_task_index(reader._get_task_and_group)
    for folder in include_path:
        builtin = {**reader._get_task_and_group(folder), **builtin}  # as initialize_tasks: the earlier wins
    pm = pm or get_plugin_manager()
    return merge_plugin_tasks(plugin_dir_reader(reader), builtin, pm.task_dirs(), pm.task_variants())[0], origin


def builtin_task_index(read_dir: Callable[[str], dict]) -> tuple[dict[str, dict], str]:
    """lmms-eval's index of its own task folder as ``TaskManager.initialize_tasks`` builds it (``read_dir`` is
    ``_get_task_and_group``: PyYAML's pure-Python loader over about 3,500 YAMLs, about 10 s), kept in the user's
    cache under a digest of lmms-eval's version and every file's path, size and modification time, so that later
    calls only list the folder; and where it came from."""
    import time
    from importlib.metadata import version

    import lmms_eval.tasks

    folder = os.path.dirname(os.path.abspath(lmms_eval.tasks.__file__)) + "/"
    digest = hashlib.sha256(f"{version('lmms-eval')}\0{folder}".encode())
    yamls = 0
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            stat = os.stat(os.path.join(root, name))
            digest.update(f"{root}/{name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
            yamls += name.endswith(".yaml")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pathbind"
    path = cache / f"lmms_eval_task_index-{digest.hexdigest()[:20]}.json"
    try:
        return json.loads(path.read_text()), f"lmms-eval's own task index read from {path}"
    except (OSError, ValueError):
        pass
    start = time.perf_counter()
    index = read_dir(folder)
    origin = (f"lmms-eval's own {yamls:,} task YAMLs indexed in {time.perf_counter() - start:.1f} s (PyYAML's "
              f"pure-Python loader)")
    try:
        cache.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}")
        partial.write_text(json.dumps(index))
        os.replace(partial, path)
        origin += f"; cached in {path} until lmms-eval's task files change"
    except OSError as exc:
        origin += f"; not cached ({exc})"
    return index, origin


def load_task_yaml(path: str | Path) -> dict:
    """A task YAML through lmms-eval's own loader, ``include`` and ``!function`` targets resolved."""
    from lmms_eval.utils import load_yaml_config

    return load_yaml_config(str(path), mode="full")


def task_documents(task: str) -> Sequence[dict[str, Any]]:
    """The evaluation documents of ``task`` after its ``process_docs``, indexed like the sample logs' ``doc_id``,
    built by lmms-eval's TaskManager with the seam installed (so the data resolves as it did during the run).
    Raises ValueError naming the task and the cause."""
    if not _seam():
        raise ValueError(f"{task}: this lmms-eval cannot index PathBind tasks (see `pathbind doctor`)")
    from lmms_eval.tasks import TaskManager, get_task_dict

    try:
        return get_task_dict([task], TaskManager("ERROR"))[task].eval_docs
    except Exception as exc:  # any loader failure (missing data, unknown task) becomes a note in the report
        raise ValueError(f"{task}: cannot load its documents ({type(exc).__name__}: {exc})") from exc
