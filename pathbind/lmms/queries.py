"""The queries PathBind's commands make of lmms-eval's task machinery, with the seam installed: the task index
(``pathbind doctor``), a task YAML through lmms-eval's loader, a task's documents (the report's overlays)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from pathbind.lmms.index import read_task_index
from pathbind.lmms.tasks import install_task_hook
from pathbind.lmms.watch import watch_lmms_eval
from pathbind.plugins import PluginManager


def _seam(pm: PluginManager | None = None) -> bool:
    """Install the task hook (``pm`` defaults to the process-wide plugin manager) and watch for the other patches;
    False when this lmms-eval's TaskManager cannot be hooked."""
    installed = install_task_hook(pm)
    watch_lmms_eval()
    return installed


def task_index(pm: PluginManager | None = None, include_path: Sequence[str] = ()) -> tuple[dict[str, dict], str]:
    """:func:`pathbind.lmms.index.read_task_index` with the seam installed; ValueError when the hook cannot
    install."""
    if not _seam(pm):
        raise ValueError("this lmms-eval's TaskManager cannot index PathBind tasks (see `pathbind doctor`)")
    return read_task_index(pm, include_path)


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
    from lmms_eval.tasks import get_task_dict

    try:
        return get_task_dict([task], _task_manager())[task].eval_docs
    except Exception as exc:  # any loader failure (missing data, unknown task) becomes a note in the report
        raise ValueError(f"{task}: cannot load its documents ({type(exc).__name__}: {exc})") from exc


@cache
def _task_manager() -> Any:
    """One TaskManager for a command's every task: building it indexes every task YAML, which takes seconds."""
    from lmms_eval.tasks import TaskManager

    return TaskManager("ERROR")
