"""Chat messages for lmms-eval's chat backends (openai, vllm, sglang, ...), built from the very functions the
simple backends call, so both receive the same content.

lmms-eval hands a chat model ``doc_to_messages(doc)``; a simple model gets ``doc_to_text`` as its context and
calls ``doc_to_visual``. :class:`UserTurn` makes the first from the other two: one user turn holding the images
of the document's condition (none at all in the text-only condition: no image part, no placeholder), then
the rendered prompt.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class UserTurn:
    """A task's ``doc_to_messages``, made from the ``doc_to_visual`` and ``doc_to_text`` its YAML names.

    A YAML that overrides either of them must override ``doc_to_messages`` with a matching ``UserTurn``
    (``tests/models/test_served_models.py`` checks every plugin task).
    """

    doc_to_visual: Callable[..., Any]
    doc_to_text: Callable[..., str]

    def __call__(self, doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> list[dict]:
        content: list[dict[str, Any]] = [{"type": "image", "url": image}
                                         for image in self._visuals(doc, lmms_eval_specific_kwargs)]
        content.append({"type": "text", "text": self.doc_to_text(doc, lmms_eval_specific_kwargs)})
        return [{"role": "user", "content": content}]

    def _visuals(self, doc: dict[str, Any], kwargs: dict[str, Any] | None) -> list[Any]:
        # lmms-eval passes its kwargs to a two-parameter doc_to_visual only; do the same.
        takes_kwargs = len(inspect.signature(self.doc_to_visual).parameters) == 2
        visuals = self.doc_to_visual(doc, kwargs) if takes_kwargs and kwargs is not None else self.doc_to_visual(doc)
        return list(visuals or [])
