"""PathView-Bench's and PathVG's tasks under the names they had before the ``pathbind_`` prefix: each old name is an
alias (``pathbind_tasks/aliases/``, and the demo's second task-variant declaration) that runs the same task, with
its results filed under the name run."""

from __future__ import annotations

import re

import pytest
from conftest import lmms_eval, metric

from pathbind import make_plugin_manager
from pathbind.catalog import plugin_tasks, read_task_yaml, task_config
from pathbind_tasks.demo import pathview_synth

RENAMED = re.compile(r"pathbind_(pathview|pathvg_test)")


@pytest.fixture(scope="module")
def entries():
    return {e.name: e for e in plugin_tasks(make_plugin_manager()) if e.plugin == "pathbind_tasks"}


def test_every_renamed_task_and_group_keeps_its_old_name_as_an_alias(entries):
    """The 24 PathView-Bench tasks, their 6 groups, the demo's 24 tasks and 3 groups and PathVG's 2 tasks: each old
    name is the same task (its config but the name) or a group of the old names; every other PathBind task name is
    prefixed."""
    renamed = sorted(name for name, e in entries.items() if RENAMED.match(name) and e.kind in ("task", "group"))
    assert len(renamed) == 24 + 6 + 24 + 3 + 2
    for name in renamed:
        new, old = entries[name], entries[name.removeprefix("pathbind_")]
        assert old.kind == new.kind, name
        if new.kind == "task":
            assert {**task_config(old), "task": name} == task_config(new)
        else:
            canonical, alias = read_task_yaml(new.yaml_path), read_task_yaml(old.yaml_path)
            assert alias["task"] == [task.removeprefix("pathbind_") for task in canonical["task"]]
            assert {**alias, "group": name, "task": canonical["task"]} == canonical
    unprefixed = sorted(name for name, e in entries.items()
                        if e.kind in ("task", "group") and not name.startswith("pathbind_"))
    assert unprefixed == sorted(name.removeprefix("pathbind_") for name in renamed)


@pytest.mark.slow
def test_an_old_name_runs_the_same_task_as_the_new_one(tmp_path):
    """A release task and a demo task, each under both names in one run: the same figures and rows, filed under the
    name run."""
    pathview_synth.write_pathview_data(tmp_path / "data", 4, 3, layout=pathview_synth.RELEASE_LAYOUT)
    pairs = [("pathview_region_ocn", "pathbind_pathview_region_ocn"),
             ("pathview_demo_region_ocn", "pathbind_pathview_demo_region_ocn")]
    result = lmms_eval(tmp_path, "pathbind_control", ",".join(name for pair in pairs for name in pair),
                       env={"PATHBIND_DATA": str(tmp_path / "data")})
    for old, new in pairs:
        assert metric(result, old, "accounting") == metric(result, new, "accounting")
        assert metric(result, old, "mae") == metric(result, new, "mae") is not None
    assert metric(result, "pathview_region_ocn", "accounting")["rows"] == 4
