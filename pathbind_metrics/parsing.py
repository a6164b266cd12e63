r"""Strict answer parsing for multiple-choice and yes/no questions: never guess, return None instead.

Where to look (the first that applies; everything else in the text is then ignored):

1. Reasoning is dropped first: ``<think>...</think>`` blocks, an unclosed ``<think>`` up to the next
   ``<answer>`` (or the end), and everything before a stray ``</think>``.
2. The content of every ``<answer>...</answer>`` tag (any case; an unclosed ``<answer>`` runs to the end).
3. Else the content of every ``\boxed{...}`` (``\text{...}``-style wrappers removed).
4. Else the whole text.

Decisions for ambiguous cases:

- Every answer form found in the region (all tags, or all boxes) is collected, with no precedence between
  forms or tags; an answer is returned only when they all name the same valid option.
  "<answer>B</answer><answer>B</answer>" is B, "<answer>B</answer><answer>C</answer>" is None.
  "Answer: B. Because A is wrong" is B (a bare "A is" is no answer form), but "Answer: B. (A) is wrong" and
  "Answer: A ... Answer: B" are None.
- Outside a tag or box a letter must be a capital, so the article "a" is never option A, except in an
  explicit form: parenthesised after "answer is", "answer:", "option is" or "option" ("The correct option is
  (d).", "Final answer: (b)", "option (d)"), or bare after "answer:" when a ")", punctuation or the line end
  follows ("Answer: c", "Answer: b) squamous"). "The answer is a gland" and "The answer is a" are None.
  Inside a tag or box a lone letter of either case ("<answer>a</answer>") is that option.
- A letter beyond the options ("E" with four options) makes the answer None, even beside a valid one;
  so does an enumeration after a form, hedged or not ("Answer: A or B", "Option A, C", "B or maybe C",
  "Answer: B (or C)", "Answer: c or d").
- A negated letter names nothing: a negator ("not", "no", "never", "without", "neither", "nor", "unlike",
  "excluding", "except", "rather than", "instead of", "isn't" and the other "-n't" forms of be, "non-")
  negates up to the next three words, stopping at punctuation or a contrast word ("but", "however",
  "rather", "instead", "though", "although", "yet", "whereas", "while"). "Answer: B, not C" is B; "not sure",
  "not certain", "not clear", "not only" and "not just" negate nothing.
- Yes/no words (是/是的 -> yes, 否/不是 -> no) count when they open the text, a line or a sentence and are
  followed by punctuation or the line end ("Yes, ...", "No."), when they follow "answer:"/"answer is", when
  they follow a comma or a correction ("Yes, but actually no.", "No. Actually, yes.": both None), or when
  paired with another ("Yes and no", "yes/no"). "No malignancy is seen" is None; "nodule", "none", "not" and
  "cannot" never count.
- A self-correction ("actually", "wait", "sorry", "I mean", "on second thought", "scratch that", "make that",
  "change to", "I was wrong", "correction", 其实, 不对, ...) makes the answer name both: every part it separates is
  also read with plain statements counted ("it is yes.", "should be B", "B is correct", a part opening with "B."),
  so "The answer is no. Actually, it is yes.", "A. Actually, B." and "B. Sorry, I mean C." are None, whatever the
  wording. A correction that repeats the same answer ("B. Actually, B is right.") keeps it.

Specificity judgements (:func:`parse_specificity`, the PathVG expression filter) are stricter still: only
``<answer>`` tags count (reasoning dropped as in rule 1; the ``<reason>`` and any other text are never read, as a
reason routinely says "specific"), and each tag must hold exactly ``Specific`` or ``Vague``, in any case (the
prompt itself writes SPECIFIC and VAGUE), surrounding spaces, punctuation, quotes and markdown ignored.
"<answer>Specific enough</answer>", "<answer>Not specific</answer>" and a bare "Specific" are invalid, and so
is any answer with two tags that disagree: each invalid answer carries one of three fixed reasons.
"""

import re
from typing import NamedTuple

