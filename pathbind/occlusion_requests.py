"""How a task asks an lmms-eval model for patch-occlusion scores, and how the model answers.

Like ``pathbind.attention_maps``, the request travels as a ``generate_until`` context string and the answer as
the generated string:

- request: ``OCCLUSION_REQUEST_TAG`` + JSON of :class:`OcclusionRequest`: a question (``prompt``) with its answer
  ``options`` and the index of the ``reference`` answer, the ``entity`` whose attention is the heat map under
  test, the ``grid`` G, the occlusion ``fill``, the number of insertion/deletion ``steps`` and the ``seed`` of
  the random curve order;
- response: JSON of :class:`OcclusionResponse`: the option log-probabilities of the original image, of no image,
  of each of the G×G single-patch occlusions (row-major), and along each insertion/deletion curve, plus the
  entity attention resampled to the G×G grid. Arrays travel as base64 little-endian float64, so the task sees
  exactly the numbers the model computed; a part the model could not compute carries ``{"error": reason}``.

The perturbations are defined here, once: :func:`occlude` fills cells of the G×G grid (cell edges at
``floor(i * size / G)``) with :func:`fill_colour`; :func:`curve_masks` gives the occluded cells at each curve step.
"""

from __future__ import annotations

import base64
import json
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from PIL import Image

OCCLUSION_REQUEST_TAG = "[pathbind:occlusion] "
FILLS = ("mean", "grey")
GREY = (128, 128, 128)
CURVES = ("deletion/attention", "deletion/random", "insertion/attention", "insertion/random")


@dataclass(frozen=True)
class OcclusionRequest:
    prompt: str
    options: tuple[str, ...]
    reference: int
    entity: str
    grid: int = 16
    fill: str = "mean"
    steps: int = 16
    seed: int = 0

    def __post_init__(self) -> None:
        if len(self.options) < 2 or not 0 <= self.reference < len(self.options):
            raise ValueError(f"occlusion request needs >= 2 options and a reference index among them, got "
                             f"{len(self.options)} options and reference {self.reference}")
        if self.grid < 1 or self.steps < 1:
            raise ValueError(f"grid and steps must be positive, got grid={self.grid}, steps={self.steps}")
        if self.fill not in FILLS:
            raise ValueError(f"fill {self.fill!r} is not one of {', '.join(FILLS)}")

    def encode(self) -> str:
        return OCCLUSION_REQUEST_TAG + json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def decode(cls, context: str) -> OcclusionRequest | None:
        """The request in a context string (after any text lmms-eval prepends), or None for an ordinary prompt."""
        start = context.find(OCCLUSION_REQUEST_TAG)
        if start < 0:
            return None
        try:
            body = json.loads(context[start + len(OCCLUSION_REQUEST_TAG):])
            return cls(**{**body, "options": tuple(body["options"])})
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"malformed occlusion request ({type(exc).__name__}: {exc})") from exc


Part = np.ndarray | str  # an array, or why the model could not compute it


@dataclass
class OcclusionResponse:
    """Option log-probabilities (rows: images, columns: options) and the attention map on the G×G grid."""

    original: Part
    text_only: Part
    patches: Part  # (G*G, K), row-major over the grid
    attention: Part  # (G, G)
    attention_grid: tuple[int, int] = (0, 0)  # the model's native patch grid, before resampling
    curves: dict[str, Part] = field(default_factory=dict)  # CURVES name -> (steps + 1, K)

    def encode(self) -> str:
        parts = {name: _encode(getattr(self, name)) for name in ("original", "text_only", "patches", "attention")}
        curves = {name: _encode(value) for name, value in self.curves.items()}
        return json.dumps({**parts, "attention_grid": list(self.attention_grid), "curves": curves})

    @classmethod
    def decode(cls, text: str) -> OcclusionResponse:
        """ValueError when ``text`` is not a response (e.g. a model that answered the request in words)."""
        try:
            body = json.loads(text)
            parts = {name: _decode(body[name]) for name in ("original", "text_only", "patches", "attention")}
            curves = {name: _decode(value) for name, value in body["curves"].items()}
            grid = (int(body["attention_grid"][0]), int(body["attention_grid"][1]))
            return cls(**parts, attention_grid=grid, curves=curves)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            raise ValueError(f"not an occlusion response ({type(exc).__name__}: {exc}): {text[:80]!r}") from exc


def _encode(part: Part) -> dict[str, Any]:
    if isinstance(part, str):
        return {"error": part}
    values = np.ascontiguousarray(part, dtype="<f8")
    return {"shape": list(values.shape), "f64": base64.b64encode(values.tobytes()).decode("ascii")}


def _decode(value: dict[str, Any]) -> Part:
    if "error" in value:
        return str(value["error"])
    return np.frombuffer(base64.b64decode(value["f64"]), dtype="<f8").reshape(value["shape"]).copy()


# ------------------------------------------------------------------------------------------- perturbations


def cell_edges(length: int, grid: int) -> np.ndarray:
    """Pixel edges of ``grid`` cells along a side of ``length`` pixels: cell i is ``[edges[i], edges[i+1])``."""
    return (np.arange(grid + 1) * length) // grid


def fill_colour(image: Image.Image, fill: str) -> tuple[int, int, int]:
    """``mean``: the image's own mean colour (an occluded patch carries no new colour); ``grey``: mid-grey."""
    if fill == "grey":
        return GREY
    mean = np.asarray(image.convert("RGB"), dtype=float).reshape(-1, 3).mean(axis=0)
    red, green, blue = (round(float(v)) for v in mean)
    return red, green, blue


def occlude(image: Image.Image, mask: np.ndarray, colour: tuple[int, int, int]) -> Image.Image:
    """``image`` with the cells where the G×G boolean ``mask`` is true painted ``colour``."""
    pixels = np.array(image.convert("RGB"))
    grid = mask.shape[0]
    rows, cols = cell_edges(pixels.shape[0], grid), cell_edges(pixels.shape[1], grid)
    for r, c in zip(*np.nonzero(mask), strict=True):
        pixels[rows[r]:rows[r + 1], cols[c]:cols[c + 1]] = colour
    return Image.fromarray(pixels)


def curve_orders(attention: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """Cell orders of the curves: hottest attention first (ties by cell index), and a seeded random order."""
    flat = np.asarray(attention, dtype=float).ravel()
    return {"attention": np.argsort(-flat, kind="stable"),
            "random": np.random.default_rng(seed).permutation(flat.size)}


def curve_masks(order: np.ndarray, grid: int, steps: int, kind: str) -> list[np.ndarray]:
    """Occluded cells at each of ``steps + 1`` points: deletion occludes the first ``round(s/steps · G²)`` cells of
    ``order``; insertion starts fully occluded and reveals them."""
    count = grid * grid
    masks = []
    for step in range(steps + 1):
        taken = np.zeros(count, bool)
        taken[order[:round(step * count / steps)]] = True
        masks.append((taken if kind == "deletion" else ~taken).reshape(grid, grid))
    return masks
