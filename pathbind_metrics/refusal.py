"""Whether an answer refuses for lack of visual evidence: the explicit answer form, then a phrase list.

Where to look: the content of the last ``<answer>`` tag (else the last ``\\boxed{}``, else the whole text),
after ``<think>`` reasoning is dropped, exactly as :mod:`pathbind_metrics.parsing` reads answers. A tag that
holds an answer is an answer, whatever the reasoning around it says.

1. The explicit form: the region is ``insufficient evidence`` (any case, surrounding punctuation ignored).
2. Else a phrase of ``REFUSAL_PHRASES`` occurs in the region, on word boundaries, any case, with "can not",
   "can't" and "cannot" alike. No single word counts: "no", "none", "not" and "unknown" never do, so
   "no nodules", "none seen" and "not atypical" are answers.
"""

from __future__ import annotations

import re

from pathbind_metrics.parsing import _region as answer_region

REFUSAL_FORM = "insufficient evidence"
# Each phrase says the image cannot settle the question; "{cannot}" stands for cannot / can not / can't.
REFUSAL_PHRASES = (
    "insufficient evidence", "insufficient information", "insufficient visual evidence",
    "not enough evidence", "not enough information", "not enough visual information", "not enough detail",
    "{cannot} be determined", "{cannot} determine", "unable to determine", "impossible to determine",
    "not possible to determine", "{cannot} be assessed", "{cannot} assess", "unable to assess",
    "{cannot} be identified", "{cannot} identify", "unable to identify", "{cannot} be counted", "{cannot} count",
    "unable to count", "{cannot} tell", "{cannot} be answered", "{cannot} answer", "unable to answer",
    "{cannot} be resolved", "not resolvable", "indeterminate", "undeterminable", "not determinable",
    "does not allow", "do not allow", "{cannot} be inferred", "{cannot} infer",
)
_CANNOT = r"(?:cannot|can\s*not|can't|can\u2019t)"


def _phrase(phrase: str) -> str:
    """A phrase as a pattern: words separated by any whitespace, "{cannot}" in all its spellings."""
    return r"\s+".join(_CANNOT if word == "{cannot}" else re.escape(word) for word in phrase.split())


_PHRASES = re.compile(r"(?<!\w)(?:" + "|".join(map(_phrase, REFUSAL_PHRASES)) + r")(?!\w)", re.I)


def is_refusal(text: str) -> bool:
    """True when ``text`` declines to answer for lack of evidence (see the module docstring).

    Parameters
    ----------
    text : str
        Model response.

    Returns
    -------
    bool

    Examples
    --------
    >>> is_refusal("<answer>Insufficient evidence</answer>")
    True
    >>> is_refusal("<think>cannot be determined?</think><answer>12</answer>")
    False
    >>> is_refusal("No nodules; the organ cannot be determined from isolated cells.")
    True
    >>> is_refusal("No nodules are seen.")
    False
    """
    region, _ = answer_region(text)
    if region.strip(" \t\n.,;:!\"'").lower() == REFUSAL_FORM:
        return True
    return _PHRASES.search(region) is not None
