"""Plugin manager: loads every ``pathbind`` entry point, isolating and recording failures.

A hook is called one implementation at a time, in pluggy's own call order (``get_hookimpls()`` reversed, so
``tryfirst``/``trylast`` hold), each inside its own ``try``: what one raises or returns malformed is its plugin's
recorded failure, never the call's. PathBind's hooks return contributions, so hook wrappers (``wrapper=True``,
``hookwrapper=True``) are refused at registration, like a misspelled hook.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pluggy
from jinja2.sandbox import SandboxedEnvironment
from loguru import logger

from pathbind import hookspecs
from pathbind.hook_checks import CHECKS
from pathbind.templates import make_environment, render

ENTRY_POINT_GROUP = "pathbind"
DISABLE_ENV = "PATHBIND_DISABLE_PLUGINS"
TRACE_ENV = "PATHBIND_TRACE_PLUGINS"


@dataclass(frozen=True)
class Contribution:
    """One named item contributed by one plugin."""

    name: str
    plugin: str
    value: Any


class PluginManager(pluggy.PluginManager):
    """A pluggy manager whose hook calls never let one plugin break the others.

    ``failures`` maps a plugin name to each error it caused (at import or registration, raised in a hook, or a
    hook result that is skipped because it has the wrong form); ``conflicts`` lists names contributed by more
    than one plugin.
    """

    def __init__(self) -> None:
        super().__init__(ENTRY_POINT_GROUP)
        self.add_hookspecs(hookspecs)
        self.failures: dict[str, list[str]] = {}
        self.conflicts: list[str] = []
        self.trace_calls = bool(os.environ.get(TRACE_ENV))

    def load_entrypoints(self) -> None:
        """Register each entry point of the ``pathbind`` group that is not blocked, sorted by name for a stable
        order; a blocked one is not even imported."""
        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name):
            if self.is_blocked(ep.name) or self.has_plugin(ep.name):
                continue
            try:
                self.register_checked(ep.load(), ep.name)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # SystemExit at import included: one plugin never ends the run
                self._fail(ep.name, _describe(exc))

    def register_checked(self, plugin: object, name: str) -> None:
        """Register ``plugin``; a hookimpl matching no PathBind hook (a typo), or a hook wrapper, unregisters it
        with an error."""
        self.register(plugin, name=name)
        impls = [(caller, impl) for caller in self.get_hookcallers(plugin) or [] for impl in caller.get_hookimpls()
                 if impl.plugin is plugin]
        unknown = sorted({caller.name for caller, impl in impls if caller.spec is None and not impl.optionalhook})
        wrappers = sorted({caller.name for caller, impl in impls if impl.wrapper or impl.hookwrapper})
        if unknown or wrappers:
            self.unregister(plugin)
            known = ", ".join(sorted(n for n in dir(hookspecs) if n.startswith("pathbind_")))
            problem = (f"unknown hook {', '.join(unknown)}; PathBind hooks: {known}" if unknown else
                       f"hook wrapper {', '.join(wrappers)}; PathBind hooks take contributions only (drop "
                       "wrapper=True/hookwrapper=True, order with tryfirst/trylast)")
            raise pluggy.PluginValidationError(plugin, problem)

    def call_each(self, hook_name: str, after_each: Callable[[str], None] | None = None,
                  **kwargs: Any) -> list[tuple[str, Any]]:
        """``(plugin_name, result)`` per result of the hook call, in pluggy's call order, each checked against the
        hook's contract (:data:`pathbind.hook_checks.CHECKS`); a raising implementation, a result of the wrong type
        and each malformed entry are skipped and recorded. ``after_each(plugin_name)`` runs after each one."""
        results = []
        for impl in reversed(getattr(self.hook, hook_name).get_hookimpls()):
            try:
                result = impl.function(*(kwargs[name] for name in impl.argnames))
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # SystemExit too: a hook never ends the run
                self._fail(impl.plugin_name, _describe(exc, hook_name))
                continue
            finally:
                if after_each:
                    after_each(impl.plugin_name)
            if self.trace_calls:
                logger.warning(f"pathbind trace: {impl.plugin_name}.{hook_name}() -> {result!r}")
            if result is None:
                continue
            kept, problems = CHECKS[hook_name](result)
            for problem in problems:
                self._fail(impl.plugin_name, f"{hook_name} {problem}; skipped")
            if kept is not None:
                results.append((impl.plugin_name, kept))
        return results

    def task_dirs(self) -> list[Contribution]:
        """Task directories, one contribution per directory (``name`` is the folder path)."""
        return [Contribution(str(d), plugin, d) for plugin, dirs in self.call_each("pathbind_task_dirs") for d in dirs]

    def task_variants(self) -> list[Contribution]:
        """Task variant declarations, one contribution each (``name`` is the source folder)."""
        return [Contribution(str(v.source), plugin, v) for plugin, items in self.call_each("pathbind_task_variants")
                for v in items]

    def template_dirs(self) -> list[Path]:
        return [d for _, dirs in self.call_each("pathbind_template_dirs") for d in dirs]

    @functools.cached_property
    def templates(self) -> SandboxedEnvironment:
        """The sandboxed environment over every plugin's template folders (it caches the compiled templates)."""
        return make_environment(self.template_dirs())

    def models(self) -> dict[str, Contribution]:
        specs = self.call_each("pathbind_models")
        return self._unique("model", ((spec.model_id, plugin, spec) for plugin, items in specs for spec in items))

    def metrics(self) -> dict[str, Contribution]:
        return self._functions("pathbind_metrics", "metric")

    def demo_data(self) -> dict[str, Contribution]:
        return self._functions("pathbind_demo_data", "demo function")

    def image_encoders(self) -> dict[str, Contribution]:
        return self._functions("pathbind_image_encoders", "image encoder")

    def add_commands(self, subparsers: argparse._SubParsersAction) -> None:
        """Let each plugin add subcommands; one added without a callable ``func`` default fails when run."""
        known = set(subparsers.choices)

        def check_new_commands(plugin: str) -> None:
            for name in sorted(set(subparsers.choices) - known):
                if not callable(subparsers.choices[name].get_default("func")):
                    self._fail(plugin, f"pathbind_add_commands added command {name!r} without a callable func default")
                    subparsers.choices[name].set_defaults(func=_broken_command(name, plugin))
            known.update(subparsers.choices)

        self.call_each("pathbind_add_commands", check_new_commands, subparsers=subparsers)

    def compare_with_baseline(self, results: dict[str, Any], baseline: str) -> None:
        """Let each plugin pair the run's ``results`` with lmms-eval's ``--baseline`` sample log."""
        self.call_each("pathbind_compare_with_baseline", results=results, baseline=baseline)

    def _functions(self, hook_name: str, kind: str) -> dict[str, Contribution]:
        """The named functions a hook returns, each name once."""
        functions = self.call_each(hook_name)
        return self._unique(kind, ((name, plugin, fn) for plugin, items in functions for name, fn in items.items()))

    def _unique(self, kind: str, items: Iterator[tuple[str, str, Any]]) -> dict[str, Contribution]:
        found: dict[str, Contribution] = {}
        for name, plugin, value in items:
            if name in found:
                self._conflict(f"{kind} {name!r} from plugin {plugin!r} is shadowed by plugin {found[name].plugin!r}")
                continue
            found[name] = Contribution(name, plugin, value)
        return found

    def _fail(self, plugin: str, message: str) -> None:
        recorded = self.failures.setdefault(plugin, [])
        if message not in recorded:  # hooks are called many times per run: log each problem once
            logger.warning(f"pathbind plugin {plugin!r}: {message}")
            recorded.append(message)

    def _conflict(self, message: str) -> None:
        if message not in self.conflicts:
            logger.warning(f"pathbind: {message}")
            self.conflicts.append(message)


