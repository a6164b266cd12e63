"""``pathbind_hf`` on a GPU server: defaults (checkpoint dtype, this process's GPU), processor image limits, the
checkpoint generation settings that still apply, the tested library ranges, and what results.json records."""

from __future__ import annotations

import json
import shutil
import tomllib
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import lmms_eval
from packaging.requirements import Requirement
from PIL import Image

from pathbind import doctor
from pathbind.doctor import HF_LIBRARIES, _hf_libraries
from pathbind_models.hf import TRANSFORMERS_FLOOR, check_transformers, loading
from pathbind_models.hf.adapter import HFAdapter
from pathbind_models.hf.model import HFModel

ROOT = Path(__file__).resolve().parents[2]
QWEN_EOS = [151645, 151643]  # Qwen2.5-VL-7B-Instruct's generation_config.json


def noise(size: int = 224, seed: int = 0) -> Image.Image:
    return Image.fromarray((np.random.default_rng(seed).random((size, size, 3)) * 255).astype("uint8"))


@pytest.fixture(scope="module")
def qwen_bf16(realtok_model, tmp_path_factory) -> Path:
    """Qwen2.5-VL-7B-Instruct's real processor, chat template and generation_config.json (do_sample, temperature
    1e-6, repetition_penalty 1.05) over tiny bfloat16 weights, saved with dtype bfloat16 as the hub checkpoint is."""
    from transformers import AutoModelForImageTextToText

    source = realtok_model("qwen2_5_vl")
    out = tmp_path_factory.mktemp("qwen_bf16") / "checkpoint"
    shutil.copytree(source, out)
    AutoModelForImageTextToText.from_pretrained(source).to(torch.bfloat16).save_pretrained(out)
    shutil.copy(source / "generation_config.json", out)  # save_pretrained rewrote it
    return out


@pytest.fixture(scope="module")
def qwen_bf16_adapter(qwen_bf16) -> HFAdapter:
    return HFAdapter(str(qwen_bf16))


def test_by_default_a_checkpoint_loads_in_its_own_dtype_on_this_machines_device(qwen_bf16, qwen_bf16_adapter):
    """No flag: bfloat16 (the checkpoint's dtype, not float32), on cuda:<LOCAL_RANK> when there is a GPU."""
    assert qwen_bf16_adapter.model.dtype == torch.bfloat16
    assert qwen_bf16_adapter.input_device == torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    assert qwen_bf16_adapter.option_logprobs([noise()], "Is this tissue malignant?", ["Yes", "No"]).shape == (2,)
    assert HFAdapter(str(qwen_bf16), dtype="float32").model.dtype == torch.float32


def test_device_defaults_to_this_processes_gpu(monkeypatch):
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert loading.placement("cuda", None) == "cuda:3"
    assert loading.placement("cuda:1", None) == "cuda:1"
    assert loading.placement("cpu", None) == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert loading.placement(None, None) == "cuda:3"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert loading.placement(None, None) == "cpu"
    assert loading.placement(None, "auto") == "auto"
    assert loading.placement(None, '{"model": 0, "lm_head": "cpu"}') == {"model": 0, "lm_head": "cpu"}
    with pytest.raises(ValueError, match="not both"):
        loading.placement("cuda", "auto")


def test_device_map_is_refused_under_data_parallel_launchers(monkeypatch, tiny_model):
    """Each torchrun rank would shard its own copy over every visible GPU."""
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ValueError, match="single process"):
        HFModel(pretrained=str(tiny_model("qwen2_vl")), device_map="auto")


def _tiles(processor, image: Image.Image) -> int:
    return int(processor(text=[processor.image_token], images=[[image]], return_tensors="pt")["pixel_values"].shape[1])


def test_idefics3_tiles_follow_the_size_option(tiny_model, tmp_path):
    """With Idefics3-8B-Llama3's own resize settings a 256 px image becomes 4×4 tiles of 364 px plus the global
    image (17); ``size`` (the longest edge, JSON as lmms-eval passes it) caps that, and is what gets recorded."""
    checkpoint = tmp_path / "idefics3"
    shutil.copytree(tiny_model("idefics3"), checkpoint)
    config = json.loads((checkpoint / "processor_config.json").read_text())
    config["image_processor"] |= {"size": {"longest_edge": 1456}, "max_image_size": {"longest_edge": 364}}
    (checkpoint / "processor_config.json").write_text(json.dumps(config))
    image = noise(256)
    assert _tiles(loading.load_processor(str(checkpoint), {}), image) == 17
    capped = loading.load_processor(str(checkpoint), {"size": '{"longest_edge": 728}'})
    assert _tiles(capped, image) == 5
    assert loading.image_limits(capped)["size"] == {"longest_edge": 728}
    assert _tiles(loading.load_processor(str(checkpoint), {"size": {"longest_edge": 364}}), image) == 1


