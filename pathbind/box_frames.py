"""Box frames: the coordinates a prompt asks boxes in, worded one way, so a model can read the request back."""

from __future__ import annotations

import re

from pathbind_conventions import BOX_CONVENTIONS

# "pixel": pixels of the image as given (the prompt states its size); "unit": fractions 0-1 of its width and
# height; "per_mille": thousandths 0-1000 of them.
FRAMES = tuple(BOX_CONVENTIONS)
_ORIGIN = ", with the origin at the top-left corner"
_UNIT = "as fractions of the image width and height, from 0 to 1"
_PER_MILLE = "on a scale of 0 to 1000 of the image width and height"
_PIXEL = re.compile(r"in pixels of this (\d+) × (\d+) image")


def check_frame(frame: str) -> str:
    """``frame`` when it is one of ``FRAMES``; ValueError naming them otherwise."""
    if frame not in FRAMES:
        raise ValueError(f"unknown box frame {frame!r}; known: {', '.join(FRAMES)}")
    return frame


def frame_words(frame: str, size: tuple[int, int]) -> str:
    """How a prompt asks for boxes in ``frame`` of a ``size`` (W, H) image."""
    words = {"pixel": f"in pixels of this {size[0]} × {size[1]} image", "unit": _UNIT, "per_mille": _PER_MILLE}
    return words[check_frame(frame)] + _ORIGIN


def frame_asked(text: str) -> tuple[str, tuple[int, int] | None] | None:
    """The frame a prompt worded by :func:`frame_words` asks boxes in, with the image size it states (pixels
    only); None when it names no frame or several."""
    sizes = {(int(m[1]), int(m[2])) for m in _PIXEL.finditer(text)}
    found = [("pixel", size) for size in sizes] + [(frame, None) for frame, words in
                                                   (("unit", _UNIT), ("per_mille", _PER_MILLE)) if words in text]
    return found[0] if len(found) == 1 else None
