"""Run settings refused in words before any model call, where lmms-eval would stop later in its own words or run
with a setting it did not apply: ``--limit 0`` (``task.build_requests() did not find any docs!``) and
``--num_fewshot`` on a task without few-shot examples (``'ConfigurableTask' object has no attribute 'sampler'``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class SettingError(ValueError):
    """A run setting no task of the run can honour; the message names the setting, the tasks and the fix."""


def refuse_unusable_settings(tasks: Iterable[tuple[str, Any]], limit: Any) -> None:
    """SettingError for ``--limit 0`` (it selects no document), or for ``--num_fewshot N`` where a task has no
    few-shot examples to show (its YAML declares no ``fewshot_config``, as none of PathBind's does: the protocol
    asks every question zero-shot). ``tasks`` are the run's ``(name, lmms-eval task)`` pairs."""
    if limit is not None and limit == 0:
        raise SettingError("--limit 0 selects no document of any task: give --limit N (N documents of each task, "
                           "or a fraction of them between 0 and 1), or leave --limit out to evaluate every document")
    wanted = {name: _shots(task) for name, task in tasks}
    lacking = sorted(name for name, task_shots in wanted.items() if task_shots)
    if lacking:
        raise SettingError(f"--num_fewshot {wanted[lacking[0]]}: task(s) {', '.join(lacking)} have no few-shot "
                           "examples to show (their YAML declares no fewshot_config; PathBind's tasks ask every "
                           "question zero-shot, as the protocol does): leave --num_fewshot out, or give it in a "
                           "separate run of the tasks that declare few-shot examples")


def _shots(task: Any) -> int:
    """The few-shot examples ``task`` is asked to show and cannot (it has no sampler), else 0."""
    wanted = getattr(getattr(task, "config", None), "num_fewshot", None)
    has_examples = getattr(task, "sampler", None) is not None
    return wanted if isinstance(wanted, int) and wanted > 0 and not has_examples else 0
