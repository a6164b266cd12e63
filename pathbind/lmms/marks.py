"""What the seam's modules share, and nothing of lmms-eval: the mark on every patch the seam installs, and which
tasks and models are PathBind's (a plugin's).

Every other seam module may import this one; it imports none of them, so the seam has no circle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from loguru import logger

from pathbind.capabilities import class_path
from pathbind.plugins import get_plugin_manager

PATCH_MARK = "__pathbind_patch__"  # set on each function the seam installs: installing twice is a no-op
# The plugins PathBind itself ships (pyproject's [project.entry-points.pathbind]): their task names come first.
FIRST_PARTY_PLUGINS = ("pathbind_tasks", "pathbind_models", "pathbind_analysis")
PLUGIN_TASKS: dict[str, str] = {}  # task name -> YAML, for the tasks whose last loaded config is a plugin's

Wrapper = TypeVar("Wrapper", bound=Callable[..., Any])


def mark(wrapper: Wrapper) -> Wrapper:
    """``wrapper``, marked as a patch of the seam."""
    setattr(wrapper, PATCH_MARK, True)
    return wrapper


def marked(function: Any) -> bool:
    """Whether ``function`` is a patch the seam installed."""
    return bool(getattr(function, PATCH_MARK, False))


def leaf_tasks(task_dict: Mapping[Any, Any]) -> Iterator[tuple[str, Any]]:
    """``(name, task)`` of each task in lmms-eval's task dictionary, its groups' subtasks included."""
    for key, value in task_dict.items():
        if isinstance(value, Mapping):
            yield from leaf_tasks(value)
        else:
            yield str(key), value


def plugin_task(name: str) -> bool:
    """Whether the last config lmms-eval loaded for task ``name`` is a plugin's."""
    return name in PLUGIN_TASKS


def declares_data(config: Mapping[str, Any]) -> bool:
    """Whether a task config names the data it reads (``metadata.pathbind_data``)."""
    metadata = config.get("metadata")
    return isinstance(metadata, Mapping) and bool(metadata.get("pathbind_data"))


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
