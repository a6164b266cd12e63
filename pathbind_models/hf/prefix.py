"""Shared-prefix attention: each image's prompt prefix prefilled once, its queries' suffixes batched on the cache.

Several prompts about one image share their first tokens (the chat template's opening, the image, the shared
text). :func:`suffix_attention` runs those prefixes once, several images per forward (left-padded, so every prefix
ends at the same column), keeps their keys and values in a ``DynamicCache``, then runs every prompt's remaining
tokens in one more forward against the cache (right-padded: a real token never attends to a later one), while the
probe records the rows of the tokens asked for over all keys, cached ones included. Causal attention makes the
result that of each whole prompt's own forward: the prefix's keys and values do not depend on what follows it, as
long as the prefix holds every image token (an image block that attends both ways, as in Gemma3, is then whole).

Positions are given explicitly, as the unpadded prompt's own: the model's M-RoPE index (``get_rope_index``, Qwen2-VL,
Qwen2.5-VL, Qwen3-VL) for the prefixes, otherwise 0, 1, … over the real tokens; a suffix continues from its
prefix's last position (text positions step by one in every M-RoPE dimension). A sliding-window cache layer keeps
only the window's last keys: the keys it dropped are outside every suffix token's window, so their weights are 0.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import torch
from transformers import DynamicCache

from pathbind_models.hf import probe

if TYPE_CHECKING:
    from transformers import PreTrainedModel

SEQUENCE_KEYS = ("input_ids", "attention_mask", "token_type_ids", "mm_token_type_ids")


@dataclass(frozen=True)
class Suffix:
    """The tokens of one prompt after its image's prefix, and which of them to record."""

    prefix: int  # index of its prefix in the list given to suffix_attention
    ids: list[int]
    rows: list[int]  # recorded positions, counted from the suffix's first token


def suffix_attention(model: PreTrainedModel, prefixes: list[dict[str, torch.Tensor]], suffixes: list[Suffix],
                     layers: dict[torch.nn.Module, int], pad_id: int) -> list[dict[int, torch.Tensor]]:
    """Per suffix, per recorded layer: its rows' head-mean attention over the keys of its whole unpadded prompt
    (prefix then suffix), (rows, prefix + suffix length), float32 on the CPU.

    ``prefixes`` are single-prompt processor inputs cut after the prefix (every image token inside it); ``layers``
    the decoder attention modules to record, as for :func:`probe.recording`.
    """
    batch = stack_prefixes(prefixes, pad_id)
    positions = prefix_positions(model, batch)
    cache = DynamicCache(config=model.config)
    passed = {_cache_keyword(model): cache, "use_cache": True, "logits_to_keep": 1}
    with torch.inference_mode():
        model(**batch, position_ids=positions, **passed)
        owner = torch.tensor([s.prefix for s in suffixes], device=batch["input_ids"].device)
        cache.reorder_cache(cast(torch.LongTensor, owner))  # one copy of its prefix's cache per suffix
        suffix_batch, recorded = _suffix_batch(suffixes, batch["attention_mask"][owner], positions, owner, pad_id)
        with probe.recording(recorded, layers) as record:
            model(**suffix_batch, **passed)
    total = suffix_batch["attention_mask"].shape[1]  # padded prefix + padded suffix columns
    width = batch["input_ids"].shape[1]
    picked = torch.tensor(recorded)
    out = []
    for r, suffix in enumerate(suffixes):
        prefix_length = prefixes[suffix.prefix]["input_ids"].shape[1]
        which = torch.searchsorted(picked, torch.tensor(suffix.rows))
        by_layer = {}
        for layer, rows in record.rows_by_layer.items():
            keys = rows.shape[-1]  # a sliding layer's cache holds only the window's last keys
            start = width - prefix_length - (total - keys)  # key index of the prompt's first token
            kept = rows[r, which, max(start, 0):start + prefix_length + len(suffix.ids)]
            by_layer[layer] = torch.nn.functional.pad(kept, (max(-start, 0), 0))
        out.append(by_layer)
    return out


