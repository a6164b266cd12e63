"""The controls and the baselines on the PathView demo, called directly: what each answers and why."""

from __future__ import annotations

import importlib

import datasets
import numpy as np
import pytest

from pathbind import make_plugin_manager
from pathbind.catalog import plugin_tasks, task_config
from pathbind_metrics.refusal import is_refusal
from pathbind_models.baseline import baseline_answer, task_stats
from pathbind_models.controls.blind import BlindControl
from pathbind_models.controls.positive import PositiveControl
from pathbind_tasks.common import pathview_aggregations as aggregations
from pathbind_tasks.demo import pathview_synth
from pathbind_tasks.pathview.prompts import doc_to_text

TASKS = list(pathview_synth.TASKS)


def _function(dotted: str):
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


@pytest.fixture(scope="module")
def demo() -> dict[str, tuple[list[dict], list[str], object]]:
    """Per demo task, as its config wires it: documents, prompts (boxes in pixels) and its process_results."""
    entries = {e.name: e for e in plugin_tasks(make_plugin_manager())}
    tasks = {}
    for task in TASKS:
        config = task_config(entries[f"pathbind_pathview_demo_{task}"])
        raw = datasets.Dataset.from_parquet(config["dataset_kwargs"]["data_files"]["test"])
        docs = list(_function(config["process_docs"])(raw))
        prompts = [doc_to_text(doc, config["lmms_eval_specific_kwargs"]["default"]) for doc in docs]
        tasks[task] = docs, prompts, _function(config["process_results"])
    return tasks


def run(model, demo, task: str) -> list[dict]:
    docs, prompts, process = demo[task]
    return [next(iter(process({k: v for k, v in doc.items() if k != "image"},
                              [model.generate([doc["image"].convert("RGB")], prompt)]).values()))
            for doc, prompt in zip(docs, prompts, strict=True)]


@pytest.mark.parametrize(("task", "metric", "bound"), [
    ("region_ogd", "dice", 90), ("slide_lgd", "dice", 90), ("region_ocn", "mae", 0.5),
    ("region_rcl", "accuracy", 100), ("region_ocl", "accuracy", 100), ("region_spr", "accuracy", 100),
    ("slide_org", "accuracy", 100), ("slide_ocl", "accuracy", 100), ("region_rds", "entity_recall", 100),
    ("region_dlo", "macro_f1", 100), ("slide_are", "macro_f1", 100), ("slide_dlo", "macro_f1", 100),
])
def test_positive_control_reads_answerable_items_from_the_pixels(demo, task, metric, bound):
    """Segmented nuclei and lesions answer every answerable demo task, without a single refusal."""
    records = run(PositiveControl(), demo, task)
    value = getattr(aggregations, metric)(records)
    assert value <= bound if metric == "mae" else value >= bound
    assert aggregations.refusal_rate(records) == 0 and aggregations.invalid_rate(records) == 0


@pytest.mark.parametrize("task", ["region_trap", "slide_trap"])
def test_positive_control_refuses_what_the_field_of_view_cannot_show(demo, task):
    """An organ of isolated cells, a cell count of an overview: the control measures nothing and refuses."""
    assert aggregations.refusal_rate(run(PositiveControl(), demo, task)) == 100


@pytest.mark.parametrize("task", TASKS)
def test_blind_control_answers_everything_and_refuses_nothing(demo, task):
    """The blind control gives an answer in each prompt's format, the same with and without the image."""
    docs, prompts, _ = demo[task]
    blind = BlindControl()
    for doc, prompt in zip(docs, prompts, strict=True):
        answer = blind.generate([doc["image"]], prompt)
        assert answer == blind.generate([], prompt) and not is_refusal(answer)
    records = run(blind, demo, task)
    assert aggregations.invalid_rate(records) == 0
    assert aggregations.refusal_rate(records) == 0


def test_positive_control_boxes_follow_the_frame_the_prompt_asks(demo):
    """The same item asked in thousandths gets other numbers, the same pixel boxes and the same Dice."""
    docs, prompts, process = demo["slide_lgd"]
    doc, prompt = docs[0], prompts[0]
    per_mille_doc = {**doc, "box_frame": "per_mille"}  # as pathbind_pathview_demo_slide_lgd_per_mille writes it
    pixel_answer = PositiveControl().generate([doc["image"]], prompt)
    per_mille_prompt = doc_to_text(per_mille_doc, {"template": "pathview_box"})
    per_mille_answer = PositiveControl().generate([doc["image"]], per_mille_prompt)
    pixel, per_mille = (next(iter(process({k: v for k, v in d.items() if k != "image"}, [answer]).values()))
                        for d, answer in ((doc, pixel_answer), (per_mille_doc, per_mille_answer)))
    assert pixel_answer != per_mille_answer and (pixel["box_frame"], per_mille["box_frame"]) == ("pixel", "per_mille")
    assert np.allclose(per_mille["box_pixels"], pixel["box_pixels"], atol=0.5)
    assert per_mille["dice"] == pytest.approx(pixel["dice"], abs=0.01) and pixel["dice"] > 0.9


