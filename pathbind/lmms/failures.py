"""A task that fails stays failed alone: an aggregation of a PathBind task that raises, or returns None or text
instead of a number or a JSON object, fails that task by name while lmms-eval finishes every other task.

lmms-eval computes each metric as ``aggregation(records)`` in one loop over the run's tasks, so one raising
aggregation (``KeyError: 'label'``) would end the run, good tasks included, and one returning None or a string would
drop out of the tables unsaid. The seam runs every aggregation of a PathBind task through
:class:`CheckedAggregation`: a fault becomes the metric's NaN (visibly missing; a group's mean over it is NaN too)
and a cause on the task (:attr:`~pathbind.lmms.running.RunningTask.failures`) naming the metric, the aggregation and
the plugin. The evaluate hook reports the causes in ``results["pathbind"]["failed_tasks"]``, and the ``lmms_eval``
command exits 1 with them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from loguru import logger

from pathbind.lmms.running import InTask, RunningTask
from pathbind.text_table import quoted


class CheckedAggregation(InTask):
    """An aggregation of task ``task``'s metric ``metric``, run with its task set; a fault fails the task (NaN)."""

    def __init__(self, function: Callable[..., Any], task: RunningTask, metric: str) -> None:
        super().__init__(function, task)
        self.metric = metric

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            value = super().__call__(*args, **kwargs)
        except Exception as exc:
            return self._failed(f"raised {type(exc).__name__}: {exc}")
        if value is None or isinstance(value, str):
            return self._failed(f"returned {quoted(value)}, not a number or a JSON object")
        return value

    def _failed(self, what: str) -> float:
        cause = f"metric {self.metric!r}: its aggregation {describe(self.__wrapped__)} {what}"
        self.task.failures.append(cause)
        logger.error(f"pathbind: task {self.task.name} failed: {cause}; its other metrics and the other tasks are "
                     "kept, and the run ends with exit code 1")
        return math.nan


def describe(function: Callable[..., Any]) -> str:
    """``module.name``, with the plugin that offers it under a metric name (``pathbind.plugin_metrics.<name>``)."""
    name = f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', repr(function))}"
    try:
        from pathbind.plugins import get_plugin_manager

        offered = [(c.plugin, key) for key, c in get_plugin_manager().metrics().items() if c.value is function]
    except Exception:  # the message is still worth giving without the plugin
        offered = []
    return name + "".join(f" (plugin {plugin!r}, metric {key!r})" for plugin, key in offered[:1])


def failed_tasks(tasks: list[RunningTask]) -> dict[str, str]:
    """Each failed task's causes, joined: ``{"task": "metric 'm': its aggregation ... raised KeyError: 'label'"}``."""
    failed: dict[str, list[str]] = {}
    for task in tasks:
        failed.setdefault(task.name, []).extend(c for c in task.failures if c not in failed.get(task.name, []))
    return {name: "; ".join(causes) for name, causes in sorted(failed.items()) if causes}
