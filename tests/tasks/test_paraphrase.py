"""Paraphrase flips: rule-based rewordings over named linguistic phenomena, the ``paraphrase`` condition set any VQA
task can turn on, flip rate and text-only consistency by hand and through lmms-eval (the control keeps its answers,
the blind control's text-seeded guesses flip)."""

from __future__ import annotations

import datasets
import pytest
from conftest import lmms_eval, metric

from pathbind_tasks.common import paraphrase as pp
from pathbind_tasks.common import paraphrase_aggregations as pa
from pathbind_tasks.common.conditions import CONDITION_SETS, PARAPHRASE_CONDITIONS
from pathbind_tasks.common.vqa import vqa_docs


@pytest.mark.parametrize(("rule", "question", "expected"), [
    ("lexical_substitution", "Which tissue is shown in this image?", "Which tissue is shown in this picture?"),
    ("deixis", "Are there mitoses in this field?", "Are there mitoses in the field?"),
    ("fronting", "Is there a cluster of atypical nuclei in this image?",
     "In this image, is there a cluster of atypical nuclei?"),
    ("indirect_question", "What is the most likely diagnosis?", "Tell me what the most likely diagnosis is."),
    ("indirect_question", "Does this image show DAB-positive nuclei?",
     "Tell me whether this image shows DAB-positive nuclei."),
    ("adverbial_framing", "Is HER2 amplified?", "Looking at the image, is HER2 amplified?"),
    ("contraction", "What is the stain?", "What's the stain?"),
])
def test_each_rule_rewrites_only_the_frame_of_the_question(rule, question, expected):
    rules = {r.name: r for r in pp.RULES}
    assert rules[rule].rewrite(question) == expected


def test_paraphrases_are_distinct_capped_and_skip_rules_that_do_not_apply():
    question = "Is there a cluster of atypical nuclei in this image?"
    found = pp.paraphrases(question, 3)
    assert [rule for rule, _ in found] == ["lexical_substitution", "deixis", "fronting"]
    assert len({text for _, text in found} | {question}) == 4
    assert all("cluster of atypical nuclei" in text for _, text in found)  # the finding is never reworded
    assert [rule for rule, _ in pp.paraphrases("Grade?", 3)] == ["adverbial_framing"]
    assert pp.paraphrases("Name the grade.", 3) == []
    assert len({rule.phenomenon for rule in pp.RULES}) == len(pp.RULES) >= 5


def test_the_condition_set_asks_each_item_in_its_paraphrases_and_leaves_out_items_without_one():
    rows = {"id": ["a", "b"], "question": ["Is there necrosis in this image?", "Grade?"], "answer": ["yes", "no"],
            "image": [_png(), _png(1)]}
    docs = vqa_docs("paraphrase")(datasets.Dataset.from_dict(rows))
    by_condition = {(d["id"], d["condition"]): d for d in docs}
    assert CONDITION_SETS["paraphrase"] == ("image", "text", *PARAPHRASE_CONDITIONS)
    assert [c for i, c in by_condition if i == "a"] == ["image", "text", *PARAPHRASE_CONDITIONS]
    assert [c for i, c in by_condition if i == "b"] == ["image", "text", "paraphrase_1"]  # "Grade?" has one
    assert by_condition["a", "paraphrase_3"]["question"] == "In this image, is there necrosis?"
    assert by_condition["a", "paraphrase_3"]["paraphrase"] == "fronting" and by_condition["a", "image"][
        "paraphrase"] == ""


def _png(seed: int = 0) -> dict:
    import io

    import numpy as np
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(np.full((8, 8, 3), 40 * seed, np.uint8)).save(buffer, format="PNG")
    return {"bytes": buffer.getvalue(), "path": None}


def record(item: str, condition: str, parsed: str | None, rule: str = "", cluster: str = "") -> dict:
    return {"id": item, "cluster": cluster or f"image={item}", "condition": condition, "parsed": parsed,
            "valid": parsed is not None, "correct": parsed == "yes", "paraphrase": rule}


def test_flip_rate_and_text_consistency_by_hand():
    """Item 1 flips once in 2 paraphrases (an invalid answer is a flip), item 2 never, item 3 has no valid
    original answer and is left out; text-only agrees for item 2 only. Items 1 and 2 share an image."""
    records = [record("1", "image", "yes", cluster="image=x"), record("1", "paraphrase_1", "yes", "deixis", "image=x"),
               record("1", "paraphrase_2", None, "fronting", "image=x"), record("1", "text", "no", cluster="image=x"),
               record("2", "image", "no", cluster="image=x"), record("2", "paraphrase_1", "no", "deixis", "image=x"),
               record("2", "text", "no", cluster="image=x"),
               record("3", "image", None), record("3", "paraphrase_1", "yes", "deixis")]
    found = pa.paraphrase(records)
    assert found["flip_rate"]["value"] == pytest.approx(100 / 3) and found["flip_rate"]["n"] == 3
    assert found["by_rule"]["fronting"]["value"] == 100.0 and found["by_rule"]["deixis"]["value"] == 0.0
    assert found["text_consistency"]["value"] == 50.0
    assert found["invalid_left_out"] == 1 and found["items"] == 2 and found["pairs"] == 3
    assert found["flip_rate"]["ci95"]["clusters"] == 1  # both items on one image: one cluster, no interval
    assert pa.flip_rate(records) == found["flip_rate"]["value"]


@pytest.mark.slow
def test_the_control_keeps_its_answers_and_the_blind_guess_flips(tmp_path):
    """12 MCQ items × up to 5 documents: the control answers every wording alike; the blind control's guess is
    seeded by the prompt text, so a reworded question flips it (to another of four letters) most of the time."""
    tasks = "pathbind_demo_vqa_paraphrase"
    control = lmms_eval(tmp_path, "pathbind_control", tasks, "--limit", "60")
    blind = lmms_eval(tmp_path, "pathbind_blind", tasks, "--limit", "60")
    assert metric(control, tasks, "flip_rate") == 0 and metric(control, tasks, "acc_image") == 100
    assert metric(blind, tasks, "flip_rate") >= 25
    details = metric(blind, tasks, "paraphrase")
    assert details["items"] + details["invalid_left_out"] <= 12 and details["pairs"] >= 12
    assert set(details["by_rule"]) <= {rule.name for rule in pp.RULES}
    assert details["flip_rate"]["ci95"]["cluster"] == "image"
