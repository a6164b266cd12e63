"""Every plugin task with local data loads through lmms-eval and renders its first documents without a model."""

from __future__ import annotations

import pytest

from pathbind import make_plugin_manager
from pathbind.catalog import plugin_tasks

# Tasks whose data ships with a plugin; hub and gated sets are covered by fixtures in test_sources.py.
TASKS = sorted(e.name for e in plugin_tasks(make_plugin_manager())
               if e.kind == "task" and e.data is not None and e.data.local_files)


@pytest.mark.parametrize("name", TASKS)
def test_task_builds_and_renders_two_documents(task_manager, name):
    """lmms-eval builds the task from its YAML; two docs give a prompt string and a list of visuals."""
    task = task_manager.load_task_or_group([name])[name]
    docs = list(task.test_docs())[:2]
    assert len(docs) == 2
    for doc in docs:
        prompt = task.doc_to_text(doc)
        assert isinstance(prompt, str) and len(prompt) > 20
        assert isinstance(task.doc_to_visual(doc), list)
        assert task.doc_to_target(doc) not in (None, "")
