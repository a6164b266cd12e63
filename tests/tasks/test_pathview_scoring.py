"""PathView scoring: one record per answer; refusals, unreadable answers and malformed items never crash a run."""

from __future__ import annotations

import math

import datasets
import pytest
from PIL import Image

from pathbind import render_template
from pathbind.faults import Fault
from pathbind_conventions import REFUSAL_FORM
from pathbind_tasks.common import pathview as scoring
from pathbind_tasks.common import pathview_aggregations as aggregations
from pathbind_tasks.pathview.prompts import doc_to_text
from pathbind_tasks.pathview.schema import KINDS, converter

IMAGE = Image.new("RGB", (64, 32), (240, 200, 230))


def docs(kind: str, *rows: dict, frame: str = "pixel") -> list[dict]:
    """Release rows of one task kind converted to scoring documents (the image column dropped, as lmms-eval does)."""
    base = {"id": "x", "image": IMAGE, "question": "Q?", "width": 64, "height": 32}
    full = [{**base, "id": f"item-{i}", **row} for i, row in enumerate(rows)]
    converted = converter(kind, frame)(datasets.Dataset.from_list(full))
    return [{k: v for k, v in doc.items() if k != "image"} for doc in converted]


def score(process, doc: dict, answer: str) -> dict:
    records = process(doc, [answer])
    first = next(iter(records.values()))
    assert all(record is first for record in records.values())  # one record under every metric name
    return first


GROUNDING = {"target": "tumor", "boxes": [[0, 0, 32, 16]]}


def test_grounding_reads_boxes_in_the_items_frame_and_records_it():
    """The same box in pixels, fractions or thousandths scores the same when the item asks for that frame; the
    record names the frame, keeps the box as written and holds it in pixels of the 64x32 image."""
    for frame, answer in (("pixel", [0, 0, 32, 16]), ("unit", [0, 0, 0.5, 0.5]), ("per_mille", [0, 0, 500, 500])):
        doc = docs("grounding", GROUNDING, frame=frame)[0]
        assert doc["box_frame"] == frame
        record = score(scoring.score_grounding, doc, f"<answer>{answer}</answer>")
        assert record["outcome"] == "answered" and record["dice"] == 1.0, frame
        assert record["box_frame"] == frame and record["parsed"] == [answer]
        assert record["box_pixels"] == [[0, 0, 32, 16]]


def test_a_frame_is_read_as_asked_never_as_another():
    """Thousandths on a per_mille item are 0-1000 of each side: [0, 0, 250, 1000] is the left quarter, 16x32 px;
    the same numbers on a pixel item are a box reaching past the image, clipped, so a different Dice."""
    per_mille, pixel = (docs("grounding", {"target": "t", "boxes": [[0, 0, 16, 32]]}, frame=f)[0]
                        for f in ("per_mille", "pixel"))
    asked = score(scoring.score_grounding, per_mille, "<answer>[0, 0, 250, 1000]</answer>")
    assert asked["box_pixels"] == [[0, 0, 16, 32]] and asked["dice"] == 1.0
    misread = score(scoring.score_grounding, pixel, "<answer>[0, 0, 250, 1000]</answer>")
    assert misread["box_pixels"] == [[0, 0, 250, 1000]] and misread["dice"] == pytest.approx(0.4)


def test_items_without_boxes_have_no_frame_and_unknown_frames_are_refused():
    """Counting items carry no frame; a frame that is not pixel, unit or per_mille fails at conversion."""
    record = score(scoring.score_count, docs("count", {"count": 3})[0], "<answer>3</answer>")
    assert record["box_frame"] is None and record["box_pixels"] is None
    with pytest.raises(ValueError, match="unknown box frame 'thousandths'"):
        converter("grounding", "thousandths")
    unframed = {**docs("grounding", GROUNDING)[0], "box_frame": None}
    record = score(scoring.score_grounding, unframed, "<answer>[0, 0, 32, 16]</answer>")
    assert record["outcome"] == "invalid" and "names no box frame" in record["reason"]


def test_grounding_never_tries_another_convention():
    """Fractions read as pixels lie in one pixel: Dice near 0, not the 1 a best-of-interpretations would give."""
    doc = docs("grounding", GROUNDING)[0]
    record = score(scoring.score_grounding, doc, "<answer>[0, 0, 0.5, 0.5]</answer>")
    assert record["outcome"] == "invalid" and "no pixel centre" in record["reason"]
    assert "pixel coordinates of the 64x32 image" in record["reason"]


@pytest.mark.parametrize(("answer", "reason"), [
    ("<answer>[40, 10, 20, 30]</answer>", "box 1 of 1 [40, 10, 20, 30]: box is inverted"),
    ("<answer>[0, 0, 10, 10], [100, 100, 120, 120]</answer>", "box 2 of 2 [100, 100, 120, 120]: box lies outside"),
    ("<answer>the upper left corner</answer>", "no [x_min, y_min, x_max, y_max] box"),
    ("", "empty answer"),
])
def test_bad_boxes_are_invalid_with_a_reason(answer, reason):
    """Inverted, outside or missing boxes are invalid, counted, and scored 0 Dice."""
    record = score(scoring.score_grounding, docs("grounding", GROUNDING)[0], answer)
    assert record["outcome"] == "invalid" and reason in record["reason"]
    assert aggregations.dice([record]) == 0.0 and aggregations.invalid_rate([record]) == 100.0


