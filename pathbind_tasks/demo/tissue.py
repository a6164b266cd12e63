"""Deterministic synthetic H&E/IHC histology tiles and field-of-view traps, with the truth of what was drawn."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image
from scipy import ndimage

from pathbind_conventions import concentrations_to_rgb

TISSUES = ("fibrous_stroma", "lymphoid", "adipose", "epithelial_nests", "inflamed_stroma", "neoplasm")
QUADRANTS = ("upper left", "upper right", "lower left", "lower right")
REFERENCE_SIZE = 256  # nuclei counts are per 256x256 field and scale with the field's area


@dataclass(frozen=True)
class TileSpec:
    """What a tile shows: architecture, one nuclear population, staining and an optional lesion."""

    tissue: str = "fibrous_stroma"
    n_nuclei: int = 25  # per 256x256 field
    radius: float = 4.0  # equivalent nuclear radius in px (area = pi r^2) before atypia
    elongation: float = 1.0  # major/minor axis ratio
    atypia: float = 0.0  # 0 normal .. 1 enlarged x2, pleomorphic, hyperchromatic
    dab_fraction: float = 0.0  # fraction of nuclei that are DAB-positive
    ihc: bool = False  # hematoxylin counterstain + DAB instead of H&E
    lesion_quadrant: int | None = None  # index into QUADRANTS: add a cluster of atypical nuclei there


# ---------------------------------------------------------------- textures and architecture


def _smooth_noise(rng: np.random.Generator, size: int, cells: int) -> np.ndarray:
    """Zero-mean, unit-scale noise varying over size/cells pixels (bicubic upsampling is fast and exact-size)."""
    coarse = rng.standard_normal((cells + 1, cells + 1)).astype(np.float32)
    return np.asarray(Image.fromarray(coarse).resize((size, size), Image.Resampling.BICUBIC))


def _fibres(rng: np.random.Generator, size: int, period: float = 9.0) -> np.ndarray:
    """Wavy collagen bundles in [0, 1]: a warped sinusoid sharpened into thin bright fibres."""
    theta = rng.uniform(0, np.pi)
    ramp = np.arange(size, dtype=np.float32) * np.float32(2 * np.pi / period)
    phase = ramp[None, :] * np.cos(theta) + ramp[:, None] * np.sin(theta) + 2.5 * _smooth_noise(rng, size, 4)
    return (0.5 + 0.5 * np.sin(phase)) ** 3 * (0.75 + 0.25 * _smooth_noise(rng, size, 6))  # bundles vary


def _stroma(rng: np.random.Generator, size: int, ihc: bool, strength: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Hematoxylin and eosin background of fibrous stroma (IHC: faint hematoxylin counterstain, no eosin)."""
    texture = strength * _fibres(rng, size) + 0.08 * _smooth_noise(rng, size, 8)
    if ihc:
        return 0.2 + 0.12 * texture, np.full((size, size), 0.03)
    return np.full((size, size), 0.02), 0.34 + 0.3 * texture