def test_qwen_max_pixels_caps_the_image_tokens(realtok_model):
    """Qwen2.5-VL's real processor keeps a 1024 px image near full size (1369 tokens); ``max_pixels`` = 448²
    brings it to 16×16 merged tokens."""
    checkpoint = str(realtok_model("qwen2_5_vl"))
    image = noise(1024)
    grid = loading.load_processor(checkpoint, {}).image_processor(images=[image], return_tensors="pt")
    assert grid["image_grid_thw"].tolist() == [[1, 74, 74]]
    capped = loading.load_processor(checkpoint, {"max_pixels": 448 * 448})
    assert capped.image_processor(images=[image], return_tensors="pt")["image_grid_thw"].tolist() == [[1, 32, 32]]
    assert loading.image_limits(capped)["size"] == {"longest_edge": 448 * 448, "shortest_edge": 3136}


def test_a_limit_reaches_the_model(tiny_model):
    """The tiny Idefics3 (tiles of 112 px): ``size`` 112 turns a 224 px image from 2×2 tiles + global into one."""
    checkpoint = str(tiny_model("idefics3"))
    default, capped = HFAdapter(checkpoint), HFAdapter(checkpoint, size='{"longest_edge": 112}')
    tokens = [int((a._encode([a._prompt(1, "Describe.")], [[noise()]])["input_ids"] == a.config.image_token_id).sum())
              for a in (default, capped)]
    assert tokens == [5 * 16, 16]  # 16 tokens per view
    assert isinstance(capped.generate([noise()], "Describe the nuclei.", max_new_tokens=3), str)


@pytest.mark.parametrize(("family", "option"), [("idefics3", "max_pixels"), ("qwen2_5_vl", "max_image_size"),
                                                ("qwen2_vl", "dtyp")])
def test_an_option_the_processor_does_not_know_is_an_error(tiny_model, family, option):
    """transformers would drop it silently and the run would use the checkpoint's resolution."""
    with pytest.raises(ValueError, match=f"no option '{option}'"):
        HFAdapter(str(tiny_model(family)), **{option: 200704})