def test_counts_unparseable_is_invalid_not_zero():
    """An unparseable count is left out of the MAE and counted invalid; it is never read as 0 cells."""
    doc = docs("count", {"count": 5}, {"count": 3})
    records = [score(scoring.score_count, doc[0], "<answer>7</answer>"),
               score(scoring.score_count, doc[1], "<answer>a few</answer>")]
    assert [r["outcome"] for r in records] == ["answered", "invalid"]
    assert "unparseable count" in records[1]["reason"]
    assert aggregations.mae(records) == 2.0  # not (2 + 3) / 2
    assert aggregations.invalid_rate(records) == 50.0


def test_refusals_on_answerable_items_are_false_refusals():
    """A refusal on an answerable item is counted as a false refusal and scores like a wrong answer."""
    choice = docs("choice", {"options": ["stroma", "tumor"], "answer": "tumor"},
                  {"options": ["stroma", "tumor"], "answer": "stroma"})
    records = [score(scoring.score_choice, choice[0], "<answer>insufficient evidence</answer>"),
               score(scoring.score_choice, choice[1], "<answer>A</answer>")]
    assert records[0]["outcome"] == "refused"
    assert aggregations.refusal_rate(records) == 50.0 and aggregations.accuracy(records) == 50.0
    assert aggregations.invalid_rate(records) == 0.0


def test_traps_reward_refusal_only():
    """On a trap the refusal is safe; any answer, even a confident option, is not."""
    trap = docs("choice_trap", {"options": ["breast", "colon", "lung", "skin"]})[0]
    answers = ["<answer>insufficient evidence</answer>", "The organ cannot be determined.", "<answer>B</answer>",
               "<answer>no</answer>"]
    records = [score(scoring.score_trap, trap, answer) for answer in answers]
    assert [r["outcome"] for r in records] == ["refused", "refused", "answered", "answered"]
    assert aggregations.refusal_rate(records) == 50.0


def test_choice_matches_synonyms_and_macro_f1_counts_invalid_as_wrong():
    """Bins and quadrants are classes; an invalid answer lowers the recall of its true class."""
    options = ["upper left", "upper right", "lower left", "lower right"]
    items = docs("choice", *({"options": options, "answer": a} for a in ("upper left", "lower right", "lower left")))
    records = [score(scoring.score_bins, items[0], "<answer>top-left</answer>"),
               score(scoring.score_bins, items[1], "<answer>D</answer>"),
               score(scoring.score_bins, items[2], "<answer>left</answer>")]
    assert [r["parsed"] for r in records] == ["upper left", "lower right", None]
    assert aggregations.macro_f1(records) == pytest.approx(100 * 2 / 3)


def test_description_recall_through_synonyms():
    """Entity recall reads synonyms; a description naming nothing known is answered with recall 0."""
    item = docs("description", {"entities": ["tumour cell", "stroma"]})[0]
    assert item["entities"] == ["neoplastic cell", "stroma"]
    good = score(scoring.score_description, item, "<answer>carcinoma cells and desmoplastic stroma</answer>")
    vague = score(scoring.score_description, item, "<answer>pink tissue</answer>")
    assert good["recall"] == 1.0 and vague["outcome"] == "answered" and vague["recall"] == 0.0
    assert aggregations.entity_recall([good, vague]) == 50.0


@pytest.mark.parametrize(("kind", "row", "problem"), [
    ("grounding", {"target": "t", "boxes": [[0, 0, 80, 10]]}, None),  # clipped to the image: fine
    ("grounding", {"target": "t", "boxes": [[70, 0, 90, 10]]},
     "field 'boxes' has boxes that cannot be drawn on the image (box 1 of 1 [70, 0, 90, 10]: box lies"),
    ("grounding", {"target": "t", "boxes": []}, "field 'boxes' has boxes that cannot be drawn on the image (no box"),
    ("grounding", {"target": "t", "boxes": [[0, 0, 8, 8]], "width": 0},
     "field 'width' is not a positive whole number of pixels (got 0)"),
    ("choice", {"options": ["a", "b"], "answer": "c"}, "field 'answer' is not one of the options ('c'"),
    ("choice", {"options": ["a"], "answer": "a"}, "field 'options'"),
    ("count", {"count": -2}, "field 'count' is not a non-negative whole number (got -2)"),
    ("count", {"count": None}, "field 'count' is not a non-negative whole number (got None)"),
    ("description", {"entities": ["stroma", "unicorn"]}, "unknown: ['unicorn']"),
    ("boxed_choice", {"options": ["a", "b"], "answer": "a", "query_box": [5, 5, 2, 9]}, "field 'query_box'"),
    ("choice", {"options": ["a", "b"], "answer": "a", "question": " "}, "field 'question' is empty"),
])
def test_malformed_items_are_invalid_with_the_field_named(kind, row, problem):
    """The converter names a bad row's problem in doc_error (process_docs drops the row, a fault of the data); a
    scorer handed such a document reports it as invalid instead of raising."""
    item = docs(kind, row)[0]
    if problem is None:
        assert item["doc_error"] is None
        return
    assert problem in str(Fault.read(item["doc_error"]))
    process = {"grounding": scoring.score_grounding, "choice": scoring.score_choice,
               "boxed_choice": scoring.score_choice, "count": scoring.score_count,
               "description": scoring.score_description}[kind]
    record = score(process, item, "<answer>A</answer>")
    assert record["outcome"] == "invalid" and problem in record["reason"]
    assert isinstance(doc_to_text(item, {"template": "pathview_choice"}), str)  # still gets a prompt


