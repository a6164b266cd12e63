"""``pathbind_hf`` on tiny checkpoints of every supported family: probe = eager attention, grids, batching, inputs."""

from __future__ import annotations

import importlib
import json
import pkgutil

import numpy as np
import pytest
import torch
from PIL import Image

from pathbind_models.hf import families
from pathbind_models.hf.adapter import HFAdapter
from pathbind_models.hf.families import FAMILIES, NAMES, family_of
from pathbind_models.hf.views import stitch, view_maps

PROMPT = "Look at the image and locate: nuclei with prominent nucleoli"
ENTITY = "nuclei with prominent nucleoli"


def noise(seed: int = 0, size: int = 224) -> Image.Image:
    return Image.fromarray((np.random.default_rng(seed).random((size, size, 3)) * 255).astype("uint8"))


@pytest.fixture(scope="module", params=NAMES)
def adapter(request, tiny_model) -> HFAdapter:
    return HFAdapter(str(tiny_model(request.param)))


def test_every_family_module_is_registered_under_its_name():
    """One registry: each module of the families package declares the family named after it, and FAMILIES holds
    them all, once (each with its tiny checkpoint, which the tests below build)."""
    modules = {m.name for m in pkgutil.iter_modules(families.__path__)} - {"base"}
    declared = {name: importlib.import_module(f"{families.__name__}.{name}").FAMILY for name in modules}
    assert {name: family.name for name, family in declared.items()} == {name: name for name in modules}
    assert sorted(NAMES) == sorted(modules) and set(FAMILIES) == set(declared.values())


