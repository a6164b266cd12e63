"""Rule-based paraphrases of a question, each over one named linguistic phenomenon (no model writes any text).

The seed (``004``, §3.1) asks every question in 3–5 paraphrases from template rules over five linguistic phenomena
and counts how often the answer flips. Each rule here rewrites only the question's frame (its function words, word
order, deixis and a fixed table of non-clinical synonyms); the clinical content (the finding, the options) is left
as written, which keeps the meaning by construction where the seed filtered with an embedding similarity. A rule
that does not match a question gives nothing, so a question gets the first K distinct paraphrases of the rules in
:data:`RULES` order that apply to it (and fewer when fewer apply).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# Non-clinical words and their synonyms in a question's frame, tried in this order (one substitution per question).
SYNONYMS = (("most likely", "most probable"), ("image", "picture"), ("field", "view"), ("shown", "seen"),
            ("shows", "displays"), ("show", "display"), ("present", "visible"), ("observed", "seen"))
IMAGE_NOUNS = r"(?:image|picture|field|view|slide|section|micrograph)"  # what a question calls the image
_IMAGE_PP = re.compile(rf"^(?P<rest>.+?)\s+(?P<pp>in (?:this|the) {IMAGE_NOUNS})\s*\?$", re.IGNORECASE)
# Words that start a question in capitals only because they start it (lower-cased when moved inside).
_FUNCTION_WORDS = {"is", "are", "does", "do", "can", "could", "would", "will", "has", "have", "what", "which", "how",
                   "where", "who", "there", "the", "this", "these", "in", "on", "at", "of", "for", "from", "with",
                   "to", "based", "according", "considering", "given"}


@dataclass(frozen=True)
class Rule:
    """A paraphrase rule: its ``name``, the linguistic ``phenomenon`` it varies, and ``rewrite`` (None when the
    question does not have the form it needs)."""

    name: str
    phenomenon: str
    rewrite: Callable[[str], str | None]


def _lower_first(text: str) -> str:
    """``text`` with its first word lower-cased when it is a function word (never a name or an acronym)."""
    first = text.split(maxsplit=1)[0]
    return first.lower() + text[len(first):] if first.lower() in _FUNCTION_WORDS else text


def _case_like(word: str, template: str) -> str:
    return word[:1].upper() + word[1:] if template[:1].isupper() else word


def lexical_substitution(question: str) -> str | None:
    """One non-clinical word replaced by its synonym ("image" → "picture")."""
    for word, synonym in SYNONYMS:
        found = re.search(rf"\b{word}\b", question, flags=re.IGNORECASE)
        if found:
            return question[:found.start()] + _case_like(synonym, found.group(0)) + question[found.end():]
    return None


def deixis(question: str) -> str | None:
    """The demonstrative and the definite article swapped in the reference to the image ("this image" ↔ "the
    image")."""
    swapped = re.sub(rf"\b(this|the)(\s+{IMAGE_NOUNS})\b",
                     lambda m: _case_like("the" if m.group(1).lower() == "this" else "this", m.group(1)) + m.group(2),
                     question, count=1, flags=re.IGNORECASE)
    return swapped if swapped != question else None


def fronting(question: str) -> str | None:
    """A closing "in this image" moved to the front ("Is there X in this image?" → "In this image, is there X?")."""
    found = _IMAGE_PP.match(question.strip())
    if not found:
        return None
    rest, phrase = found.group("rest"), found.group("pp")
    return f"{phrase[:1].upper()}{phrase[1:]}, {_lower_first(rest)}?"


def indirect_question(question: str) -> str | None:
    """The question embedded as an indirect one ("Is there X?" → "Tell me whether there is X."; "What is X?" →
    "Tell me what X is."; "Which ...?" → "Tell me which ...")."""
    text = question.strip()
    patterns: tuple[tuple[str, Callable[[re.Match[str]], str]], ...] = (
        (r"^(Is|Are) there (.+)\?$", lambda m: f"Tell me whether there {m.group(1).lower()} {m.group(2)}."),
        (rf"^Does (this|the) ({IMAGE_NOUNS}) (show|contain|display) (.+)\?$",
         lambda m: f"Tell me whether {m.group(1).lower()} {m.group(2)} {m.group(3)}s {m.group(4)}."),
        (r"^What (is|are) (.+)\?$", lambda m: f"Tell me what {m.group(2)} {m.group(1)}."),
        (r"^Which (.+)\?$", lambda m: f"Tell me which {m.group(1)}."),
    )
    for pattern, rewrite in patterns:
        found = re.match(pattern, text, flags=re.IGNORECASE)
        if found:
            return rewrite(found)
    return None


def adverbial_framing(question: str) -> str | None:
    """An adverbial clause framing the question ("Looking at the image, is there X?")."""
    text = question.strip()
    if not text.endswith("?") or text.lower().startswith("looking at"):
        return None
    return f"Looking at the image, {_lower_first(text)}"


def contraction(question: str) -> str | None:
    """A copula or negation contracted, or expanded ("What is" ↔ "What's", "does not" ↔ "doesn't")."""
    pairs = (("what is", "what's"), ("is not", "isn't"), ("are not", "aren't"), ("does not", "doesn't"),
             ("do not", "don't"))
    for full, short in pairs:
        for old, new in ((full, short), (short, full)):
            found = re.search(rf"\b{re.escape(old)}\b", question, flags=re.IGNORECASE)
            if found:
                return question[:found.start()] + _case_like(new, found.group(0)) + question[found.end():]
    return None


RULES: tuple[Rule, ...] = (
    Rule("lexical_substitution", "synonymy", lexical_substitution),
    Rule("deixis", "deixis (demonstrative vs definite article)", deixis),
    Rule("fronting", "constituent order (prepositional-phrase fronting)", fronting),
    Rule("indirect_question", "clause type (direct vs embedded question)", indirect_question),
    Rule("adverbial_framing", "discourse framing (adverbial clause)", adverbial_framing),
    Rule("contraction", "morphology (contraction)", contraction),
)


def paraphrases(question: str, count: int) -> list[tuple[str, str]]:
    """Up to ``count`` paraphrases of ``question``: (rule name, text), distinct from it and from each other."""
    found: list[tuple[str, str]] = []
    seen = {" ".join(question.split()).lower()}
    for rule in RULES:
        text = rule.rewrite(question)
        key = " ".join(text.split()).lower() if text else ""
        if text and key not in seen:
            seen.add(key)
            found.append((rule.name, text))
            if len(found) == count:
                break
    return found