# Reasoning is never an answer.
_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.I | re.S)
_THINK_OPEN = re.compile(r"<think>", re.I)
_THINK_CLOSE = re.compile(r"</think>", re.I)
_ANSWER_OPEN = re.compile(r"<answer>", re.I)
# Non-greedy up to the closing tag, so several tags stay apart; an unclosed tag runs to the end.
_ANSWER_TAG = re.compile(r"<answer>(.*?)(?:</answer>|\Z)", re.I | re.S)
# One level of nested braces, so \boxed{\text{B}} is read whole.
_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")
# LaTeX commands and braces inside \boxed{} carry no answer.
_LATEX = re.compile(r"\\[A-Za-z]+|[{}]")
# Markdown emphasis ("**B**", "`B`") hides letters from the forms below.
_MARKDOWN = re.compile(r"[*`]")

# What joins an enumeration of letters, maybe hedged: "A or B", "(A)/(C)", "B or maybe C", "B (or C)".
_HEDGE = r"(?:\s*\b(?i:maybe|perhaps|possibly|probably|rather|even|also)\b)?"
_SEP = r"\s*\(?\s*(?:,(?:\s*\b(?i:or|and)\b)?|/|&|\b(?i:or|and)\b)" + _HEDGE + r"\s*"
# A capital, or an enumeration of capitals, that does not run into a word ("Based").
_LETTERS = r"(\(?[A-Z]\)?(?:" + _SEP + r"\(?[A-Z]\)?)*)(?![A-Za-z0-9])"
# One standalone capital inside a matched form: skips the "OR" of "A OR B".
_LETTER = re.compile(r"(?<![A-Za-z])[A-Z](?![A-Za-z])")
_CHOICE_FORMS = (
    # "Answer: B", "the answer is (C)", "the correct option is D", "Final answer: option B".
    re.compile(r"(?i:\b(?:answer|option|choice)\s*(?:is\s*:?|:)\s*(?:option\s+)?)" + _LETTERS),
    # "Option B", "choice (C)" anywhere.
    re.compile(r"(?i:\b(?:option|choice)\s+)" + _LETTERS),
    # "(B)" anywhere: a parenthesised capital is not prose.
    re.compile(r"\(([A-Z])\)"),
    # "B." or "B)" opening a line, e.g. "B. Squamous cell carcinoma"; "A gland" has no such mark.
    re.compile(r"^\s*([A-Z])[.)](?!\S)", re.M),
)
# Lowercase letters only in an explicit form: parenthesised after "answer is", "answer:" or "option" ("option (d)"),
# or bare after "answer:" up to a ")", punctuation or the line end ("Answer: c"); never "the answer is a gland".
_LOWER_ONE = r"\(?[a-z]\)?(?![A-Za-z0-9])"
_LOWER_LIST = rf"({_LOWER_ONE}(?:{_SEP}{_LOWER_ONE})*)"
_LOWER_FORMS = (
    re.compile(r"(?i:\b(?:(?:answer|option|choice)\s*(?:is\s*:?|:)\s*(?:option\s+)?|(?:option|choice)\s+))"
               r"(?=\([a-z]\))" + _LOWER_LIST),
    re.compile(r"(?i:\b(?:answer|option|choice)\s*:\s*(?:option\s+)?)" + _LOWER_LIST
               + r"(?:(?<=\))|(?=[ \t]*(?:[.,;:!?](?!\S)|$)))", re.M),
)
_LOWER = re.compile(r"(?<![A-Za-z])[a-z](?![A-Za-z])")
# A negator and the up to three words it negates, up to punctuation or a contrast word; "not sure" negates nothing.
_NEGATOR = (r"(?:\b(?:not|no|never|without|neither|nor|unlike|excluding|except|rather\s+than|instead\s+of"
            r"|(?:is|are|was|were)n['\u2019]t)\b(?!\s+(?:sure|certain|clear|only|just)\b)|\bnon-)")
