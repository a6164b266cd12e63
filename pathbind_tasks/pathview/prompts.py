"""PathView prompts: each task's template, with boxes written and asked in the item's box frame."""

from __future__ import annotations

from typing import Any

from pathbind import render_template
from pathbind.box_frames import frame_words
from pathbind_conventions import REFUSAL_FORM
from pathbind_metrics import choice_letters
from pathbind_metrics.pathview import from_pixels


def format_box(box: list[float], frame: str, image_size: tuple[int, int]) -> str:
    """A pixel box written in ``frame``: whole pixels or thousandths, fractions to three decimals."""
    values = from_pixels([box], frame, image_size)[0]
    if frame == "unit":
        return "[" + ", ".join(f"{v:.3f}" for v in values) + "]"
    return "[" + ", ".join(str(round(v)) for v in values) + "]"


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """Render the task's template (``template`` in lmms_eval_specific_kwargs), boxes in the item's ``box_frame``.

    A malformed item still gets a prompt (its scoring reports the problem): a query box that cannot be
    written is left out.
    """
    frame = doc.get("box_frame")
    options = list(doc.get("options") or [])
    size = (doc.get("width"), doc.get("height"))
    query_box = ""
    if frame and doc.get("query_box") and not doc.get("doc_error"):
        query_box = format_box(list(doc["query_box"]), frame, size)  # type: ignore[arg-type]
    return render_template(
        (lmms_eval_specific_kwargs or {}).get("template", "pathview_choice"), question=doc["question"],
        choices=list(zip(choice_letters(min(len(options), 26)), options[:26], strict=True)), query_box=query_box,
        box_units=frame_words(frame, size) if frame else "", refusal_form=REFUSAL_FORM,  # type: ignore[arg-type]
    )
