"""The lmms-eval task whose PathBind code is running, handed to that code by the bridge.

lmms-eval hands a task's ``process_docs`` only the dataset and its ``process_results`` only the document, while
messages, the row ledger and records must name the task and the file its rows came from. The bridge wraps both
functions of every PathBind task (:class:`InTask`) so they run with their task set here, in the calling thread
(lmms-eval 0.7.3 may score in threads: a context variable set inside the call holds in that thread only).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RunningTask:
    """A task by name and where its rows come from: ``data_files`` (one file, or one per split) or
    ``dataset_path`` (a hub id or a builder)."""

    name: str
    data_files: Any = None
    dataset_path: str | None = None

    def source(self, split: str | None) -> str:
        """"task T, file F" for the rows of ``split``, or "task T, dataset D" when no file is named."""
        files = self.data_files
        named = files.get(split, files) if isinstance(files, Mapping) else files
        return f"task {self.name}, " + (f"file {named}" if named else f"dataset {self.dataset_path or '?'}")


_RUNNING: ContextVar[RunningTask | None] = ContextVar("pathbind_running_task", default=None)


def running_task() -> RunningTask | None:
    """The task whose function is running, or None outside lmms-eval (a unit test, a direct call)."""
    return _RUNNING.get()


@contextmanager
def running(task: RunningTask) -> Iterator[None]:
    token = _RUNNING.set(task)
    try:
        yield
    finally:
        _RUNNING.reset(token)


class InTask:
    """A task function (``process_docs``, ``process_results``) called with its task running. Its text is the
    wrapped one's, which lmms-eval writes into the results' ``configs``."""

    def __init__(self, function: Callable[..., Any], task: RunningTask) -> None:
        self.function, self.task = function, task

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with running(self.task):
            return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return repr(self.function)
