"""What each hook's result must be: a check per hook that keeps the usable part of a plugin's result and names
each problem with the rest (:data:`CHECKS`, applied by :class:`pathbind.plugins.PluginManager`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from pathbind.hookspecs import ModelSpec, TaskVariants

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
