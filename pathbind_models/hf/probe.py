"""Row-only attention probe: attention weights of a few query tokens, at SDPA cost.

Registered through transformers' ``AttentionInterface`` as ``pathbind_probe``. Every call runs the
normal SDPA attention, so the model's output is exactly SDPA's; while a :class:`Recording` is active,
the decoder layers it names also compute softmax(q·kᵀ·scale + mask) for the recorded query rows only,
head-averaged. That is |rows|×S values per layer, where ``output_attentions`` with eager attention
materialises layers×heads×S×S. Many rows (attention rollout records them all) are computed a block at a time, so
the heads×rows×S scores of one block are all that is held at once.

A recording ``with_graph`` keeps each head's rows on the device instead, and recomputes the layer's output at those
rows from them (the same values as SDPA's, to rounding), so that the gradient of anything computed from the output
with respect to the recorded weights exists: ∂y/∂A for the recorded rows alone, without the full matrices.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

PROBE = "pathbind_probe"


@dataclass
class Recording:
    """Which query rows to record in which decoder attention modules; filled during one forward."""

    rows: torch.Tensor  # query positions, shape (k,)
    layers: dict[torch.nn.Module, int]  # decoder attention module -> layer index
    # layer -> (batch, k, key length) head mean on the CPU, or (batch, heads, k, key length) on the device with_graph
    rows_by_layer: dict[int, torch.Tensor] = field(default_factory=dict)
    with_graph: bool = False


_active: contextvars.ContextVar[Recording | None] = contextvars.ContextVar("pathbind_recording", default=None)


@contextmanager
def recording(rows: list[int], layers: dict[torch.nn.Module, int], *, with_graph: bool = False) -> Iterator[Recording]:
    """Record the head-mean attention rows of ``rows`` in ``layers`` during the forward passes inside (every head's,
    in the autograd graph, ``with_graph``)."""
    record = Recording(torch.tensor(rows, dtype=torch.long), layers, with_graph=with_graph)
    token = _active.set(record)
    try:
        yield record
    finally:
        _active.reset(token)


def probe_attention_forward(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                            attention_mask: torch.Tensor | None, scaling: float | None = None,
                            **kwargs: Any) -> tuple[torch.Tensor, None]:
    output, _ = sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, **kwargs)
    record = _active.get()
    if record is None or module not in record.layers:
        return output, None
    if record.with_graph:
        rows = record.rows.to(query.device)
        weights = _row_weights(module, query, key, attention_mask, scaling, rows)
        values = repeat_kv(value, getattr(module, "num_key_value_groups", 1))
        spliced = torch.matmul(weights.to(values.dtype), values).transpose(1, 2)  # (batch, k, heads, head dim)
        record.rows_by_layer[record.layers[module]] = weights
        return output.index_copy(1, rows, spliced.to(output.dtype)), None
    # Gathered on the CPU: the layers of a model sharded by device_map run on different devices.
    rows = torch.cat([_row_weights(module, query, key, attention_mask, scaling, block.to(query.device)).mean(dim=1)
                      for block in record.rows.split(_block_rows(query, key))], dim=1)
    record.rows_by_layer[record.layers[module]] = rows.cpu()
    return output, None


BLOCK_SCORES = 2**25  # float32 scores held at once while many rows are recorded (128 MiB)


def _block_rows(query: torch.Tensor, key: torch.Tensor) -> int:
    """Query rows per block: heads × rows × key length scores of BLOCK_SCORES at most, at least one row."""
    return max(1, BLOCK_SCORES // (query.shape[0] * query.shape[1] * key.shape[2]))


def _row_weights(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, mask: torch.Tensor | None,
                 scaling: float | None, rows: torch.Tensor) -> torch.Tensor:
    """Softmax rows of every head for query positions ``rows``: (batch, heads, k, key length), float32."""
    keys = repeat_kv(key, getattr(module, "num_key_value_groups", 1))  # GQA: each query head reads its KV group
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    scores = torch.matmul(query[:, :, rows].float(), keys.float().transpose(-1, -2)) * scale
    if mask is None:  # SDPA was told is_causal: rebuild the causal mask for these rows
        offset = key.shape[2] - query.shape[2]
        allowed = torch.arange(key.shape[2], device=query.device)[None, :] <= rows[:, None] + offset
        scores = scores.masked_fill(~allowed, float("-inf"))
    elif mask.dtype == torch.bool:
        scores = scores.masked_fill(~mask[:, :, rows], float("-inf"))
    else:
        scores = scores + mask[:, :, rows].float()
    return scores.softmax(dim=-1)


def register() -> str:
    """Make ``attn_implementation="pathbind_probe"`` available (idempotent); SDPA's mask builder goes with it, so
    padding, sliding windows and bidirectional image blocks reach the probe exactly as they reach SDPA."""
    AttentionInterface.register(PROBE, probe_attention_forward)
    AttentionMaskInterface.register(PROBE, sdpa_mask)
    return PROBE
