"""The adapter contract: what every PathBind model, controls included, can be asked."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from PIL import Image

from pathbind.wire import LAYER_GROUPS, LAYER_SETS


@dataclass
class EntityAttention:
    """Attention from an entity's tokens to the image (Algorithm 1 steps 1–4, before smoothing).

    ``map`` is the element-wise max over entity tokens of the layer-mean of the head-mean attention rows,
    on the patch grid ``grid_shape`` (neither smoothed nor normalised). ``per_layer`` maps each layer in
    ``layers`` to its per-token maps (tokens × Hp × Wp). ``inputs`` are the exact model inputs, so the map can
    be recomputed with eager attention; ``global_map`` is the whole-image view of a tiled layout (see
    ``pathbind_models.hf.families``). ``view_box`` is the rectangle of the original image the map covers,
    ``(x_min, y_min, x_max, y_max)`` pixels, where the processor shows the model less than all of it (a centre
    crop); None means the whole image. A model without layers (the controls) has one map for every layer set.
    """

    map: np.ndarray
    layers: list[int]
    token_positions: list[int]
    image_token_positions: list[int]
    grid_shape: tuple[int, int]
    per_layer: dict[int, np.ndarray] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    global_map: np.ndarray | None = None
    view_box: tuple[float, float, float, float] | None = None

    def layer_set_map(self, name: str) -> tuple[np.ndarray, list[int]]:
        """The map over a named layer set (see :func:`layer_indices`) of the recorded layers, and those layers."""
        if not self.per_layer:
            return self.map, []
        chosen = [self.layers[i] for i in layer_indices(name, len(self.layers))]
        return np.mean([self.per_layer[i] for i in chosen], axis=0).max(axis=0), chosen


@dataclass
class Attribution:
    """A heat map of what the answer margin rests on, by one attribution method (``pathbind_models.attribution``):
    ``map`` on the model's patch grid covering ``view_box`` (as :class:`EntityAttention`'s; None: the whole image),
    and ``notes``, what it used (token, layers, steps, ...) and cost (``forwards``, ``backwards``)."""

    map: np.ndarray
    view_box: tuple[float, float, float, float] | None
    notes: dict[str, Any] = field(default_factory=dict)


def layer_indices(layers: str | list[int], count: int) -> list[int]:
    """Decoder layers by name — the shallow, middle (``mid``) or deep third, ``all``, or a ninth (``ninth_1`` …
    ``ninth_9``) — or an explicit list.

    The thirds split ``count`` layers at ⌊L/3⌋ and ⌊2L/3⌋, so the middle third is {⌊L/3⌋, …, ⌊2L/3⌋−1}; ninth k is
    {⌊(k−1)L/9⌋, …, ⌊kL/9⌋−1}, or the one layer ⌊(k−1)L/9⌋ where that is empty (fewer than nine layers: neighbouring
    ninths then share a layer).
    """
    if not isinstance(layers, str):
        chosen = [int(i) for i in layers]
        if not chosen or any(not 0 <= i < count for i in chosen):
            raise ValueError(f"layers {chosen} are not a non-empty list within 0..{count - 1}")
        return chosen
    bounds = {"shallow": (0, count // 3), "mid": (count // 3, 2 * count // 3), "deep": (2 * count // 3, count),
              "all": (0, count)}
    for k, name in enumerate(LAYER_GROUPS, start=1):
        start = (k - 1) * count // 9
        bounds[name] = (start, max(start + 1, k * count // 9))
    if layers not in bounds:
        raise ValueError(f"layers {layers!r} is not one of {', '.join((*LAYER_SETS, *LAYER_GROUPS))} or a list of "
                         "layer indices")
    return list(range(*bounds[layers]))


class Adapter(Protocol):
    """A model as PathBind tasks use it: text in, images in, answers and scores out.

    Optional (``pathbind_models.lmms_model``): ``generate_batch`` (several prompts per call) and
    ``entity_attention_batch`` (several items' queries per call, e.g. one prefill per image), used when present;
    ``image_option_logprobs`` (one question about many images), needed to answer occlusion requests.
    """

    def generate(self, images: list[Image.Image], text: str, **gen_kwargs: Any) -> str:
        """Answer ``text`` about ``images`` (an empty list means no image at all). ``gen_kwargs`` are the task's
        generation settings; when they sample (:func:`pathbind.decoding.sampling_temperature`), torch's generator
        is seeded for this request alone."""
        ...

    def option_logprobs(self, images: list[Image.Image], text: str, options: list[str]) -> np.ndarray:
        """Log-probability of each candidate answer in ``options`` as the continuation of ``text``."""
        ...

    def entity_attention(self, image: Image.Image, text: str, entity: str,
                         layers: str | list[int] = "mid") -> EntityAttention:
        """Attention from the last occurrence of ``entity`` in ``text`` to ``image``."""
        ...