_SCOPE_WORD = r"\s*(?!(?:but|however|rather|instead|though|although|yet|whereas|while)\b)[^\s.,;:!?]+"
_NEGATED = re.compile(_NEGATOR + r"(?:" + _SCOPE_WORD + r"){0,3}", re.I)
# The whole response is one letter; only inside a tag or box may it be lowercase ("<answer>a</answer>").
_LONE_UPPER = re.compile(r"\s*([A-Z])\s*")
_LONE_ANY = re.compile(r"\s*\(?([A-Za-z])\)?[.)]?\s*")
# Where an option's text may stand alone: after "Answer:" to the line end, or after a "B. " prefix.
_ANSWER_REST = re.compile(r"\banswer\s*(?:is\s*:?|:)\s*([^\n]+)", re.I)
_PREFIX = re.compile(r"\(?[A-Z]\)?[.):]\s+(.+)", re.S)

_YN = r"(yes|no|是的|是|不是|否)"
# The word must end there (ASCII or fullwidth punctuation, line end): rejects "No malignancy", "nodule", "not".
_YN_END = r"(?=\s*(?:[.!?,;:)\uff0c\u3002\uff01\uff1f\uff1b\uff1a]|$))"
_YES_NO_FORMS = (
    # Opens the text, a line or a sentence: "Yes, the tissue is benign.", "No."
    re.compile(r"(?:^|(?<=[.!?\u3002\uff01\uff1f]))[\s(\"']*" + _YN + _YN_END, re.I | re.M),
    # An explicit form may go on: "The answer is yes because ...".
    re.compile(r"\banswer\s*(?:is\s*:?|:)\s*" + _YN + r"(?![A-Za-z\u4e00-\u9fff])", re.I),
    # A comma or a correction before it: "Yes, but actually no.", "No. Actually, yes."
    re.compile(r"(?:[,;:\uff0c]|\b(?:actually|but|or|rather|then|so|well|wait|maybe|perhaps|probably|i\s+think"
               r"|i'd\s+say)\b)[\s\"']*" + _YN + _YN_END, re.I),
    # A hedge names both words: "Yes and no", "yes or no", "yes/no".
    re.compile(r"(?<![A-Za-z])" + _YN + r"\s*(?:,|/|\bor\b|\band\b)\s*" + _YN + _YN_END, re.I),
)
_YES_NO = {"yes": "yes", "是的": "yes", "是": "yes", "no": "no", "不是": "no", "否": "no"}

# A self-correction: what follows it is a second answer, whatever its wording ("Actually, it is yes.", "A. Wait, B.").
_CORRECTION = re.compile(
    r"\b(?:actually|wait|correction|sorry|oops|hmm+|or\s+rather|no\s+rather|scratch\s+that|strike\s+that"
    r"|never\s*mind|on\s+(?:second|further)\s+thoughts?|upon\s+(?:further\s+)?reflection|i\s+mean[t]?"
    r"|i\s+was\s+wrong|i\s+misspoke|my\s+mistake|correcting\s+myself|i\s+take\s+(?:that|it)\s+back"
    r"|let\s+me\s+(?:correct|reconsider|rethink|revise|re-?check)|make\s+(?:that|it)|change\s+(?:my\s+answer\s+)?to"
    r"|(?:revised|corrected|updated)\s+answer)\b|其实|不对|更正|等等|等一下", re.I)
# In a corrected answer any plain statement of a letter or a yes/no word counts, not only the forms above:
# "it is B.", "should be B", "B is correct", a segment opening with "B" or "(B)", "it is yes.", "make that no."
_END = r"(?=\s*(?:[.!?,;:)\uff0c\u3002\uff01\uff1f]|$))"
_STATED_LETTERS = (
    re.compile(r"^[\s\"'(]*([A-Z])\)?" + _END),
    re.compile(r"\b(?i:is|be|to|with|mean|meant|that|pick|choose|select|go\s+for)\s+\(?([A-Z])\)?" + _END),
    re.compile(r"(?<![A-Za-z])\(?([A-Z])\)?\s+(?i:is\s+(?:the\s+)?(?:correct|right|better|best|answer|one)\b)"),
)
_STATED_YES_NO = re.compile(r"(?<![A-Za-z])" + _YN + _YN_END, re.I)


