"""Canonical labels found in free text through their synonyms, on whole words, longest form first."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# Hyphens, dashes and underscores separate words like spaces do: "upper-left" is "upper left".
_SEPARATORS = re.compile(r"[-_\u2010-\u2015\s]+")


def normalise(text: str) -> str:
    """Lowercase, with hyphens, dashes and underscores read as single spaces."""
    return _SEPARATORS.sub(" ", text.lower()).strip()


class LabelMatcher:
    """Finds the canonical labels a text names.

    Parameters
    ----------
    synonyms : mapping of str to iterable of str
        Each canonical label with its other surface forms (the label itself always matches).

    Raises
    ------
    ValueError
        If one surface form belongs to two different labels.

    Examples
    --------
    >>> matcher = LabelMatcher({"neoplastic cell": ["tumor cell"], "tumor": ["carcinoma"]})
    >>> matcher.find("Tumour? No: tumor cells in a carcinoma.")
    ['neoplastic cell', 'tumor']
    >>> matcher.canonical("Tumor cell.")
    'neoplastic cell'
    """

    def __init__(self, synonyms: Mapping[str, Iterable[str]]) -> None:
        self._forms: dict[str, str] = {}
        for label, others in synonyms.items():
            for form in (label, *others):
                key = normalise(form)
                if self._forms.setdefault(key, label) != label:
                    raise ValueError(f"synonym {form!r} names both {self._forms[key]!r} and {label!r}")
        # Longest first: at each position the alternation takes the first form that matches.
        alternatives = sorted(self._forms, key=len, reverse=True)
        pattern = "|".join(re.escape(f) + (r"(?:e?s)?" if f[-1].isalpha() else "") for f in alternatives)
        self._pattern = re.compile(rf"(?<!\w)(?:{pattern})(?!\w)")

    @property
    def labels(self) -> list[str]:
        """Every canonical label, in the order given."""
        return list(dict.fromkeys(self._forms.values()))

    def find(self, text: str) -> list[str]:
        """The distinct canonical labels named in ``text``, in order of first mention."""
        found = (self._label(m.group(0)) for m in self._pattern.finditer(normalise(text)))
        return list(dict.fromkeys(found))

    def canonical(self, text: str) -> str | None:
        """The label ``text`` is, as a whole (surrounding punctuation ignored), or None."""
        match = self._pattern.fullmatch(normalise(text).strip(" .,;:!?\"'()"))
        return self._label(match.group(0)) if match else None

    def _label(self, surface: str) -> str:
        if surface in self._forms:
            return self._forms[surface]
        singular = surface[:-2] if surface[:-2] in self._forms and surface.endswith("es") else surface[:-1]
        return self._forms[singular]
