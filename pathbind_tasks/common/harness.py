"""The lmms-eval task running PathBind code, for messages and records that must name it.

The seam hands it over (:mod:`pathbind.lmms.running`): lmms-eval gives ``process_docs`` only the dataset and
``process_results`` only the document, so the seam runs both with their task set.
"""

from __future__ import annotations

from typing import Any

from pathbind.lmms.running import running_task


def task_name() -> str | None:
    """The name of the lmms-eval task running us, or None outside lmms-eval."""
    task = running_task()
    return task.name if task is not None else None


def data_source(dataset: Any = None, unknown: str = "an in-memory dataset") -> str:
    """Where the rows being converted come from ("task T, file F"), for error messages; ``unknown`` outside
    lmms-eval for a dataset ``datasets`` holds only in memory (else its cache file, ``datasets``' copy)."""
    task = running_task()
    if task is not None:
        return task.source(getattr(dataset, "split", None))
    cached = [f["filename"] for f in (getattr(dataset, "cache_files", None) or [])]
    return f"file {cached[0]} (datasets' copy)" if cached else unknown