def choice_letters(n: int) -> list[str]:
    """Letters naming ``n`` options in order.

    Parameters
    ----------
    n : int
        Number of options, 0 to 26.

    Returns
    -------
    list of str
        ``['A', 'B', ...]``, ``n`` letters long.

    Raises
    ------
    ValueError
        If ``n`` is negative or above 26.

    Examples
    --------
    >>> choice_letters(3)
    ['A', 'B', 'C']
    """
    if not 0 <= n <= 26:
        raise ValueError(f"choice_letters needs 0 to 26 options, got {n}")
    return [chr(ord("A") + i) for i in range(n)]


def _without_reasoning(text: str) -> str:
    """``text`` without ``<think>`` reasoning (rule 1 of the module docstring) and markdown emphasis."""
    text = _THINK_BLOCK.sub(" ", text)
    if opened := _THINK_OPEN.search(text):
        answer = _ANSWER_OPEN.search(text, opened.end())
        text = text[: opened.start()] + (text[answer.start() :] if answer else "")
    return _MARKDOWN.sub("", _THINK_CLOSE.split(text)[-1])


def _regions(text: str) -> tuple[list[str], bool]:
    """The texts to parse (every answer tag, else every box, else the text), and whether they are tags or boxes."""
    text = _without_reasoning(text)
    if tags := _ANSWER_TAG.findall(text):
        return tags, True
    if boxed := _BOXED.findall(text):
        return [_LATEX.sub("", box) for box in boxed], True
    return [text], False


def _region(text: str) -> tuple[str, bool]:
    """The answer region as one text (its tags or boxes one per line), and whether it came from tags or boxes."""
    regions, contained = _regions(text)
    return "\n".join(regions), contained


def drop_negated(text: str) -> str:
    """``text`` without its negated words, so "not tumor" or "not (B)" names nothing (see the module docstring).

    Examples
    --------
    >>> drop_negated("Answer: B, not C")
    'Answer: B, '
    """
    return _NEGATED.sub("", text)


def _norm(text: str) -> str:
    """Lowercase, single-spaced, without surrounding punctuation or quotes."""
    return " ".join(text.split()).strip(" .,:;!?\"'").lower()


def correction_segments(region: str) -> list[str]:
    """The parts of an answer region a self-correction separates ("A. Actually, B." -> ["A. ", "B."]); one
    part, ``[region]``, when it holds no correction.

    Examples
    --------
    >>> correction_segments("The answer is no. Actually, it is yes.")
    ['The answer is no. ', 'it is yes.']
    """
    parts = _CORRECTION.split(region)
    return [parts[0], *(part.lstrip(" \t,;:.!-\u2014\u2013\uff0c\u3002") for part in parts[1:])]


def segment_choices(segment: str, options: list[str]) -> set[str]:
    """Every letter (in range or not) one part of a corrected answer names: by the module's forms, or stated
    plainly ("it is B", "B is correct", "B." opening the part)."""
    letters = choice_letters(len(options))
    kept = drop_negated(segment)
    stated = {m[1] for form in _STATED_LETTERS for m in form.finditer(kept)}
    return _named(segment.strip(), False, letters, options) | stated


def parse_choice(text: str, options: list[str]) -> str | None:
    """The option letter a response names, or None when it names none, several, or one out of range.

    Parameters
    ----------
    text : str
        Model response.
    options : list of str
        Option texts in order; option ``i`` is ``choice_letters(len(options))[i]``.

    Returns
    -------
    str or None
        ``'A'``, ``'B'``, ... or None; see the module docstring for the rules.

    Examples
    --------
    >>> parse_choice("<think>maybe A</think><answer>C</answer>", ["x", "y", "z"])
    'C'
    >>> parse_choice("A or B", ["x", "y", "z"]) is None
    True
    """
    regions, contained = _regions(text)
    letters = choice_letters(len(options))
    found = set().union(*(_named(region, contained, letters, options) for region in regions))
    for region in regions:  # a corrected answer names both: each part is read on its own, more leniently
        segments = correction_segments(region)
        if len(segments) > 1:
            found |= set().union(*(segment_choices(segment, options) for segment in segments))
    return found.pop() if len(found) == 1 and found <= set(letters) else None


