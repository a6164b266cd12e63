"""Plugin manager: loads every ``pathbind`` entry point, isolating and recording failures."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, replace
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, cast

import pluggy
from jinja2.sandbox import SandboxedEnvironment
from loguru import logger

from pathbind import hookspecs
from pathbind.hookspecs import ModelSpec, TaskVariants
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
        """Register ``plugin``; a hookimpl matching no PathBind hook (a typo) unregisters it with an error."""
        self.register(plugin, name=name)
        unknown = [caller.name for caller in self.get_hookcallers(plugin) or [] if caller.spec is None
                   and not all(impl.optionalhook for impl in caller.get_hookimpls() if impl.plugin is plugin)]
        if unknown:
            self.unregister(plugin)
            known = ", ".join(sorted(n for n in dir(hookspecs) if n.startswith("pathbind_")))
            raise pluggy.PluginValidationError(plugin, f"unknown hook {', '.join(unknown)}; PathBind hooks: {known}")

    def call_each(self, hook_name: str, **kwargs: Any) -> list[tuple[str, Any]]:
        """``(plugin_name, result)`` per result of the hook call, each checked against the hook's contract; a
        raising implementation, a result of the wrong type and each malformed entry are skipped and recorded."""
        return _HookCall(self, hook_name).run(kwargs)

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

        _HookCall(self, "pathbind_add_commands", check_new_commands).run({"subparsers": subparsers})

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


class _HookCall:
    """One call of a hook through pluggy's own machinery (its wrappers, ``firstresult``, tracing and monitoring),
    each implementation isolated: what it raises is its plugin's recorded failure, what it returns is checked
    against the hook's contract and attributed to it (a wrapper's own additions to it)."""

    def __init__(self, pm: PluginManager, hook_name: str, after_each: Callable[[str], None] | None = None) -> None:
        self.pm, self.hook_name, self.after_each = pm, hook_name, after_each
        caller: pluggy.HookCaller = getattr(pm.hook, hook_name)
        self.impls = caller.get_hookimpls()
        self.firstresult = bool(caller.spec and caller.spec.opts.get("firstresult"))
        self.owners: dict[int, tuple[str, Any]] = {}  # id of each checked result -> (its plugin, the result)

    def run(self, kwargs: dict[str, Any]) -> list[tuple[str, Any]]:
        impls = [self._wrapper(impl) if impl.wrapper or impl.hookwrapper else self._implementation(impl)
                 for impl in self.impls]
        # HookCaller.__call__ with the isolated implementations: pluggy's tracing and monitoring wrap _hookexec.
        outcome = self.pm._hookexec(self.hook_name, impls, kwargs, self.firstresult)
        results = ([] if outcome is None else [outcome]) if self.firstresult else cast(list[Any], outcome)
        return [self.owners[id(result)] for result in results]

    def _isolated(self, plugin: str, call: Callable[[], Any]) -> tuple[bool, Any]:
        """``(True, call())``, or ``(False, None)`` with the exception recorded against ``plugin``."""
        try:
            return True, call()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SystemExit too: a hook never ends the run
            self.pm._fail(plugin, _describe(exc, self.hook_name))
            return False, None
        finally:
            if self.after_each:
                self.after_each(plugin)

    def _implementation(self, impl: pluggy.HookImpl) -> pluggy.HookImpl:
        @functools.wraps(impl.function)  # pluggy reads the hook's argument names through __wrapped__
        def isolated(*args: Any, **kwargs: Any) -> Any:
            ok, result = self._isolated(impl.plugin_name, lambda: impl.function(*args, **kwargs))
            if ok and self.pm.trace_calls:
                logger.warning(f"pathbind trace: {impl.plugin_name}.{self.hook_name}() -> {result!r}")
            return None if result is None else self._adopt(impl.plugin_name, result)

        return pluggy.HookImpl(impl.plugin, impl.plugin_name, isolated, impl.opts)

    def _wrapper(self, impl: pluggy.HookImpl) -> pluggy.HookImpl:
        """``impl`` (``wrapper=True`` or old-style ``hookwrapper=True``) as a new-style wrapper that, when the
        plugin's code raises or breaks the one-yield protocol, records it and passes the results on unchanged."""

        @functools.wraps(impl.function)
        def isolated(*args: Any, **kwargs: Any) -> Generator[None, Any, Any]:
            ok, teardown = self._isolated(impl.plugin_name, lambda: _started(impl.function(*args, **kwargs)))
            results = yield
            if ok:
                ok, returned = self._isolated(impl.plugin_name, lambda: _finished(teardown, results, impl.hookwrapper))
            return self._adopt_all(impl.plugin_name, returned, results) if ok else results

        opts: pluggy.HookimplOpts = {**impl.opts, "wrapper": True, "hookwrapper": False}
        return pluggy.HookImpl(impl.plugin, impl.plugin_name, isolated, opts)

    def _adopt(self, plugin: str, result: Any) -> Any:
        """The part of ``result`` that passes the hook's check, attributed to ``plugin``; each problem recorded."""
        kept, problems = CHECKS[self.hook_name](result)
        for problem in problems:
            self.pm._fail(plugin, f"{self.hook_name} {problem}; skipped")
        if kept is not None:
            self.owners[id(kept)] = (plugin, kept)
        return kept

    def _adopt_all(self, plugin: str, returned: Any, results: Any) -> Any:
        """A wrapper's return: the results it keeps, and those it adds checked and attributed to it."""
        if self.firstresult:
            return returned if returned is None or id(returned) in self.owners else self._adopt(plugin, returned)
        if not isinstance(returned, list):
            self.pm._fail(plugin, f"{self.hook_name} wrapper returned {type(returned).__name__} {_short(returned)}, "
                                  "not the list of results; ignored")
            return results
        adopted = [entry if id(entry) in self.owners else self._adopt(plugin, entry) for entry in returned]
        return [entry for entry in adopted if entry is not None]


