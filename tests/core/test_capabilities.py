"""Task requirements against model capabilities, the evaluate hook that skips tasks, and usage per condition."""

from __future__ import annotations

import functools
import inspect
from types import SimpleNamespace

import pytest

from pathbind.capabilities import (
    CAPABILITIES,
    model_capabilities,
    split_supported,
    task_requirements,
    unmet_reason,
)
from pathbind.lmms.evaluate import _skipping_unsupported
from pathbind.usage import usage_by_condition


def task(*requires: str) -> SimpleNamespace:
    """A stand-in for an lmms-eval task object: only ``config.metadata`` is read."""
    return SimpleNamespace(config=SimpleNamespace(metadata={"version": 1, "pathbind_requires": list(requires)}))


class TextOnly:
    """Any lmms-eval model that declares nothing (openai, vllm, sglang, ...)."""


class Capable:
    pathbind_capabilities = frozenset({"attention", "option_scores"})


def test_requirements_are_read_from_metadata_as_a_name_or_a_list():
    """pathbind_requires takes one name or a list; no metadata or no key means no requirement."""
    assert task_requirements({"pathbind_requires": "attention"}) == {"attention"}
    assert task_requirements({"pathbind_requires": ["attention", "option_scores"]}) == set(CAPABILITIES)
    assert task_requirements(None) == task_requirements({"version": 1}) == frozenset()


def test_models_without_the_attribute_offer_nothing():
    """Capabilities come from the class attribute, on the class or an instance; absent means none."""
    assert model_capabilities(TextOnly()) == frozenset()
    assert model_capabilities(Capable) == model_capabilities(Capable()) == set(CAPABILITIES)


def test_pathbind_adapter_models_offer_every_known_capability():
    """AdapterModel (and so the controls and pathbind_hf) declares attention and option scores, no unknown name."""
    from pathbind_models.lmms_model import AdapterModel

    assert model_capabilities(AdapterModel) == set(CAPABILITIES)


def test_the_reason_names_task_model_need_and_what_to_use_instead():
    """The message says which task, what it needs, which model lacks it, and the model to run it with."""
    reason = unmet_reason("grounding", {"attention"}, frozenset(), "'openai' (x.OpenAI)")
    assert reason == ("task 'grounding' is skipped: it needs attention maps from the model's own attention "
                      "(metadata.pathbind_requires: attention), which model 'openai' (x.OpenAI) does not provide. "
                      "Run it with --model pathbind_hf --model_args pretrained=<checkpoint>")
    assert unmet_reason("grounding", {"attention"}, frozenset({"attention"}), "m") is None


def test_an_unknown_requirement_is_named_with_the_known_ones():
    """A misspelt capability skips the task on every model, saying which names exist."""
    reason = unmet_reason("t", {"attentoin"}, model_capabilities(Capable), "m")
    assert reason == ("task 't' is skipped: its metadata.pathbind_requires names 'attentoin', which no PathBind model "
                      "provides (known: attention, option_scores)")


def test_split_keeps_supported_tasks_and_groups_and_drops_emptied_groups():
    """Tasks are removed wherever they sit in lmms-eval's nested dict; a group left empty goes with them."""
    vqa, grounding, faithfulness = task(), task("attention"), task("attention", "option_scores")
    task_dict = {"vqa": vqa, "group_a": {"grounding": grounding, "vqa_2": vqa}, "group_b": {"f": faithfulness}}
    kept, skipped = split_supported(task_dict, frozenset(), "m")
    assert kept == {"vqa": vqa, "group_a": {"vqa_2": vqa}}
    assert sorted(skipped) == ["f", "grounding"]
    assert "log-probabilities of the answer options" in skipped["f"]
    assert split_supported(task_dict, model_capabilities(Capable), "m") == (task_dict, {})


def fake_evaluate(lm, task_dict, limit=None, log_samples=True, cli_args=None):
    """lmms-eval's evaluate, reduced to its signature and the shape of its result."""
    return {"results": {name: {} for name in task_dict}, "samples": {}}


def test_the_hook_passes_only_supported_tasks_and_reports_the_skipped():
    """evaluate receives the supported tasks; results["pathbind"] holds the skipped ones with their reasons."""
    hooked = functools.partial(_skipping_unsupported(inspect.signature(fake_evaluate)), fake_evaluate)
    results = hooked(lm=TextOnly(), task_dict={"vqa": task(), "grounding": task("attention")},
                     cli_args=SimpleNamespace(model="openai"))
    assert list(results["results"]) == ["vqa"]
    assert "'openai' (test_capabilities.TextOnly)" in results["pathbind"]["skipped_tasks"]["grounding"]


def test_with_every_task_skipped_evaluate_is_not_called(monkeypatch):
    """lmms-eval's evaluate fails on an empty dict, so the hook answers with an empty result itself (rank 0 only)."""
    def never(*args, **kwargs):
        raise AssertionError("evaluate must not run without tasks")

    hooked = functools.partial(_skipping_unsupported(inspect.signature(fake_evaluate)), never)
    results = hooked(TextOnly(), {"grounding": task("attention")}, log_samples=False)
    assert results["results"] == {} and "samples" not in results and "grounding" in results["pathbind"]["skipped_tasks"]
    assert "samples" in hooked(TextOnly(), {"grounding": task("attention")}, log_samples=True)
    monkeypatch.setenv("RANK", "1")
    assert hooked(TextOnly(), {"grounding": task("attention")}) is None


def test_a_failing_check_runs_every_task(monkeypatch):
    """If PathBind's own check breaks, the run goes on as lmms-eval would run it (logged), never crashes."""
    def broken(*args):
        raise RuntimeError("boom")

    monkeypatch.setattr("pathbind.lmms.evaluate.split_supported", broken)
    hooked = functools.partial(_skipping_unsupported(inspect.signature(fake_evaluate)), fake_evaluate)
    results = hooked(TextOnly(), {"grounding": task("attention")})
    assert list(results["results"]) == ["grounding"] and results["pathbind"]["skipped_tasks"] == {}


@pytest.mark.parametrize("token_counts", [None, [], [None]])
def test_usage_ignores_samples_without_counts(token_counts):
    """Backends that report no counts (vllm's chat path, failed simple-openai calls) add nothing."""
    assert usage_by_condition({"t": [{"doc": {"condition": "image"}, "token_counts": token_counts}]}) == {}


def test_usage_is_summed_per_task_and_condition():
    """Counts add up per task and condition; a doc without a condition counts under "all"."""
    def sample(condition, tokens_in):
        counts = [{"input_tokens": tokens_in, "output_tokens": 2, "reasoning_tokens": 1}]
        return {"doc": {"condition": condition} if condition else {"q": 1}, "token_counts": counts}

    usage = usage_by_condition({"vqa": [sample("image", 110), sample("image", 120), sample("text", 10)],
                                "mmmu": [sample(None, 5)]})
    assert usage["vqa"]["image"] == {"responses": 2, "input_tokens": 230, "output_tokens": 4, "reasoning_tokens": 2}
    assert usage["vqa"]["text"]["input_tokens"] == 10
    assert usage["mmmu"] == {"all": {"responses": 1, "input_tokens": 5, "output_tokens": 2, "reasoning_tokens": 1}}
