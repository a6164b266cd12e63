"""Credentials kept out of what a run prints: the value after a ``--model_args`` key that names one (ending in
``api_key``, ``token``, ``secret`` or ``password``: the keys lmms-eval itself redacts in results.json), such a value
of 8 characters or more wherever it appears again (an error quoting it), and Hugging Face tokens (``hf_…``), each
shown as ``[REDACTED]``."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import IO, Any

REDACTED = "[REDACTED]"
# As lmms-eval's results.json: a key ending in api_key, token, secret or password, then "=" and its value.
_ASSIGNMENT = re.compile(r"(?i)(^|[,\s])(\w*(?:api_key|token|secret|password))=([^,\s]+)")
_HF_TOKEN = re.compile(r"\bhf_[A-Za-z0-9]{20,}\b")
LONG = 8  # a credential's value this long is also redacted wherever it appears alone (shorter ones, e.g. EMPTY, no)


def secret_values(model_args: Any) -> list[str]:
    """The values of ``model_args`` (``key=value,...`` as typed) whose keys name a credential, longest first."""
    found = {match.group(3) for match in _ASSIGNMENT.finditer(model_args)} if isinstance(model_args, str) else set()
    return sorted(found, key=len, reverse=True)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every credential after its key, each of ``secrets`` of at least ``LONG`` characters wherever it
    appears, and every Hugging Face token replaced by ``[REDACTED]``."""
    text = _ASSIGNMENT.sub(rf"\1\2={REDACTED}", text)
    for secret in secrets:
        if len(secret) >= LONG:
            text = text.replace(secret, REDACTED)
    return _HF_TOKEN.sub(REDACTED, text)


def redact_model_args(model_args: Any) -> Any:
    """``model_args`` (text) with its credentials' values redacted; anything else as it is."""
    return redact(model_args) if isinstance(model_args, str) else model_args


class RedactingStream:
    """A text stream (``sys.stdout``, ``sys.stderr``) that writes everything with ``secrets`` redacted; every other
    attribute is the stream's."""

    def __init__(self, stream: IO[str], secrets: list[str]) -> None:
        self._stream, self._secrets = stream, secrets

    def write(self, text: str) -> int:
        self._stream.write(redact(text, self._secrets))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
