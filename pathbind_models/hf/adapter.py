"""A Hugging Face vision-language checkpoint as a PathBind adapter: generation, option scores, entity attention."""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import islice
from typing import Any

import numpy as np
import torch
from PIL import Image

from pathbind.decoding import sampling_temperature
from pathbind_models.adapter import Attribution, EntityAttention, layer_indices
from pathbind_models.hf import check_transformers, frames, loading, prefix, probe
from pathbind_models.hf.families import family_of
from pathbind_models.hf.families.base import ModelFamily
from pathbind_models.hf.geometry import view_box
from pathbind_models.hf.views import View, stitch, view_maps

_DECODER_ATTENTION = re.compile(r"(?:language_model|text_model)\.(?:model\.)?layers\.(\d+)\.self_attn$")
_VISION_BLOCK = re.compile(r"(?:visual|vision_tower|vision_model)\.(?:.+\.)?(?:blocks|layers|layer)\.(\d+)$")
# Greedy search, whatever the checkpoint's generation_config.json asks: its sampling settings are all unset.
_GREEDY = {"do_sample": False, "num_beams": 1, "temperature": None, "top_p": None, "top_k": None, "min_p": None,
           "typical_p": None, "epsilon_cutoff": None, "eta_cutoff": None}
_SAMPLING = ("top_p", "top_k", "min_p", "typical_p")  # what a sampled request may narrow, as it asks


