r"""Strict parsing of PathView answers: boxes, counts and options; never guess, return None instead.

Each parser reads the answer region of :mod:`pathbind_metrics.parsing`: every ``<answer>`` tag (else every
``\boxed{}``, else the whole text), after ``<think>`` reasoning is dropped; two tags that say different things
are two answers. Refusals are judged before parsing, by :func:`pathbind_metrics.refusal.is_refusal`.

- Boxes: every bracketed list of exactly four numbers, ``[x_min, y_min, x_max, y_max]`` (as JSON lists, so
  ``{"bbox_2d": [1, 2, 3, 4]}`` is read too). Their convention and validity are the scorer's business.
- Counts: the one whole number the region states ("<answer>12</answer>", "About 12 cells"); thousands may be
  grouped ("1,204"). Two different numbers ("10-15"), a fraction ("12.5"), a negative number or a number
  word ("twelve") is None: an unparseable count is never read as 0.
- Options: the option letter or text as :func:`pathbind_metrics.parse_choice` reads them; else the one
  option whose canonical label (through a :class:`~pathbind_metrics.labels.LabelMatcher`) is the only
  label of the options the region names ("tumour cells" is the option "neoplastic cell"). A negated label
  is not named ("It is definitely not tumor", "no tumor"), by the negation rule of :mod:`pathbind_metrics.parsing`.
  Two different options in answer position, by letter (as :func:`~pathbind_metrics.parse_choice` places it) or by
  label (a clause of at most three words and the label, "I mean stroma"), are None whatever joins them ("A. Actually,
  tumour cells."); counts and boxes that a correction changes are two numbers or two boxes, judged as above.
"""

from __future__ import annotations

import re

from pathbind_metrics.labels import LabelMatcher
from pathbind_metrics.parsing import _region as answer_region
from pathbind_metrics.parsing import choice_letters, clauses, drop_negated, named_choices

_NUMBER = r"[-+]?\d+(?:\.\d+)?"
_BOX = re.compile(rf"\[\s*({_NUMBER})\s*,\s*({_NUMBER})\s*,\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\]")
# Grouped thousands first, so "1,204" is one number; a sign or decimal part is kept so it can be refused.
# A clause states a label when the label ends it after at most this many words ("I mean stroma", "it is tumour
# cells"); a longer clause ending in a label is prose ("these cells invade the stroma").
_LEAD_WORDS = 3
_COUNT = re.compile(r"(?<![\d.])([-+]?)(\d{1,3}(?:,\d{3})+(?!\d)|\d+)(\.\d+)?")


def parse_boxes(text: str) -> list[list[float]] | None:
    """Every ``[x_min, y_min, x_max, y_max]`` in the answer, in order, or None when there is none.

    Examples
    --------
    >>> parse_boxes("<answer>[10, 20, 30.5, 40], [0, 0, 5, 5]</answer>")
    [[10.0, 20.0, 30.5, 40.0], [0.0, 0.0, 5.0, 5.0]]
    >>> parse_boxes("<answer>[x_min, y_min, x_max, y_max]</answer>") is None
    True
    """
    region, _ = answer_region(text)
    boxes = [[float(v) for v in match.groups()] for match in _BOX.finditer(region)]
    return boxes or None


def parse_count(text: str) -> int | None:
    """The one non-negative whole number the answer states, or None.

    Examples
    --------
    >>> parse_count("<answer>1,204</answer>")
    1204
    >>> parse_count("about 10-15 cells") is None
    True
    """
    region, _ = answer_region(text)
    numbers = {(sign, digits.replace(",", ""), fraction) for sign, digits, fraction in _COUNT.findall(region)}
    if len(numbers) != 1:
        return None
    sign, digits, fraction = numbers.pop()
    return int(digits) if sign != "-" and not fraction else None


def parse_option(text: str, options: list[str], matcher: LabelMatcher) -> str | None:
    """The option (its text) an answer names by letter, text or a synonym of its label; None if none or several.

    Examples
    --------
    >>> matcher = LabelMatcher({"neoplastic cell": ["tumor cell"], "lymphocyte": []})
    >>> parse_option("<answer>B</answer>", ["lymphocyte", "neoplastic cell"], matcher)
    'neoplastic cell'
    >>> parse_option("These are tumor cells.", ["lymphocyte", "neoplastic cell"], matcher)
    'neoplastic cell'
    >>> parse_option("These are not tumor cells.", ["lymphocyte", "neoplastic cell"], matcher) is None
    True
    """
    region, _ = answer_region(text)
    letters = named_choices(text, options)
    if not letters:
        return _labelled(region, options, matcher)
    if not letters <= set(choice_letters(len(options))):
        return None
    named = {options[ord(letter) - ord("A")] for letter in letters} | _positioned_labels(region, options, matcher)
    return named.pop() if len(named) == 1 else None  # "A. Actually, tumour cells." names two options


def _positioned_labels(region: str, options: list[str], matcher: LabelMatcher) -> set[str]:
    """The options a clause of the region states: the label ends a clause of at most ``_LEAD_WORDS`` other
    words ("Stroma.", "Actually, it is tumour cells."); negated ones excepted."""
    by_label = {matcher.canonical(option): option for option in options}
    stated = set()
    for clause in clauses(drop_negated(region)):
        words = clause.split()
        for lead in range(min(_LEAD_WORDS, len(words) - 1) + 1):
            if (label := matcher.canonical(" ".join(words[lead:]))) in by_label:
                stated.add(by_label[label])
                break
    return stated


def _labelled(region: str, options: list[str], matcher: LabelMatcher) -> str | None:
    """The one option whose canonical label is the only one of the options' labels the region names."""
    labels = [matcher.canonical(option) for option in options]
    named = set(matcher.find(drop_negated(region))) & set(labels) - {None}
    if len(named) != 1:
        return None
    hits = [option for option, label in zip(options, labels, strict=True) if label in named]
    return hits[0] if len(hits) == 1 else None


def parse_entities(text: str, matcher: LabelMatcher) -> list[str]:
    """The distinct canonical labels the answer names, in order of first mention (negations are not read).

    Examples
    --------
    >>> parse_entities("<answer>Tumour cells, stroma</answer>", LabelMatcher({"neoplastic cell": ["tumour cell"],
    ...                                                                      "stroma": []}))
    ['neoplastic cell', 'stroma']
    """
    region, _ = answer_region(text)
    return matcher.find(region)
