"""The lmms-eval task whose PathBind code is running, and its row ledger, handed to that code by the seam.

lmms-eval hands a task's ``process_docs`` only the dataset, its ``process_results`` only the document and its
aggregations only the records, while messages must name the task and the file its rows came from, and the
``accounting`` aggregation needs the ledger ``process_docs`` kept. The seam wraps these functions of every
PathBind task (:class:`InTask`) so they run with their task set here, in the calling thread (lmms-eval 0.7.3 may
score in threads: a context variable set inside the call holds in that thread only). The ledger stays on the
task: it is never copied into documents or records.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Ledger:
    """The rows a task read and the reasons it dropped some; ``kept`` (items) once closed."""

    rows: int
    dropped: Counter[str] = field(default_factory=Counter)
    kept: int | None = None
    selection: set[str] = field(default_factory=set)  # the reasons in ``dropped`` that define the task
    examples: dict[str, str] = field(default_factory=dict)  # a fault's reason -> its first item and detail


@dataclass(eq=False)
class RunningTask:
    """A task by name and where its rows come from: ``data_files`` (one file, or one per split) or
    ``dataset_path`` (a hub id or a builder); ``ledger`` is the one its last ``process_docs`` kept; ``cluster``
    what its intervals resample (``metadata.pathbind_cluster``: ``pathbind_tasks.common.clusters``);
    ``generation`` the generation settings its requests went to the model with (lmms-eval's ``--gen_kwargs`` over
    the YAML's; None outside a run); ``failures`` why it failed (:mod:`pathbind.lmms.failures`)."""

    name: str
    data_files: Any = None
    dataset_path: str | None = None
    ledger: Ledger | None = None
    cluster: str = "image"
    generation: dict[str, Any] | None = None
    failures: list[str] = field(default_factory=list)

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
def running(task: RunningTask) -> Iterator[RunningTask]:
    token = _RUNNING.set(task)
    try:
        yield task
    finally:
        _RUNNING.reset(token)


class InTask:
    """A task function (``process_docs``, ``process_results``, an aggregation) called with its task running. Its
    text is the wrapped one's, which lmms-eval writes into the results' ``configs``."""

    def __init__(self, function: Callable[..., Any], task: RunningTask) -> None:
        # __wrapped__: inspect.signature reads the function's parameters (lmms-eval looks for "args").
        self.__wrapped__, self.task = function, task

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with running(self.task):
            return self.__wrapped__(*args, **kwargs)

    def __repr__(self) -> str:
        return repr(self.__wrapped__)
