"""lmms-eval's task index with the plugins' tasks, read as its hooked ``TaskManager`` builds it but without building
one: for ``pathbind doctor`` (:func:`pathbind.lmms.queries.task_index`) and for the names of the tasks a run asks
for (:mod:`pathbind.lmms.names`). lmms-eval's own part is kept in the user's cache."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from loguru import logger

from pathbind.lmms.tasks import merge_plugin_tasks, plugin_dir_reader
from pathbind.plugins import PluginManager, get_plugin_manager


def read_task_index(pm: PluginManager | None = None,
                    include_path: Sequence[str] = ()) -> tuple[dict[str, dict], str]:
    """The index lmms-eval's hooked ``TaskManager("ERROR", include_path=...)`` builds (its own tasks, the
    ``include_path`` folders, then the plugins' folders and variants, merged by the hook's own
    :func:`~pathbind.lmms.tasks.merge_plugin_tasks`), and where its own tasks' index came from (the cache, or
    indexed now and how long it took). ``pm`` defaults to the process-wide plugin manager."""
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
