"""Every plugin task with local data loads through lmms-eval and renders its first documents without a model."""

from __future__ import annotations

from typing import Any

import pytest

from pathbind import make_plugin_manager
from pathbind.catalog import plugin_tasks
from pathbind.wire import AttentionRequest, OcclusionRequest, decode_request
from pathbind_metrics import choice_letters

# Tasks whose data ships with a plugin; hub and gated sets are covered by fixtures in test_sources.py.
TASKS = sorted(e.name for e in plugin_tasks(make_plugin_manager())
               if e.kind == "task" and e.data is not None and e.data.local_files)
ANSWER_FORMS = {"mcq": "where X is the single letter of the correct option", "yesno": 'Answer with "Yes" or "No"'}


def asked(doc: dict[str, Any], prompt: str) -> tuple[str, str]:
    """The text the model reads and the text it is asked about: a request's prompt and entity, else the prompt
    and the document's question (the expression, for the PathVG specificity judge)."""
    request = decode_request(prompt)
    if isinstance(request, AttentionRequest):
        return request.queries[0].prompt, request.queries[0].entity
    if isinstance(request, OcclusionRequest):
        return request.prompt, request.entity
    return prompt, str(doc["question"] if "question" in doc else doc["expression"]).strip()


@pytest.mark.parametrize("name", TASKS)
def test_task_builds_and_renders_two_documents(task_manager, name):
    """lmms-eval builds the task from its YAML; each of two docs renders a prompt that asks the doc's own question
    (its expression, for attention and occlusion requests), offers its options as lettered lines and states its
    answer format; the target is the doc's field the YAML names, and the visuals are a list."""
    task = task_manager.load_task_or_group([name])[name]
    docs = list(task.test_docs())[:2]
    assert len(docs) == 2
    for doc in docs:
        text, subject = asked(doc, task.doc_to_text(doc))
        assert subject and subject in text, f"{name}: the prompt does not ask {subject!r}"
        options = doc.get("options") or []
        for letter, option in zip(choice_letters(len(options)), options, strict=True):
            assert f"{letter}. {' '.join(option.split())}" in text.splitlines(), f"{name}: option {letter} missing"
        if doc.get("answer_format") in ANSWER_FORMS:
            assert ANSWER_FORMS[doc["answer_format"]] in text
            assert (doc["answer_format"] == "mcq") == bool(options)
        assert isinstance(task.doc_to_visual(doc), list)
        assert task.doc_to_target(doc) == doc[task.config.doc_to_target] not in (None, "")
