"""lmms-eval's own model wrappers on PathBind tasks, with checkpoints that carry real tokenizers and chat templates:
what each hands the processor per condition, and the documents or tasks PathBind skips, with the reason, for a
wrapper known to fail on them."""

from __future__ import annotations

import inspect
import json
import math
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import realtok
from conftest import lmms_eval, metric

from pathbind.capabilities import (
    EVERY_CONDITION,
    KNOWN_CONDITION_FAILURES,
    _template_drops_text,
    drop_conditions,
    unanswerable_conditions,
)
from pathbind.lmms.evaluate import _runs_pathbind, _skipping_unsupported
from pathbind.lmms.marks import patch

needs_realtok = pytest.mark.skipif(not realtok.available(), reason="no real tokenizer files in ../shared/realtok")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
CPU = "device=cpu,device_map=cpu"  # both wrappers default to device_map=auto, which sends inputs to "cuda"
FAST = ("--gen_kwargs", "max_new_tokens=8", "--limit", "4")


def needs_decord() -> None:
    # lmms-eval's qwen2_5_vl and llava_hf modules import decord at module level, image tasks or not.
    pytest.importorskip("decord", reason="lmms-eval's qwen2_5_vl and llava_hf wrappers import decord: "
                        "pip install 'pathbind[lmms-wrappers]' (make install does)")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """Factory ``checkpoint(name) -> Path``: a tiny random model with ``name``'s real non-weight files."""
    root = tmp_path_factory.mktemp("realtok")
    built: dict[str, Path] = {}

    def build(name: str, with_template: bool = True) -> Path:
        key = f"{name}{'' if with_template else '-no-template'}"
        if key not in built:
            built[key] = realtok.make_realtok_model(name, root / key)
            if not with_template:  # as llava-hf checkpoints were published before chat_template.json existed
                for file in ("chat_template.json", "chat_template.jinja"):
                    (built[key] / file).unlink()
        return built[key]

    return build


@pytest.fixture
def demo_vqa(task_manager):
    """A freshly built lmms-eval task object of pathbind_demo_vqa (60 items, each with and without the image)."""
    return task_manager.load_task_or_group(["pathbind_demo_vqa"])["pathbind_demo_vqa"]


def conditions(task: Any) -> list[str]:
    return list(task.eval_docs["condition"])


def test_dropping_a_condition_removes_its_documents_from_every_copy_the_model_reads(demo_vqa):
    """The text-only documents leave the task's dataset and its image-less copy alike (the model reads documents
    by index from the first, lmms-eval builds requests from the second); the image documents keep their order."""
    image_ids = [doc["id"] for doc in demo_vqa.eval_docs_no_media if doc["condition"] == "image"]
    kept, tasks, skipped = drop_conditions({"pathbind_demo_vqa": demo_vqa}, {"text": "it crashes"}, "'m' (x.M)")
    assert kept == {"pathbind_demo_vqa": demo_vqa} and tasks == {}
    assert conditions(demo_vqa) == ["image"] * 60 and list(demo_vqa.eval_docs_no_media["id"]) == image_ids
    assert skipped == {"pathbind_demo_vqa": {"text": (
        "task 'pathbind_demo_vqa': its text-only (no image) condition is skipped for model 'm' (x.M), so acc_text "
        "and mg are missing (NaN): it crashes. --model pathbind_hf --model_args pretrained=<checkpoint> answers "
        "every condition for the families it supports")}}


def test_a_task_left_without_documents_is_skipped_whole_and_its_group_with_it(demo_vqa):
    """Removing every condition a task has removes the task (lmms-eval cannot evaluate zero documents)."""
    kept, tasks, skipped = drop_conditions({"group": {"pathbind_demo_vqa": demo_vqa}},
                                           {"image": "no images", "text": "no text"}, "m")
    assert kept == {} and set(skipped["pathbind_demo_vqa"]) == {"image", "text"}
    assert tasks["pathbind_demo_vqa"].endswith("(the task has no other documents)")


def test_every_condition_skips_every_task_and_a_task_without_conditions_is_untouched(demo_vqa):
    """EVERY_CONDITION skips all tasks; a named condition leaves a task without a condition column alone."""
    plain = SimpleNamespace(dataset={"test": SimpleNamespace(column_names=["id"])})
    kept, tasks, _ = drop_conditions({"pathbind_demo_vqa": demo_vqa, "other": plain}, {EVERY_CONDITION: "why"}, "m")
    assert kept == {} and tasks == {"pathbind_demo_vqa": "task 'pathbind_demo_vqa' is skipped for model m: why",
                                    "other": "task 'other' is skipped for model m: why"}
    assert drop_conditions({"other": plain}, {"text": "why"}, "m") == ({"other": plain}, {}, {})


class Wrapper:
    """An lmms-eval model class that the failure table names (by monkeypatch)."""


