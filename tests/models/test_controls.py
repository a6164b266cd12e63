"""The controls as adapters: prompt reading, the blind guess, scores and maps."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

import pathbind_tasks.demo
from pathbind import render_template
from pathbind_models.controls.blind import BlindControl
from pathbind_models.controls.positive import PositiveControl
from pathbind_models.controls.prompt import read_prompt
from pathbind_models.lmms_model import cut_at_stops, to_images
from pathbind_tasks.demo.synth import demo_items

DATA = Path(pathbind_tasks.demo.__file__).parent / "data"


@pytest.fixture(scope="module")
def items():
    mcq, yes_no = demo_items(n_per_dimension=2, n_yes_no=4, seed=11)
    return mcq, yes_no


def mcq_prompt(item: dict, thinking: bool = False) -> str:
    return render_template("mcq", question=item["question"], thinking=thinking,
                           choices=list(zip("ABCD", item["options"], strict=True)))


def test_read_prompt_recovers_question_and_options_from_the_mcq_template(items):
    """The controls read back exactly what the template rendered."""
    item = items[0][0]
    prompt = read_prompt(mcq_prompt(item, thinking=True))
    assert prompt.question == item["question"]
    assert prompt.options == tuple(item["options"])
    assert prompt.wants_thinking and not prompt.yes_no


def test_read_prompt_recognises_yes_no_questions(items):
    """The yes/no template has no options and asks for Yes or No."""
    item = items[1][0]
    prompt = read_prompt(render_template("yesno", question=item["question"], thinking=False))
    assert prompt.yes_no and prompt.options == () and prompt.question == item["question"]


def test_a_yes_no_prompt_is_one_with_both_words_or_shi_before_fou():
    """Against the one-pattern definition, on strings built from the words, their look-alikes and word characters."""
    reference = re.compile(r"\bYes\b.*\bNo\b|\bNo\b.*\bYes\b|是.*否", re.DOTALL)
    pieces = ["Yes", "No", "是", "否", " ", "\n", "a", "_", "é", "7", "Nope", "Yesx", "xNo", "No.", "(Yes)", "NoYes"]
    rng = random.Random(5)
    for _ in range(20000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        assert read_prompt(text).yes_no == bool(reference.search(text)), text


def test_blind_guesses_are_seeded_by_the_text_in_any_process_and_stay_at_chance():
    """The negative control's guess is a function of the prompt text: a fresh process with another hash seed
    gives the same guesses; over the packaged demo they use every letter and stay near chance (25%)."""
    rows = pq.read_table(DATA / "vqa.parquet", columns=["question", "options", "answer"]).to_pylist()
    prompts = [mcq_prompt(row) for row in rows]
    answers = [BlindControl().generate([], text) for text in prompts]
    code = ("import json, sys; from pathbind_models.controls.blind import BlindControl; "
            "print(json.dumps([BlindControl().generate([], text) for text in json.load(sys.stdin)]))")
    done = subprocess.run([sys.executable, "-c", code], input=json.dumps(prompts), capture_output=True, text=True,
                          env={**os.environ, "PYTHONHASHSEED": "12345"}, check=True)
    assert json.loads(done.stdout) == answers
    assert set(answers) == {f"<answer>{letter}</answer>" for letter in "ABCD"}
    correct = [answer == f"<answer>{row['answer']}</answer>" for answer, row in zip(answers, rows, strict=True)]
    assert np.mean(correct) <= 0.45  # 60 items: chance is 0.25 +- 0.06


def test_positive_control_answers_from_the_image_and_guesses_without_it(items):
    """With the image it names the reference letter; without, it falls back to the blind guess."""
    control, blind = PositiveControl(), BlindControl()
    for item in items[0]:
        text = mcq_prompt(item)
        assert control.generate([item["image"]], text) == f"<answer>{item['answer']}</answer>"
        assert control.generate([], text) == blind.generate([], text)


def test_thinking_prompts_get_the_controls_measurements_as_reasoning(items):
    """When the prompt asks for <think>, the control writes its findings there."""
    item = items[0][0]
    answer = PositiveControl().generate([item["image"]], mcq_prompt(item, thinking=True))
    assert answer.startswith("<think>") and answer.endswith(f"<answer>{item['answer']}</answer>")


def test_option_logprobs_favour_the_answer_read_from_the_image(items):
    """The control's log-probabilities form a distribution peaked on the reference; the blind one is uniform."""
    item = items[0][0]
    scores = PositiveControl().option_logprobs([item["image"]], mcq_prompt(item), list("ABCD"))
    assert np.isclose(np.exp(scores).sum(), 1.0)
    assert "ABCD"[int(np.argmax(scores))] == item["answer"]
    assert np.allclose(BlindControl().option_logprobs([], mcq_prompt(item), list("ABCD")), np.log(0.25))


def test_attention_maps_localise_for_the_control_and_are_uniform_for_the_blind(items):
    """The control's evidence map peaks inside the lesion box of a D4 item; the blind map is flat."""
    item = next(i for i in items[0] if i["dimension"] == "D4")
    grid = PositiveControl().entity_attention(item["image"], "Look at the image and locate: lesion", "lesion").map
    row, col = np.unravel_index(np.argmax(grid), grid.shape)
    x, y = (col + 0.5) * item["width"] / grid.shape[1], (row + 0.5) * item["height"] / grid.shape[0]
    assert any(x0 <= x <= x1 and y0 <= y <= y1 for x0, y0, x1, y1 in item["boxes"])
    blind = BlindControl().entity_attention(item["image"], "Look at the image and locate: lesion", "lesion").map
    assert np.ptp(blind) == 0 and np.isclose(blind.sum(), 1.0)


def test_visuals_are_flattened_to_rgb_images_and_bad_ones_are_named(tmp_path):
    """Nested lists and paths become RGB images; anything else is a TypeError naming the type."""
    path = tmp_path / "tile.png"
    Image.new("L", (4, 4)).save(path)
    images = to_images([[Image.new("RGBA", (2, 2))], str(path)])
    assert [i.mode for i in images] == ["RGB", "RGB"]
    assert to_images(None) == []
    with pytest.raises(TypeError, match="visual of type int is not an image"):
        to_images([3])


def test_generation_stops_at_the_first_stop_sequence():
    """lmms-eval's `until` truncates the answer; empty stops are ignored."""
    assert cut_at_stops("<answer>A</answer>\n\nmore", ["\n\n", ""]) == "<answer>A</answer>"
    assert cut_at_stops("abc", None) == "abc"
