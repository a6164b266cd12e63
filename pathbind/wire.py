"""Requests a task sends a model through lmms-eval's text interface, and the model's encoded answers.

lmms-eval only knows text-in/text-out ``generate_until`` requests, so a request that is not a question (attention
maps, occlusion scores) travels as the context string and its answer as the generated string:

- request: a header that must *start* the context, ``[pathbind:<kind>/v<version>] ``, then the request as JSON.
  Text elsewhere in a context (a question quoting a header, a prepended instruction) is never a request;
- answer: the response as JSON, exempt from the task's stop sequences. Arrays travel as
  ``{"shape", "dtype", "scale", "data"}``: base64 of little-endian ``f8`` (exact) or ``f2`` values times ``scale``
  (maps in [0, 1] after scaling keep about 3 significant digits in a quarter of the bytes);
  a part the model could not compute is ``{"error": reason}``.

Kinds: ``attention`` (:class:`AttentionRequest`: entity-token attention of each query, per layer set) and
``occlusion`` (:class:`OcclusionRequest`: option scores under patch occlusion, with the heat maps of the attribution
methods the model runs, ``pathbind_models.attribution``). This module only carries the data;
what a request asks of the image is done on the model side (``pathbind_models.occlusion`` for PathBind's models).
Every response carries ``view_box``: the rectangle of the original image, ``[x_min, y_min, x_max, y_max]`` pixels,
that its maps cover (the model's processor may crop).
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

LAYER_SETS = ("shallow", "mid", "deep", "all")
# The decoder's nine contiguous ninths (``ninth_1`` the shallowest): the layer sweep of the seed-004 controls.
LAYER_GROUPS = tuple(f"ninth_{k}" for k in range(1, 10))
FILLS = ("mean", "grey")
CURVE_KINDS = ("deletion", "insertion")  # a curve is named "<kind>/<order>": "random" or a heat map's method
VERSION = 1
# The answer of a PathBind model that could not answer one request: "<marker> <Error>: <message>", so the scorer
# reports the real cause (never cached: a rerun retries it).
MODEL_FAILED = "[PATHBIND_MODEL_FAILED]"
_HEADER = re.compile(r"\[pathbind:([a-z_]+)/v(\d+)\] ")

Part = np.ndarray | str  # an array, or why the model could not compute it
Box = tuple[float, float, float, float]


def encode_request(kind: str, body: dict[str, Any]) -> str:
    return f"[pathbind:{kind}/v{VERSION}] " + json.dumps(body, ensure_ascii=False)


def request_kind(context: str) -> str | None:
    """The kind of request a context starts with, read from its header alone (the body is not decoded), or None for
    an ordinary prompt; ValueError for a kind or version this PathBind does not read."""
    header = _HEADER.match(context)
    if header is None:
        return None
    kind, version = header.group(1), int(header.group(2))
    if kind not in _KINDS or version != VERSION:
        raise ValueError(f"unknown request [pathbind:{kind}/v{version}]; this PathBind reads "
                         f"{', '.join(f'{k}/v{VERSION}' for k in _KINDS)}")
    return kind


def decode_request(context: str) -> AttentionRequest | OcclusionRequest | None:
    """The request a context starts with, or None for an ordinary prompt; ValueError names what is malformed."""
    kind = request_kind(context)
    if kind is None:
        return None
    try:
        return _KINDS[kind].from_json(json.loads(context.partition("] ")[2]))
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"malformed {kind} request ({type(exc).__name__}: {exc})") from exc


def encode_array(part: Part, dtype: str = "f8") -> dict[str, Any]:
    if isinstance(part, str):
        return {"error": part}
    values = np.asarray(part, dtype=np.float64)
    finite = values[np.isfinite(values)]
    scale = float(np.abs(finite).max() or 1.0) if dtype == "f2" and finite.size else 1.0
    packed = np.ascontiguousarray(values / scale, dtype=f"<{dtype}").tobytes()
    return {"shape": list(values.shape), "dtype": dtype, "scale": scale, "data": base64.b64encode(packed).decode()}


def decode_array(value: dict[str, Any]) -> Part:
    if "error" in value:
        return str(value["error"])
    flat = np.frombuffer(base64.b64decode(value["data"]), dtype=f"<{value['dtype']}").astype(np.float64)
    return flat.reshape(value["shape"]) * float(value["scale"])


def decode_response(text: str, what: str) -> dict[str, Any]:
    try:
        body = json.loads(text)
        if not isinstance(body, dict):
            raise TypeError("not a JSON object")
        return body
    except (ValueError, TypeError) as exc:
        raise ValueError(f"not {what} ({type(exc).__name__}: {exc}): {text[:80]!r}") from exc


def _view_box(body: dict[str, Any]) -> Box | None:
    value = body.get("view_box")
    return None if value is None else (float(value[0]), float(value[1]), float(value[2]), float(value[3]))


# --------------------------------------------------------------------------------------------------- attention


@dataclass(frozen=True)
class Query:
    """A prompt and the entity whose attention is asked; ``layers``, the layer sets of this query's maps where
    they are not the request's (empty: the request's)."""

    prompt: str
    entity: str
    layers: tuple[str, ...] = ()


@dataclass(frozen=True)
class AttentionRequest:
    """One forward pass per query over ``prompt`` with the item's image; each map is the attention from the tokens
    of ``entity`` (its last occurrence in the prompt) to the image tokens, over each named layer set."""

    queries: tuple[Query, ...]
    layers: tuple[str, ...] = ("mid",)

    def __post_init__(self) -> None:
        if not self.queries:
            raise ValueError("attention request has no queries")

    def layers_of(self, query: Query) -> tuple[str, ...]:
        """The layer sets of ``query``'s maps."""
        return query.layers or self.layers

    def encode(self) -> str:
        queries = [{"prompt": q.prompt, "entity": q.entity, **({"layers": list(q.layers)} if q.layers else {})}
                   for q in self.queries]
        return encode_request("attention", {"queries": queries, "layers": list(self.layers)})

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> AttentionRequest:
        queries = tuple(Query(str(q["prompt"]), str(q["entity"]), tuple(str(name) for name in q.get("layers", ())))
                        for q in body["queries"])
        return cls(queries, tuple(str(name) for name in body.get("layers", ["mid"])))