def _started(teardown: Any) -> Generator[None, Any, Any]:
    if next(teardown, _STOPPED) is _STOPPED:
        raise RuntimeError("the wrapper did not yield")
    return teardown


def _finished(teardown: Generator[None, Any, Any], results: Any, old_style: bool) -> Any:
    """What a started wrapper makes of ``results``: its return value (old style: what it set on its Result)."""
    outcome = pluggy.Result.from_call(lambda: results)
    try:
        teardown.send(outcome if old_style else results)
    except StopIteration as stop:
        return outcome.get_result() if old_style else stop.value
    teardown.close()
    raise RuntimeError("the wrapper yielded twice")


_STOPPED = object()


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


# Each hook's result check: (what to keep, or None to skip the whole result; one problem per skipped part).
ResultCheck = Callable[[Any], tuple[Any, list[str]]]


def _short(value: Any) -> str:
    text = repr(os.fspath(value)) if isinstance(value, os.PathLike) else repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def _list_of(what: str, problem_of: Callable[[Any], str], keep: Callable[[Any], Any]) -> ResultCheck:
    """A check for a hook that returns a list of ``what``: each entry kept (as ``keep(entry)``) unless
    ``problem_of(entry)`` names a problem; anything but a list or tuple is refused whole."""

    def check(result: Any) -> tuple[list[Any] | None, list[str]]:
        if not isinstance(result, list | tuple):
            return None, [f"returned {type(result).__name__} {_short(result)}, not a list of {what}"]
        kept, problems = [], []
        for entry in result:
            problem = problem_of(entry)
            if problem:
                problems.append(f"entry {_short(entry)} {problem}")
            else:
                kept.append(keep(entry))
        return kept, problems

    return check


def _folder_problem(entry: Any) -> str:
    if not isinstance(entry, str | os.PathLike) or isinstance(entry, bytes):
        return f"is a {type(entry).__name__}, not a path"
    path = Path(entry)
    if not path.is_absolute():
        return "is a relative path (it would depend on the working directory)"
    if path == Path(path.anchor):
        return "is the filesystem root"
    if not path.exists():
        return "does not exist"
    return "" if path.is_dir() else "is not a folder"


def _model_problem(entry: Any) -> str:
    if not isinstance(entry, ModelSpec):
        return f"is a {type(entry).__name__}, not a pathbind.ModelSpec"
    if not isinstance(entry.model_id, str) or not entry.model_id:
        return "has no model_id string"
    paths = (entry.simple_class_path, entry.chat_class_path)
    if not all(p is None or (isinstance(p, str) and "." in p) for p in paths) or paths == (None, None):
        return "needs simple_class_path or chat_class_path as a dotted 'module.Class' string"
    if not isinstance(entry.aliases, tuple | list) or not all(isinstance(a, str) for a in entry.aliases):
        return "has aliases that are not a tuple of strings"
    return ""


def _functions(kind: str, why_identifier: str = "") -> ResultCheck:
    """A check for a hook that returns a dict of name -> ``kind`` function; names must be Python identifiers."""

    def check(result: Any) -> tuple[dict[str, Callable[..., object]] | None, list[str]]:
        if not isinstance(result, dict):
            return None, [f"returned {type(result).__name__} {_short(result)}, not a dict of name -> function"]
        kept, problems = {}, []
        for name, function in result.items():
            if not isinstance(name, str) or not name.isidentifier():
                problems.append(f"name {_short(name)} is not a Python identifier{why_identifier}")
            elif not callable(function):
                problems.append(f"{kind} {name!r} is a {type(function).__name__}, not callable")
            else:
                kept[name] = function
        return kept, problems

    return check


def _variants_problem(entry: Any) -> str:
    if not isinstance(entry, TaskVariants):
        return f"is a {type(entry).__name__}, not a pathbind.TaskVariants"
    rename = entry.rename
    if not (isinstance(rename, tuple | list) and len(rename) == 2 and all(isinstance(p, str) for p in rename)
            and rename[0] != rename[1]):
        return "needs rename as (old prefix, new prefix), two different strings"
    problems = [f"has a {field} that {problem}" for field in ("source", "data_dir")
                if (problem := _folder_problem(getattr(entry, field)))]
    return "; ".join(problems)


def _normalised_variants(entry: TaskVariants) -> TaskVariants:
    """The declaration with Path folders and a tuple rename, whatever path and sequence types it was given."""
    return replace(entry, source=Path(entry.source), data_dir=Path(entry.data_dir),
                   rename=(entry.rename[0], entry.rename[1]))


def _returns_none(does: str) -> ResultCheck:
    def check(result: Any) -> tuple[None, list[str]]:
        return None, [f"returned {type(result).__name__} {_short(result)}; it {does} and returns None"]

    return check


# A bare string of folders would be walked character by character from ``/``: only lists are accepted.
_folders = _list_of("folders", _folder_problem, Path)
CHECKS: dict[str, ResultCheck] = {"pathbind_task_dirs": _folders, "pathbind_template_dirs": _folders,
                            "pathbind_models": _list_of("pathbind.ModelSpec", _model_problem, lambda spec: spec),
                            "pathbind_metrics": _functions("metric", " (YAMLs refer to it as an attribute)"),
                            "pathbind_demo_data": _functions("demo function"),
                            "pathbind_image_encoders": _functions("image encoder"),
                            "pathbind_task_variants": _list_of("pathbind.TaskVariants", _variants_problem,
                                                               _normalised_variants),
                            "pathbind_add_commands": _returns_none("adds parsers"),
                            "pathbind_compare_with_baseline": _returns_none("amends the results")}


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