def test_probe_equals_eager_attention(adapter):
    """Each layer's per-token map and the combined map equal eager ``output_attentions`` recomputed on the
    probe's own inputs (max abs diff <= 1e-5)."""
    from transformers import AutoModelForImageTextToText

    image = noise()
    attention = adapter.entity_attention(image, PROMPT, ENTITY, layers="all")
    eager = AutoModelForImageTextToText.from_pretrained(adapter.pretrained, attn_implementation="eager").eval()
    with torch.inference_mode():
        weights = eager(**attention.inputs, output_attentions=True).attentions
    ids = attention.inputs["input_ids"][0].numpy()
    views = adapter.family.layout(adapter.config, adapter.processor, attention.inputs,
                                  np.asarray(attention.image_token_positions), image.size)
    rows_by_layer = {}
    for layer in attention.layers:
        rows = weights[layer][0].double().mean(dim=0)[attention.token_positions][:, attention.image_token_positions]
        rows_by_layer[layer] = rows.numpy()
        expected = np.stack([stitch(view_maps(row, views), views)[0] for row in rows_by_layer[layer]])
        assert np.abs(attention.per_layer[layer] - expected).max() <= 1e-5, layer
    mid = attention.layer_set_map("mid")[0]
    chosen = list(range(len(attention.layers) // 3, 2 * len(attention.layers) // 3))
    combined = np.mean([rows_by_layer[i] for i in chosen], axis=0).max(axis=0)
    assert np.abs(mid - stitch(view_maps(combined, views), views)[0]).max() <= 1e-5
    assert ids[attention.token_positions[0]] != adapter.config.image_token_id
    assert len(attention.layers) == adapter.config.get_text_config().num_hidden_layers


def test_probe_leaves_the_model_output_identical_to_sdpa(adapter):
    """Recording rows does not change a single logit of the forward pass it rides on."""
    from transformers import AutoModelForImageTextToText

    from pathbind_models.hf import probe

    inputs = adapter._encode([adapter._prompt(1, PROMPT)], [[noise()]])
    sdpa = AutoModelForImageTextToText.from_pretrained(adapter.pretrained, attn_implementation="sdpa").eval()
    modules = {m: i for i, m in enumerate(adapter.decoder_layers)}
    with torch.inference_mode(), probe.recording([len(inputs["input_ids"][0]) - 1], modules) as record:
        probed = adapter.model(**inputs).logits
    with torch.inference_mode():
        plain = sdpa(**inputs).logits
    assert torch.equal(probed, plain)
    assert sorted(record.rows_by_layer) == list(range(len(adapter.decoder_layers)))


@pytest.mark.parametrize("corner", ["upper left", "lower right"])
def test_grid_cells_follow_the_image(adapter, corner):
    """Repainting one corner of the image changes the attention most in the matching corner of the map."""
    image = noise(1)
    changed = image.copy()
    quarter = image.width // 4
    origin = (0, 0) if corner == "upper left" else (image.width - quarter, image.height - quarter)
    changed.paste((255, 255, 255), (*origin, origin[0] + quarter, origin[1] + quarter))
    before = adapter.entity_attention(image, PROMPT, ENTITY, layers=[0]).map
    after = adapter.entity_attention(changed, PROMPT, ENTITY, layers=[0]).map
    change = np.abs(np.log(after) - np.log(before))
    change -= np.median(change)  # softmax renormalisation shifts every cell alike
    row, col = np.unravel_index(np.argmax(change), change.shape)
    height, width = change.shape
    top_left = row < height / 2 and col < width / 2
    inside = top_left if corner == "upper left" else (row >= height / 2 and col >= width / 2)
    assert inside, (corner, row, col, change.shape)


def test_batch_of_two_equals_two_batches_of_one(adapter):
    items = [([noise(2)], "Describe the nuclei."), ([noise(3)], "Which organ is this tissue from?")]
    single = [adapter.generate(images, text, max_new_tokens=6) for images, text in items]
    assert adapter.generate_batch(items, max_new_tokens=6) == single


def test_text_only_and_blank_images_work(adapter):
    """Text only: no image token or image tensor reaches the model, and the answer is the model's own greedy
    continuation of the prompt. A blank image keeps the image-token grid and view of any 224×224 image."""
    text = "Is this tissue malignant?"
    prompt = adapter._prompt(0, text)
    encoded = adapter._encode([prompt], [[]])
    assert not (encoded["input_ids"] == adapter.config.image_token_id).any()
    assert not {"pixel_values", "image_grid_thw"} & set(encoded)
    messages = [{"role": "user", "content": [{"type": "text", "text": text}]}]
    direct = adapter.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                                   return_dict=True, return_tensors="pt", **adapter.template_kwargs)
    with torch.inference_mode():
        output = adapter.model.generate(**direct, max_new_tokens=4, do_sample=False)
    expected = adapter.processor.batch_decode(output[:, direct["input_ids"].shape[1]:], skip_special_tokens=True)
    assert adapter.generate([], text, max_new_tokens=4) == expected[0]
    blank = Image.new("RGB", (224, 224), (255, 255, 255))
    assert isinstance(adapter.generate([blank], text, max_new_tokens=4), str)
    on_blank, on_noise = (adapter.entity_attention(image, PROMPT, ENTITY) for image in (blank, noise()))
    assert len(on_blank.image_token_positions) == adapter.family.tiny_grid.num_tokens
    assert on_blank.grid_shape == on_noise.grid_shape and on_blank.view_box == (0.0, 0.0, 224.0, 224.0)
    assert np.isfinite(on_blank.map).all() and (on_blank.map > 0).all()
    scores = adapter.option_logprobs([blank], "Is this tissue malignant? Answer Yes or No.", ["Yes", "No"])
    assert scores.shape == (2,) and np.all(scores < 0)


def test_prompts_are_tokenised_as_the_chat_template_tokenises_them(adapter):
    """The ids the model sees are those of transformers' own tokenising chat template: one BOS at most, also for
    templates that write it themselves (Gemma3, Idefics3)."""
    text = "Is this tissue malignant?"
    messages = [{"role": "user", "content": [{"type": "text", "text": text}]}]
    expected = adapter.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                                     return_dict=True, **adapter.template_kwargs)["input_ids"]
    ids = adapter._encode([adapter._prompt(0, text)], [[]])["input_ids"][0].tolist()
    assert ids == list(expected[0] if isinstance(expected[0], list) else expected)
    bos = adapter.processor.tokenizer.bos_token_id
    assert bos is None or ids.count(bos) <= 1


def test_option_scores_equal_separate_forwards(adapter):
    """The batched option scores equal scoring each option alone."""
    image, text, options = noise(4), "Which stain? A) H&E B) IHC", ["A", "B) IHC"]
    together = adapter.option_logprobs([image], text, options)
    alone = [adapter.option_logprobs([image], text, [option])[0] for option in options]
    assert np.allclose(together, alone, atol=1e-4)


def test_entity_missing_from_the_prompt_is_named(adapter):
    with pytest.raises(ValueError, match="mitotic figure"):
        adapter.entity_attention(noise(), PROMPT, "mitotic figure")


def test_unsupported_architecture_names_the_supported_families(tmp_path):
    from transformers import BertConfig

    with pytest.raises(ValueError, match=r"bert.*qwen2_vl.*smolvlm"):
        family_of(BertConfig(), "some/bert")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(ValueError, match="supported families"):
        HFAdapter(str(tmp_path))