def _cache_keyword(model: Any) -> str:
    """The forward's name for the key/value cache: ``cache`` from transformers 5.24, ``past_key_values`` before. A name
    the forward does not know would vanish into its ``**kwargs``, and the suffixes would run without their prefix."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def stack_prefixes(prefixes: list[dict[str, torch.Tensor]], pad_id: int) -> dict[str, torch.Tensor]:
    """One batch of single-prompt inputs: token sequences left-padded, image tensors concatenated (each dimension
    but the first zero-padded to the largest, as processors pad tile lists; an all-zero tile is no image)."""
    length = max(p["input_ids"].shape[1] for p in prefixes)
    batch = {}
    for key, first in prefixes[0].items():
        values = [p[key] for p in prefixes]
        if key in SEQUENCE_KEYS:
            fill = pad_id if key == "input_ids" else 0
            batch[key] = torch.cat([torch.nn.functional.pad(v, (length - v.shape[1], 0), value=fill) for v in values])
        elif isinstance(first, torch.Tensor):
            shape = [max(sizes) for sizes in zip(*(v.shape for v in values), strict=True)][1:]
            batch[key] = torch.cat([_pad_to(v, shape) for v in values])
        else:
            raise TypeError(f"cannot batch the processor output {key!r} of type {type(first).__name__}")
    return batch


def prefix_positions(model: PreTrainedModel, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Each left-padded prompt's own position ids: (3, batch, length) M-RoPE or (batch, length), 0 at padding."""
    mask = batch["attention_mask"]
    rope_index = getattr(getattr(model, "model", None), "get_rope_index", None)
    if rope_index is not None and "image_grid_thw" in batch:
        return rope_index(batch["input_ids"], mm_token_type_ids=batch["mm_token_type_ids"],
                          image_grid_thw=batch["image_grid_thw"], attention_mask=mask)[0]
    return (mask.long().cumsum(-1) - 1).clamp(min=0)


def with_suffix(prefix: dict[str, torch.Tensor], ids: list[int]) -> dict[str, torch.Tensor]:
    """The whole prompt's inputs: ``prefix`` (one prompt) with the suffix tokens appended (text: type 0)."""
    whole = dict(prefix)
    for key in SEQUENCE_KEYS:
        if key in prefix:
            tail = ids if key == "input_ids" else [int(key == "attention_mask")] * len(ids)
            whole[key] = torch.cat([prefix[key], prefix[key].new_tensor([tail])], dim=1)
    return whole


def _suffix_batch(suffixes: list[Suffix], prefix_mask: torch.Tensor, positions: torch.Tensor, owner: torch.Tensor,
                  pad_id: int) -> tuple[dict[str, torch.Tensor], list[int]]:
    """The right-padded suffixes with their full attention masks and positions, and the rows to record."""
    length = max(len(s.ids) for s in suffixes)
    device = prefix_mask.device
    ids = torch.tensor([s.ids + [pad_id] * (length - len(s.ids)) for s in suffixes], device=device)
    mask = torch.tensor([[1] * len(s.ids) + [0] * (length - len(s.ids)) for s in suffixes], device=device)
    last = positions[..., -1:].index_select(-2, owner)  # every prefix ends in the last column
    steps = torch.arange(1, length + 1, device=device)
    batch = {"input_ids": ids, "attention_mask": torch.cat([prefix_mask, mask.to(prefix_mask.dtype)], dim=1),
             "position_ids": last + steps}
    return batch, sorted({row for s in suffixes for row in s.rows})


def _pad_to(value: torch.Tensor, shape: list[int]) -> torch.Tensor:
    padding: list[int] = []
    for size, target in zip(reversed(value.shape[1:]), reversed(shape), strict=True):
        padding += [0, target - size]
    return torch.nn.functional.pad(value, padding) if any(padding) else value