def test_the_hook_reports_skipped_conditions_beside_the_metrics_and_logs_them(monkeypatch, demo_vqa, logged_warnings):
    """evaluate gets the task without the documents; results carry the reason under the task's metrics and in
    results["pathbind"], and a warning names model, task and condition."""
    monkeypatch.setitem(KNOWN_CONDITION_FAILURES, f"{__name__}.{Wrapper.__qualname__}", {"text": "it crashes"})
    seen: dict[str, list[str]] = {}

    def evaluate(lm, task_dict, limit=None, log_samples=True, cli_args=None):
        seen.update({name: conditions(task) for name, task in task_dict.items()})
        return {"results": {name: {"acc_text,none": math.nan} for name in task_dict}, "samples": {}}

    signature = inspect.signature(evaluate)  # the patch claims the call: its task is PathBind's
    hooked = patch(evaluate, _skipping_unsupported(signature), _runs_pathbind(signature))
    results = hooked(Wrapper(), {"pathbind_demo_vqa": demo_vqa}, cli_args=SimpleNamespace(model="llava_hf"))
    assert seen == {"pathbind_demo_vqa": ["image"] * 60}
    reason = results["results"]["pathbind_demo_vqa"]["skipped_conditions,none"]["text"]
    assert results["pathbind"]["skipped_conditions"] == {"pathbind_demo_vqa": {"text": reason}}
    assert "'llava_hf' (test_lmms_wrappers.Wrapper)" in reason and ": it crashes. " in reason
    assert logged_warnings == [f"pathbind: {reason}"]


@needs_realtok
@pytest.mark.parametrize(("name", "with_template", "drops"), [
    ("llava", True, True),  # LLaVA-1.5's template reads only typed content parts
    ("llava", False, False),  # no template: the wrapper's own Vicuna template keeps the string
    ("qwen2_5_vl", True, False),  # Qwen's template renders string content as it is
])
def test_the_template_probe_tells_which_real_templates_lose_a_plain_string_prompt(checkpoint, name, with_template,
                                                                                  drops):
    """The probe runs the wrapper's own prompt step on the real processor's tokenizer."""
    from transformers import AutoProcessor

    tokenizer = AutoProcessor.from_pretrained(checkpoint(name, with_template)).tokenizer
    assert _template_drops_text(SimpleNamespace(tokenizer=tokenizer, chat_template=None)) is drops


def test_the_failure_table_names_the_measured_wrappers_by_exact_class():
    """llava_hf (chat and simple) and idefics2 fail on text-only documents; qwen2_5_vl and internvl_hf do not."""
    needs_decord()
    from lmms_eval.models.chat.internvl_hf import InternVLHf
    from lmms_eval.models.chat.llava_hf import LlavaHf
    from lmms_eval.models.chat.qwen2_5_vl import Qwen2_5_VL
    from lmms_eval.models.simple.idefics2 import Idefics2
    from lmms_eval.models.simple.llava_hf import LlavaHf as LlavaHfSimple
    from lmms_eval.models.simple.qwen2_5_vl import Qwen2_5_VL as Qwen2_5_VLSimple

    for wrapper in (LlavaHf, LlavaHfSimple, Idefics2):
        assert set(unanswerable_conditions(wrapper)) == {"text"}, wrapper
    for wrapper in (Qwen2_5_VL, Qwen2_5_VLSimple, InternVLHf):
        assert unanswerable_conditions(wrapper) == {}, wrapper


class Recorder:
    """Records what a wrapper passes its real processor, and lets the processor do the work."""

    def __init__(self, processor: Any, calls: list[dict[str, Any]]) -> None:
        self.__dict__.update(_processor=processor, _calls=calls)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        text = kwargs["text"]
        self._calls.append({"text": text if isinstance(text, str) else text[0], "images": kwargs.get("images")})
        return self._processor(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._processor, name)


@pytest.mark.slow
@needs_realtok
def test_qwen2_5_vl_chat_prompts_carry_vision_tokens_only_with_an_image(checkpoint):
    """Through lmms-eval's chat qwen2_5_vl on the real Qwen2.5-VL template: the image document's prompt has one
    image placeholder and one image, the text-only one none at all; both carry the question."""
    needs_decord()
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.models.chat.qwen2_5_vl import Qwen2_5_VL

    lm = Qwen2_5_VL(pretrained=str(checkpoint("qwen2_5_vl")), device="cpu", device_map="cpu")
    calls: list[dict[str, Any]] = []
    lm.processor = Recorder(lm.processor, calls)
    out = simple_evaluate(model=lm, tasks=["pathbind_demo_vqa"], limit=2, gen_kwargs="max_new_tokens=8",
                          log_samples=True)
    docs = [sample["doc"] for sample in out["samples"]["pathbind_demo_vqa"]]
    assert [d["condition"] for d in docs] == ["image", "text"] and len(calls) == 2
    with_image, text_only = calls
    assert with_image["text"].count("<|vision_start|><|image_pad|><|vision_end|>") == 1
    assert len(with_image["images"]) == 1
    assert "<|vision_start|>" not in text_only["text"] and "<|image_pad|>" not in text_only["text"]
    assert not text_only["images"]
    assert all(docs[0]["question"] in call["text"] for call in calls)
    assert out["pathbind"]["skipped_conditions"] == {}
    assert math.isfinite(out["results"]["pathbind_demo_vqa"]["acc_text,none"])


