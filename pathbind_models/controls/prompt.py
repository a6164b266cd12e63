"""Reads a rendered prompt back into question, options and answer format (for the controls)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_OPTION = re.compile(r"^\s*\(?([A-J])[.)]\s+(\S.*?)\s*$")
# Each word's end is searched for, its start then checked: a pattern opening with \b is tried at every position.
_YES, _NO = re.compile(r"Yes\b"), re.compile(r"No\b")
_WORD_CHARACTER = re.compile(r"\w")


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
    return Prompt(question, tuple(options), yes_no=not options and _offers_yes_no(text),
                  wants_thinking="<think>" in text)


def _offers_yes_no(text: str) -> bool:
    """Both words "Yes" and "No", or 是 before 否."""
    return (_has_word(text, _YES) and _has_word(text, _NO)) or 0 <= text.find("是") < text.rfind("否")


def _has_word(text: str, word_end: re.Pattern[str]) -> bool:
    return any(m.start() == 0 or not _WORD_CHARACTER.match(text, m.start() - 1) for m in word_end.finditer(text))
