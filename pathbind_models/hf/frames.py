"""Boxes a family writes in its native frame, rewritten into the frame the prompt asks for (:mod:`pathbind.box_frames`).

A family's native frame is ``ModelFamily.native_box_frame``: ``"per_mille"`` (Qwen2-VL, Qwen3-VL, InternVL: 0–1000 of
the whole image), ``"input_pixel"`` (Qwen2.5-VL: absolute pixels of the image as its processor resized it), or
None (no documented frame: the model is taken to follow the prompt, and its answer is left as it is).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from pathbind.box_frames import frame_asked
from pathbind_metrics.pathview import from_pixels, to_pixels

NATIVE_FRAMES = ("per_mille", "input_pixel")
_NUMBER = r"-?\d+(?:\.\d+)?"
_BOX = re.compile(rf"\[\s*({_NUMBER})\s*,\s*({_NUMBER})\s*,\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\]")


def input_size(processor: Any, image_size: tuple[int, int]) -> tuple[int, int]:
    """(W, H) of a ``image_size`` image as a Qwen2-VL-style processor resizes it: its own ``smart_resize`` with
    its patch size × merge size as the factor and its pixel limits."""
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize

    images = getattr(processor, "image_processor", processor)
    size = images.size if isinstance(images.size, dict) else vars(images.size)
    low = size.get("shortest_edge") or getattr(images, "min_pixels", None)
    high = size.get("longest_edge") or getattr(images, "max_pixels", None)
    if not (low and high):
        raise ValueError(f"{type(images).__name__} states no pixel limits (size {size}); cannot derive its resize")
    height, width = smart_resize(image_size[1], image_size[0], factor=images.patch_size * images.merge_size,
                                 min_pixels=int(low), max_pixels=int(high))
    return width, height


def native_to_pixels(boxes: Any, native: str, image_size: tuple[int, int], processor: Any) -> np.ndarray:
    """Boxes written in a family's ``native`` frame as pixel boxes of the original ``image_size`` image."""
    if native == "per_mille":
        return to_pixels(boxes, "per_mille", image_size)
    if native == "input_pixel":
        resized = input_size(processor, image_size)
        scale = np.array([image_size[0] / resized[0], image_size[1] / resized[1]] * 2)
        return np.asarray(boxes, dtype=float).reshape(-1, 4) * scale
    raise ValueError(f"unknown native box frame {native!r}; known: {', '.join(NATIVE_FRAMES)}")


def answer_in_frame(answer: str, prompt: str, native: str | None, image_size: tuple[int, int],
                    processor: Any) -> str:
    """``answer`` with every ``[x_min, y_min, x_max, y_max]`` rewritten from ``native`` into the frame ``prompt``
    asks for; unchanged when the family has no native frame or the prompt asks for none."""
    asked = frame_asked(prompt)
    if native is None or asked is None:
        return answer

    def rewrite(match: re.Match) -> str:
        pixels = native_to_pixels([[float(v) for v in match.groups()]], native, image_size, processor)
        return "[" + ", ".join(_number(v) for v in from_pixels(pixels, asked[0], image_size)[0]) + "]"

    return _BOX.sub(rewrite, answer)


def _number(value: float) -> str:
    """Fixed point to six decimals, trailing zeros dropped: never an exponent, which no box reader parses."""
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text