def _adipose(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Adipocytes as a Voronoi tiling: white vacuoles bounded by thin eosinophilic septa (h, e, septa)."""
    grid = np.arange(21.0, size, 42.0)  # jittered grid: irregular cells ~42 px across
    seeds = np.stack(np.meshgrid(grid, grid), axis=-1).reshape(-1, 2) + rng.uniform(-15, 15, (len(grid) ** 2, 2))
    label = np.zeros((size, size), int)
    ij = np.clip(seeds[:, ::-1].astype(int), 0, size - 1)
    label[ij[:, 0], ij[:, 1]] = np.arange(1, len(seeds) + 1)
    _, (ri, ci) = ndimage.distance_transform_edt(label == 0, return_indices=True)
    cells = label[ri, ci]
    edge = np.zeros((size, size), bool)
    edge[:, 1:] |= cells[:, 1:] != cells[:, :-1]
    edge[1:, :] |= cells[1:, :] != cells[:-1, :]
    septa = ndimage.binary_dilation(edge, iterations=2)
    e = np.where(septa, 0.55 + 0.1 * _smooth_noise(rng, size, 8), 0.0)
    return np.where(septa, 0.03, 0.0), e, septa


def _nests(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Epithelial nests (pale cytoplasm, some with a small lumen) in stroma: h, e and where nuclei may sit."""
    h, e = _stroma(rng, size, ihc=False)
    centres = _place(rng, np.full(5, 40.0), np.ones((size, size), bool), gap=6.0, margin=30.0)
    ramp = np.arange(size, dtype=np.float32)
    wobble = 5.0 * _smooth_noise(rng, size, 6)
    nest, lumen, seats = (np.zeros((size, size), bool) for _ in range(3))
    for (cx, cy), has_lumen in zip(centres, rng.random(len(centres)) < 0.5, strict=True):
        dist = np.hypot(ramp[None, :] - cx, ramp[:, None] - cy)
        nest |= dist < 38.0 + wobble
        seats |= (dist < 32.0 + wobble) & (dist > (13.0 if has_lumen else 0.0))  # nuclei stay 6 px inside
        lumen |= has_lumen & (dist < 7.0)
    h = np.where(nest, 0.06, h)
    e = np.where(nest, 0.45 + 0.05 * wobble / 5.0, e)
    h[lumen] = 0.0
    e[lumen] = 0.0
    return h, e, seats


# ---------------------------------------------------------------- nuclei


def _block(blocked: np.ndarray, xy: np.ndarray, reach: np.ndarray) -> None:
    """Mark every pixel whose centre lies within ``reach`` of one of the centres ``xy``."""
    size = blocked.shape[0]
    offsets = np.arange(-int(np.ceil(reach.max())) - 1, int(np.ceil(reach.max())) + 2)
    ix = xy[:, 0].astype(int)[:, None, None] + offsets[None, None, :]
    iy = xy[:, 1].astype(int)[:, None, None] + offsets[None, :, None]
    near = (ix + 0.5 - xy[:, 0, None, None]) ** 2 + (iy + 0.5 - xy[:, 1, None, None]) ** 2 < reach[:, None, None] ** 2
    near &= (ix >= 0) & (ix < size) & (iy >= 0) & (iy < size)
    blocked[np.broadcast_to(iy, near.shape)[near], np.broadcast_to(ix, near.shape)[near]] = True


def _place(rng: np.random.Generator, radii: np.ndarray, allowed: np.ndarray, gap: float, margin: float,
           taken: np.ndarray | None = None, disk: tuple[float, float, float] | None = None) -> np.ndarray:
    """Random sequential placement of non-overlapping disks; returns centres (x, y) of those that fit.

    Candidates come in one batch, so the result depends only on the generator state. ``taken`` holds
    (x, y, r) rows already placed; ``disk`` (x, y, R) restricts centres to a disk. Candidates are
    screened in chunks against a raster of certainly-blocked centres; survivors get the exact test.
    """
    size = allowed.shape[0]
    n_cand = 40 * len(radii) + 200
    if disk is None:
        cand = rng.uniform(margin, size - margin, size=(n_cand, 2))
    else:
        angle, rad = rng.uniform(0, 2 * np.pi, n_cand), disk[2] * np.sqrt(rng.random(n_cand))
        cand = np.column_stack([disk[0] + rad * np.cos(angle), disk[1] + rad * np.sin(angle)])
    cand = cand[(cand.min(axis=1) >= 0) & (cand.max(axis=1) < size)]
    prior = np.empty((0, 3)) if taken is None else np.asarray(taken, dtype=float).reshape(-1, 3)
    xy = np.empty((len(prior) + len(radii), 2))
    rr = np.empty(len(prior) + len(radii))
    xy[: len(prior)], rr[: len(prior)] = prior[:, :2], prior[:, 2]
    blocked = ~allowed
    # Centres this close conflict whatever their radius; 0.75 px absorbs sub-pixel positions.
    margin_px = radii.min(initial=0.0) + gap - 0.75
    if len(prior):
        _block(blocked, xy[: len(prior)], rr[: len(prior)] + margin_px)
    k = len(prior)
    for start in range(0, len(cand), 128):
        if k == len(xy):
            break
        chunk = cand[start:start + 128]
        chunk = chunk[~blocked[chunk[:, 1].astype(int), chunk[:, 0].astype(int)]]
        # Drop candidates too close to earlier chunks even at the smallest radius left; test the rest exactly.
        dist = np.hypot(chunk[:, None, 0] - xy[None, :k, 0], chunk[:, None, 1] - xy[None, :k, 1])
        chunk = chunk[np.all(dist >= rr[None, :k] + radii[k - len(prior):].min() + gap, axis=1)]
        first = k
        for x, y in chunk.tolist():
            r = radii[k - len(prior)]
            if np.all(np.hypot(xy[:k, 0] - x, xy[:k, 1] - y) >= rr[:k] + r + gap):
                xy[k], rr[k] = (x, y), r
                k += 1
                if k == len(xy):
                    break
        if k > first:
            _block(blocked, xy[first:k], rr[first:k] + margin_px)
    return xy[len(prior):k]


def _population(rng: np.random.Generator, n: int, radius: float, elongation: float, atypia: float) -> dict:
    """Per-nucleus shape and stain parameters; atypia enlarges, varies shape and darkens the chromatin."""
    spread = 0.06 + 0.09 * atypia
    r = radius * (1 + atypia) * np.clip(1 + spread * rng.standard_normal(n), 1 - 2 * spread, 1 + 2 * spread)
    ratio = elongation * (1 + 0.25 * atypia * rng.random(n))
    return {
        "a": r * np.sqrt(ratio), "b": r / np.sqrt(ratio), "angle": rng.uniform(0, np.pi, n),
        "irregular": (0.03 + 0.15 * atypia) * rng.random(n), "phase": rng.uniform(0, 2 * np.pi, (n, 2)),
        "h": (1.0 + 0.7 * atypia) * rng.uniform(0.95, 1.05, n),
    }


def _stamp(h: np.ndarray, d: np.ndarray, xy: np.ndarray, pop: dict, dab: np.ndarray, grain: np.ndarray) -> np.ndarray:
    """Draw soft-edged irregular ellipses into the hematoxylin/DAB maps in place; returns footprint boxes.

    All nuclei are evaluated at once on (n, W, W) windows around their centres.
    """
    size = h.shape[0]
    if not len(xy):
        return np.zeros((0, 4))
    reach = int(np.ceil((pop["a"] * (1 + pop["irregular"])).max())) + 2
    offsets = np.arange(-reach, reach + 1)
    ix = xy[:, 0].astype(int)[:, None, None] + offsets[None, None, :]
    iy = xy[:, 1].astype(int)[:, None, None] + offsets[None, :, None]
    col = lambda values: np.asarray(values, np.float32)[:, None, None]  # noqa: E731  float32: half the time
    dx, dy = (ix - col(xy[:, 0])).astype(np.float32), (iy - col(xy[:, 1])).astype(np.float32)
    cos, sin, a, b = col(np.cos(pop["angle"])), col(np.sin(pop["angle"])), col(pop["a"]), col(pop["b"])
    u, v = (dx * cos + dy * sin) / a, (dy * cos - dx * sin) / b
    phi = np.arctan2(v, u)
    wave = 0.6 * np.cos(2 * phi + col(pop["phase"][:, 0])) + 0.4 * np.cos(3 * phi + col(pop["phase"][:, 1]))
    bound = 1 + col(pop["irregular"]) * wave
    profile = np.clip((bound - np.hypot(u, v)) * b + 0.5, 0, 1)  # ~1 px anti-aliased rim
    inside = (profile > 0) & (ix >= 0) & (ix < size) & (iy >= 0) & (iy < size)
    flat = (iy * size + ix)[inside]
    # DAB-positive nuclei: brown chromogen over a weaker hematoxylin counterstain.
    h_level = np.where(dab, 0.35, 1.0) * pop["h"]
    d_level = np.where(dab, 1.1, 0.0) * pop["h"]
    strength = profile[inside] * grain.ravel()[flat]
    which = np.broadcast_to(np.arange(len(xy))[:, None, None], profile.shape)[inside]
    np.maximum.at(h.reshape(-1), flat, strength * h_level[which])
    np.maximum.at(d.reshape(-1), flat, strength * d_level[which])
    core = profile >= 0.5
    big = 10 * size
    return np.column_stack([
        np.where(core, ix, big).min(axis=(1, 2)), np.where(core, iy, big).min(axis=(1, 2)),
        np.where(core, ix, -big).max(axis=(1, 2)) + 1, np.where(core, iy, -big).max(axis=(1, 2)) + 1,
    ]).astype(float)


def _lesion_disk(rng: np.random.Generator, size: int, quadrant: int) -> tuple[float, float, float]:
    """A disk for lesion-nucleus centres whose nuclei stay inside the quadrant with a margin."""
    reach, margin, half = 0.21 * size, 0.03 * size, size / 2
    row, col = divmod(quadrant, 2)
    cx = rng.uniform(col * half + margin + reach, (col + 1) * half - margin - reach)
    cy = rng.uniform(row * half + margin + reach, (row + 1) * half - margin - reach)
    return cx, cy, reach - 15.0  # 15 px: the largest lesion nucleus's extent from its centre


def _concat(*pops: dict) -> dict:
    return {key: np.concatenate([p[key] for p in pops]) for key in pops[0]}


def _take(pop: dict, n: int) -> dict:
    return {key: value[:n] for key, value in pop.items()}


def render_tile(spec: TileSpec, seed: int | np.random.Generator = 0, size: int = 256) -> tuple[np.ndarray, dict]:
    """Render one tile; returns (uint8 RGB array, truth record of everything that was drawn)."""
    rng = np.random.default_rng(seed)
    h, e, seats = _background(rng, spec, size)
    lesion_xy, lesion_pop = np.empty((0, 2)), _population(rng, 0, 1.0, 1.0, 1.0)
    if spec.lesion_quadrant is not None:
        lesion_pop = _population(rng, 14, 4.75, 1.1, 1.0)
        disk = _lesion_disk(rng, size, spec.lesion_quadrant)
        lesion_xy = _place(rng, lesion_pop["a"], np.ones((size, size), bool), gap=2.5, margin=0.0, disk=disk)
        lesion_pop = _take(lesion_pop, len(lesion_xy))
    n = round(spec.n_nuclei * (size / REFERENCE_SIZE) ** 2)
    pop = _population(rng, n, spec.radius, spec.elongation, spec.atypia)
    taken = np.column_stack([lesion_xy, lesion_pop["a"]])
    xy = _place(rng, pop["a"], seats, gap=3.0, margin=pop["a"].max(initial=0) + 2, taken=taken)
    pop = _take(pop, len(xy))
    dab = np.zeros(len(xy), bool)
    dab[rng.permutation(len(xy))[: round(spec.dab_fraction * len(xy))]] = True
    grain = 0.9 + 0.1 * np.clip(ndimage.gaussian_filter(rng.standard_normal((size, size)), 0.8) * 3, -1, 1)
    d = np.zeros((size, size))
    all_xy, all_pop = np.concatenate([lesion_xy, xy]), _concat(lesion_pop, pop)
    all_dab = np.concatenate([np.zeros(len(lesion_xy), bool), dab])
    boxes = _stamp(h, d, all_xy, all_pop, all_dab, grain)
    conc = np.stack([h, e, d], axis=-1) + 0.01 * rng.standard_normal((size, size, 1), dtype=np.float32)
    rgb = concentrations_to_rgb(np.clip(conc, 0, None))
    lesion_boxes = []
    if len(lesion_xy):
        lb = boxes[: len(lesion_xy)]
        lesion_boxes = [[float(lb[:, 0].min()), float(lb[:, 1].min()), float(lb[:, 2].max()), float(lb[:, 3].max())]]
    truth = {
        "tissue": spec.tissue, "ihc": spec.ihc, "nuclei_count": len(all_xy), "centres": all_xy,
        "semi_axes": np.column_stack([all_pop["a"], all_pop["b"]]), "nucleus_boxes": boxes,
        "lesion": np.arange(len(all_xy)) < len(lesion_xy), "dab_positive": all_dab,
        "dab_positive_count": int(all_dab.sum()), "dab_fraction": float(all_dab.mean()) if len(all_dab) else 0.0,
        "lesion_boxes": lesion_boxes,
        "lesion_quadrant": None if spec.lesion_quadrant is None else QUADRANTS[spec.lesion_quadrant],
        "white_fraction": float((rgb.min(axis=-1) > 235).mean()),  # near-white pixels: fat, lumina, glass
    }
    return rgb, truth


def _background(rng: np.random.Generator, spec: TileSpec, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Background hematoxylin and eosin maps and the mask of where nuclei may sit."""
    everywhere = np.ones((size, size), bool)
    if spec.tissue == "adipose":
        return _adipose(rng, size)
    if spec.tissue == "epithelial_nests":
        return _nests(rng, size)
    if spec.tissue == "lymphoid":
        h, e = _stroma(rng, size, spec.ihc, strength=0.3)
        return h + 0.06, e, everywhere  # little collagen, a bluish cast between the lymphocytes
    if spec.tissue in ("fibrous_stroma", "inflamed_stroma", "neoplasm"):
        return (*_stroma(rng, size, spec.ihc), everywhere)
    raise ValueError(f"unknown tissue {spec.tissue!r}; expected one of {TISSUES}")


# ---------------------------------------------------------------- field-of-view traps


def render_isolated_cells(seed: int | np.random.Generator = 0, n_cells: int = 4,
                          size: int = 256) -> tuple[np.ndarray, dict]:
    """A few isolated cells on clean glass: no architecture, so the organ cannot be determined."""
    rng = np.random.default_rng(seed)
    radii = rng.uniform(14, 20, n_cells)
    xy = _place(rng, radii, np.ones((size, size), bool), gap=25.0, margin=24.0)
    yy, xx = np.mgrid[0:size, 0:size].astype(float)
    h, e = np.zeros((size, size)), np.full((size, size), 0.02)
    for (cx, cy), r in zip(xy, radii, strict=False):
        dist = np.hypot(xx - cx, yy - cy)
        e += 0.35 * np.clip(r - dist + 0.5, 0, 1)
        np.maximum(h, np.clip(0.4 * r - np.hypot(xx - cx - 0.2 * r, yy - cy) + 0.5, 0, 1), out=h)
    conc = np.stack([h, e, np.zeros_like(h)], axis=-1) + rng.normal(0.0, 0.01, (size, size, 3))
    truth = {"n_cells": len(xy), "centres": xy, "radii": radii[: len(xy)], "organ_determinable": False}
    return concentrations_to_rgb(np.clip(conc, 0, None)), truth


def render_overview(seed: int | np.random.Generator = 0, n_fragments: int = 3,
                    size: int = 256) -> tuple[np.ndarray, dict]:
    """A low-power overview: stained tissue fragments on white glass, nuclei too small to resolve."""
    rng = np.random.default_rng(seed)
    radii = rng.uniform(0.1, 0.17, n_fragments) * size
    xy = _place(rng, radii, np.ones((size, size), bool), gap=6.0, margin=0.2 * size)
    yy, xx = np.mgrid[0:size, 0:size].astype(float)
    tissue = np.zeros((size, size), bool)
    for (cx, cy), r in zip(xy, radii, strict=False):
        squash = rng.uniform(0.6, 1.0)
        tissue |= np.hypot(xx - cx, (yy - cy) / squash) < r * (1 + 0.2 * _smooth_noise(rng, size, 5))
    mottle = _smooth_noise(rng, size, 24)  # nuclear-dense areas as sub-resolution purple haze
    h = np.where(tissue, 0.3 + 0.12 * mottle, 0.0)
    e = np.where(tissue, 0.45 + 0.08 * _smooth_noise(rng, size, 12), 0.0)
    conc = ndimage.gaussian_filter(np.stack([h, e, np.zeros_like(h)], axis=-1), (1.0, 1.0, 0))
    truth = {"n_fragments": len(xy), "tissue_fraction": float(tissue.mean()), "nuclei_resolvable": False}
    return concentrations_to_rgb(np.clip(conc, 0, None)), truth


__all__ = ["QUADRANTS", "TISSUES", "TileSpec", "render_isolated_cells", "render_overview", "render_tile"]