def test_controls_cannot_answer_a_box_prompt_that_names_no_frame(demo):
    """A grounding prompt without its frame is an error (answered blank, scored invalid), never read as pixels."""
    docs, prompts, _ = demo["region_ogd"]
    unframed = prompts[0].replace(f"in pixels of this {docs[0]['width']} × {docs[0]['height']} image", "")
    with pytest.raises(ValueError, match="names no single box frame"):
        PositiveControl().generate([docs[0]["image"]], unframed)


def test_positive_control_without_an_image_is_blind(demo):
    """No image, no measurement: the control answers as the blind control does."""
    _, prompts, _ = demo["region_ocn"]
    assert PositiveControl().generate([], prompts[0]) == BlindControl().generate([], prompts[0])


# ------------------------------------------------------------------------------------------- baselines


def _docs(task: str, demo) -> list[dict]:
    return [{k: v for k, v in doc.items() if k != "image"} for doc in demo[task][0]]


def test_frequent_choice_is_the_modal_reference_answer(demo):
    """Every item gets the option the task's references name most often (ties: first in sorted order)."""
    docs = _docs("region_ocl", demo)
    stats = task_stats(docs)
    modal = max(sorted(stats.answers), key=lambda a: stats.answers[a])
    for doc in docs:
        letter = baseline_answer(doc, stats, "frequent").removeprefix("<answer>").removesuffix("</answer>")
        assert doc["options"][ord(letter) - ord("A")] == modal


def test_random_choice_is_seeded_by_the_item_and_near_chance(demo):
    """The random baseline is reproducible per item id and seed, and differs between seeds."""
    docs = _docs("slide_org", demo)
    stats = task_stats(docs)
    first = [baseline_answer(doc, stats, "random", seed=0) for doc in docs]
    assert first == [baseline_answer(doc, stats, "random", seed=0) for doc in reversed(docs)][::-1]
    assert first != [baseline_answer(doc, stats, "random", seed=1) for doc in docs]


def test_count_box_and_entity_baselines_come_from_the_data(demo):
    """Counts stay within the task's range (the mode for frequent); boxes and entities come from its references."""
    counts = _docs("region_ocn", demo)
    stats = task_stats(counts)
    values = [int(baseline_answer(d, stats, "random")[8:-9]) for d in counts]
    assert min(stats.counts) <= min(values) and max(values) <= max(stats.counts)
    mode = int(baseline_answer(counts[0], stats, "frequent")[8:-9])
    assert stats.counts[mode] == max(stats.counts.values())
    boxes = _docs("slide_lgd", demo)
    assert baseline_answer(boxes[0], task_stats(boxes), "frequent", convention="unit").startswith("<answer>[0.")
    assert {doc["box_frame"] for doc in boxes} == {"pixel"} and {doc["box_frame"] for doc in counts} == {None}
    described = _docs("region_rds", demo)
    entity = baseline_answer(described[0], task_stats(described), "frequent")[8:-9]
    assert entity in {e for d in described for e in d["entities"]}


def test_baselines_never_refuse_and_skip_other_tasks(demo):
    """Traps are answered like any item (SRR 0); a document that is not a PathView item gets ""."""
    for task in ("region_trap", "slide_trap"):
        docs = _docs(task, demo)
        for strategy in ("random", "frequent"):
            assert not any(is_refusal(baseline_answer(d, task_stats(docs), strategy)) for d in docs)
    assert baseline_answer({"id": "vqa-1", "options": ["a", "b"], "answer": "A"}, task_stats([]), "random") == ""
    with pytest.raises(ValueError, match="unknown baseline strategy 'median'"):
        baseline_answer(_docs("region_rcl", demo)[0], task_stats([]), "median")


def test_box_answers_are_valid_boxes(demo):
    """Random boxes have sorted corners inside the image."""
    docs = _docs("region_ogd", demo)
    for doc in docs:
        text = baseline_answer(doc, task_stats(docs), "random")[9:-10]
        x0, y0, x1, y1 = np.array(text.split(", "), float)
        assert 0 <= x0 <= x1 <= 256 and 0 <= y0 <= y1 <= 256
