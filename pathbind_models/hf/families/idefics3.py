"""Idefics3: ``<row_r_col_c>`` tiles, then a ``<global-img>`` view; no documented box frame; its chat template."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

from pathbind_models.hf.families.base import ImageGrid, ModelFamily
from pathbind_models.hf.views import View, square_grid

if TYPE_CHECKING:
    import torch

_ROW_COL = re.compile(r"<row_(\d+)_col_(\d+)>")


def layout(config: Any, processor: Any, inputs: dict[str, torch.Tensor], positions: np.ndarray,
           image_size: tuple[int, int]) -> list[View]:
    """One view per run of image tokens (SmolVLM too), placed by the ``<row_r_col_c>`` marker before it; a run
    without one is the whole image."""
    starts = [0, *(np.flatnonzero(np.diff(positions) > 1) + 1)]
    ids = inputs["input_ids"][0]
    views = []
    for start, end in zip(starts, [*starts[1:], len(positions)], strict=True):
        marker = processor.tokenizer.convert_ids_to_tokens(int(ids[positions[start] - 1]))
        match = _ROW_COL.fullmatch(str(marker))
        tile = (int(match.group(1)) - 1, int(match.group(2)) - 1) if match else None
        views.append(View(int(start), square_grid(int(end - start)), tile))
    return views


IDEFICS3_TEMPLATE = (  # the family's own chat template
    "<|begin_of_text|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)


FAMILY = ModelFamily("idefics3", ("idefics3",), layout, None, ImageGrid(4, 4, tiles=(2, 2), global_view=True))
