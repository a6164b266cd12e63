"""The PathView vocabulary shipped in ``pathview/labels.yaml``: labels, organs, quadrants, area bins, synonyms."""

from __future__ import annotations

import functools
from pathlib import Path

import yaml

from pathbind_metrics.labels import LabelMatcher, normalise

LABELS_FILE = Path(__file__).parents[1] / "pathview" / "labels.yaml"  # shipped with the PathView tasks
SECTIONS = ("labels", "organs", "quadrants", "area_bins")

Vocabulary = dict[str, dict[str, list[str]]]  # section -> canonical name -> synonyms


@functools.cache
def vocabulary() -> Vocabulary:
    """Every section of ``labels.yaml``; a missing or malformed section is an error naming the file."""
    data = yaml.safe_load(LABELS_FILE.read_text(encoding="utf-8")) or {}
    bad = [name for name in SECTIONS if not isinstance(data.get(name), dict)]
    if bad:
        raise ValueError(f"{LABELS_FILE}: section(s) {', '.join(bad)} missing or not a mapping of name -> synonyms")
    return {name: {str(label): [str(s) for s in synonyms or []] for label, synonyms in data[name].items()}
            for name in SECTIONS}


@functools.cache
def matcher() -> LabelMatcher:
    """One matcher over every section (a name in two sections, such as an organ, is one label)."""
    merged: dict[str, list[str]] = {}
    for section in vocabulary().values():
        for label, synonyms in section.items():
            merged.setdefault(label, []).extend(synonyms)
    return LabelMatcher(merged)


def answer_class(option: str) -> str:
    """The class an option stands for in accuracy and macro-F1: its canonical name, else its normalised text."""
    return matcher().canonical(option) or normalise(option)