def _named(region: str, contained: bool, letters: list[str], options: list[str]) -> set[str]:
    """Every letter one tag, box or text names, by a form, as a lone letter or by an option's exact text."""
    kept = drop_negated(region)
    found = {letter for form in _CHOICE_FORMS for m in form.finditer(kept) for letter in _LETTER.findall(m[1])}
    found |= {letter.upper() for form in _LOWER_FORMS for m in form.finditer(kept) for letter in _LOWER.findall(m[1])}
    if lone := (_LONE_ANY if contained else _LONE_UPPER).fullmatch(region):
        found.add(lone[1].upper())
    spans = [region, *_ANSWER_REST.findall(region)]
    spans += [m[1] for span in spans if (m := _PREFIX.fullmatch(span.strip()))]
    wanted = {_norm(span) for span in spans}
    return found | {letter for letter, option in zip(letters, options, strict=True) if _norm(option) in wanted - {""}}


def parse_yes_no(text: str) -> str | None:
    """``'yes'`` or ``'no'`` when a response gives exactly one of them, else None.

    Parameters
    ----------
    text : str
        Model response.

    Returns
    -------
    str or None
        ``'yes'``, ``'no'`` or None; see the module docstring for the rules.

    Examples
    --------
    >>> parse_yes_no("Yes, the glands are well formed.")
    'yes'
    >>> parse_yes_no("nodular lesion") is None
    True
    """
    region, _ = _region(text)
    found = {_YES_NO[word.lower()] for form in _YES_NO_FORMS for m in form.finditer(region) for word in m.groups()}
    if len(correction_segments(region)) > 1:  # "The answer is no. Actually, it is yes.": both named
        found |= {_YES_NO[m[1].lower()] for m in _STATED_YES_NO.finditer(region)}
    return found.pop() if len(found) == 1 else None


SPECIFICITY_LABELS = ("Specific", "Vague")
NO_ANSWER_TAG = "no <answer>...</answer> tag"
NOT_A_LABEL = "an <answer> tag holds neither Specific nor Vague"
CONFLICTING = "conflicting <answer> tags: Specific and Vague"


class Judgement(NamedTuple):
    """A specificity judge's answer: ``label`` ``"Specific"`` or ``"Vague"``, or None and why (``reason``)."""

    label: str | None
    reason: str = ""


def parse_specificity(text: str) -> Judgement:
    """The label every ``<answer>`` tag of a response gives, or an invalid judgement with its reason.

    Parameters
    ----------
    text : str
        Model response to the PathVG specificity prompt.

    Returns
    -------
    Judgement
        ``Judgement("Specific")``, ``Judgement("Vague")``, or ``Judgement(None, reason)`` with ``reason``
        ``NO_ANSWER_TAG``, ``NOT_A_LABEL`` or ``CONFLICTING``; see the module docstring for the rules.

    Examples
    --------
    >>> parse_specificity("<answer>SPECIFIC</answer><reason>A vague-looking but localised nest.</reason>")
    Judgement(label='Specific', reason='')
    >>> parse_specificity("<answer>Vague</answer> <answer>Specific</answer>").reason
    'conflicting <answer> tags: Specific and Vague'
    >>> parse_specificity("Specific").reason
    'no <answer>...</answer> tag'
    """
    tags = _ANSWER_TAG.findall(_without_reasoning(text))
    if not tags:
        return Judgement(None, NO_ANSWER_TAG)
    by_word = {label.lower(): label for label in SPECIFICITY_LABELS}
    labels = {by_word.get(_norm(tag)) for tag in tags}
    if None in labels:
        return Judgement(None, NOT_A_LABEL)
    return Judgement(labels.pop()) if len(labels) == 1 else Judgement(None, CONFLICTING)
