"""Plugin manager: loads every ``pathbind`` entry point, isolating and recording failures."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pluggy

from pathbind import hookspecs

logger = logging.getLogger("pathbind")

ENTRY_POINT_GROUP = "pathbind"
DISABLE_ENV = "PATHBIND_DISABLE_PLUGINS"
TRACE_ENV = "PATHBIND_TRACE_PLUGINS"


@dataclass(frozen=True)
class ModelSpec:
    """An lmms-eval model contributed by a plugin (mirrors lmms-eval's ``ModelManifest``)."""

    model_id: str
    simple_class_path: str | None = None
    chat_class_path: str | None = None
    aliases: tuple[str, ...] = ()
    description: str = ""


@dataclass(frozen=True)
class Contribution:
    """One named item contributed by one plugin."""

    name: str
    plugin: str
    value: Any


class PluginManager(pluggy.PluginManager):
    """A pluggy manager whose hook calls never let one plugin break the others.

    ``failures`` maps a plugin name to the error it raised (at import, registration or in a
    hook); ``conflicts`` lists names contributed by more than one plugin.
    """

    def __init__(self) -> None:
        super().__init__(ENTRY_POINT_GROUP)
        self.add_hookspecs(hookspecs)
        self.failures: dict[str, str] = {}
        self.conflicts: list[str] = []
        self.trace_calls = bool(os.environ.get(TRACE_ENV))

    def load_entrypoints(self, disabled: frozenset[str] = frozenset()) -> None:
        """Register each entry point of the ``pathbind`` group, sorted by name for a stable order."""
        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name):
            if ep.name in disabled or self.has_plugin(ep.name):
                continue
            try:
                self.register_checked(ep.load(), ep.name)
            except Exception as exc:  # any plugin error is reported, never fatal
                self._fail(ep.name, exc)

    def register_checked(self, plugin: object, name: str) -> None:
        """Register ``plugin``; a hookimpl matching no PathBind hook (a typo) unregisters it with an error."""
        self.register(plugin, name=name)
        unknown = [caller.name for caller in self.get_hookcallers(plugin) or [] if caller.spec is None
                   and not all(impl.optionalhook for impl in caller.get_hookimpls() if impl.plugin is plugin)]
        if unknown:
            self.unregister(plugin)
            known = ", ".join(sorted(n for n in dir(hookspecs) if n.startswith("pathbind_")))
            raise pluggy.PluginValidationError(plugin, f"unknown hook {', '.join(unknown)}; PathBind hooks: {known}")

    def call_each(self, hook_name: str, **kwargs: Any) -> Iterator[tuple[str, Any]]:
        """Yield ``(plugin_name, result)`` per implementation, skipping and recording failures."""
        for impl in reversed(getattr(self.hook, hook_name).get_hookimpls()):
            try:
                result = impl.function(**kwargs)
            except Exception as exc:
                self._fail(impl.plugin_name, exc, hook_name)
                continue
            if self.trace_calls:
                logger.warning("pathbind trace: %s.%s() -> %r", impl.plugin_name, hook_name, result)
            if result is not None:
                yield impl.plugin_name, result

    def task_dirs(self) -> list[Contribution]:
        """Task directories, one contribution per directory (``name`` is the folder path)."""
        return [Contribution(str(Path(d)), plugin, Path(d)) for plugin, dirs in self.call_each("pathbind_task_dirs")
                for d in dirs]

    def template_dirs(self) -> list[Path]:
        return [Path(d) for _, dirs in self.call_each("pathbind_template_dirs") for d in dirs]

    def models(self) -> dict[str, Contribution]:
        specs = self.call_each("pathbind_models")
        return self._unique("model", ((spec.model_id, plugin, spec) for plugin, items in specs for spec in items))

    def metrics(self) -> dict[str, Contribution]:
        functions = self.call_each("pathbind_metrics")
        return self._unique("metric", ((name, plugin, fn) for plugin, items in functions for name, fn in items.items()))

    def _unique(self, kind: str, items: Iterator[tuple[str, str, Any]]) -> dict[str, Contribution]:
        found: dict[str, Contribution] = {}
        for name, plugin, value in items:
            if name in found:
                self._conflict(f"{kind} {name!r} from plugin {plugin!r} is shadowed by plugin {found[name].plugin!r}")
                continue
            found[name] = Contribution(name, plugin, value)
        return found

    def _fail(self, plugin: str, exc: BaseException, hook_name: str | None = None) -> None:
        where = f" in {hook_name}" if hook_name else ""
        message = f"{type(exc).__name__}{where}: {exc}"
        if self.failures.get(plugin) != message:
            logger.warning("pathbind plugin %r failed and is skipped: %s", plugin, message)
        self.failures[plugin] = message

    def _conflict(self, message: str) -> None:
        if message not in self.conflicts:
            logger.warning("pathbind: %s", message)
            self.conflicts.append(message)


def disabled_plugins() -> frozenset[str]:
    """Plugin names listed in ``PATHBIND_DISABLE_PLUGINS`` (comma-separated)."""
    return frozenset(name.strip() for name in os.environ.get(DISABLE_ENV, "").split(",") if name.strip())


def make_plugin_manager(*, autoload: bool = True, plugins: dict[str, object] | None = None) -> PluginManager:
    """Build a fresh manager: ``plugins`` (name -> module or object) first, then the entry points."""
    pm = PluginManager()
    for name, plugin in (plugins or {}).items():
        pm.register_checked(plugin, name)
    if autoload:
        pm.load_entrypoints(disabled_plugins())
    return pm


@functools.cache
def get_plugin_manager() -> PluginManager:
    """The process-wide manager used by lmms-eval runs; tests build their own with make_plugin_manager."""
    return make_plugin_manager()


def plugin_metric(name: str) -> Callable[..., object]:
    """Look up a metric contributed by any plugin, with the available names in the error."""
    metrics = get_plugin_manager().metrics()
    if name not in metrics:
        available = ", ".join(sorted(metrics))
        raise AttributeError(f"No PathBind plugin provides a metric named {name!r}. Available: {available}")
    return metrics[name].value
