"""Train the tiny control: answer cross-entropy plus a taught attention loss on the middle-third layers."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pathbind_models.adapter import layer_indices
from pathbind_models.hf import probe
from pathbind_models.hf.adapter import HFAdapter
from pathbind_models.tiny_control.data import Example, examples
from pathbind_models.tiny_control.settings import Settings


@dataclass(frozen=True)
class Taught:
    """Query rows whose attention is taught: among the keys ``over`` (None: every key), their attention is drawn
    onto ``target``, spread evenly over it or in total."""

    rows: list[int]
    target: list[int]
    over: list[int] | None
    spread: bool = True  # evenly over ``target`` (each image token's content then counts), or just onto it
    every_layer: bool = False  # in every layer (the answer reads only its evidence), not just the middle third


@dataclass
class Encoded:
    """One example as model inputs: token ids with the answer appended, its labels, and the taught attention."""

    ids: list[int]
    labels: list[int]
    types: list[int]  # mm_token_type_ids: 1 on image tokens (Qwen's M-RoPE positions need them)
    pixel_values: torch.Tensor | None
    grid_thw: torch.Tensor | None
    taught: list[Taught] = field(default_factory=list)
    soft: tuple[int, int, int, float] | None = None  # (position, Yes token, No token, probability of Yes to learn)


def build(seed: int = 0) -> tuple[Any, Any]:
    """(model, processor): the Qwen2-VL tiny architecture of ``pathbind make-tiny-model``, initialised from ``seed``."""
    from pathbind_models.hf.tiny_checkpoints import build_tiny

    make_model, config, processor = build_tiny("qwen2_vl")
    torch.manual_seed(seed)
    return make_model(config), processor


def encode(adapter: HFAdapter, example: Example) -> Encoded:
    """The example exactly as ``pathbind_hf`` prompts it (chat template, processor), plus its answer tokens (or
    the probability of Yes to learn) and the attention it is taught: the entity's tokens spread theirs evenly over
    the target cells among the image tokens, and the token that predicts the answer spreads its own evenly over
    the evidence (its cells, or the whole field) in every layer when the answer is Yes, a letter or a presence
    question's, and moves it to the text when a tile's answer is No."""
    images = [example.image] if example.image is not None else []
    prompt = adapter._prompt(len(images), example.text)
    inputs = adapter._encode([prompt], [images])
    ids = inputs["input_ids"][0].tolist()
    answer: list[int] = []
    if example.answer is not None:  # option scoring appends the answer's own tokens to the prompt: learn those
        answer = adapter._option_ids([example.answer])[0] + [adapter.processor.tokenizer.eos_token_id]
    types = inputs["mm_token_type_ids"][0].tolist() + [0] * len(answer)
    encoded = Encoded(ids + answer, [-100] * len(ids) + answer, types, inputs.get("pixel_values"),
                      inputs.get("image_grid_thw"))
    if example.yes_share is not None:  # the first tokens of "Yes" and "No" differ: their odds set the margin
        (yes, *_), (no, *_) = adapter._option_ids(["Yes", "No"])
        encoded.soft = (len(ids) - 1, yes, no, example.yes_share)
    if not images:
        return encoded
    image_positions = np.flatnonzero(np.asarray(ids) == adapter.config.image_token_id)
    target = image_positions.tolist()
    if example.cells is not None:
        target = image_positions[list(example.cells)].tolist()
    if example.entity is not None:
        entity = adapter._entity_positions(prompt, np.asarray(ids), example.text, example.entity)
        encoded.taught.append(Taught(entity, target, image_positions.tolist()))
    if example.answer == "No" and example.entity is None:  # a tile without the finding: nothing to look at
        text = sorted(set(range(len(ids))) - set(image_positions.tolist()))
        encoded.taught.append(Taught([len(ids) - 1], text, None, spread=False))
    elif example.answer is not None or example.yes_share is not None:
        encoded.taught.append(Taught([len(ids) - 1], target, None, every_layer=True))
    return encoded


def collate(batch: list[Encoded], pad: int) -> dict[str, torch.Tensor]:
    length = max(len(e.ids) for e in batch)
    ids = torch.full((len(batch), length), pad)
    labels = torch.full((len(batch), length), -100)
    mask = torch.zeros((len(batch), length), dtype=torch.long)
    types = torch.zeros((len(batch), length), dtype=torch.long)
    pixels = [e.pixel_values for e in batch if e.pixel_values is not None]
    grids = [e.grid_thw for e in batch if e.grid_thw is not None]
    for b, e in enumerate(batch):
        ids[b, :len(e.ids)], labels[b, :len(e.ids)], mask[b, :len(e.ids)], types[b, :len(e.ids)] = (
            torch.tensor(e.ids), torch.tensor(e.labels), 1, torch.tensor(e.types))
    return {"input_ids": ids, "attention_mask": mask, "mm_token_type_ids": types, "labels": labels,
            **({"pixel_values": torch.cat(pixels), "image_grid_thw": torch.cat(grids)} if pixels else {})}


def losses(adapter: HFAdapter, batch: list[Encoded], mid: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """(answer loss, attention loss). The answer loss is the answer tokens' cross-entropy plus, for the examples
    with a probability of Yes to learn, the cross-entropy of the first Yes and No tokens against it. The attention
    loss is, in each middle-third layer (in each layer for a row taught ``every_layer``), −log of each taught
    row's share of attention (head mean, as the probe reads it) on its target: the mean over the target's keys when
    spread (minimal when even), else the total."""
    inputs = collate(batch, adapter.processor.tokenizer.pad_token_id or 0)
    labels = inputs.pop("labels")
    rows = sorted({p for e in batch for t in e.taught for p in t.rows}) or [0]
    modules = {layer: i for i, layer in enumerate(adapter.decoder_layers)}
    with probe.recording(rows, modules) as record:
        logits = adapter.model(**inputs).logits
    answer = torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten())
    soft = [(b, e.soft) for b, e in enumerate(batch) if e.soft is not None]
    if soft:
        logp = torch.stack([logits[b, position].log_softmax(-1)[[yes, no]] for b, (position, yes, no, _) in soft])
        share = logits.new_tensor([[p, 1 - p] for _, (*_, p) in soft])
        answer = answer + -(share * logp).sum(-1).mean()
    terms = []
    for b, e in enumerate(batch):
        for taught in e.taught:
            picked = [rows.index(p) for p in taught.rows]
            for layer in range(len(adapter.decoder_layers)) if taught.every_layer else mid:
                weights = record.rows_by_layer[layer][b, picked]
                total = weights.sum(-1) if taught.over is None else weights[:, taught.over].sum(-1)
                share = weights[:, taught.target] / total[:, None]
                terms.append(-torch.log((share if taught.spread else share.sum(-1, keepdim=True)) + 1e-9).mean())
    attention = torch.stack(terms).mean() if terms else logits.new_zeros(())
    return answer, attention


def train(settings: Settings, out: Path | None = None, untrained_out: Path | None = None,
          log: Callable[[str], None] = print) -> list[float]:
    """Train from the seed-0 initialisation on examples drawn from ``settings.seed``; write the checkpoint to
    ``out`` (and the untouched initialisation to ``untrained_out``); returns the loss of every step."""
    started = time.time()
    drawn = examples(settings.n_tiles, settings.n_mosaics, settings.n_mcq, settings.n_text, settings.seed)
    model, processor = build(seed=0)
    if untrained_out is not None:
        save(model, processor, untrained_out)
    adapter = HFAdapter.from_model(model, processor, "pathbind_tiny")
    data = [encode(adapter, e) for e in drawn]
    log(f"{len(data)} examples encoded in {time.time() - started:.0f}s")
    mid = layer_indices("mid", len(adapter.decoder_layers))
    model.train()
    torch.manual_seed(settings.seed)
    optimiser = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, _warmup_cosine(settings.steps))
    history = []
    for step, batch in enumerate(_batches(data, settings.batch, settings.seed, settings.steps), start=1):
        answer, attention = losses(adapter, batch, mid)
        loss = answer + settings.attention_weight * attention
        optimiser.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        schedule.step()
        history.append(loss.item())
        if step % 50 == 0 or step == settings.steps:
            log(f"step {step}/{settings.steps}  answer {answer.item():.3f}  attention {attention.item():.3f}  "
                f"{time.time() - started:.0f}s")
    model.eval()
    if out is not None:
        save(model, processor, out)
    return history


def save(model: Any, processor: Any, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)  # safetensors
    processor.save_pretrained(out)


def _batches(data: list[Encoded], size: int, seed: int, steps: int) -> Iterator[list[Encoded]]:
    """``steps`` batches from seeded epoch permutations."""
    rng = np.random.default_rng(seed)
    order: list[int] = []
    for _ in range(steps):
        if len(order) < size:
            order += rng.permutation(len(data)).tolist()
        yield [data[i] for i in order[:size]]
        order = order[size:]


def _warmup_cosine(steps: int) -> Callable[[int], float]:
    warmup = max(1, steps // 20)
    return lambda step: min(1.0, (step + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(1.0, step / steps)))
