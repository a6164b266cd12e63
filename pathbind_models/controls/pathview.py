"""PathView answers of the controls: the positive control measures, the blind control answers unseen.

A PathView prompt offers the explicit refusal form (:data:`pathbind_conventions.REFUSAL_FORM` in an
``<answer>`` tag). The positive control recognises the demo's question families by their wording, measures the
image (:mod:`pathview_vision`) and answers in the prompt's format; when its measurement cannot settle the
question (an organ asked of isolated cells, cells counted on a low-power overview, a question it does not know)
it takes the refusal form. The blind control never refuses: it answers every PathView prompt in its format
without looking. Both read and write boxes in the frame the prompt asks for
(:func:`pathbind.box_frames.frame_asked`).
"""

from __future__ import annotations

import re

import numpy as np
from PIL import Image

from pathbind.box_frames import frame_asked
from pathbind_conventions import REFUSAL_FORM
from pathbind_metrics.pathview import from_pixels, to_pixels
from pathbind_models.controls import pathview_vision as measure
from pathbind_models.controls.prompt import read_prompt

_NUMBER = r"-?\d+(?:\.\d+)?"
_QUERY_BOX = re.compile(rf"box is \[({_NUMBER}), ({_NUMBER}), ({_NUMBER}), ({_NUMBER})\]")
SPATIAL_WINDOW = 96  # px: the neighbourhood of a marked box whose tissue is its nearest entity


def is_pathview_prompt(text: str) -> bool:
    """A prompt that offers the explicit refusal form, as every PathView template does."""
    return f"<answer>{REFUSAL_FORM}</answer>" in text


def _wrap(value: str | None) -> str:
    return f"<answer>{REFUSAL_FORM if value is None else value}</answer>"


def _boxes_text(boxes: list[list[float]], convention: str, size: tuple[int, int]) -> str | None:
    if not boxes:
        return None
    values = from_pixels(boxes, convention, size)
    return ", ".join("[" + ", ".join(f"{v:.4g}" for v in box) + "]" for box in values)


def _frame(text: str) -> str:
    """The frame the prompt asks boxes in; a prompt with boxes that names none cannot be answered."""
    asked = frame_asked(text)
    if asked is None:
        raise ValueError("the PathView prompt names no single box frame")
    return asked[0]


def _query_box(text: str, size: tuple[int, int]) -> list[float] | None:
    match = _QUERY_BOX.search(text)
    return to_pixels([[float(v) for v in match.groups()]], _frame(text), size)[0].tolist() if match else None


def _window(image: np.ndarray, box: list[float]) -> np.ndarray:
    """The SPATIAL_WINDOW-px square around a box's centre, within the image."""
    cx, cy, half = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2, SPATIAL_WINDOW // 2
    x0, y0 = (int(np.clip(round(c) - half, 0, side - SPATIAL_WINDOW)) for c, side in
              ((cx, image.shape[1]), (cy, image.shape[0])))
    return image[y0:y0 + SPATIAL_WINDOW, x0:x0 + SPATIAL_WINDOW]


def _cell_in_box(field: measure.Cells, box: list[float]) -> str | None:
    inside = np.flatnonzero((field.centres[:, 0] >= box[0]) & (field.centres[:, 0] < box[2])
                            & (field.centres[:, 1] >= box[1]) & (field.centres[:, 1] < box[3]))
    if not inside.size:
        return None
    centre = np.array([(box[0] + box[2]) / 2, (box[1] + box[3]) / 2])
    kind = str(field.kinds[inside[np.argmin(np.hypot(*(field.centres[inside] - centre).T))]])
    return kind or None


def _choice(question: str, text: str, pixels: np.ndarray) -> str | None:
    """The label the image supports for a multiple-choice question, or None."""
    size = (pixels.shape[1], pixels.shape[0])
    box = _query_box(text, size)
    field = measure.cells(pixels)
    if "organ" in question:
        return None if field.cellular else measure.slide(pixels).organ()
    if "quadrant" in question:
        if not field.cellular:
            return measure.slide(pixels).lesion_quadrant()
        neoplastic = field.centres[field.kinds == "neoplastic cell"]
        if len(neoplastic) < 3:
            return None
        x, y = neoplastic.mean(axis=0)
        return measure.quadrant(float(x), float(y), *size)
    if "share of the tissue" in question:
        fraction = measure.slide(pixels).lesion_fraction()
        return None if fraction is None else ("0-25%", "25-50%", "50-75%", "75-100%")[min(int(fraction * 4), 3)]
    if box is not None and "nearest" in question:
        return measure.tissue_type(measure.cells(_window(pixels, box)))
    if box is not None and field.cellular:
        return _cell_in_box(field, box)
    if box is not None:
        return measure.slide(pixels).lesion_kind(box)
    return measure.tissue_type(field) if "tissue" in question else None


def answer(text: str, image: Image.Image) -> str:
    """The positive control's answer to a PathView prompt, boxes in the frame it asks for."""
    pixels = np.asarray(image.convert("RGB"))
    size = (pixels.shape[1], pixels.shape[0])
    prompt = read_prompt(text)
    lowered = text.lower()
    if prompt.options:
        label = _choice(prompt.question.lower(), text, pixels)
        letters = [chr(ord("A") + i) for i, option in enumerate(prompt.options) if option.lower() == label]
        return _wrap(letters[0] if len(letters) == 1 else None)
    field = measure.cells(pixels)
    if "how many" in lowered:
        return _wrap(str(len(field.kinds)) if field.cellular else None)
    if "locate every" in lowered:
        boxes = field.boxes[field.kinds == "neoplastic cell"].tolist() if field.cellular \
            else measure.slide(pixels).lesion_boxes()
        return _wrap(_boxes_text(boxes, _frame(text), size))
    if "entities" in lowered:
        named = measure.entities(field) if field.cellular else []
        return _wrap(", ".join(named) or None)
    return _wrap(None)


def blind_answer(text: str, seed: int) -> str:
    """An answer in the prompt's format, never a refusal, chosen without the image (seeded by the text)."""
    lowered = text.lower()
    if "how many" in lowered:
        return f"<answer>{seed % 50}</answer>"
    if "locate every" in lowered:
        frame, stated = frame_asked(text) or ("unit", None)  # a prompt naming no frame gets fractions
        size = stated or (1, 1)  # only pixels need the size, and a pixel prompt states it
        box = from_pixels(to_pixels([[0.25, 0.25, 0.75, 0.75]], "unit", size), frame, size)[0]
        return "<answer>[" + ", ".join(f"{v:.4g}" for v in box) + "]</answer>"
    return "<answer>tissue</answer>"
