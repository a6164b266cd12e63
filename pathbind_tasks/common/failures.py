"""Responses that are not model answers: what lmms-eval's backends return when a request failed for good or
the token budget ran out, recognised so the item is scored invalid with the backend's reason, never parsed."""

from __future__ import annotations

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
    return None


def scoring_failure(exc: Exception) -> str:
    """The reason an item could not be scored, naming the missing field of a malformed document."""
    return f"missing field {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
