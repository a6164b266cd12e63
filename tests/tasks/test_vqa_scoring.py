"""Scoring of VQA answers under the image and text conditions, and the MG aggregations."""

from __future__ import annotations

import io
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import datasets
import pytest
from PIL import Image

from pathbind_metrics import accuracy, multimodal_gain
from pathbind_tasks.common import vqa
from pathbind_tasks.common.metrics import VQA, declared, names
from pathbind_tasks.common.vqa import doc_to_text, doc_to_visual, full, process_results
from pathbind_tasks.common.vqa_aggregations import invalid_rate, mg

TASKS_DIR = Path(vqa.__file__).parents[1]

MCQ = {"id": "q1", "question": "Which quadrant?", "options": ["upper-left", "upper-right", "lower-left", "lower-right"],
       "answer": "C", "condition": "image"}


def test_mcq_answers_are_scored_strictly():
    """A tagged correct letter scores; an unparseable answer is invalid and wrong, with a reason."""
    right = process_results(MCQ, ["<answer>C</answer>"])["acc_image"]
    vague = process_results(MCQ, ["It could be C or D"])["acc_image"]
    assert (right["correct"], right["valid"]) == (True, True)
    assert (vague["correct"], vague["valid"], vague["reason"]) == (False, False, "unparseable answer")


def test_yes_no_answers_compare_case_insensitively():
    """'Yes' in the answer tag matches a 'yes' reference."""
    record = process_results({"id": "y", "question": "?", "answer": "yes"}, ["<answer>Yes</answer>"])["mg"]
    assert record["correct"] and record["valid"]


def test_a_malformed_document_becomes_an_invalid_record_instead_of_an_exception():
    """A doc without options is scored invalid with the error as reason; process_results never raises."""
    doc = {"id": "bad", "question": "Which?", "answer": "A", "condition": "text", "answer_format": "mcq"}
    record = process_results(doc, ["<answer>A</answer>"])["acc_text"]
    assert not record["valid"] and not record["correct"]
    assert record["reason"] == "missing field 'options'"


def test_an_answer_letter_outside_the_options_is_an_invalid_item():
    """A reference letter 'E' for four options is reported, not scored."""
    record = process_results({**MCQ, "answer": "E"}, ["<answer>C</answer>"])["acc_image"]
    assert not record["valid"]
    assert record["reason"] == "field 'answer' is not one of the option letters ('E'; letters A, B, C, D)"


def test_each_record_stores_its_items_option_count():
    """The chance of a uniform guess rests on each item's own count: five options, four, yes/no; none for an item
    whose options cannot be asked."""
    five = {**MCQ, "options": [*MCQ["options"], "centre"]}
    counts = [process_results(doc, ["<answer>C</answer>"])["acc_image"]["n_options"]
              for doc in (five, MCQ, {"id": "y", "question": "?", "answer": "no"}, {**MCQ, "options": "A, B"})]
    assert counts == [5, 4, 2, None]


def _records(image: list[bool], text: list[bool]) -> list[dict]:
    make = lambda cond, values: [{"id": f"i{n}", "condition": cond, "correct": v, "valid": True}  # noqa: E731
                                 for n, v in enumerate(values)]
    return make("image", image) + make("text", text)


def test_aggregations_match_hand_computed_values():
    """acc_image 75, acc_text 25, MG 50 for a hand-built set; order of records does not matter."""
    records = _records([True, True, True, False], [False, True, False, False])
    aggregate = {metric.name: metric.aggregate for metric in declared(*VQA)}
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
    docs = list(full(ds))
    assert [d["condition"] for d in docs] == ["image", "text"]
    kwargs = {"thinking": False}
    assert doc_to_text(docs[0], kwargs) == doc_to_text(docs[1], kwargs)
    assert len(doc_to_visual(docs[0])) == 1 and doc_to_visual(docs[1]) == []


@pytest.mark.parametrize(("process_docs", "conditions", "kind"), [
    (vqa.full, ["image", "text"], "vqa_full"), (vqa.image_only, ["image"], "vqa_image_only"),
    (vqa.ablation, list(vqa.CONDITION_SETS["ablation"]), "vqa_ablation")])
