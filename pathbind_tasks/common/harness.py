"""The lmms-eval task running PathBind code, for messages and records that must name it.

lmms-eval hands ``process_docs`` only the dataset and ``process_results`` only the document: the task is the
``self`` of a caller (``ConfigurableTask.download``, ``ConfigurableTask.process_results``).
"""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any


def lmms_eval_frame(max_depth: int = 16) -> FrameType | None:
    """The nearest caller frame whose ``self`` is an lmms-eval task (it has a ``task_name``), or None."""
    frame: FrameType | None = sys._getframe(1)
    for _ in range(max_depth):
        frame = frame.f_back if frame is not None else None
        if frame is None:
            return None
        owner: Any = frame.f_locals.get("self")
        if type(owner).__module__.startswith("lmms_eval") and isinstance(getattr(owner, "task_name", None), str):
            return frame
    return None


def task_name() -> str | None:
    """The name of the lmms-eval task running us, or None outside lmms-eval."""
    frame = lmms_eval_frame()
    return frame.f_locals["self"].task_name if frame is not None else None


def data_source(dataset: Any = None, unknown: str = "an in-memory dataset") -> str:
    """Where the rows being converted come from ("task T, file F"), for error messages; ``unknown`` outside
    lmms-eval for a dataset datasets holds only in memory.

    ``process_docs`` only sees a Dataset, whose cache files are datasets' copies; the file the user gave is in
    the config of the lmms-eval task whose ``download`` is running (its ``self``; ``split`` is being converted).
    """
    frame = lmms_eval_frame()
    if frame is not None:
        owner: Any = frame.f_locals["self"]
        config = getattr(owner, "config", None)
        files = (getattr(config, "dataset_kwargs", None) or {}).get("data_files")
        split = frame.f_locals.get("split")
        named = files.get(split, files) if isinstance(files, dict) else files
        where = f"file {named}" if named else f"dataset {getattr(config, 'dataset_path', '?')}"
        return f"task {owner.task_name}, {where}"
    cached = [f["filename"] for f in (getattr(dataset, "cache_files", None) or [])]
    return f"file {cached[0]} (datasets' copy)" if cached else unknown