@dataclass
class AttentionResponse:
    """Per query, a map per layer set (or why there is none), all on one ``grid`` covering ``view_box``."""

    grid: tuple[int, int]
    layers: dict[str, list[int]] = field(default_factory=dict)
    maps: list[dict[str, np.ndarray] | str] = field(default_factory=list)  # str: why this query has no map
    view_box: Box | None = None  # None: the whole image

    def encode(self) -> str:
        maps = [{"error": item} if isinstance(item, str) else {name: encode_array(m, "f2") for name, m in item.items()}
                for item in self.maps]
        return json.dumps({"grid": list(self.grid), "layers": self.layers, "maps": maps,
                           "view_box": None if self.view_box is None else list(self.view_box)})

    @classmethod
    def decode(cls, text: str) -> AttentionResponse:
        """ValueError when ``text`` is not a response, e.g. a model answered the request in words."""
        body = decode_response(text, "an attention response")
        try:
            grid = (int(body["grid"][0]), int(body["grid"][1]))
            maps = [str(item["error"]) if "error" in item else {name: _map(value, grid) for name, value in item.items()}
                    for item in body["maps"]]
            return cls(grid, {k: [int(i) for i in v] for k, v in body["layers"].items()}, maps, _view_box(body))
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            raise ValueError(f"not an attention response ({type(exc).__name__}: {exc}): {text[:80]!r}") from exc


def _map(value: dict[str, Any], grid: tuple[int, int]) -> np.ndarray:
    decoded = decode_array(value)
    if isinstance(decoded, str) or decoded.shape != grid:
        raise ValueError(f"a map is not on the {grid[0]}×{grid[1]} grid")
    return decoded


# --------------------------------------------------------------------------------------------------- occlusion


