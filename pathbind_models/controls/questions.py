"""The demo's questions answered from the positive control's findings: the finding asked, the option stating it."""

from __future__ import annotations

import re

import numpy as np
from PIL import Image

from pathbind_models.controls import vision


def _tissue(f: vision.Findings) -> str | None:
    if f.has_tissue and f.white_fraction >= vision.FATTY:
        return "adipose"
    if not f.has_nuclei:
        return None
    if f.nuclei_count >= vision.DENSE and f.mean_nuclear_area < vision.SMALL_AREA:
        return "lymphoid"
    if f.mean_elongation >= vision.SPINDLE:
        return "fibrous"
    if vision.SMALL_AREA <= f.mean_nuclear_area < vision.LARGE_AREA and f.atypical_count == 0:
        return "epithelial"
    return None


def _nuclear_morphology(f: vision.Findings) -> str | None:
    if not f.has_nuclei:
        return None
    if f.mean_elongation >= vision.SPINDLE:
        return "spindle"
    if f.mean_nuclear_area < vision.SMALL_AREA:
        return "small"
    if f.mean_nuclear_area < vision.LARGE_AREA:
        return "medium"
    return "large" if f.mean_nuclear_stain >= vision.HYPERCHROMATIC else None


def _diagnosis(f: vision.Findings) -> str | None:
    if f.has_tissue and f.white_fraction >= vision.FATTY:
        return "fatty"
    if not f.has_nuclei:
        return None
    if f.atypical_count >= vision.MIN_NUCLEI:
        return "neoplasm"
    if f.atypical_count == 0 and f.nuclei_count >= vision.DENSE and f.mean_nuclear_area < vision.SMALL_AREA:
        return "inflammation"
    if f.atypical_count == 0 and f.nuclei_count < vision.DENSE:
        return "normal"
    return None


_KEYWORDS = {
    "adipose": ("adipose", "fat"), "lymphoid": ("lymph",), "fibrous": ("fibrous", "fibro"), "epithelial": ("epitheli",),
    "small": ("small",), "spindle": ("spindle", "elongated"), "medium": ("medium",),
    "large": ("large", "pleomorph", "hyperchromat"),
    "fatty": ("fat", "lipom", "adipose"), "inflammation": ("inflamm",), "normal": ("normal",),
    "neoplasm": ("neoplas", "malignan", "tumour", "tumor", "carcinoma", "cancer"),
}
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _match_keywords(options: list[str], finding: str | None) -> int | None:
    if finding is None:
        return None
    hits = [i for i, option in enumerate(options) if any(k in option.lower() for k in _KEYWORDS[finding])]
    return hits[0] if len(hits) == 1 else None


def _match_quadrant(options: list[str], quadrant: str | None) -> int | None:
    if quadrant is None:
        return None
    vertical, horizontal = quadrant.split()
    synonyms = {"upper": ("upper", "top"), "lower": ("lower", "bottom"), "left": ("left",), "right": ("right",)}
    hits = [i for i, option in enumerate(options)
            if any(w in option.lower() for w in synonyms[vertical])
            and any(w in option.lower() for w in synonyms[horizontal])]
    return hits[0] if len(hits) == 1 else None


def _interval(option: str) -> tuple[float, float] | None:
    """The numeric range an option states ("under 5%", "30 to 90 nuclei", "more than 180"); % becomes a fraction."""
    text = option.lower()
    numbers = [float(n) / (100 if "%" in text else 1) for n in _NUMBER.findall(text)]
    if len(numbers) == 2:
        return min(numbers), max(numbers)
    if len(numbers) == 1 and re.search(r"under|less|fewer|below|<|up to", text):
        return -np.inf, numbers[0]
    if len(numbers) == 1 and re.search(r"over|more|above|greater|>|at least", text):
        return numbers[0], np.inf
    return None


def _match_number(options: list[str], value: float | None) -> int | None:
    if value is None:
        return None
    ranges = [_interval(option) for option in options]
    hits = [i for i, r in enumerate(ranges) if r is not None and r[0] <= value < r[1]]
    return hits[0] if len(hits) == 1 else None


def answer_choice(question: str, options: list[str], image: Image.Image | np.ndarray) -> int | None:
    """Index of the option the pixels support for a recognised question family, else None (never a guess)."""
    q = question.lower()
    f = vision.analyze(image)
    if "quadrant" in q:
        return _match_quadrant(options, f.lesion_quadrant)
    if re.search(r"dab|brown", q) and re.search(r"proportion|fraction|percent|share", q):
        return _match_number(options, f.dab_fraction if f.nuclei_count >= 2 * vision.MIN_NUCLEI else None)
    if "diagnos" in q:
        return _match_keywords(options, _diagnosis(f))
    if "cellular" in q or "how many nuclei" in q:
        return _match_number(options, float(f.nuclei_count) if f.has_nuclei else None)
    if "tissue" in q:
        return _match_keywords(options, _tissue(f))
    if "nucle" in q:
        return _match_keywords(options, _nuclear_morphology(f))
    return None


def answer_yes_no(question: str, image: Image.Image | np.ndarray) -> bool | None:
    """Yes/no for a recognised question family, else None; also None when the image cannot settle it."""
    q = question.lower()
    f = vision.analyze(image)
    if re.search(r"dab|brown|positiv", q):
        if f.nuclei_count < 2 * vision.MIN_NUCLEI:
            return None
        if f.dab_positive_count >= 2 and f.dab_fraction >= 0.05:
            return True
        return False if f.dab_positive_count == 0 else None
    if re.search(r"atypi|cluster|lesion|tumou?r|neoplas", q):
        if f.atypical_count >= 3:
            return True
        return False if f.has_nuclei and f.atypical_count == 0 else None
    return None


__all__ = ["answer_choice", "answer_yes_no"]
