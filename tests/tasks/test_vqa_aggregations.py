"""VQA aggregations over per-document records: by dimension, cluster intervals, ablation drops."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pathbind_tasks.common.metrics import VQA, declared
from pathbind_tasks.common.vqa_aggregations import (
    UNPAIRED_CAUSES,
    accuracy_drop,
    by_dimension,
    ci95,
    condition_accuracy,
    reliance,
)

AGGREGATE = {metric.name: metric.aggregate for metric in declared(*VQA)}


def record(item: str, condition: str, correct: bool, dimension: str | None = None) -> dict:
    return {"id": item, "condition": condition, "correct": correct, "valid": True, "dimension": dimension}


def test_by_dimension_splits_accuracy_and_gain():
    """Two dimensions with hand-computed accuracies and MG; the item count per dimension."""
    records = [record("a", "image", True, "D1"), record("a", "text", False, "D1"),
               record("b", "image", True, "D1"), record("b", "text", True, "D1"),
               record("c", "image", False, "D2"), record("c", "text", False, "D2")]
    table = by_dimension(records)
    assert table["D1"] == {"acc_image": 100.0, "acc_text": 50.0, "mg": 50.0, "n": 2}
    assert table["D2"]["mg"] == 0.0 and table["D2"]["n"] == 1
    assert by_dimension([record("x", "image", True)]) == {}


def test_ablation_drop_is_paired_against_the_original_image():
    """drop_blank = acc(image) - acc(blank) over the same items."""
    records = [record(str(i), "image", True) for i in range(4)] + [record(str(i), "blank", i == 0) for i in range(4)]
    assert condition_accuracy(records, "blank") == 25.0
    assert accuracy_drop(records, "blank") == 75.0 == AGGREGATE["drop_blank"](records)


def test_no_difference_interval_is_a_point_while_its_parts_are_uncertain():
    """Every item right with its image and wrong under every other condition, 2 questions on each of 3 images:
    MG, each drop, VRS and the per-dimension MG are 100 points, and each interval keeps a lower bound far below,
    from the shares gaining and losing (MOVER), and says why it is wide; the accuracies keep theirs."""
    conditions = ("text", "blank", "swap_same")
    records = [{**record(f"{k}{q}", condition, condition == "image", "D1"), "cluster": f"image={k}",
                "parsed": "yes" if condition == "image" else "no"}
               for k in range(3) for q in range(2) for condition in ("image", *conditions)]
    intervals = ci95([r for r in records if r["condition"] in ("image", "text")])
    ablation = ci95([r for r in records if r["condition"] != "text"])
    found = [intervals["mg"], intervals["by_dimension"]["D1"]["mg"], ablation["drop_blank"],
             ablation["drop_swap_same"], reliance(records)["vrs"]["swap_same"]["ci95"]]
    for interval in found:
        assert interval["high"] == 100.0 and interval["low"] < 50 and interval["method"].startswith("MOVER")
        assert "degrees of freedom: the interval holds its level but is wide" in interval["warning"]
    assert intervals["acc_image"]["low"] < 100 == intervals["acc_image"]["high"]
    assert intervals["acc_text"]["low"] == 0 < intervals["acc_text"]["high"]


def test_ci95_is_deterministic_and_order_invariant():
    """The same records in another order (as ranks deliver them) give the same intervals."""
    records = [record(str(i), c, (i * 7 + len(c)) % 3 == 0) for i in range(30) for c in ("image", "text")]
    assert ci95(records) == ci95(list(reversed(records)))
    assert set(ci95(records)) == {"acc_image", "acc_text", "mg"}


def test_image_only_runs_have_no_gain_but_an_accuracy_interval():
    """Without text-condition records MG is NaN and the CI covers acc_image only."""
    records = [record(str(i), "image", i % 2 == 0) for i in range(10)]
    assert math.isnan(AGGREGATE["mg"](records))
    assert list(ci95(records)) == ["acc_image"]


def test_empty_input_gives_nan_not_an_exception():
    """No records at all: every scalar aggregation returns NaN."""
    for name in ("acc_image", "acc_text", "mg", "invalid_rate", "drop_blur_8"):
        assert math.isnan(AGGREGATE[name]([])), name


def test_a_condition_without_paired_items_is_nan_with_a_warning_naming_task_and_condition(logged_warnings):
    """--limit 1 on a VQA task: one image answer, no text answer; acc_text and mg are NaN, said in one line."""
    records = [{**record("a", "image", True), "task": "pathbind_demo_vqa"}]
    assert math.isnan(AGGREGATE["acc_text"](records)) and math.isnan(AGGREGATE["mg"](records))
    assert len(logged_warnings) == 1
    assert logged_warnings[0].startswith("task pathbind_demo_vqa, condition text: no answer under text for any of the "
                                         "1 items answered with the image")
    assert "acc_text and mg are NaN" in logged_warnings[0]


def test_each_unpaired_ablation_condition_gets_its_own_warning(logged_warnings):
    """Half an ablation item (image, blank answered): blank is complete, blur_2 is named; the image is silent."""
    records = [{**record("a", c, True), "task": "pathbind_demo_vqa_ablation"} for c in ("image", "blank")]
    assert AGGREGATE["acc_image"](records) == 100.0 and AGGREGATE["acc_blank"](records) == 100.0
    assert logged_warnings == []
    assert math.isnan(AGGREGATE["acc_blur_2"](records)) and math.isnan(AGGREGATE["drop_blur_2"](records))
    assert len(logged_warnings) == 1 and "task pathbind_demo_vqa_ablation, condition blur_2:" in logged_warnings[0]
    assert "acc_blur_2 and drop_blur_2 are NaN" in logged_warnings[0]


def test_items_cut_short_are_counted_in_the_warning_and_left_out_of_the_gain(logged_warnings):
    """Two items with the image, one also without: MG is over the paired item, and the warning says 1 of 2."""
    records = [record("a", "image", True), record("a", "text", False), record("b", "image", False)]
    assert AGGREGATE["acc_text"](records) == 0.0 and AGGREGATE["mg"](records) == 100.0
    assert logged_warnings == ["task unknown, condition text: 1 of the 2 items answered with the image have no answer "
                        f"under text; acc_text and mg cover only the 1 items answered under both ({UNPAIRED_CAUSES})"]


def test_complete_items_log_nothing(logged_warnings):
    """Every item answered under every condition: no warning."""
    records = [record(str(i), c, True) for i in range(3) for c in ("image", "text")]
    for name in ("acc_image", "acc_text", "mg"):
        AGGREGATE[name](records)
    assert logged_warnings == []


def repeated(item: str, condition: str, answers: list[str], reference: str = "A") -> dict:
    """A record as process_results writes it under --repeats: the first answer scored, each of them kept."""
    scored = [{"parsed": a or None, "valid": bool(a), "correct": a == reference} for a in answers]
    return {"id": item, "condition": condition, "dimension": None, **scored[0], "repeats": scored}


def test_repeats_report_agreement_and_the_spread_of_each_headline():
    """Three repeats of four items: agreement counts items with one valid answer thrice; each headline is
    computed from each repeat; the other metrics score the first answer."""
    records = [repeated("1", "image", ["A", "A", "A"]), repeated("1", "text", ["B", "B", "B"]),
               repeated("2", "image", ["A", "B", "A"]), repeated("2", "text", ["A", "A", "A"]),
               repeated("3", "image", ["A", "A", ""]), repeated("3", "text", ["B", "A", "B"]),
               repeated("4", "image", ["C", "C", "C"]), repeated("4", "text", ["C", "C", "C"])]
    result = AGGREGATE["repeats"](records)
    assert result["n"] == 3
    assert result["agreement"]["image"]["value"] == 50.0 and result["agreement"]["text"]["value"] == 75.0
    assert result["agreement"]["image"]["ci95"]["items"] == 4
    assert result["spread"]["acc_image"]["per_repeat"] == [75.0, 50.0, 50.0]
    assert result["spread"]["mg"]["per_repeat"] == [50.0, 0.0, 25.0]
    assert result["spread"]["acc_image"]["sd"] == pytest.approx(np.std([75, 50, 50], ddof=1))
    assert AGGREGATE["acc_image"](records) == 75.0 and AGGREGATE["mg"](records) == 50.0
    assert AGGREGATE["repeats"]([record("1", "image", True)]) == {"n": 1}


def test_every_response_passes_one_answer_as_take_first_does_and_several_as_a_list():
    from pathbind_tasks.common.repeats import EveryResponse, every_response
    from pathbind_tasks.common.vqa import process_results

    assert EveryResponse().apply([["a"], ["b", "c"], []], None) == ["a", ["b", "c"], ""]
    assert every_response(["x"]) == ["x"] and every_response([["x", "y"]]) == ["x", "y"] and every_response([]) == []
    doc = {"id": "q", "question": "Q?", "options": ["p", "q"], "answer": "B", "answer_format": "mcq",
           "condition": "image", "condition_set": "full"}
    plain = process_results(doc, ["<answer>B</answer>"])["acc_image"]
    assert plain["correct"] and "repeats" not in plain
    several = process_results(doc, [["<answer>B</answer>", "<answer>A</answer>"]])["acc_image"]
    assert several["correct"] and [r["parsed"] for r in several["repeats"]] == ["B", "A"]
