"""Run settings refused in words before any model call, where lmms-eval would stop later in its own words:
``--limit 0`` (``task.build_requests() did not find any docs!``) and ``--num_fewshot`` on PathBind's tasks, which
have no few-shot examples (``'ConfigurableTask' object has no attribute 'sampler'``)."""

from __future__ import annotations

from typing import Any


class SettingError(ValueError):
    """A run setting the run's tasks cannot honour; the message names the setting, the tasks and the fix."""


def refuse_unusable_settings(without_examples: list[str], limit: Any) -> None:
    """SettingError for ``--limit 0`` (it selects no document), or for ``--num_fewshot`` asked of the tasks
    ``without_examples`` (PathBind's declare no ``fewshot_config``: the protocol asks every question zero-shot)."""
    if limit is not None and limit == 0:
        raise SettingError("--limit 0 selects no document of any task: give --limit N (N documents of each task, "
                           "or a fraction of them between 0 and 1), or leave --limit out to evaluate every document")
    if without_examples:
        raise SettingError(f"--num_fewshot: task(s) {', '.join(sorted(without_examples))} have no few-shot "
                           "examples to show (their YAML declares no fewshot_config; PathBind's tasks ask every "
                           "question zero-shot, as the protocol does): leave --num_fewshot out, or give it in a "
                           "separate run of the tasks that declare few-shot examples")
