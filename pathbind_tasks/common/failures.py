"""Responses that are not model answers: what lmms-eval's backends return when a request failed for good or
the token budget ran out, recognised so the item is scored invalid with the backend's reason, never parsed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loguru import logger

from pathbind.wire import MODEL_FAILED
from pathbind_tasks.common.metrics import names

REQUEST_FAILED = "[LMMS_EVAL_REQUEST_FAILED"  # openai, gemini, async_openai once max_retries attempts failed
BUDGET_EXCEEDED = "[LMMS_EVAL_BUDGET_EXCEEDED]"  # chat API backends once --max_tokens is spent
MAX_DETAIL = 300  # characters of the backend's error kept in the reason


def no_answer_reason(text: str) -> str | None:
    """Why ``text`` is not a model answer, or None when it is one to parse.

    >>> no_answer_reason("[LMMS_EVAL_REQUEST_FAILED after 5 retries] Error code: 500")
    'request failed after 5 retries: Error code: 500'
    """
    stripped = text.strip()
    if not stripped:
        return "empty answer (the model or its backend returned no text; see the run log)"
    if stripped.startswith(REQUEST_FAILED):
        attempts, _, error = stripped.removeprefix(REQUEST_FAILED).partition("]")
        return f"request failed{attempts}: {error.strip()}"[:MAX_DETAIL]
    if stripped.startswith(BUDGET_EXCEEDED):
        return "not sent: the run's token budget (--max_tokens) was spent"
    if stripped.startswith(MODEL_FAILED):
        return f"the model could not answer: {stripped.removeprefix(MODEL_FAILED).strip()}"[:MAX_DETAIL]
    return None


def scoring_failure(exc: Exception) -> str:
    """The reason an item could not be scored, naming the missing field of a malformed document."""
    return f"missing field {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)


Record = dict[str, Any]


def response_scorer(kind: str, fields: dict[str, str], score: Callable[[Record, str], Record],
                    lost: Callable[[str], Record]) -> Callable[[Record, list[str]], Record]:
    """A total ``process_results`` for tasks whose model answer is an encoded response (maps, scores).

    ``score(doc, response)`` builds the item's record (rows whose data is at fault never get here: process_docs
    drops them); no answer (:func:`no_answer_reason`: the model's or backend's failure) or a response that cannot
    be decoded gives ``lost(reason)`` instead, logged. The record carries the item id and the doc
    columns ``fields`` names (record key -> column) and is emitted under every metric of ``kind``.
    """
    metrics = names(kind)

    def process_results(doc: Record, results: list[str]) -> Record:
        base = {"id": str(doc.get("id")), "cluster": doc.get("cluster"),
                **{key: doc.get(column) for key, column in fields.items()}}
        text = results[0] if results else ""
        try:
            problem = no_answer_reason(text)
            if problem:
                raise ValueError(problem)
            record = score(doc, text)
        except Exception as exc:  # the item is counted as lost with its reason
            reason = scoring_failure(exc)
            logger.warning(f"doc {base['id']}: cannot score {kind} ({reason})")
            record = lost(reason)
        record = {**base, **record}
        return dict.fromkeys(metrics, record)

    return process_results
