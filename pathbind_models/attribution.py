"""Attribution methods for an occlusion request: which heat maps a run computes, with which settings, for any adapter.

Six methods explain the same target the occlusion map measures, the answer margin m = log p(reference) − max log
p(other option) (the seed's §3.2 and Tables 2–3; ``docs/audits.md`` defines each with its source and cost):

- ``attention``: the raw attention from the chosen tokens to the image tokens, head and layer mean;
- ``rollout``, ``gradient_attention``, ``winsor_cam``, ``integrated_gradients``: from the model's own computation
  (``pathbind_models.hf.attribution``), for adapters with an ``attribution`` method;
- ``rise``: model-agnostic random masking (:mod:`pathbind_models.rise`), for any adapter that scores images.

The run chooses them with ``--model_args attribution=all`` (or ``attribution=attention+rollout+rise``: lmms-eval
splits model arguments at commas) and the token and layers with ``attention_token=expression|last`` and
``attention_layers=mid|shallow|deep|all|A-B`` (the seed: ``last`` and ``10-20``); RISE's masks and Integrated
Gradients' steps are the task's, like the occlusion grid (``pathbind.wire.OcclusionRequest``). A method that cannot
apply to a model (no layers, no gradients) gives its reason instead of a map; every map says what it used.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from PIL import Image

from pathbind.wire import LAYER_SETS, Box, OcclusionRequest
from pathbind_conventions import resample_to_grid
from pathbind_models.adapter import Attribution
from pathbind_models.rise import rise_map

METHODS = ("attention", "rollout", "gradient_attention", "winsor_cam", "integrated_gradients", "rise")
MODEL_METHODS = ("rollout", "gradient_attention", "winsor_cam", "integrated_gradients")  # adapter.attribution
TOKENS = {"expression": "expression tokens (max)", "last": "last prompt token"}  # setting -> what the notes say
NOT_REQUESTED = "not requested: the run's attribution setting leaves raw attention out"
OPTIONS = ("attribution", "attention_token", "attention_layers", "winsor_percentile")


@dataclass(frozen=True)
class AttributionSettings:
    """What a run computes: ``methods`` (attention alone by default), the chosen ``token`` and decoder ``layers``
    (a layer-set name or an inclusive ``A-B`` range) of the attention-based methods and Winsor-CAM's percentile."""

    methods: tuple[str, ...] = ("attention",)
    token: str = "expression"
    layers: str = "mid"
    winsor_percentile: float = 90.0  # Wall et al.'s example setting

    def __post_init__(self) -> None:
        unknown = [m for m in self.methods if m not in METHODS]
        if unknown or not self.methods:
            raise ValueError(f"attribution={'+'.join(self.methods)!r}: {', '.join(unknown) or 'no method'} is not "
                             f"a method; choose 'all' or any of {', '.join(METHODS)} joined by '+'")
        if self.token not in TOKENS:
            raise ValueError(f"attention_token={self.token!r} is not one of {', '.join(TOKENS)}")
        if not 0 < self.winsor_percentile <= 100:
            raise ValueError(f"winsor_percentile={self.winsor_percentile} is not in (0, 100]")
        layer_spec(self.layers, 10**6)  # the form only; the range is checked against each model's layers

    @classmethod
    def pop_from(cls, model_args: dict[str, Any]) -> AttributionSettings:
        """The settings among ``model_args`` (removed from it, so the rest go to the adapter)."""
        given = {name: model_args.pop(name) for name in OPTIONS if name in model_args}
        methods = str(given.pop("attribution", "attention"))
        fields = {"attention_token": "token", "attention_layers": "layers"}
        values = {fields.get(name, name): value for name, value in given.items()}
        for name, kind in (("winsor_percentile", float), ("token", str), ("layers", str)):
            if name in values:
                values[name] = kind(values[name])
        chosen = METHODS if methods == "all" else tuple(m.strip() for m in methods.split("+") if m.strip())
        return cls(methods=chosen, **values)

    def describe(self) -> dict[str, Any]:
        return {key: list(value) if isinstance(value, tuple) else value for key, value in asdict(self).items()}