@dataclass(frozen=True)
class OcclusionRequest:
    """A question (``prompt``) with its answer ``options`` and the index of the ``reference`` answer, the ``entity``
    whose attention is the heat map under test, the occlusion ``grid`` G (cells as in
    ``pathbind_conventions.cell_edges``), the ``fill``, the number of insertion/deletion ``steps`` and the
    ``seed`` of the random curve order and of RISE's masks; ``rois`` names boxes ([x_min, y_min, x_max, y_max]
    pixels) each to be hidden whole with the fill (ROI deletion: the expert box and a random box of its size);
    ``rise_masks`` and ``rise_cells`` (masks, and mask cells per side) and ``ig_steps`` (Integrated Gradients'
    points) set those methods' resolution where the model runs them."""

    prompt: str
    options: tuple[str, ...]
    reference: int
    entity: str
    grid: int = 16
    fill: str = "mean"
    steps: int = 16
    seed: int = 0
    rois: dict[str, list[float]] = field(default_factory=dict)
    rise_masks: int = 1500  # the seed's N (320 on its subset)
    rise_cells: int = 7  # Petsiuk et al.'s 7×7 masks
    ig_steps: int = 32

    def __post_init__(self) -> None:
        if len(self.options) < 2 or not 0 <= self.reference < len(self.options):
            raise ValueError(f"occlusion request needs >= 2 options and a reference index among them, got "
                             f"{len(self.options)} options and reference {self.reference}")
        if min(self.grid, self.steps, self.rise_masks, self.rise_cells, self.ig_steps) < 1:
            raise ValueError(f"grid, steps, rise_masks, rise_cells and ig_steps must be positive, got "
                             f"grid={self.grid}, steps={self.steps}, rise_masks={self.rise_masks}, "
                             f"rise_cells={self.rise_cells}, ig_steps={self.ig_steps}")
        if self.fill not in FILLS:
            raise ValueError(f"fill {self.fill!r} is not one of {', '.join(FILLS)}")

    def encode(self) -> str:
        return encode_request("occlusion", asdict(self))

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> OcclusionRequest:
        rois = {str(name): [float(v) for v in box] for name, box in body.get("rois", {}).items()}
        return cls(**{**body, "options": tuple(body["options"]), "rois": rois})


_PARTS = ("original", "text_only", "patches", "attention")
_NAMED_PARTS = ("curves", "attributions", "rois")


@dataclass
class OcclusionResponse:
    """Option log-probabilities (rows: images, columns: options) of the original image, of no image, of each of the
    G×G single-cell occlusions (row-major), along each curve and with each ROI hidden; the entity attention and the
    other methods' heat maps on the G×G grid, with what each used (``attribution_notes``)."""

    original: Part
    text_only: Part
    patches: Part  # (G*G, K), row-major over the grid
    attention: Part  # (G, G)
    attention_grid: tuple[int, int] = (0, 0)  # the model's native patch grid, before resampling
    curves: dict[str, Part] = field(default_factory=dict)  # "<kind>/<order>" (CURVE_KINDS) -> (steps + 1, K)
    view_box: Box | None = None  # the part of the image the model saw; None: all of it
    attributions: dict[str, Part] = field(default_factory=dict)  # method (not attention) -> (G, G) map
    attribution_notes: dict[str, dict[str, Any]] = field(default_factory=dict)  # method -> what it used and cost
    rois: dict[str, Part] = field(default_factory=dict)  # the request's ROI name -> (K,) scores with it hidden

    def encode(self) -> str:
        parts = {name: encode_array(getattr(self, name)) for name in _PARTS}
        named = {kind: {name: encode_array(value) for name, value in getattr(self, kind).items()}
                 for kind in _NAMED_PARTS}
        return json.dumps({**parts, **named, "attention_grid": list(self.attention_grid),
                           "attribution_notes": self.attribution_notes,
                           "view_box": None if self.view_box is None else list(self.view_box)})

    @classmethod
    def decode(cls, text: str) -> OcclusionResponse:
        """ValueError when ``text`` is not a response (e.g. a model that answered the request in words)."""
        body = decode_response(text, "an occlusion response")
        try:
            parts = {name: decode_array(body[name]) for name in _PARTS}
            named = {kind: {name: decode_array(value) for name, value in body.get(kind, {}).items()}
                     for kind in _NAMED_PARTS}
            grid = (int(body["attention_grid"][0]), int(body["attention_grid"][1]))
            return cls(parts["original"], parts["text_only"], parts["patches"], parts["attention"], grid,
                       curves=named["curves"], view_box=_view_box(body), attributions=named["attributions"],
                       attribution_notes=dict(body.get("attribution_notes", {})), rois=named["rois"])
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            raise ValueError(f"not an occlusion response ({type(exc).__name__}: {exc}): {text[:80]!r}") from exc


_KINDS: dict[str, Any] = {"attention": AttentionRequest, "occlusion": OcclusionRequest}