class HFAdapter:
    """One checkpoint of a supported family (see ``pathbind_models.hf.families``), loaded with the probe attention.

    ``dtype`` defaults to the checkpoint's own (``auto``); ``device`` to ``cuda:<LOCAL_RANK>`` when CUDA is
    available, else the CPU; ``device_map`` (``auto``, or a JSON map of modules to devices, with ``offload_folder``
    for ``disk``) shards the model over devices instead (see :mod:`pathbind_models.hf.loading`).
    ``max_new_tokens`` caps every request's budget (a task's own ``max_new_tokens`` applies below it);
    ``thinking`` is passed to chat templates that switch reasoning on and off (``enable_thinking``);
    ``occlusion_batch`` fixes how many images :meth:`image_option_logprobs` scores per forward (default: from
    free memory, see :meth:`_images_per_forward`). Other keyword arguments are processor options (``max_pixels``,
    ``size``, …), passed to ``AutoProcessor.from_pretrained``; one the processor does not know is an error.
    """

    def __init__(self, pretrained: str, dtype: str = "auto", device: str | None = None,
                 device_map: str | dict[str, Any] | None = None, offload_folder: str | None = None,
                 max_new_tokens: int | None = None, thinking: bool | None = None,
                 occlusion_batch: int | None = None, **processor_options: Any) -> None:
        from transformers import AutoConfig, AutoModelForImageTextToText

        loading.refuse_remote_code(pretrained, processor_options)
        check_transformers()
        if dtype != "auto" and not isinstance(getattr(torch, dtype, None), torch.dtype):
            raise ValueError(f"dtype {dtype!r} is not a torch dtype (float32, bfloat16, float16) or 'auto'")
        family = family_of(AutoConfig.from_pretrained(pretrained), pretrained)  # before any weights are read
        options = {key: loading.parse_value(value) for key, value in processor_options.items()}
        processor = loading.load_processor(pretrained, options)
        device_map = loading.parse_value(device_map)  # None: the whole model on one device
        model = AutoModelForImageTextToText.from_pretrained(
            pretrained, dtype=getattr(torch, dtype) if dtype != "auto" else "auto",
            attn_implementation=probe.register(), device_map=loading.placement(device, device_map),
            offload_folder=offload_folder)
        self._setup(model, processor, pretrained, family, options, device_map, max_new_tokens, thinking,
                    occlusion_batch)

    @classmethod
    def from_model(cls, model: Any, processor: Any, name: str, max_new_tokens: int | None = None,
                   thinking: bool | None = None, occlusion_batch: int | None = None) -> HFAdapter:
        """An adapter around an already-built model and its processor (e.g. random weights made on the device by
        ``from_config``); ``name`` stands for the checkpoint in messages. The model is switched to the probe
        attention, whose outputs are SDPA's."""
        check_transformers()
        model.set_attn_implementation(probe.register())
        adapter = cls.__new__(cls)
        adapter._setup(model, processor, name, family_of(model.config, name), {}, None, max_new_tokens, thinking,
                       occlusion_batch)
        return adapter

    def _setup(self, model: Any, processor: Any, pretrained: str, family: ModelFamily,
               processor_options: dict[str, Any], device_map: Any, max_new_tokens: int | None,
               thinking: bool | None, occlusion_batch: int | None) -> None:
        self.pretrained = pretrained
        self.family = family
        self.processor_options = processor_options
        self.processor = processor
        self.device_map = device_map
        self.model = model.eval()
        self.input_device = loading.input_device(self.model)
        self.config = self.model.config
        self.max_new_tokens = max_new_tokens
        self.template_kwargs = {} if thinking is None else {"enable_thinking": bool(thinking)}
        self.decoder_layers = self._decoder_attention_modules()
        self.occlusion_batch = int(occlusion_batch) if occlusion_batch else None

    # -- generation ---------------------------------------------------------------------------------------------

    def generate(self, images: list[Image.Image], text: str, **gen_kwargs: Any) -> str:
        return self.generate_batch([(images, text)], **gen_kwargs)[0]

    def generate_batch(self, items: list[tuple[list[Image.Image], str]], **gen_kwargs: Any) -> list[str]:
        """Greedy unless the settings sample (:func:`~pathbind_models.adapter.sampling_temperature`); items of one
        batch must have the same number of images."""
        inputs = self._encode([self._prompt(len(images), text) for images, text in items],
                              [images for images, _ in items], padding_side="left")
        with torch.inference_mode():
            output = self.model.generate(**inputs, **self._generation_options(gen_kwargs))
        answers = self.processor.batch_decode(output[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)
        # Boxes come back in the frame the prompt asked for, whatever frame the family writes them in.
        return [frames.answer_in_frame(answer, text, self.family.native_box_frame, images[0].size, self.processor)
                if len(images) == 1 else answer for answer, (images, text) in zip(answers, items, strict=True)]

    def _generation_options(self, gen_kwargs: dict[str, Any]) -> dict[str, Any]:
        budget = int(gen_kwargs.get("max_new_tokens", 256))
        budget = min(budget, self.max_new_tokens) if self.max_new_tokens else budget
        options: dict[str, Any] = {"max_new_tokens": budget, **_GREEDY,
                                   "pad_token_id": self.processor.tokenizer.pad_token_id}
        temperature = sampling_temperature(gen_kwargs)
        if temperature is not None:
            options.update(do_sample=True, temperature=temperature,
                           **{key: gen_kwargs[key] for key in _SAMPLING if gen_kwargs.get(key) is not None})
        if gen_kwargs.get("num_beams"):
            options["num_beams"] = int(gen_kwargs["num_beams"])
        return options

    # -- option scores ------------------------------------------------------------------------------------------

    def option_logprobs(self, images: list[Image.Image], text: str, options: list[str]) -> np.ndarray:
        """Sum of token log-probabilities of each option after the prompt, all options in one forward.

        The option's tokens are appended to the prompt's token ids (tokenised on their own), so every
        option is scored against exactly the same prompt tokens (see :meth:`_score_options`).
        """
        prompt = self._encode([self._prompt(len(images), text)], [images])
        return self._score_options(prompt, self._option_ids(options))[0]

    def image_option_logprobs(self, images: Iterable[Image.Image], text: str, options: list[str]) -> np.ndarray:
        """:meth:`option_logprobs` of ``text`` about each image alone (N × K), B images per forward.

        The images must share one size (occlusions of one image do), so the B prompts have the same tokens
        and need no padding; each forward holds B rows per distinct option prefix (B for Yes/No).
        """
        option_ids, prompt, chunks = self._option_ids(options), self._prompt(1, text), iter(images)
        first = list(islice(chunks, 1))
        if not first:
            return np.zeros((0, len(options)))
        inputs = self._encode([prompt], [first])
        rows = [self._score_options(inputs, option_ids)]
        length = inputs["input_ids"].shape[1] + max(map(len, option_ids))
        per_forward = self.occlusion_batch or self._images_per_forward(length, option_ids)
        while chunk := list(islice(chunks, per_forward)):
            if any(image.size != first[0].size for image in chunk):  # unequal prompts would be scored misaligned
                sizes = sorted({image.size for image in [*first, *chunk]})
                raise ValueError(f"image_option_logprobs needs images of one size, got {sizes}")
            rows.append(self._score_options(self._encode([prompt] * len(chunk), [[i] for i in chunk]), option_ids))
        return np.concatenate(rows)

    def _images_per_forward(self, length: int, option_ids: list[list[int]], kept_layers: int = 1) -> int:
        """Images per forward from free memory: a quarter of it over a rough float32 peak per row of ``length``
        tokens (``kept_layers`` layers' hidden states, MLP activations and attention scores, plus the kept logits),
        1 to 64."""
        text = self.config.get_text_config()
        intermediate = getattr(text, "intermediate_size", 4 * text.hidden_size)
        per_layer = length * (8 * text.hidden_size + 4 * intermediate + text.num_attention_heads * length)
        per_row = 4 * (kept_layers * per_layer + (max(map(len, option_ids)) + 1) * text.vocab_size)
        free = loading.free_memory(loading.execution_devices(self.model))  # a sharded model: its fullest device
        rows_per_image = len({tuple(ids[:-1]) for ids in option_ids})  # see option_scores
        return int(min(64, max(1, free // 4 // (per_row * rows_per_image))))

    def images_per_backward(self, length: int, option_ids: list[list[int]]) -> int:
        """Images per forward and backward (Integrated Gradients): ``occlusion_batch`` when set, else from free
        memory with every decoder layer's activations kept for the backward pass."""
        layers = self.config.get_text_config().num_hidden_layers
        return self.occlusion_batch or self._images_per_forward(length, option_ids, kept_layers=layers)

    def _option_ids(self, options: list[str]) -> list[list[int]]:
        option_ids = [self.processor.tokenizer(option, add_special_tokens=False)["input_ids"] for option in options]
        if not all(option_ids):
            raise ValueError(f"an option tokenises to nothing: {options!r}")
        return option_ids

    def _score_options(self, prompt: dict[str, torch.Tensor], option_ids: list[list[int]]) -> np.ndarray:
        """(prompts × options) summed log-probabilities of each option after each of the equal-length prompts
        (:meth:`option_scores` without the autograd graph)."""
        with torch.inference_mode():
            return self.option_scores(prompt, option_ids).cpu().double().numpy()

    def option_scores(self, prompt: dict[str, torch.Tensor], option_ids: list[list[int]]) -> torch.Tensor:
        """(prompts × options) summed log-probabilities, float32, differentiable with respect to the inputs.

        An option's last token is predicted, never read, so each row is a prompt plus one distinct option prefix
        (all but the last token): single-token options such as Yes/No share the bare prompt's row, and each image
        goes through the model once. Only the logits of the option positions are computed (``logits_to_keep``):
        a full vocabulary at every prompt position would dominate memory for real checkpoints.
        """
        count = prompt["input_ids"].shape[0]
        prefixes = list(dict.fromkeys(tuple(ids[:-1]) for ids in option_ids))
        kept = max(map(len, prefixes)) + 1
        batch = _append_continuations(prompt, [list(p) for p in prefixes], self.processor.tokenizer.pad_token_id or 0)
        logprobs = self.model(**batch, logits_to_keep=kept).logits.float().log_softmax(dim=-1)
        columns = []
        for ids in option_ids:  # rows are prefix-major: row j * count + b
            j = prefixes.index(tuple(ids[:-1]))
            rows = logprobs[j * count:(j + 1) * count, :len(ids)]  # position i predicts token i of the option
            target = torch.tensor(ids, device=rows.device).expand(count, -1)[..., None]
            columns.append(rows.gather(2, target).sum(dim=(1, 2)))
        return torch.stack(columns, dim=1)

    # -- attention ----------------------------------------------------------------------------------------------

    def entity_attention(self, image: Image.Image, text: str, entity: str, layers: str | list[int] = "mid",
                         token: str = "expression") -> EntityAttention:
        """Algorithm 1 steps 1–4 in one forward pass: the rows of ``entity``'s tokens (or, ``token="last"``, of the
        last prompt token, the one that predicts the answer), in the chosen layers only."""
        chosen = layer_indices(layers, len(self.decoder_layers))
        prompt = self._prompt(1, text)
        inputs = self._encode([prompt], [[image]])
        ids = inputs["input_ids"][0].cpu().numpy()
        entity_positions = [len(ids) - 1] if token == "last" else self._entity_positions(prompt, ids, text, entity)
        modules = {self.decoder_layers[i]: i for i in chosen}
        with probe.recording(entity_positions, modules) as record, torch.inference_mode():
            self.model(**inputs)
        rows = {i: record.rows_by_layer[i][0] for i in chosen}
        return self._entity_maps(image, inputs, entity_positions, rows, chosen)

    def entity_attention_batch(self, items: list[tuple[Image.Image, list[tuple[str, str]]]],
                               layers: str | list[int] = "all") -> list[list[EntityAttention | Exception]]:
        """:meth:`entity_attention` of each item's ``(text, entity)`` queries about its image, all in two forwards.

        The queries' prompts share their tokens up to the first that differs or starts an entity (the image and
        the shared text): that prefix is computed once per image, and every query's remaining tokens run against
        it (:mod:`pathbind_models.hf.prefix`); the maps equal :meth:`entity_attention`'s to float rounding, and each
        result's ``inputs`` are its whole prompt's, as :meth:`entity_attention` encodes them. A query that cannot
        be answered (its entity is not in its text, its tokens do not align) gets its exception in its place.
        """
        chosen = layer_indices(layers, len(self.decoder_layers))
        planned = [self._shared_prefix(image, queries) for image, queries in items]
        prefixes: list[dict[str, torch.Tensor]] = []
        suffixes: list[prefix.Suffix] = []
        owners: list[tuple[int, int]] = []  # (item, query) of each suffix
        for item, (shared, cut, plans) in enumerate(planned):
            ready = [(k, plan) for k, plan in enumerate(plans) if isinstance(plan, tuple)]
            if ready:
                prefixes.append(shared)
            for k, (ids, positions) in ready:
                suffixes.append(prefix.Suffix(len(prefixes) - 1, ids[cut:], [p - cut for p in positions]))
                owners.append((item, k))
        found: dict[tuple[int, int], EntityAttention] = {}
        if suffixes:
            modules = {self.decoder_layers[i]: i for i in chosen}
            rows = prefix.suffix_attention(self.model, prefixes, suffixes, modules,
                                           self.processor.tokenizer.pad_token_id or 0)
            for (item, k), suffix, by_layer in zip(owners, suffixes, rows, strict=True):
                whole = prefix.with_suffix(prefixes[suffix.prefix], suffix.ids)
                positions = [planned[item][1] + p for p in suffix.rows]
                found[item, k] = self._entity_maps(items[item][0], whole, positions, by_layer, chosen)
        return [[found[item, k] if isinstance(plan, tuple) else plan for k, plan in enumerate(plans)]
                for item, (_, _, plans) in enumerate(planned)]

    def _shared_prefix(self, image: Image.Image, queries: list[tuple[str, str]]) -> tuple[
            dict[str, torch.Tensor], int, list[tuple[list[int], list[int]] | Exception]]:
        """(the first query's inputs cut after the prefix the queries share, its length, per query its whole token
        ids and entity positions or why it has none). The image is processed once: a query's ids are the first's
        with the text tail replaced, the tail from where their prompts' tokens part (after the image, which only
        changes tokens before the text; checked as in :meth:`_entity_positions`)."""
        if not queries:
            return {}, 0, []
        prompts = [self._prompt(1, text) for text, _ in queries]
        inputs = self._encode(prompts[:1], [[image]])
        first = inputs["input_ids"][0].tolist()
        tokens = [self.processor.tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
        plans: list[tuple[list[int], list[int]] | Exception] = []
        for prompt, (text, entity), own in zip(prompts, queries, tokens, strict=True):
            try:
                parted = _common_length(tokens[0], own)
                head = len(first) - (len(tokens[0]) - parted)
                if head < 0 or first[head:] != tokens[0][parted:]:
                    raise ValueError(f"could not align the tokens of the prompt {text!r} with the model inputs")
                ids = first[:head] + own[parted:]
                plans.append((ids, self._entity_positions(prompt, np.asarray(ids), text, entity)))
            except ValueError as exc:
                plans.append(exc)
        ready = [plan for plan in plans if not isinstance(plan, Exception)]
        cut = min((min(_common_length(first, ids), positions[0]) for ids, positions in ready), default=len(first))
        last_image = int(np.flatnonzero(np.asarray(first) == self.config.image_token_id)[-1])
        if cut <= last_image:  # never with an image before the text: the queries part within the text
            problem = ValueError("the queries' prompts part before the end of the image")
            plans = [problem if not isinstance(plan, Exception) else plan for plan in plans]
        shared = {k: v[:, :cut] if k in prefix.SEQUENCE_KEYS else v for k, v in inputs.items()}
        return shared, cut, plans

    def _entity_maps(self, image: Image.Image, inputs: dict[str, torch.Tensor], entity_positions: list[int],
                     rows_by_layer: dict[int, torch.Tensor], chosen: list[int]) -> EntityAttention:
        """The EntityAttention of one prompt's recorded entity rows (layer -> (tokens, sequence length))."""
        image_positions = np.flatnonzero(inputs["input_ids"][0].cpu().numpy() == self.config.image_token_id)
        rows = {i: rows_by_layer[i][:, image_positions].cpu().double().numpy() for i in chosen}
        views = self.image_views(image, inputs)
        mean_rows = np.mean([rows[i] for i in chosen], axis=0).max(axis=0)  # layer mean, then max over tokens
        attention_map, global_map = stitch(view_maps(mean_rows, views), views)
        per_layer = {i: np.stack([stitch(view_maps(token, views), views)[0] for token in rows[i]]) for i in chosen}
        return EntityAttention(
            map=attention_map, layers=chosen, token_positions=entity_positions,
            image_token_positions=image_positions.tolist(), grid_shape=attention_map.shape, inputs=dict(inputs),
            per_layer=per_layer, global_map=global_map, view_box=view_box(self.processor, inputs, image.size))

    def image_views(self, image: Image.Image, inputs: dict[str, torch.Tensor]) -> list[View]:
        """The views (grids) the image tokens of one prompt's ``inputs`` form (``pathbind_models.hf.families``)."""
        positions = np.flatnonzero(inputs["input_ids"][0].cpu().numpy() == self.config.image_token_id)
        return self.family.layout(self.config, self.processor, inputs, positions, image.size)

    def image_token_map(self, image: Image.Image, inputs: dict[str, torch.Tensor],
                        values: np.ndarray) -> tuple[np.ndarray, tuple[float, float, float, float]]:
        """One value per image token as a map on the patch grid (tiles stitched), and the view box it covers."""
        views = self.image_views(image, inputs)
        return stitch(view_maps(np.asarray(values, dtype=float), views), views)[0], view_box(self.processor, inputs,
                                                                                             image.size)

    # -- attribution --------------------------------------------------------------------------------------------

    def attribution(self, method: str, image: Image.Image, request: Any, settings: Any) -> Attribution:
        """Attention rollout, gradient×attention, Winsor-CAM or Integrated Gradients of ``request``'s answer margin
        (:mod:`pathbind_models.hf.attribution`)."""
        from pathbind_models.hf import attribution

        return attribution.attribute(self, method, image, request, settings)

    def vision_blocks(self) -> list[torch.nn.Module]:
        """The vision tower's transformer blocks, in order; ValueError naming the checkpoint when none is found."""
        found = {int(m.group(1)): module for name, module in self.model.named_modules()
                 if (m := _VISION_BLOCK.search(name))}
        if not found:
            raise ValueError(f"{self.pretrained}: no vision-tower blocks found (visual/vision_tower/vision_model)")
        return [found[i] for i in sorted(found)]

    def natural_patch_order(self, values: np.ndarray, inputs: dict[str, torch.Tensor]) -> np.ndarray:
        """Per-patch values of the vision blocks in the processor's patch order (Qwen2.5-VL's blocks hold groups
        of merged patches in window order)."""
        if self.family.vision_order is None or values.ndim != 1:
            return values
        order = self.family.vision_order(self.config, inputs)
        groups = values.reshape(len(order), -1)
        natural = np.empty_like(groups)
        natural[order] = groups
        return natural.ravel()

    def _entity_positions(self, prompt: str, ids: np.ndarray, text: str, entity: str) -> list[int]:
        """Positions in ``ids`` of the tokens covering the last occurrence of ``entity`` in the user's ``text``.

        The prompt is tokenised with offsets before the processor expands the image placeholder; the
        expansion only changes tokens before the text, so the tail from the entity on must match ``ids``.
        """
        text_start, entity_start = prompt.rfind(text), text.rfind(entity)
        if not entity or text_start < 0 or entity_start < 0:
            raise ValueError(f"entity {entity!r} does not occur in the prompt text {text!r}")
        start = text_start + entity_start
        end = start + len(entity)
        encoded = self.processor.tokenizer(prompt, add_special_tokens=False, return_offsets_mapping=True)
        tokens, offsets = encoded["input_ids"], encoded["offset_mapping"]
        covering = [i for i, (a, b) in enumerate(offsets) if a < end and b > start]
        if not covering:
            raise ValueError(f"entity {entity!r} covers no token")
        tail = len(tokens) - covering[0]
        if len(ids) < tail or list(ids[-tail:]) != tokens[-tail:]:
            raise ValueError(f"could not align the tokens of entity {entity!r} with the model inputs")
        return [len(ids) - len(tokens) + i for i in covering]

    def _decoder_attention_modules(self) -> list[torch.nn.Module]:
        found = {int(m.group(1)): module for name, module in self.model.named_modules()
                 if (m := _DECODER_ATTENTION.search(name))}
        count = self.config.get_text_config().num_hidden_layers
        if sorted(found) != list(range(count)):
            raise ValueError(f"{self.pretrained}: found decoder attention layers {sorted(found)}, expected {count}")
        return [found[i] for i in range(count)]

    # -- inputs -------------------------------------------------------------------------------------------------

    def _prompt(self, image_count: int, text: str) -> str:
        content = [{"type": "image"}] * image_count + [{"type": "text", "text": text}]
        return self.processor.apply_chat_template([{"role": "user", "content": content}], add_generation_prompt=True,
                                                  tokenize=False, **self.template_kwargs)

    def _encode(self, prompts: list[str], images: list[list[Image.Image]],
                padding_side: str = "right") -> dict[str, torch.Tensor]:
        image_arg = images if any(images) else None
        # A chat template that writes the BOS gets no second one from the tokenizer (transformers' own rule).
        bos = self.processor.tokenizer.bos_token
        special = not (bos and all(prompt.startswith(bos) for prompt in prompts))
        inputs = self.processor(text=prompts, images=image_arg, return_tensors="pt", padding=True,
                                padding_side=padding_side, add_special_tokens=special)
        return {k: v.to(self.input_device) if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def _common_length(a: list[int], b: list[int]) -> int:
    """How many first tokens ``a`` and ``b`` share."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _append_continuations(prompt: dict[str, torch.Tensor], continuations: list[list[int]],
                          pad_id: int) -> dict[str, Any]:
    """Rows ``k * B + b``: prompt b's tokens, then continuation k (possibly empty), right-padded; image tensors
    repeated per continuation in prompt order, the layout every family's image tensors need (flat patch lists
    too)."""
    count = prompt["input_ids"].shape[0]
    length = prompt["input_ids"].shape[1] + max(map(len, continuations))
    batch: dict[str, Any] = {}
    for key, value in prompt.items():
        if key not in prefix.SEQUENCE_KEYS:
            repeat = isinstance(value, torch.Tensor) and len(continuations) > 1  # one continuation: no copy
            batch[key] = torch.cat([value] * len(continuations)) if repeat else value
            continue
        blocks = []  # one block of B rows per continuation: a few tensor ops, not a few per row
        for ids in continuations:
            tail = {"input_ids": ids, "attention_mask": [1] * len(ids)}.get(key, [0] * len(ids))
            tails = torch.tensor(tail, dtype=value.dtype, device=value.device).expand(count, -1)
            block = torch.cat([value, tails], dim=1)
            fill = pad_id if key == "input_ids" else 0
            blocks.append(torch.nn.functional.pad(block, (0, length - block.shape[1]), value=fill))
        batch[key] = torch.cat(blocks)
    return batch