def layer_spec(spec: str, count: int) -> str | list[int]:
    """A layer-set name (see ``pathbind_models.adapter.layer_indices``) or the layers of an inclusive ``A-B`` range,
    checked against ``count`` decoder layers."""
    if spec in LAYER_SETS:
        return spec
    low, _, high = spec.partition("-")
    if not (low.strip().isdigit() and high.strip().isdigit()) or int(low) > int(high):
        raise ValueError(f"attention_layers={spec!r} is neither a layer set ({', '.join(LAYER_SETS)}) nor a range "
                         "A-B of decoder layers")
    if int(high) >= count:
        raise ValueError(f"attention_layers={spec}: the model has {count} decoder layers (0-{count - 1})")
    return list(range(int(low), int(high) + 1))


class NotApplicable(Exception):
    """The method cannot be computed for this model (the reason is the message)."""


def heat_maps(adapter: Any, image: Image.Image, request: OcclusionRequest, settings: AttributionSettings,
              colour: tuple[int, int, int]) -> tuple[dict[str, np.ndarray | str], dict[str, dict[str, Any]],
                                                    tuple[int, int], Box | None]:
    """Each method's map on the request's grid (cells outside the model's view get none) or why it has none, what
    each used, the attention's native grid and the model's view box (None: the whole image, or no map says).
    RISE hides with ``colour``, the request's fill, as the occlusion map does."""
    maps: dict[str, np.ndarray | str] = {}
    notes: dict[str, dict[str, Any]] = {}
    native, view_box = (0, 0), None
    for method in settings.methods:
        try:
            if method == "rise":
                maps[method], notes[method] = rise_map(
                    adapter, image, request.prompt, list(request.options), request.reference,
                    masks=request.rise_masks, cells=request.rise_cells, grid=request.grid, seed=request.seed,
                    colour=colour)
                continue
            found = (_attention(adapter, image, request, settings) if method == "attention"
                     else model_attribution(adapter, method, image, request, settings))
        except Exception as exc:  # scored without this method's measures; the reason is counted by the task
            maps[method] = f"{type(exc).__name__}: {exc}"
            continue
        maps[method], notes[method] = on_grid(found, image, request.grid), found.notes
        view_box = found.view_box if view_box is None else view_box
        if method == "attention":
            native = (int(found.map.shape[0]), int(found.map.shape[1]))
    return maps, notes, native, view_box


def _attention(adapter: Any, image: Image.Image, request: OcclusionRequest,
               settings: AttributionSettings) -> Attribution:
    """The raw attention of the chosen tokens over the chosen layers (a control's evidence map has neither)."""
    layers = getattr(adapter, "decoder_layers", None)
    if layers is None:
        found = adapter.entity_attention(image, request.prompt, request.entity, layers="mid")
        return Attribution(found.map, found.view_box, {"token": "none (the model's own evidence map)",
                                                       "forwards": 1, "backwards": 0})
    found = adapter.entity_attention(image, request.prompt, request.entity, layers=layer_spec(settings.layers,
                                                                                              len(layers)),
                                     token=settings.token)
    return Attribution(found.map, found.view_box, {"token": TOKENS[settings.token], "layers": found.layers,
                                                   "forwards": 1, "backwards": 0})


def on_grid(found: Attribution, image: Image.Image, grid: int) -> np.ndarray:
    """A method's map resampled onto the request's G×G grid over the part of the image it covers."""
    width, height = image.size
    box = found.view_box
    fractions = (0.0, 0.0, 1.0, 1.0) if box is None else (box[0] / width, box[1] / height, box[2] / width,
                                                           box[3] / height)
    return resample_to_grid(found.map, grid, fractions, image.size)


def model_attribution(adapter: Any, method: str, image: Any, request: Any,
                      settings: AttributionSettings) -> Attribution:
    """A method computed from the model's own layers and gradients; NotApplicable for an adapter without them."""
    compute = getattr(adapter, "attribution", None)
    if compute is None:
        raise NotApplicable(f"{type(adapter).__name__} exposes no layers or gradients")
    return compute(method, image, request, settings)
