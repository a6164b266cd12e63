"""Reads a rendered prompt back into question, options and answer format (for the controls)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_OPTION = re.compile(r"^\s*\(?([A-J])[.)]\s+(\S.*?)\s*$")
_YES_NO = re.compile(r"\bYes\b.*\bNo\b|\bNo\b.*\bYes\b|是.*否", re.DOTALL)


@dataclass(frozen=True)
class Prompt:
    question: str
    options: tuple[str, ...]
    yes_no: bool
    wants_thinking: bool


def read_prompt(text: str) -> Prompt:
    """Find the options (consecutive ``A.``/``B)`` lines from A) and the question before them."""
    lines = text.splitlines()
    options: list[str] = []
    first = None
    for number, line in enumerate(lines):
        match = _OPTION.match(line)
        if match and ord(match.group(1)) - ord("A") == len(options):
            first = number if first is None else first
            options.append(match.group(2))
        elif options:
            break
    before = lines[:first] if first is not None else lines
    questions = [line.strip() for line in before if line.strip().endswith("?")]
    question = questions[-1] if questions else next((line.strip() for line in reversed(before) if line.strip()), "")
    return Prompt(question, tuple(options), yes_no=not options and bool(_YES_NO.search(text)),
                  wants_thinking="<think>" in text)
