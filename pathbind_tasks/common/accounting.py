"""Row accounting: every row a task reads ends up evaluated or dropped with a named reason.

A task's ``process_docs`` opens a ledger with :func:`counting` over the rows lmms-eval hands it (before any
``--limit``); its conversion reports each row it leaves out with :func:`drop`, marked ``selection=True`` when
leaving it out is the task's definition (Path-VQA's open-ended questions) rather than a fault in the data, which
``pathbind data check`` fails on. :func:`close` checks ``rows == kept + dropped``. The ledger stays with the running
task (``pathbind.lmms.running``), never in documents or records: the seam hands it to the task's ``accounting``
aggregation, which every rank could compute alike (each builds the whole task before sharding). It reports
``{"rows", "evaluated", "dropped": {reason: count}}``: items kept but not evaluated (``--limit``, or no condition
answered) are dropped with that reason, and a task that dropped rows says so in one warning line.

A fault of the data (a field of the wrong type, a reference that is not an answer of its format, an image that
is missing or unreadable) is a :class:`pathbind.faults.Fault`, kept in the documents' fault columns as that value
(:data:`FAULT`) and dropped here, from every condition of its item, under its reason, by :func:`without_faults`:
it is never charged to the model as an invalid answer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import datasets
from loguru import logger

from pathbind.faults import Fault
from pathbind.lmms.running import Ledger, running_task
from pathbind_tasks.common.columns import column_values
from pathbind_tasks.common.harness import task_name

NOT_EVALUATED = "beyond --limit, or every condition skipped for this model"
FAULT_COLUMNS = ("doc_error", "image_error", "cluster_error")  # why a row's data cannot be evaluated (null when it can)
# A fault column's type: a pathbind.faults.Fault as {reason, detail}, null for none.
FAULT = {"reason": datasets.Value("string"), "detail": datasets.Value("string")}
UNACCOUNTED = "unaccounted for by the task's conversion (a PathBind bug; please report it)"


def close(ledger: Ledger, docs: datasets.Dataset) -> datasets.Dataset:
    """``docs`` (one per kept item, before conditions), unchanged, after counting them as the ledger's ``kept``.

    Idempotent, so a shared ``process_docs`` called inside another's ledger leaves the closing to it.
    """
    if ledger.kept is not None:
        return docs
    ledger.kept = len(set(column_values(docs, "id")))
    missing = ledger.rows - ledger.kept - sum(ledger.dropped.values())
    if missing:
        logger.error(f"task {task_name() or '?'}: {missing} of {ledger.rows} rows are neither kept nor dropped "
                     f"with a reason; they are counted as {UNACCOUNTED!r}")
        ledger.dropped[UNACCOUNTED] += missing
    return docs


_open: ContextVar[Ledger | None] = ContextVar("pathbind_ledger", default=None)


@contextmanager
def counting(dataset: datasets.Dataset) -> Iterator[Ledger]:
    """The ledger of the rows of ``dataset``, open while a task's documents are built (the open one if any), and
    handed to the running task, whose ``accounting`` aggregation reads it."""
    current = _open.get()
    if current is not None:
        yield current
        return
    ledger = Ledger(len(dataset))
    task = running_task()
    if task is not None:
        task.ledger = ledger
    token = _open.set(ledger)
    try:
        yield ledger
    finally:
        _open.reset(token)


def drop(reason: str, count: int = 1, *, selection: bool = False, example: str | None = None) -> None:
    """Count ``count`` rows left out of the task with ``reason`` (outside a ledger, e.g. in a unit test: nothing).

    ``selection``: the rows are left out by the task's definition (another split, a question type it does not
    ask), not because they are broken; data checks pass on such drops and fail on every other. ``example``: the
    first item dropped for a fault, with its detail, which ``pathbind data check`` shows.
    """
    ledger = _open.get()
    if ledger is not None and count:
        ledger.dropped[reason] += count
        if selection:
            ledger.selection.add(reason)
        if example:
            ledger.examples.setdefault(reason, example)


def faults_column(faults: Sequence[Fault | None]) -> list[dict[str, str] | None]:
    """Faults as a :data:`FAULT` column holds them (null for none)."""
    return [fault.row() if fault else None for fault in faults]


def without_faults(docs: datasets.Dataset, label: str) -> datasets.Dataset:
    """``docs`` without the rows whose data is at fault (a ``doc_error``, ``image_error`` or ``cluster_error``), each
    dropped in the open ledger under its fault's reason, the first of each reason logged with its detail; the fault
    columns removed.

    Raises when no row is left: the data cannot be evaluated at all, an error before any model call.
    """
    columns = [name for name in FAULT_COLUMNS if name in docs.column_names]
    if not columns:
        return docs
    found = [next((f for f in map(Fault.read, values) if f), None)
             for values in zip(*(column_values(docs, c) for c in columns), strict=True)]
    faults = Counter(fault.reason for fault in found if fault)
    if faults:
        ids = column_values(docs, "id")
        first = {fault.reason: _example(ids[i], fault) for i, fault in reversed(list(enumerate(found))) if fault}
        summary = "; ".join(f"{reason}: {n} (first {first[reason]})" for reason, n in faults.most_common())
        if sum(faults.values()) == len(docs):
            raise ValueError(f"{label}: every one of the {len(docs)} items has a fault of the data, nothing to "
                             f"evaluate ({summary})")
        logger.warning(f"{label}: {sum(faults.values())} of {len(docs)} items dropped for faults of the data "
                       f"({summary}); see 'accounting'")
        for reason, n in faults.items():
            drop(reason, n, example=first[reason])
        docs = docs.select([i for i, fault in enumerate(found) if not fault])
    return docs.remove_columns(columns)


def _example(item: Any, fault: Fault) -> str:
    """``'<id>': <detail>``: which item had the fault, and the detail its reason leaves out."""
    return f"{str(item)!r}: {fault.detail}" if fault.detail else repr(str(item))


def read_rows(count: int) -> None:
    """Set the row count for data whose items are not the dataset's rows (PathMMU's one-object ``data.json``)."""
    ledger = _open.get()
    if ledger is not None:
        ledger.rows = count


def accounting(records: Sequence[Mapping]) -> dict[str, Any]:
    """The ``accounting`` aggregation: ``{"rows", "evaluated", "dropped": {reason: count}}`` of the running task,
    from the ledger its ``process_docs`` kept (in this process: every rank builds the whole task) and the items
    whose records came back."""
    task = running_task()
    ledger = task.ledger if task is not None else None
    evaluated = len({str(r["id"]) for r in records})
    if ledger is None or ledger.kept is None:
        logger.error(f"accounting: task {task_name() or '?'} kept no row ledger; its rows cannot be accounted for")
        return {"rows": None, "evaluated": evaluated, "dropped": {}}
    dropped = Counter(ledger.dropped)
    dropped[NOT_EVALUATED] += ledger.kept - evaluated
    dropped = Counter({reason: n for reason, n in dropped.items() if n})
    if dropped:
        reasons = ", ".join(f"{reason}: {n}" for reason, n in dropped.most_common())
        logger.warning(f"task {task_name() or '?'}: {sum(dropped.values())} of {ledger.rows} rows were not "
                       f"evaluated ({reasons}); see 'accounting' in results.json")
    return {"rows": ledger.rows, "evaluated": evaluated, "dropped": dict(sorted(dropped.items()))}
