"""Prompt, image and scoring functions the example task's YAML points to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PIL import Image

import pathbind
from pathbind_metrics import accuracy, choice_letters, parse_choice

DATA = Path(__file__).parent / "tasks" / "stain"


def doc_to_visual(doc: dict[str, Any]) -> list[Image.Image]:
    with Image.open(DATA / doc["image_file"]) as image:
        return [image.convert("RGB")]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    return pathbind.render_template("example_stain", question=doc["question"],
                                    choices=list(zip(choice_letters(len(doc["options"])), doc["options"], strict=True)))


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, dict[str, Any]]:
    """One record per answer, under both metrics: an answer naming no option is invalid (and wrong), with a reason."""
    parsed = parse_choice(results[0] if results else "", doc["options"])
    record = {"id": doc["id"], "reference": doc["answer"], "parsed": parsed, "valid": parsed is not None,
              "correct": parsed == doc["answer"], "reason": "" if parsed is not None else "unparseable answer"}
    return {"stain_accuracy": record, "invalid_rate": record}


def stain_accuracy(records: list[dict[str, Any]]) -> float:
    """Aggregation registered under the name ``example_stain_accuracy``: invalid answers count as wrong."""
    return accuracy([record["correct"] for record in records])
