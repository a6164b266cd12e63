"""How a task asks an lmms-eval model for attention maps, and how the model answers.

lmms-eval only knows text-in/text-out ``generate_until`` requests, so an attention request is a
context string and the maps come back as the generated string:

- request: ``ATTENTION_REQUEST_TAG`` followed by JSON ``{"queries": [{"prompt": ..., "entity": ...}, ...],
  "layers": ["mid", ...]}`` — one forward pass per query over ``prompt`` with the item's image; the map
  is the attention from the tokens of ``entity`` (its last occurrence in the prompt) to the image tokens;
- response: JSON ``{"grid": [Hp, Wp], "layers": {"mid": [layer indices]}, "maps": [{"mid": <map>}, ...]}``
  with one map dict per query; each map is ``{"scale": s, "f16": <base64 of Hp*Wp little-endian float16
  values v>}`` and decodes as ``v * s`` (v in [0, 1], so float16 keeps about 3 significant digits);
  a query the model could not answer has ``{"error": "reason"}`` instead of layer maps.

A 37×37 grid with four layer sets for one query and the middle third for two more stays under 25 KB.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

ATTENTION_REQUEST_TAG = "[pathbind:attention] "


@dataclass(frozen=True)
class Query:
    prompt: str
    entity: str


@dataclass(frozen=True)
class AttentionRequest:
    queries: tuple[Query, ...]
    layers: tuple[str, ...] = ("mid",)

    def encode(self) -> str:
        queries = [{"prompt": q.prompt, "entity": q.entity} for q in self.queries]
        body = {"queries": queries, "layers": list(self.layers)}
        return ATTENTION_REQUEST_TAG + json.dumps(body, ensure_ascii=False)

    @classmethod
    def decode(cls, context: str) -> AttentionRequest | None:
        """The request in a context string, or None when the context is an ordinary prompt.

        The tag may be preceded by text lmms-eval prepends (a system instruction); ValueError names
        what is malformed.
        """
        start = context.find(ATTENTION_REQUEST_TAG)
        if start < 0:
            return None
        try:
            body = json.loads(context[start + len(ATTENTION_REQUEST_TAG):])
            queries = tuple(Query(str(q["prompt"]), str(q["entity"])) for q in body["queries"])
            layers = tuple(str(name) for name in body.get("layers", ["mid"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"malformed attention request ({type(exc).__name__}: {exc})") from exc
        if not queries:
            raise ValueError("attention request has no queries")
        return cls(queries, layers)


@dataclass
class AttentionResponse:
    """Per query, a map per layer set (or an error), all on one ``grid``."""

    grid: tuple[int, int]
    layers: dict[str, list[int]] = field(default_factory=dict)
    maps: list[dict[str, np.ndarray] | str] = field(default_factory=list)  # str: why this query has no map

    def encode(self) -> str:
        encoded = [{"error": item} if isinstance(item, str) else {name: _encode_map(m) for name, m in item.items()}
                   for item in self.maps]
        return json.dumps({"grid": list(self.grid), "layers": self.layers, "maps": encoded})

    @classmethod
    def decode(cls, text: str) -> AttentionResponse:
        """ValueError when ``text`` is not a response, e.g. a model answered the request in words."""
        try:
            body = json.loads(text)
            grid = (int(body["grid"][0]), int(body["grid"][1]))
            maps = [str(item["error"]) if "error" in item
                    else {name: _decode_map(value, grid) for name, value in item.items()} for item in body["maps"]]
            return cls(grid, {k: [int(i) for i in v] for k, v in body["layers"].items()}, maps)
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise ValueError(f"not an attention response ({type(exc).__name__}: {exc}): {text[:80]!r}") from exc


def _encode_map(values: np.ndarray) -> dict[str, Any]:
    values = np.asarray(values, dtype=np.float64)
    finite = values[np.isfinite(values)]
    scale = float(np.abs(finite).max()) if finite.size else 1.0
    scale = scale or 1.0
    packed = (values / scale).astype("<f2").tobytes()
    return {"scale": scale, "f16": base64.b64encode(packed).decode("ascii")}


def _decode_map(value: dict[str, Any], grid: tuple[int, int]) -> np.ndarray:
    flat = np.frombuffer(base64.b64decode(value["f16"]), dtype="<f2").astype(np.float64)
    return flat.reshape(grid) * float(value["scale"])
