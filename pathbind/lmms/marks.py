"""What the seam's modules share, and nothing of lmms-eval: how a patch is made, and how it tells PathBind's own
tasks, models and results from any other.

Every patch the seam installs is :func:`patch`: PathBind's code for the calls its ``claims`` finds PathBind's, and
lmms-eval's own function, call for call, for every other. A claim is decided by identity or by a mark PathBind set
itself, never by an attribute a foreign object may have: a task is PathBind's when the seam built its config (its
functions are :class:`~pathbind.lmms.running.InTask`), a model when its class (or ``--model`` name) is one a plugin's
ModelSpec names. Every other seam module may import this one; it imports only :mod:`~pathbind.lmms.running`, which
imports no seam module, so the seam has no circle.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from loguru import logger

from pathbind.capabilities import class_path
from pathbind.lmms.running import InTask, RunningTask
from pathbind.plugins import get_plugin_manager

PATCH_MARK = "__pathbind_patch__"  # set on each function the seam installs: installing twice is a no-op
# The plugins PathBind itself ships (pyproject's [project.entry-points.pathbind]): their task names come first.
FIRST_PARTY_PLUGINS = ("pathbind_tasks", "pathbind_models", "pathbind_analysis")
# The packages whose functions make a task config PathBind's (a third party's task on PathBind's scorers).
PATHBIND_PACKAGES = ("pathbind", *FIRST_PARTY_PLUGINS)

Wrapper = TypeVar("Wrapper", bound=Callable[..., Any])


def mark(wrapper: Wrapper) -> Wrapper:
    """``wrapper``, marked as a patch of the seam."""
    setattr(wrapper, PATCH_MARK, True)
    return wrapper


def marked(function: Any) -> bool:
    """Whether ``function`` is a patch the seam installed."""
    return bool(getattr(function, PATCH_MARK, False))


def patch(original: Callable[..., Any], ours: Callable[..., Any], claims: Callable[..., bool]) -> Callable[..., Any]:
    """What the seam installs in place of lmms-eval's ``original``: ``ours(original, *args, **kwargs)`` for a call
    that ``claims(*args, **kwargs)`` finds PathBind's, ``original(*args, **kwargs)`` for any other."""

    @functools.wraps(original)
    def patched(*args: Any, **kwargs: Any) -> Any:
        if _claimed(claims, args, kwargs):
            return ours(original, *args, **kwargs)
        return original(*args, **kwargs)

    patched.claims = claims  # type: ignore[attr-defined]  # the seam's tests call it
    return mark(patched)


def _claimed(claims: Callable[..., bool], args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    try:
        return bool(claims(*args, **kwargs))
    except Exception:  # a claim reads only what PathBind made; this is a bug of the seam, never the caller's
        logger.exception(f"pathbind: could not tell whether a call is PathBind's ({getattr(claims, '__name__', '')})")
        return False


def leaf_tasks(task_dict: Mapping[Any, Any]) -> Iterator[tuple[str, Any]]:
    """``(name, task)`` of each task in lmms-eval's task dictionary, its groups' subtasks included."""
    for key, value in task_dict.items():
        if isinstance(value, Mapping):
            yield from leaf_tasks(value)
        else:
            yield str(key), value


def running_tasks(task: Any) -> list[RunningTask]:
    """The RunningTasks the seam handed an lmms-eval task's functions (none for a task not PathBind's)."""
    config = getattr(task, "config", None)
    functions = [getattr(config, key, None) for key in ("process_docs", "doc_to_text", "process_results")]
    metrics = getattr(config, "metric_list", None)
    functions += [m.get("aggregation") for m in metrics if isinstance(m, Mapping)] if isinstance(metrics, list) else []
    return list({id(f.task): f.task for f in functions if isinstance(f, InTask)}.values())


def pathbind_task(task: Any) -> bool:
    """Whether an lmms-eval task object is PathBind's: the seam built its config, so its functions run in their task
    (:class:`~pathbind.lmms.running.InTask`)."""
    return bool(running_tasks(task))


def pathbind_config(config: Mapping[str, Any]) -> bool:
    """Whether a task config that is no plugin's asks for PathBind explicitly: its ``metadata`` has a ``pathbind_``
    key, or its ``process_docs`` or ``process_results`` is PathBind's own function (e.g. a copy via
    ``--include_path``)."""
    metadata = config.get("metadata")
    if isinstance(metadata, Mapping) and any(str(key).startswith("pathbind_") for key in metadata):
        return True
    return any(_pathbind_function(config.get(key)) for key in ("process_docs", "process_results"))


def _pathbind_function(function: Any) -> bool:
    """Whether ``function`` is the very object a module of PathBind's packages holds (PathBind's own task function,
    ``!function pathbind_tasks.common.vqa.process_results`` in a YAML)."""
    if not callable(function):
        return False
    modules = [module for name, module in list(sys.modules.items()) if name.split(".")[0] in PATHBIND_PACKAGES]
    return any(value is function for module in modules for value in list(vars(module).values()))


def plugin_model(model: Any) -> bool:
    """Whether ``model`` (an lmms-eval model, or its ``--model`` name) is one a plugin's ModelSpec names."""
    try:
        specs = [c.value for c in get_plugin_manager().models().values()]
        if isinstance(model, str):
            return any(model == s.model_id or model in s.aliases for s in specs)
        return class_path(model) in {path for s in specs for path in (s.simple_class_path, s.chat_class_path)}
    except Exception:
        logger.exception("pathbind: could not tell whether the model is a PathBind model")
        return False
