"""Whether an answer refuses for lack of visual evidence: the explicit answer form, then a phrase list.

Where to look: every ``<answer>`` tag (else every ``\\boxed{}``, else the whole text), after ``<think>``
reasoning is dropped, exactly as :mod:`pathbind_metrics.parsing` reads answers. Each tag must refuse: a tag
that holds an answer is an answer, whatever the reasoning or the other tags say.

1. The explicit form: the tag (or text) is ``insufficient evidence`` (any case, surrounding punctuation ignored).
2. Else a phrase of ``REFUSAL_PHRASES`` occurs in it, on word boundaries, any case, with "can not",
   "can't" and "cannot" alike. No single word counts: "no", "none", "not" and "unknown" never do, so
   "no nodules", "none seen" and "not atypical" are answers.
3. A refusal followed by an answer is an answer: after the last phrase, a contrast word ("but", "however",
   "though", "although", "yet", "still", "anyway") and then, in the same sentence, an assertion ("it is",
   "this is", "they are", "it looks", "I think", "probably", "likely", "maybe", "my guess" ...) not itself
   hedged away ("it is not", "it's hard", "it is unclear"), or an explicit "answer is"/"answer:" form.
   "I cannot determine the organ, but it is liver" and "Cannot tell; answer: liver" answer; "I cannot
   determine the organ, but it is not possible to say more" refuses.
"""

from __future__ import annotations

import re

from pathbind_conventions import REFUSAL_FORM
from pathbind_metrics.parsing import _regions as answer_regions

# Each phrase says the image cannot settle the question; "{cannot}" stands for cannot / can not / can't.
REFUSAL_PHRASES = (
    REFUSAL_FORM, "insufficient information", "insufficient visual evidence",
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
_ASSERTION = (r"(?:(?:it|this|that|they|these|those)(?:\s+(?:is|are|was|were|looks?|seems?|appears?)|['\u2019]s)"
              r"|i\s+(?:think|believe|guess|would\s+say)|i['\u2019]d\s+say|probably|likely|possibly|perhaps|maybe"
              r"|my\s+(?:best\s+)?guess)\b(?!\s+(?:not|unclear|uncertain|impossible|difficult|hard|unknown)\b)")
# What withdraws a refusal: a contrast, then an assertion in the same sentence; or an explicit answer form.
_ANSWER_AFTER = re.compile(r"\b(?:but|however|though|although|yet|still|anyway)\b[^.!?\n]*?\b" + _ASSERTION
                           + r"|\banswer\s*(?:is\s*:?|:)\s*\w", re.I)


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
    >>> is_refusal("I cannot determine the organ, but it is liver")
    False
    """
    regions, _ = answer_regions(text)
    return all(map(_refuses, regions))


def _refuses(region: str) -> bool:
    """One tag (or the text) refuses: the explicit form, or a phrase that no answer follows."""
    if region.strip(" \t\n.,;:!\"'").lower() == REFUSAL_FORM:
        return True
    phrases = list(_PHRASES.finditer(region))
    return bool(phrases) and _ANSWER_AFTER.search(region, phrases[-1].end()) is None