def test_the_condition_set_picks_the_documents_and_the_metrics_they_are_emitted_under(process_docs, conditions, kind):
    """One metric_list serves every variant: each document is emitted under the metrics of its condition set only
    (an image-only run reports no text accuracy or gain). Four items on four images in two dimensions, so that
    each has a swap partner on another image of its own dimension and of the other."""
    rows = [{**MCQ, "id": f"q{i}", "dimension": f"D{i // 2}", "image": Image.new("RGB", (8, 8), (60 * i, 0, 0))}
            for i in range(4)]
    docs = list(process_docs(datasets.Dataset.from_list(rows).remove_columns("condition")))
    assert [d["condition"] for d in docs if d["id"] == "q0"] == conditions
    assert {d["condition_set"] for d in docs} == {k for k, v in vqa.CONDITION_SETS.items() if v == tuple(conditions)}
    assert all(tuple(process_results(d, ["<answer>C</answer>"])) == names(kind) for d in docs)
    assert ("acc_text" in names(kind)) == ("text" in conditions)


def test_the_answer_format_of_the_documents_picks_the_template_and_the_parser():
    """The schema sets answer_format (options: mcq, none: yesno); the prompt and the parser follow it together."""
    image = Image.new("RGB", (8, 8))
    mcq = next(iter(full(datasets.Dataset.from_list([{**MCQ, "image": image}]).remove_columns("condition"))))
    rows = [{"id": "y", "question": "Is it?", "answer": "yes", "image": image}]
    yes_no = next(iter(full(datasets.Dataset.from_list(rows))))
    assert (mcq["answer_format"], yes_no["answer_format"]) == ("mcq", "yesno")
    assert "single letter of the correct option (A, B, C, D)" in doc_to_text(mcq)
    assert 'Answer with "Yes" or "No"' in doc_to_text(yes_no) and "single letter" not in doc_to_text(yes_no)
    assert process_results(mcq, ["<answer>C</answer>"])["acc_image"]["parsed"] == "C"
    assert process_results(yes_no, ["<answer>Yes</answer>"])["acc_image"]["parsed"] == "yes"
    assert process_results({**yes_no, "answer_format": "mcq"}, ["<answer>Yes</answer>"])["acc_image"]["reason"] \
        == "missing field 'options'"


def test_vqa_aggregations_do_not_depend_on_the_plugin_door(tmp_path):
    """With the pathbind_tasks plugin disabled, pathbind.plugin_metrics (the third parties' door) has no VQA
    metric, yet every first-party YAML loads through lmms-eval and the VQA aggregations compute their figures."""
    for path in sorted(TASKS_DIR.rglob("*.yaml")):
        assert "pathbind.plugin_metrics" not in path.read_text(encoding="utf-8"), path
    script = textwrap.dedent(f"""
        from pathlib import Path
        from lmms_eval.utils import load_yaml_config
        from pathbind import plugin_metrics
        try:
            plugin_metrics.acc_image
            raise SystemExit("acc_image still resolves through the plugins")
        except AttributeError:
            pass
        configs = {{p.stem: load_yaml_config(str(p), mode="full") for p in Path({str(TASKS_DIR)!r}).rglob("*.yaml")
                    if p.name != "labels.yaml"}}
        aggregations = {{m["metric"]: m["aggregation"] for m in configs["pathbind_demo_vqa_ablation"]["metric_list"]}}
        records = [{{"id": item, "condition": condition, "correct": item == "a" and condition == "image",
                     "valid": True, "dimension": "D1"}} for item in "ab" for condition in ("image", "text", "blank")]
        print([aggregations[name](records) for name in ("acc_image", "acc_text", "mg", "drop_blank")])
    """)
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PATHBIND_DISABLE_PLUGINS": "pathbind_tasks"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "[50.0, 0.0, 50.0, 50.0]"


def test_a_yes_no_set_written_with_pandas_beside_mcq_sets_stays_yes_no(tmp_path):
    """pandas writes a shared schema's unused ``options`` column as nulls: the set is still yes/no, prompted and
    scored as such, not rendered as an MCQ with no options."""
    import pandas as pd

    image = io.BytesIO()
    Image.new("I;16", (300, 170), 40000).save(image, "PNG")
    pd.DataFrame({"id": ["a"], "image": [{"bytes": image.getvalue(), "path": None}], "question": ["Is there tumour?"],
                  "options": [None], "answer": ["Yes"]}).to_parquet(tmp_path / "test.parquet")
    docs = full(datasets.Dataset.from_parquet(str(tmp_path / "test.parquet")))
    assert [d["answer_format"] for d in docs] == ["yesno", "yesno"]
    assert all('"Yes" or "No"' in doc_to_text(d) for d in docs)
    assert [process_results(d, ["<answer>Yes</answer>"])["acc_image"]["correct"] for d in docs] == [True, True]
