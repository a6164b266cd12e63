"""Scoring of VQA answers under the image and text conditions, and the MG aggregations."""

from __future__ import annotations

import math

import datasets
import pytest
from PIL import Image

from pathbind_metrics import accuracy, multimodal_gain
from pathbind_metrics.aggregations import invalid_rate, mg, named_aggregations
from pathbind_tasks.common.conditions import with_and_without_image
from pathbind_tasks.common.vqa import doc_to_text, doc_to_visual, process_mcq_results, process_yes_no_results

MCQ = {"id": "q1", "question": "Which quadrant?", "options": ["upper-left", "upper-right", "lower-left", "lower-right"],
       "answer": "C", "condition": "image"}


def test_mcq_answers_are_scored_strictly():
    """A tagged correct letter scores; an unparseable answer is invalid and wrong, with a reason."""
    right = process_mcq_results(MCQ, ["<answer>C</answer>"])["acc_image"]
    vague = process_mcq_results(MCQ, ["It could be C or D"])["acc_image"]
    assert (right["correct"], right["valid"]) == (True, True)
    assert (vague["correct"], vague["valid"], vague["reason"]) == (False, False, "unparseable answer")


def test_yes_no_answers_compare_case_insensitively():
    """'Yes' in the answer tag matches a 'yes' reference."""
    record = process_yes_no_results({"id": "y", "question": "?", "answer": "yes"}, ["<answer>Yes</answer>"])["mg"]
    assert record["correct"] and record["valid"]


def test_a_malformed_document_becomes_an_invalid_record_instead_of_an_exception():
    """A doc without options is scored invalid with the error as reason; process_results never raises."""
    record = process_mcq_results({"id": "bad", "answer": "A", "condition": "text"}, ["<answer>A</answer>"])["acc_text"]
    assert not record["valid"] and not record["correct"]
    assert record["reason"] == "missing field 'options'"


def test_an_answer_letter_outside_the_options_is_an_invalid_item():
    """A reference letter 'E' for four options is reported, not scored."""
    record = process_mcq_results({**MCQ, "answer": "E"}, ["<answer>C</answer>"])["acc_image"]
    assert not record["valid"]
    assert record["reason"] == "field 'answer' is 'E', not one of the option letters A, B, C, D"


def _records(image: list[bool], text: list[bool]) -> list[dict]:
    make = lambda cond, values: [{"id": f"i{n}", "condition": cond, "correct": v, "valid": True}  # noqa: E731
                                 for n, v in enumerate(values)]
    return make("image", image) + make("text", text)


def test_aggregations_match_hand_computed_values():
    """acc_image 75, acc_text 25, MG 50 for a hand-built set; order of records does not matter."""
    records = _records([True, True, True, False], [False, True, False, False])
    aggregate = named_aggregations()
    assert (aggregate["acc_image"](records), aggregate["acc_text"](records), mg(records)) == (75.0, 25.0, 50.0)
    assert mg(list(reversed(records))) == 50.0


def test_mg_pairs_items_by_id():
    """MG counts only items answered in both conditions."""
    records = _records([True, True], [False])
    assert mg(records) == multimodal_gain([True], [False]) == 100.0


def test_invalid_rate_counts_unparseable_answers():
    """One invalid answer of four is 25%."""
    records = [{"id": str(i), "condition": "image", "correct": False, "valid": i != 0} for i in range(4)]
    assert invalid_rate(records) == 25.0


def test_accuracy_of_nothing_is_nan_and_paired_lengths_must_match():
    """Empty input gives NaN; unpaired arrays are a caller error."""
    assert math.isnan(accuracy([]))
    with pytest.raises(ValueError, match="differ in length"):
        multimodal_gain([True], [True, False])


def test_text_condition_withholds_only_the_image():
    """Both conditions render the same prompt; only the text condition has no visual."""
    ds = datasets.Dataset.from_list([{**MCQ, "image": Image.new("RGB", (8, 8))}]).remove_columns("condition")
    docs = list(with_and_without_image(ds))
    assert [d["condition"] for d in docs] == ["image", "text"]
    kwargs = {"template": "mcq", "thinking": False}
    assert doc_to_text(docs[0], kwargs) == doc_to_text(docs[1], kwargs)
    assert len(doc_to_visual(docs[0])) == 1 and doc_to_visual(docs[1]) == []
