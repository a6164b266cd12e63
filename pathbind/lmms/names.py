"""Task names lmms-eval would not find, said with the close names it has: PathBind's ``lmms_eval`` command asks
before lmms-eval builds its task manager and the model (lmms-eval's own message comes after both, and suggests
none); under the other launchers the outcome hook says it after lmms-eval's error."""

from __future__ import annotations

import difflib
import os
from collections.abc import Sequence

CLOSE = 5  # close names shown per unknown name, PathBind's and lmms-eval's each


def unknown_tasks(requested: Sequence[str], include_path: Sequence[str] = ()) -> str:
    """"" when each of ``requested`` (``--tasks``, split at commas) is a task, group or tag lmms-eval indexes with
    the plugins' tasks and ``include_path`` folders, or is no name at all (a YAML file or folder, a pattern with
    ``*``); otherwise one line naming each unknown name with its close PathBind and lmms-eval names."""
    names = [name for name in requested if name and "*" not in name and not os.path.exists(name)]
    if not names:
        return ""
    from pathbind.catalog import plugin_tasks
    from pathbind.lmms.index import read_task_index
    from pathbind.plugins import get_plugin_manager

    index, _ = read_task_index(include_path=include_path)
    unknown = [name for name in dict.fromkeys(names) if name not in index]
    if not unknown:
        return ""
    ours = {entry.name for entry in plugin_tasks(get_plugin_manager())} & index.keys()
    return "; ".join(_suggestion(name, ours, index.keys() - ours) for name in unknown) + (
        " (`pathbind tasks` lists PathBind's tasks and groups, `lmms-eval tasks list` every task)")


def _suggestion(name: str, ours: set[str], theirs: set[str]) -> str:
    close = [f"{kind} {', '.join(found)}" for kind, names in (("PathBind", ours), ("lmms-eval", theirs))
             if (found := difflib.get_close_matches(name, sorted(names), n=CLOSE, cutoff=0.6))]
    return f"no task, group or tag is named {name!r}" + (f": did you mean {'; or '.join(close)}?" if close else
                                                          ", and none has a close name")