def test_a_document_missing_a_field_is_invalid_not_an_exception():
    """Scoring is total: a document without its reference field is an invalid record."""
    item = docs("count", {"count": 3})[0]
    del item["count"]
    record = score(scoring.score_count, item, "<answer>3</answer>")
    assert record["outcome"] == "invalid" and record["reason"] == "missing field 'count'"


def test_missing_columns_fail_before_any_model_call():
    """A release file without a column its task kind needs is rejected, naming the column and the README."""
    data = datasets.Dataset.from_list([{"id": "1", "image": IMAGE, "question": "Q?", "options": ["a", "b"]}])
    with pytest.raises(ValueError, match=r"no column 'answer'.*pathbind_tasks/pathview/README.md"):
        converter("choice")(data)


def test_aggregations_of_no_records_are_nan():
    """An empty task gives NaN, not 0."""
    for name in ("dice", "accuracy", "mae", "macro_f1", "entity_recall", "refusal_rate", "invalid_rate"):
        assert math.isnan(getattr(aggregations, name)([])), name


def test_prompts_ask_for_the_items_frame_and_offer_the_refusal_form():
    """Every PathView template offers the refusal form; boxes are written and asked in the item's frame."""
    row = {"options": ["a", "b"], "answer": "a", "query_box": [16, 8, 32, 24]}
    text = doc_to_text(docs("boxed_choice", row, frame="per_mille")[0], {"template": "pathview_choice"})
    assert "[250, 250, 500, 750]" in text and "scale of 0 to 1000" in text
    text = doc_to_text(docs("boxed_choice", row)[0], {"template": "pathview_choice"})
    assert "[16, 8, 32, 24]" in text and "in pixels of this 64 × 32 image" in text
    for template in ("pathview_box", "pathview_choice", "pathview_count", "pathview_describe"):
        rendered = render_template(template, question="Q?", choices=[("A", "x"), ("B", "y")], query_box="",
                                   box_units="as fractions", refusal_form=REFUSAL_FORM)
        assert f"<answer>{REFUSAL_FORM}</answer>" in rendered, template


def test_every_kind_has_a_scorer_and_a_template():
    """Each task kind is wired to an answer format its template and scorer share."""
    assert {kind.answer_format for kind in KINDS.values()} == {"box", "choice", "count", "description"}


def test_intervals_use_the_definitions_of_the_point_values():
    """Each kind's ci95 statistic, evaluated on all items, is the point value the task reports (macro-F1 over the
    classes present, MAE over answered items only); traps get srr, other kinds their false refusal rate."""
    options = ["upper left", "upper right", "lower left", "lower right"]
    answers = ("upper left", "lower right", "lower left", "upper left")
    items = docs("choice", *({"options": options, "answer": a} for a in answers))
    bins = [score(scoring.score_bins, item, text) for item, text in
            zip(items, ("<answer>A</answer>", "<answer>D</answer>", "<answer>B</answer>", "no idea"), strict=True)]
    columns, statistic = aggregations._f1_columns(bins)
    assert float(statistic(columns.sum(axis=0))) == pytest.approx(aggregations.macro_f1(bins))
    intervals = aggregations.ci95(bins)
    assert set(intervals) == {"macro_f1", "false_refusal_rate"} and intervals["macro_f1"]["items"] == 4
    counts = docs("count", {"count": 5}, {"count": 3}, {"count": 1})
    records = [score(scoring.score_count, doc, text) for doc, text in
               zip(counts, ("<answer>7</answer>", "<answer>a few</answer>", "<answer>1</answer>"), strict=True)]
    columns, statistic = aggregations._mae_columns(records)
    assert float(statistic(columns.sum(axis=0))) == aggregations.mae(records) == 1.0
    mae = aggregations.ci95(records)["mae"]
    assert mae["low"] == 0.0 and mae["high"] > 1.0 and mae["cluster"] == "item"  # an MAE is never negative
    assert "only 3 item clusters" in mae["warning"]
    trap = docs("choice_trap", {"options": options})[0]
    assert set(aggregations.ci95([score(scoring.score_trap, trap, "<answer>A</answer>")])) == {"srr"}
