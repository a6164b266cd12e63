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

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from pathbind_models.adapter import Attribution

METHODS = ("attention", "rollout", "gradient_attention", "winsor_cam", "integrated_gradients", "rise")
MODEL_METHODS = ("rollout", "gradient_attention", "winsor_cam", "integrated_gradients")  # adapter.attribution
TOKENS = ("expression", "last")
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
    if "-" not in spec:
        return spec
    low, _, high = spec.partition("-")
    if not (low.strip().isdigit() and high.strip().isdigit()) or int(low) > int(high):
        raise ValueError(f"attention_layers={spec!r} is neither a layer set (shallow, mid, deep, all) nor a range A-B")
    if int(high) >= count:
        raise ValueError(f"attention_layers={spec}: the model has {count} decoder layers (0-{count - 1})")
    return list(range(int(low), int(high) + 1))


class NotApplicable(Exception):
    """The method cannot be computed for this model (the reason is the message)."""


def model_attribution(adapter: Any, method: str, image: Any, request: Any,
                      settings: AttributionSettings) -> Attribution:
    """A method computed from the model's own layers and gradients; NotApplicable for an adapter without them."""
    compute = getattr(adapter, "attribution", None)
    if compute is None:
        raise NotApplicable(f"{type(adapter).__name__} exposes no layers or gradients, so {method} does not apply")
    return compute(method, image, request, settings)


def notes_of(maps: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each computed method's notes (what it used, what it cost)."""
    return {name: dict(found.notes) for name, found in maps.items() if isinstance(found, Attribution)}