def _describe(exc: BaseException, hook_name: str | None = None) -> str:
    where = f" in {hook_name}" if hook_name else ""
    if isinstance(exc, SystemExit):
        return f"SystemExit{where}: the plugin called sys.exit({exc.code!r})"
    return f"{type(exc).__name__}{where}: {exc}"


def _broken_command(name: str, plugin: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        print(f"pathbind {name}: error: plugin {plugin!r} added this command without a func to run it", file=sys.stderr)
        return 1

    return run


def _disabled_plugins() -> frozenset[str]:
    """Plugin names listed in ``PATHBIND_DISABLE_PLUGINS`` (comma-separated)."""
    return frozenset(name.strip() for name in os.environ.get(DISABLE_ENV, "").split(",") if name.strip())


def make_plugin_manager(*, autoload: bool = True, plugins: dict[str, object] | None = None) -> PluginManager:
    """Build a fresh manager: ``plugins`` (name -> module or object) first, then the entry points; the names in
    ``PATHBIND_DISABLE_PLUGINS`` are blocked from registering."""
    pm = PluginManager()
    for name in _disabled_plugins():
        pm.set_blocked(name)
    for name, plugin in (plugins or {}).items():
        pm.register_checked(plugin, name)
    if autoload:
        pm.load_entrypoints()
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


def render_template(name: str, **variables: Any) -> str:
    """Render a template contributed by any installed plugin."""
    return render(get_plugin_manager().templates, name, variables)