def evaluate_without_the_skip(monkeypatch: pytest.MonkeyPatch, lm: Any) -> dict[str, Any]:
    """What lmms-eval itself does with the wrapper on one item, with and without its image."""
    from lmms_eval.evaluator import simple_evaluate

    monkeypatch.setattr("pathbind.capabilities.KNOWN_CONDITION_FAILURES", {})
    return simple_evaluate(model=lm, tasks=["pathbind_demo_vqa"], limit=2, gen_kwargs="max_new_tokens=8",
                           log_samples=True)


@pytest.mark.slow
@needs_realtok
def test_without_pathbind_s_skip_llava_hf_chat_crashes_on_the_text_only_document(monkeypatch, checkpoint):
    """The failure the table records (if lmms-eval fixes it, this fails: drop the entry and update docs/models.md)."""
    needs_decord()
    from lmms_eval.models.chat.llava_hf import LlavaHf

    lm = LlavaHf(pretrained=str(checkpoint("llava")), device="cpu", device_map="cpu")
    with pytest.raises(IndexError):
        evaluate_without_the_skip(monkeypatch, lm)


@pytest.mark.slow
@needs_realtok
def test_without_pathbind_s_skip_llava_hf_simple_answers_text_only_with_the_previous_image(monkeypatch, checkpoint):
    """With a template that keeps the prompt (none: the wrapper's Vicuna default), the simple wrapper feeds a
    text-only document the previous document's image and prompt: one processor call for two documents, and the
    same answer twice, so text-only accuracy would silently equal image accuracy."""
    needs_decord()
    from lmms_eval.models.simple.llava_hf import LlavaHf

    lm = LlavaHf(pretrained=str(checkpoint("llava", with_template=False)), device="cpu", device_map="cpu")
    calls: list[dict[str, Any]] = []
    lm._image_processor = Recorder(lm._image_processor, calls)
    samples = evaluate_without_the_skip(monkeypatch, lm)["samples"]["pathbind_demo_vqa"]
    assert [s["doc"]["condition"] for s in samples] == ["image", "text"] and len(calls) == 1
    assert samples[0]["resps"] == samples[1]["resps"]


def log_lines(run: dict[str, Any]) -> str:
    return ANSI.sub("", run["stdout"] + run["stderr"])


def sample_conditions(run: dict[str, Any], task: str) -> list[str]:
    log = next(run["out"].rglob(f"*_samples_{task}.jsonl"))
    return [json.loads(line)["pathbind"]["condition"] for line in log.read_text().splitlines()]


@pytest.mark.slow
@needs_realtok
def test_llava_hf_chat_runs_the_image_conditions_and_skips_text_only_with_the_reason(tmp_path, checkpoint):
    """lmms-eval's chat llava_hf crashes on a document without an image; PathBind runs the rest of the run, the
    metric needing text-only answers is NaN with its reason beside it, and the grounding task is skipped."""
    needs_decord()
    run = lmms_eval(tmp_path, "llava_hf", "pathbind_demo_vqa,pathbind_demo_yesno,pathbind_demo_grounding",
                    "--model_args", f"pretrained={checkpoint('llava')},{CPU}", *FAST)
    report = run["results"]["pathbind"]
    assert set(report["skipped_conditions"]) == {"pathbind_demo_vqa", "pathbind_demo_yesno"}
    for task in ("pathbind_demo_vqa", "pathbind_demo_yesno"):
        reason = report["skipped_conditions"][task]["text"]
        assert reason.startswith(f"task {task!r}: its text-only (no image) condition is skipped for model 'llava_hf'")
        assert "IndexError" in reason and reason in log_lines(run)
        assert run["results"]["results"][task]["skipped_conditions,none"] == {"text": reason}
        assert sample_conditions(run, task) == ["image"] * 4
        assert math.isfinite(metric(run, task, "acc_image"))
        assert math.isnan(metric(run, task, "acc_text")) and math.isnan(metric(run, task, "mg"))
    assert "needs attention maps" in report["skipped_tasks"]["pathbind_demo_grounding"]


@pytest.mark.slow
@needs_realtok
def test_llava_hf_simple_with_the_real_template_skips_every_task_instead_of_crashing(tmp_path, checkpoint):
    """--force_simple llava_hf renders the prompt with LLaVA-1.5's template from a plain string, which drops the
    question and the <image> token: each task is skipped with that reason, and the run still writes its results
    (and exits 1: it evaluated nothing)."""
    needs_decord()
    run = lmms_eval(tmp_path, "llava_hf", "pathbind_demo_vqa,pathbind_demo_vqa_ablation", "--force_simple",
                    "--model_args", f"pretrained={checkpoint('llava')},{CPU}", *FAST, exit_code=1)
    skipped = run["results"]["pathbind"]["skipped_tasks"]
    assert set(skipped) == {"pathbind_demo_vqa", "pathbind_demo_vqa_ablation"}
    assert all("lose the question and the <image> token" in reason for reason in skipped.values())
    assert run["results"]["results"] == {}
