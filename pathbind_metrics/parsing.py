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
- Two different answers in answer position make the answer None, whatever words join them ("I would say A, no
  wait, D.", "No - sorry, yes.", "B... actually C", "Answer: B. Actually, Lymphoma."). Answer position is a
  token standing alone before punctuation, a spaced dash or the line end ("A,", "D.", "yes" last), a
  parenthesised letter, a letter in an enumeration ("A or B") or called right ("C is correct"), or a clause that
  is an option's text. Prose is not: "A gland", "B-cell", "B's", "A is wrong", "No malignancy is seen";
  so "Answer: B. Because A is wrong" is B, and a repeated answer ("B. Actually, B is right.") keeps it.
- Yes/no words (是/是的 -> yes, 否/不是 -> no) count in answer position, after "answer:"/"answer is" ("The
  answer is yes because ..."), or paired with another ("Yes and no", "yes/no": None). "nodule", "none", "not",
  "cannot" and 是 inside a Chinese word (是否) never count.

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
    # An explicit form may go on: "The answer is yes because ...".
    re.compile(r"\banswer\s*(?:is\s*:?|:)\s*" + _YN + r"(?![A-Za-z\u4e00-\u9fff])", re.I),
    # A hedge names both words: "Yes and no", "yes or no", "yes/no".
    re.compile(r"(?<![A-Za-z])" + _YN + r"\s*(?:,|/|\bor\b|\band\b)\s*" + _YN + _YN_END, re.I),
)
_YES_NO = {"yes": "yes", "是的": "yes", "是": "yes", "no": "no", "不是": "no", "否": "no"}

# Answer position: a token standing alone before punctuation, a spaced dash or the line end ("A,", "B.", "C" last,
# "No - ..."), or a parenthesised letter. Two different answers there are two answers, whatever words join them
# ("A, no wait, D.", "No - sorry, yes.", "B... actually C"); "A gland", "B-cell", "B's" and "A is wrong" are prose.
_FOLLOW = r"(?=\s*(?:[.,;:!?)\"\u201d\u2026\uff0c\u3002\uff01\uff1f\uff1b\uff1a]|$)|\s+[-\u2013\u2014]|[\u2013\u2014])"
# A letter is also in answer position in an enumeration of such letters ("A or B.", not "A and B cells") or when
# called right ("C is correct").
_LETTER_FOLLOW = (_FOLLOW + r"|(?=" + _SEP + r"\(?[A-Z]\)?" + _FOLLOW + ")"
                  r"|(?=\s+(?i:is|was)\s+(?:the\s+)?(?i:correct|right|best|better|answer|one)\b)")
_POSITIONED_LETTER = re.compile(r"(?<![A-Za-z0-9'\u2019-])(?:\(([A-Z])\)|([A-Z])(?:" + _LETTER_FOLLOW + "))", re.M)
_POSITIONED_YES_NO = re.compile(r"(?<![A-Za-z\u4e00-\u9fff'\u2019-])" + _YN + _FOLLOW, re.I | re.M)
# Clauses, for an option's text standing as one ("Answer: B. Actually, Lymphoma.").
_CLAUSE = re.compile(r"[.,;:!?\n\u2026\uff0c\u3002]+|\s[-\u2013\u2014]+\s|[\u2013\u2014]")


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


def positioned_choices(region: str, options: list[str]) -> set[str]:
    """Every option letter a region names in answer position: a letter standing alone before punctuation, a
    spaced dash or the line end, a parenthesised letter, or a clause that is an option's text; negated ones
    excepted. Letters beyond the options are left to the forms.

    Examples
    --------
    >>> sorted(positioned_choices("I would say A, no wait, D.", ["w", "x", "y", "z"]))
    ['A', 'D']
    >>> sorted(positioned_choices("A. Because the nuclei are not B's, C is wrong.", ["w", "x", "y", "z"]))
    ['A']
    """
    letters = choice_letters(len(options))
    kept = drop_negated(region)
    found = {m[1] or m[2] for m in _POSITIONED_LETTER.finditer(kept)} & set(letters)
    named = {_norm(clause) for clause in clauses(kept)} - {""}
    return found | {letter for letter, option in zip(letters, options, strict=True) if _norm(option) in named}


def clauses(region: str) -> list[str]:
    """The clauses of a region, split at punctuation and spaced dashes: where an option's text stands alone."""
    return _CLAUSE.split(region)


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
    found = named_choices(text, options)
    return found.pop() if len(found) == 1 and found <= set(choice_letters(len(options))) else None


def named_choices(text: str, options: list[str]) -> set[str]:
    """Every letter (in range or not) a response names, by the forms or in answer position; parse_choice's
    answer when it is one letter in range."""
    regions, contained = _regions(text)
    letters = choice_letters(len(options))
    return set().union(*(_named(region, contained, letters, options) | positioned_choices(region, options)
                         for region in regions))


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
    found |= {_YES_NO[m[1].lower()] for m in _POSITIONED_YES_NO.finditer(region)}
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
