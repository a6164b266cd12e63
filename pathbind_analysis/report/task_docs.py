"""A task's documents as lmms-eval builds them, so overlays show exactly the images the models were given."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def load_task_docs(task: str) -> Sequence[dict[str, Any]]:
    """The evaluation documents of ``task`` after its ``process_docs``, indexed like the sample logs' ``doc_id``.

    Goes through lmms-eval's TaskManager with PathBind's bridge installed, so every grounding task (packaged demo
    data, ``PATHBIND_DATA`` releases, PathVG's image folder) resolves its data the way it did during the run.
    Raises ValueError naming the task and the cause.
    """
    from pathbind.bridge import install_task_hook

    if not install_task_hook():
        raise ValueError(f"{task}: this lmms-eval cannot index PathBind tasks (see `pathbind doctor`)")
    from lmms_eval.tasks import TaskManager, get_task_dict

    try:
        built = get_task_dict([task], TaskManager("ERROR"))[task]
        return built.eval_docs
    except Exception as exc:  # any loader failure (missing data, unknown task) becomes a note in the report
        raise ValueError(f"{task}: cannot load its documents ({type(exc).__name__}: {exc})") from exc