def test_the_checkpoints_non_sampling_generation_settings_still_apply(tiny_model, tmp_path):
    """A generation_config.json that samples (top_k 1, temperature 0.7) with repetition_penalty 3 and
    no_repeat_ngram_size 2: answers are greedy with both repetition settings, and those are the ones reported."""
    from transformers import GenerationConfig

    checkpoint = tmp_path / "qwen"
    shutil.copytree(tiny_model("qwen2_5_vl"), checkpoint)
    settings = json.loads((checkpoint / "generation_config.json").read_text())
    settings |= {"do_sample": True, "temperature": 0.7, "top_k": 1, "top_p": 0.5, "repetition_penalty": 3.0,
                 "no_repeat_ngram_size": 2}
    (checkpoint / "generation_config.json").write_text(json.dumps(settings))
    adapter = HFAdapter(str(checkpoint))
    applied = loading.checkpoint_generation(adapter.model.generation_config, set(adapter._generation_options({})))
    assert applied["repetition_penalty"] == 3.0 and applied["no_repeat_ngram_size"] == 2
    assert not {"do_sample", "temperature", "top_k", "top_p"} & set(applied)
    inputs = adapter._encode([adapter._prompt(1, "Describe the nuclei.")], [[noise()]])

    def greedy(**repetition: float) -> str:
        config = GenerationConfig(do_sample=False, max_new_tokens=16, eos_token_id=settings["eos_token_id"],
                                  pad_token_id=adapter.processor.tokenizer.pad_token_id, **repetition)
        output = adapter.model.generate(**inputs, generation_config=config)
        return adapter.processor.batch_decode(output[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)[0]

    answer = adapter.generate([noise()], "Describe the nuclei.", max_new_tokens=16)
    assert answer == greedy(repetition_penalty=3.0, no_repeat_ngram_size=2)
    assert answer != greedy(repetition_penalty=1.0, no_repeat_ngram_size=0)


def test_doctor_reports_the_tested_transformers_and_accelerate():
    """Both are declared with ranges that hold the installed (tested) versions, and the doctor reports them."""
    declared = [Requirement(line) for line in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
                ["dependencies"]]
    ranges = {r.name: r.specifier for r in declared}
    for name in HF_LIBRARIES:
        assert ranges[name].contains(version(name)), (name, ranges[name])
    checks = {c.name: c for c in _hf_libraries()}
    assert {name: (checks[name].status, checks[name].detail) for name in HF_LIBRARIES} == {
        name: ("OK", version(name)) for name in HF_LIBRARIES}


def test_the_declared_transformers_floor_is_the_one_pathbind_hf_enforces():
    """pyproject.toml's lower bound is TRANSFORMERS_FLOOR; an older release is refused with what to install, before
    any checkpoint is read."""
    declared = [Requirement(line) for line in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
                ["dependencies"]]
    transformers = next(r for r in declared if r.name == "transformers")
    assert {(s.operator, s.version) for s in transformers.specifier} == {(">=", TRANSFORMERS_FLOOR), ("<", "6")}
    check_transformers(TRANSFORMERS_FLOOR)
    below = "5.17.0"
    message = f"pathbind_hf needs transformers>={TRANSFORMERS_FLOOR}, found {below}: pip install " \
              f"'transformers>={TRANSFORMERS_FLOOR},<6'"
    with pytest.raises(RuntimeError) as raised:
        check_transformers(below)
    assert str(raised.value) == message


def test_doctor_fails_a_transformers_below_the_floor_and_warns_above_the_range(monkeypatch):
    """Below the floor pathbind_hf refuses to run (FAIL); a release past the tested range may work (WARN)."""
    for installed, status in (("5.17.0", "FAIL"), ("6.0.0", "WARN")):
        monkeypatch.setattr(doctor, "version", lambda name, installed=installed: installed if name == "transformers"
                            else version(name))
        check = next(c for c in _hf_libraries() if c.name == "transformers")
        assert check.status == status, check
        assert check.detail == {
            "FAIL": f"5.17.0 is older than the oldest release PathBind works with; pathbind_hf refuses it: "
                    f"pip install 'transformers<6,>={TRANSFORMERS_FLOOR}'",
            "WARN": f"6.0.0; PathBind is tested with transformers<6,>={TRANSFORMERS_FLOOR}"}[status]


def test_settings_record_what_the_run_used(qwen_bf16):
    model = HFModel(pretrained=str(qwen_bf16), max_pixels=200704, max_new_tokens=8, thinking=False)
    assert json.loads(json.dumps(model.pathbind_settings)) == {
        "pretrained": str(qwen_bf16), "family": "qwen2_5_vl", "dtype": "bfloat16", "device": str(model.device),
        "device_map": None, "processor_options": {"max_pixels": 200704},
        "image_limits": {"size": {"longest_edge": 200704, "shortest_edge": 3136}},
        "attribution": {"methods": ["attention"], "token": "expression", "layers": "mid", "winsor_percentile": 90.0},
        "generation": {"decoding": "greedy unless a task's temperature is above 0: then sampled, each answer seeded "
                                   "from lmms-eval's torch seed (--seed) and its task, document and repeat",
                       "max_new_tokens": 8, "chat_template_kwargs": {"enable_thinking": False},
                       "from_checkpoint": {"bos_token_id": 151643, "eos_token_id": QWEN_EOS,
                                           "repetition_penalty": 1.05}}}


@pytest.mark.slow
def test_results_json_carries_the_effective_settings(qwen_bf16, tmp_path):
    """lmms-eval's results.json (``pathbind`` section) records dtype, placement, image limits and the checkpoint
    generation settings that applied, for a device_map=auto run with a pixel cap."""
    run = lmms_eval(tmp_path, "pathbind_hf", "pathbind_demo_vqa", "--model_args",
                    f"pretrained={qwen_bf16},device_map=auto,max_pixels=200704,max_new_tokens=4", "--limit", "2")
    settings = run["results"]["pathbind"]["model"]
    assert settings["dtype"] == "bfloat16" and settings["family"] == "qwen2_5_vl"
    if torch.cuda.is_available():  # accelerate's map of modules to GPUs
        assert settings["device"] == "cuda:0" and isinstance(settings["device_map"], dict)
    else:  # nothing to shard over: accelerate keeps the model whole on the CPU
        assert settings["device"] == "cpu" and settings["device_map"] == "auto"
    assert settings["processor_options"] == {"max_pixels": 200704}
    assert settings["image_limits"]["size"] == {"longest_edge": 200704, "shortest_edge": 3136}
    assert settings["generation"]["from_checkpoint"]["repetition_penalty"] == 1.05
    assert settings["generation"]["max_new_tokens"] == 4