def _sharded_map(model: torch.nn.Module, family: str) -> dict[str, str]:
    """A device_map over the CPU that still shards: the vision tower, the embeddings and every other decoder layer
    offloaded to disk, the rest on "cpu". accelerate then runs the model through its dispatch hooks, as on several
    GPUs; ``model.device`` (the first parameter's) and the embeddings' weights are ``meta``, so inputs must follow
    the embeddings' execution device. Idefics3 and SmolVLM move embeddings to ``self.device`` themselves, so for them
    the first parameter's module stays on "cpu"."""
    from pathbind_models.hf.adapter import _DECODER_ATTENTION

    layers = {name.removesuffix(".self_attn"): int(m.group(1)) for name, _ in model.named_modules()
              if (m := _DECODER_ATTENTION.search(name))}
    embeddings, first = model.get_input_embeddings(), next(model.parameters())
    placed: dict[str, str] = {}
    for name, module in model.named_modules():
        if not any(True for _ in module.parameters(recurse=False)) and not any(True for _ in module.buffers(False)):
            continue
        layer = next((i for prefix, i in layers.items() if name.startswith(prefix + ".")), None)
        if family in ("idefics3", "smolvlm") and any(p is first for p in module.parameters(recurse=False)):
            placed[name] = "cpu"
        elif layer is not None:
            placed[name] = "disk" if layer % 2 else "cpu"
        elif module is embeddings or name == "lm_head" or ("vision" in name or "visual" in name):
            placed[name] = "disk"  # lm_head beside the embeddings: some families tie them
        else:
            placed[name] = "cpu"
    return placed


def test_a_sharded_model_answers_exactly_as_the_whole_one(adapter, tmp_path):
    """device_map (accelerate's big-model inference) on CPU, disk-offloaded layers in between: generation, option
    scores, batched occlusion scores and the probe's rows equal the unsharded model's."""
    sharded = HFAdapter(adapter.pretrained, device_map=json.dumps(_sharded_map(adapter.model, adapter.family.name)),
                        offload_folder=str(tmp_path))
    assert set(sharded.model.hf_device_map.values()) == {"cpu", "disk"}
    assert (sharded.model.device.type == "meta") is (adapter.family.name not in ("idefics3", "smolvlm"))
    assert next(sharded.model.get_input_embeddings().parameters()).device.type == "meta"
    assert sharded.input_device == torch.device("cpu")
    items = [([noise(2)], "Describe the nuclei."), ([noise(3)], "Which organ is this tissue from?")]
    assert sharded.generate_batch(items, max_new_tokens=4) == adapter.generate_batch(items, max_new_tokens=4)
    text, options = "Which stain? A) H&E B) IHC", ["A", "B) IHC"]
    assert np.allclose(sharded.option_logprobs([noise(4)], text, options),
                       adapter.option_logprobs([noise(4)], text, options), atol=1e-5)
    images = [noise(seed) for seed in (5, 6, 7)]
    assert np.allclose(sharded.image_option_logprobs(images, text, options),
                       adapter.image_option_logprobs(images, text, options), atol=1e-5)
    whole, split = (a.entity_attention(noise(), PROMPT, ENTITY, layers="all") for a in (adapter, sharded))
    for layer in whole.layers:
        assert np.abs(split.per_layer[layer] - whole.per_layer[layer]).max() <= 1e-6, layer


def test_trust_remote_code_is_refused_before_anything_of_the_checkpoint_is_read(tmp_path, tiny_model):
    """The refusal comes first (the folder does not even exist) and names the families and the way out; false is
    transformers' default and accepted."""
    with pytest.raises(ValueError, match=r"trust_remote_code=True is refused before anything loads: pathbind_hf runs "
                                         r"the model and processor classes transformers implements itself \(qwen2_vl"):
        HFAdapter(str(tmp_path / "not-even-there"), trust_remote_code=True)
    assert HFAdapter(str(tiny_model("qwen2_vl")), trust_remote_code=False).family.name == "qwen2_vl"


def test_generation_samples_exactly_when_the_temperature_is_above_zero(tiny_model):
    """A YAML's do_sample false under --gen_kwargs temperature=0.7 samples at 0.7 with the narrowing asked for;
    temperature 0 is greedy; do_sample without a temperature is refused in words."""
    adapter = HFAdapter(str(tiny_model("qwen2_vl")))
    sampled = adapter._generation_options({"temperature": 0.7, "do_sample": False, "top_k": 5})
    assert sampled["do_sample"] is True and sampled["temperature"] == 0.7 and sampled["top_k"] == 5
    assert sampled["top_p"] is None
    greedy = adapter._generation_options({"temperature": 0, "do_sample": False, "top_k": 5})
    assert greedy["do_sample"] is False and greedy["temperature"] is None and greedy["top_k"] is None
    with pytest.raises(ValueError, match="do_sample=True with temperature 0 names no temperature to sample at"):
        adapter._generation_options({"do_sample": True})
