"""The seam's entry points, and the import watch that installs each patch once lmms-eval defines its target.

Two callers start the watch: the model entry point (:func:`lmms_eval_models`) and torch's extension autoload
(``pathbind_autoload``), which also runs in processes that never import ``lmms_eval.models`` (``lmms-eval tasks
list``, ``TaskManager()`` built first). Nothing here may raise: lmms-eval drops every entry-point model if one entry
point does, and torch fails its own import if an autoloaded extension raises. Nothing here imports lmms-eval or
torch at load time (that would make ``lmms-eval models`` about 9 s slower), nor any other module of the seam or of
PathBind: the start hook runs in every process that imports torch, so a patch's module is imported when lmms-eval
defines what it wraps, and the plugins are read when lmms-eval asks for the models.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any

# --- entry points ---------------------------------------------------------------------------------------------


def lmms_eval_models() -> list[Any]:
    """Entry point of group ``lmms_eval.models``: every plugin's models as ModelManifests; starts the watch.

    Imports neither ``lmms_eval.tasks`` nor torch: those would make ``lmms-eval models`` about 9 s slower.
    """
    try:
        from lmms_eval.models.registry_v2 import ModelManifest

        from pathbind.plugins import get_plugin_manager

        watch_lmms_eval()
        return [
            ModelManifest(model_id=spec.model_id, simple_class_path=spec.simple_class_path,
                          chat_class_path=spec.chat_class_path, aliases=spec.aliases)
            for spec in (c.value for c in get_plugin_manager().models().values())
        ]
    except KeyboardInterrupt:
        raise
    except BaseException:  # SystemExit from a plugin too: lmms-eval would drop every entry-point model
        _logger().exception("pathbind: could not register PathBind models with lmms-eval")
        return []



def watch_lmms_eval() -> None:
    """Install each patch once lmms-eval defines what it wraps, whichever of its modules is imported first."""
    when_defined("lmms_eval.tasks", "TaskManager", _install_tasks)
    when_defined("lmms_eval.evaluator", "evaluate", _install_evaluate)
    when_defined("lmms_eval.__main__", "make_table", _install_table)
    when_defined("lmms_eval.caching.response_cache", "ResponseCache", _install_cache)


# Each patch's module is imported when its target is defined, not before.


def _install_tasks() -> bool:
    from pathbind.lmms.tasks import install_task_hook

    return install_task_hook()


def _install_evaluate() -> bool:
    from pathbind.lmms.evaluate import install_evaluate_hook

    return install_evaluate_hook()


def _install_table() -> bool:
    from pathbind.lmms.table import install_table_hook

    return install_table_hook()


def _install_cache() -> None:
    from pathbind.lmms.cache import install_cache_hook

    install_cache_hook()


def _logger() -> Any:
    from loguru import logger

    return logger


# --- installing a hook once a module defines a name ----------------------------------------------------------

_PENDING: dict[str, dict[str, Callable[[], object]]] = {}  # module -> attribute -> install


def when_defined(module_name: str, attribute: str, install: Callable[[], object]) -> None:
    """Call ``install`` once module ``module_name`` defines ``attribute``: now if it does, at the end of the
    module's import if it is not imported yet, or, while it is being imported, at the first attribute lookup on
    it after the definition (the module's class is swapped, as ``importlib.util.LazyLoader`` does)."""
    module = sys.modules.get(module_name)
    if module is not None and attribute in vars(module):
        _guarded(install)
        return
    _PENDING.setdefault(module_name, {})[attribute] = install
    if module is None:
        if not any(isinstance(finder, _ImportWatcher) for finder in sys.meta_path):
            sys.meta_path.insert(0, _ImportWatcher())
    elif type(module) is types.ModuleType:
        module.__class__ = _WatchedModule


def _run_ready(module_name: str, namespace: Mapping[str, Any]) -> None:
    """Call the pending installs whose attribute ``namespace`` now defines (each once: an install that looks an
    attribute up on the watched module runs the others from there)."""
    pending = _PENDING.get(module_name, {})
    for attribute in [a for a in pending if a in namespace]:
        install = pending.pop(attribute, None)
        if install is not None:
            _guarded(install)


def _guarded(install: Callable[[], object]) -> None:
    try:
        install()
    except Exception:
        _logger().exception(f"pathbind: could not hook lmms-eval ({getattr(install, '__name__', install)})")


class _WatchedModule(types.ModuleType):
    """A module being imported whose definitions a hook waits for; plain again once none is pending."""

    def __getattribute__(self, name: str) -> Any:
        namespace = object.__getattribute__(self, "__dict__")
        module_name = namespace.get("__name__", "")
        if not _PENDING.get(module_name):
            object.__setattr__(self, "__class__", types.ModuleType)
        else:
            _run_ready(module_name, namespace)
        return types.ModuleType.__getattribute__(self, name)


class _ImportWatcher(importlib.abc.MetaPathFinder):
    """Finds nothing itself: gives a watched module's own loader a step after executing the module."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not _PENDING.get(fullname):
            return None
        spec = next((s for s in _other_specs(self, fullname, path, target) if s is not None), None)
        loader = getattr(spec, "loader", None)
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec

        def exec_and_install(module: types.ModuleType) -> None:
            exec_module(module)
            _run_ready(fullname, vars(module))

        try:
            loader.exec_module = exec_and_install  # type: ignore[union-attr]  # this spec's own loader object
        except Exception:
            _logger().debug(f"pathbind: cannot watch the import of {fullname}")
        return spec


def _other_specs(watcher: _ImportWatcher, fullname: str, path: Any, target: Any) -> Iterator[Any]:
    for finder in [f for f in sys.meta_path if f is not watcher]:
        find_spec = getattr(finder, "find_spec", None)
        yield find_spec(fullname, path, target) if find_spec else None

