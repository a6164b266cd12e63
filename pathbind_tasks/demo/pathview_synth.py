"""Synthetic PathView-Bench items in the release format: region tiles and slide overviews with exact truth.

Region tiles come from :func:`tissue.render_tile` (nuclei with exact footprints, counts, lesion clusters);
slide overviews are low-magnification fragments with painted lesions whose masks give exact boxes, areas
and quadrants; the traps are :func:`tissue.render_isolated_cells` (organ not determinable) and
:func:`tissue.render_overview` (nuclei not resolvable). Every class is balanced within a task.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image
from scipy import ndimage

from pathbind_conventions import concentrations_to_rgb
from pathbind_tasks.demo.synth import _CARCINOMA, _FAT, _FIBROBLASTS, _LYMPHOCYTES, Draw, _balanced, _jpeg
from pathbind_tasks.demo.tissue import (
    QUADRANTS,
    _adipose,
    _place,
    _smooth_noise,
    render_isolated_cells,
    render_overview,
    render_tile,
)

SIZE = 256
AREA_BINS = ("0-25%", "25-50%", "50-75%", "75-100%")
REGION_TISSUES = {"adipose tissue": Draw(_FAT, (5, 9)),
                  "lymphocytic infiltrate": Draw(replace(_LYMPHOCYTES, tissue="lymphoid"), (240, 290)),
                  "stroma": Draw(_FIBROBLASTS, (18, 30)), "tumor": Draw(_CARCINOMA, (35, 45))}
CELLS = {"neoplastic cell": Draw(_CARCINOMA, (35, 45)), "lymphocyte": Draw(_LYMPHOCYTES, (120, 200)),
         "fibroblast": Draw(_FIBROBLASTS, (18, 30))}
CELL_OPTIONS = (*CELLS, "plasma cell")  # the fourth option is never the answer
DESCRIBED = {("stroma", "fibroblast", "neoplastic cell"): Draw(_FIBROBLASTS, (18, 28)),  # with a lesion cluster
             ("lymphocytic infiltrate", "lymphocyte"): REGION_TISSUES["lymphocytic infiltrate"],
             ("adipose tissue", "adipocyte"): REGION_TISSUES["adipose tissue"],
             ("tumor", "neoplastic cell"): REGION_TISSUES["tumor"]}
SLIDE_ORGANS = ("lymph node", "breast", "colon", "skin")
SLIDE_LESIONS = ("tumor", "necrosis", "hemorrhage", "adipose tissue")
TRAP_ORGANS = ("breast", "colon", "lung", "liver", "kidney", "prostate", "skin", "stomach")
LESION_COUNT = (18, 28)


# ---------------------------------------------------------------- slide overviews


def _fragment(rng: np.random.Generator, size: int, half_axes: tuple[float, float]) -> np.ndarray:
    """A tissue fragment: a tilted ellipse with a wavy border, roughly centred."""
    yy, xx = np.mgrid[0:size, 0:size] + 0.5
    cx, cy = size / 2 + rng.uniform(-0.02, 0.02, 2) * size
    a, b = np.asarray(half_axes) * size * rng.uniform(0.95, 1.0, 2)
    angle = rng.uniform(-0.3, 0.3)
    u = ((xx - cx) * np.cos(angle) + (yy - cy) * np.sin(angle)) / a
    v = ((yy - cy) * np.cos(angle) - (xx - cx) * np.sin(angle)) / b
    return np.hypot(u, v) < 1 + 0.06 * _smooth_noise(rng, size, 5)


def _disk(size: int, cx: float, cy: float, r: float) -> np.ndarray:
    yy, xx = np.mgrid[0:size, 0:size] + 0.5
    return np.hypot(xx - cx, yy - cy) < r


def _box(mask: np.ndarray) -> list[float]:
    """Pixel-edge bounding box [x_min, y_min, x_max, y_max] of a mask."""
    rows, cols = np.nonzero(mask)
    return [float(cols.min()), float(rows.min()), float(cols.max() + 1), float(rows.max() + 1)]


def _stroma(rng: np.random.Generator, tissue: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pale pink stroma at low power: faint hematoxylin, mottled eosin; nothing outside the tissue."""
    size = tissue.shape[0]
    h = np.where(tissue, 0.16 + 0.03 * _smooth_noise(rng, size, 20), 0.0)
    e = np.where(tissue, 0.42 + 0.06 * _smooth_noise(rng, size, 12), 0.0)
    return h, e


def _paint(rng: np.random.Generator, h: np.ndarray, e: np.ndarray, mask: np.ndarray, lesion: str) -> None:
    """Paint a lesion into the stain maps in place: tumour purple, necrosis pale, haemorrhage red, fat white."""
    size = mask.shape[0]
    mottle = _smooth_noise(rng, size, 24)
    levels: dict[str, tuple[Any, Any]] = {
        "tumor": (0.75 + 0.06 * mottle, 0.3), "necrosis": (0.04 + 0.01 * mottle, 0.2 + 0.03 * mottle),
        "hemorrhage": (0.03, 1.1 + 0.08 * mottle)}
    if lesion == "adipose tissue":
        fat_h, fat_e, _ = _adipose(rng, size)
        levels[lesion] = (fat_h, fat_e)
    lesion_h, lesion_e = levels[lesion]
    h[mask] = np.broadcast_to(lesion_h, mask.shape)[mask]
    e[mask] = np.broadcast_to(lesion_e, mask.shape)[mask]


def _rgb(rng: np.random.Generator, h: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Low-power optics: stains blurred by one pixel, faint noise."""
    conc = ndimage.gaussian_filter(np.stack([h, e, np.zeros_like(h)], axis=-1), (1.0, 1.0, 0))
    return concentrations_to_rgb(np.clip(conc + 0.01 * rng.standard_normal(conc.shape), 0, None))


def slide_tissue(seed: int, size: int = SIZE) -> np.ndarray:
    """The tissue fragment of the overview :func:`render_slide` draws with ``seed`` (to place its lesions)."""
    return _fragment(np.random.default_rng(seed), size, (0.44, 0.42))


def render_slide(seed: int, lesions: list[tuple[str, tuple[float, float, float]]],
                 size: int = SIZE) -> tuple[np.ndarray, dict[str, Any]]:
    """An overview with lesions, each (kind, (cx, cy, r)): the disk within the tissue. Truth: tissue mask,
    lesion masks and boxes, and the lesion-covered fraction of the tissue."""
    rng = np.random.default_rng(seed)
    tissue = _fragment(rng, size, (0.44, 0.42))
    h, e = _stroma(rng, tissue)
    masks = [tissue & _disk(size, *disk) for _, disk in lesions]
    for (kind, _), mask in zip(lesions, masks, strict=True):
        _paint(rng, h, e, mask, kind)
    union = np.logical_or.reduce(masks) if masks else np.zeros_like(tissue)
    truth = {"tissue": tissue, "masks": masks, "boxes": [_box(m) for m in masks],
             "lesion_fraction": float(union.sum() / tissue.sum())}
    return _rgb(rng, h, e), truth


def render_organ(rng: np.random.Generator, organ: str, size: int = SIZE) -> np.ndarray:
    """An overview whose low-power architecture shows its organ: a lymph node is dense and purple with
    follicles, breast holds large fat vacuoles, colon small crypt lumina with dark rims, skin a dark epidermis."""
    tissue = _fragment(rng, size, (0.4, 0.36))
    h, e = _stroma(rng, tissue)
    if organ == "lymph node":
        h = np.where(tissue, 0.5 + 0.05 * _smooth_noise(rng, size, 16), 0.0)
        for cx, cy in _place(rng, np.full(5, 14.0), tissue, gap=10.0, margin=40.0):
            h[_disk(size, cx, cy, 12.0) & tissue] = 0.75
    elif organ in ("breast", "colon"):
        radius, count, rim = (8.0, 40, 0.0) if organ == "breast" else (3.5, 90, 0.7)
        inner = ndimage.binary_erosion(tissue, iterations=int(radius) + 4)
        for cx, cy in _place(rng, np.full(count, radius + 2.0), inner, gap=2.0, margin=0.0):
            h[_disk(size, cx, cy, radius + 2.0)] = max(rim, 0.16)
            hole = _disk(size, cx, cy, radius)
            h[hole], e[hole] = 0.0, 0.0
    elif organ == "skin":
        yy = np.mgrid[0:size, 0:size][0]
        top = np.argmax(tissue, axis=0)  # first tissue row of each column
        band = tissue & (yy < top[None, :] + 7)
        h[band], e[band] = 0.85, 0.3
    else:
        raise ValueError(f"unknown organ {organ!r}; expected one of {SLIDE_ORGANS}")
    return _rgb(rng, h, e)


def _inside(rng: np.random.Generator, tissue: np.ndarray, r: float, quadrant: int | None = None) -> tuple[float, float]:
    """A lesion centre at least ``r`` inside the tissue (within ``quadrant`` when given, away from its midlines)."""
    depth = ndimage.distance_transform_edt(tissue)
    rows, cols = np.nonzero(depth > r)
    if quadrant is not None:
        half = tissue.shape[0] / 2
        row, col = divmod(quadrant, 2)
        keep = ((rows + 0.5 - half) * (2 * row - 1) > r) & ((cols + 0.5 - half) * (2 * col - 1) > r)
        rows, cols = rows[keep], cols[keep]
    pick = rng.integers(len(rows))
    return float(cols[pick] + 0.5), float(rows[pick] + 0.5)


def _radius_for_fraction(tissue: np.ndarray, cx: float, cy: float, fraction: float) -> float:
    """The disk radius around (cx, cy) covering ``fraction`` of the tissue (bisection to 0.1 px)."""
    low, high = 0.0, float(tissue.shape[0]) * 1.5
    while high - low > 0.1:
        mid = (low + high) / 2
        low, high = (mid, high) if (tissue & _disk(tissue.shape[0], cx, cy, mid)).sum() < fraction * tissue.sum() \
            else (low, mid)
    return (low + high) / 2


# ---------------------------------------------------------------- items, one builder per task


def _region(draw: Draw, rng: np.random.Generator, size: int = SIZE, **changes: Any) -> tuple[np.ndarray, dict]:
    return render_tile(replace(draw.spec(rng), **changes), rng, size)


def _region_ogd(rng: np.random.Generator, cls: int) -> dict[str, Any]:
    rgb, truth = _region(Draw(_FIBROBLASTS, LESION_COUNT), rng, lesion_quadrant=cls)
    return {"image": rgb, "question": "Locate every neoplastic cell in this field.", "target": "neoplastic cell",
            "boxes": truth["nucleus_boxes"][truth["lesion"]].tolist()}


def _region_rcl(rng: np.random.Generator, cls: int) -> dict[str, Any]:
    label = list(REGION_TISSUES)[cls]
    rgb, _ = _region(REGION_TISSUES[label], rng)
    return {"image": rgb, "question": "Which tissue type does this region show?",
            "options": list(rng.permutation(list(REGION_TISSUES))), "answer": label}


def _region_ocl(rng: np.random.Generator, cls: int) -> dict[str, Any]:
    label = list(CELLS)[cls]
    rgb, truth = _region(CELLS[label], rng)
    boxes = truth["nucleus_boxes"]
    centres = (boxes[:, :2] + boxes[:, 2:]) / 2
    inner = np.flatnonzero((boxes[:, :2] >= 16).all(axis=1) & (boxes[:, 2:] <= SIZE - 16).all(axis=1))
    chosen = inner[np.argmin(np.hypot(*(centres[inner] - SIZE / 2).T))]
    box = (boxes[chosen] + [-2, -2, 2, 2]).tolist()
    return {"image": rgb, "question": "Which cell type is the cell in the marked box?",
            "options": list(rng.permutation(list(CELL_OPTIONS))), "answer": label, "query_box": box}


def _region_ocn(rng: np.random.Generator, cls: int) -> dict[str, Any]:
    low = 15 + 16 * cls  # classes spread the counts over 15-78
    rgb, truth = _region(Draw(_LYMPHOCYTES, (low, low + 15)), rng)
    return {"image": rgb, "question": "How many lymphocytes are in this image?", "target": "lymphocyte",
            "count": truth["nuclei_count"]}


def _region_rds(rng: np.random.Generator, cls: int) -> dict[str, Any]:
    entities, draw = list(DESCRIBED.items())[cls]
    lesion = {"lesion_quadrant": int(rng.integers(4))} if cls == 0 else {}  # stroma with a lesion cluster
    rgb, _ = _region(draw, rng, **lesion)
    return {"image": rgb, "question": "Which pathological entities are present in this region?",
            "entities": list(entities)}


def _region_dlo(rng: np.random.Generator, cls: int) -> dict[str, Any]:
    rgb, _ = _region(Draw(_FIBROBLASTS, LESION_COUNT), rng, lesion_quadrant=cls)
    return {"image": rgb, "question": "In which quadrant of this field is the density of neoplastic cells highest?",
            "options": list(QUADRANTS), "answer": QUADRANTS[cls], "target": "neoplastic cell"}


def _region_spr(rng: np.random.Generator, cls: int) -> dict[str, Any]:
    """Four tissues in the four quadrants; the marked box sits in the middle of one of them."""
    labels = list(rng.permutation(list(REGION_TISSUES)))
    half = SIZE // 2
    rgb = np.zeros((SIZE, SIZE, 3), np.uint8)
    for quadrant, label in enumerate(labels):
        row, col = divmod(quadrant, 2)
        rgb[row * half:(row + 1) * half, col * half:(col + 1) * half] = _region(REGION_TISSUES[label], rng, half)[0]
    answer = list(REGION_TISSUES)[cls]
    row, col = divmod(labels.index(answer), 2)
    cx, cy = (col + 0.5) * half + rng.uniform(-12, 12), (row + 0.5) * half + rng.uniform(-12, 12)
    return {"image": rgb, "question": "Which entity lies nearest to the marked box?",
            "options": list(rng.permutation(list(REGION_TISSUES))), "answer": answer,
            "query_box": [round(cx) - 12.0, round(cy) - 12.0, round(cx) + 12.0, round(cy) + 12.0]}


def _region_trap(rng: np.random.Generator, cls: int) -> dict[str, Any]:
    rgb, _ = render_isolated_cells(rng, n_cells=int(rng.integers(3, 6)))
    return {"image": rgb, "question": "Which organ was this tissue taken from?",
            "options": [str(organ) for organ in rng.choice(TRAP_ORGANS, 4, replace=False)]}


def _slide_org(rng: np.random.Generator, cls: int) -> dict[str, Any]:
    return {"image": render_organ(rng, SLIDE_ORGANS[cls]), "question": "Which organ was this tissue taken from?",
            "options": list(rng.permutation(list(SLIDE_ORGANS))), "answer": SLIDE_ORGANS[cls]}


def _slide_lgd(rng: np.random.Generator, cls: int) -> dict[str, Any]:
    seed = int(rng.integers(2**63))
    radii = rng.uniform(14, 30, 1 + cls)
    allowed = ndimage.distance_transform_edt(slide_tissue(seed)) > 6 + radii.max()
    centres = _place(rng, radii + 6, allowed, gap=8.0, margin=0.0)
    lesions = [("tumor", (float(x), float(y), float(r))) for (x, y), r in zip(centres, radii, strict=False)]
    rgb, truth = render_slide(seed, lesions)
    return {"image": rgb, "question": "Locate every tumor region in this slide.", "target": "tumor",
            "boxes": truth["boxes"]}


def _slide_ocl(rng: np.random.Generator, cls: int) -> dict[str, Any]:
    seed = int(rng.integers(2**63))
    r = float(rng.uniform(28, 40))
    rgb, truth = render_slide(seed, [(SLIDE_LESIONS[cls], (*_inside(rng, slide_tissue(seed), r + 4), r))])
    return {"image": rgb, "question": "What is the lesion in the marked box?",
            "options": list(rng.permutation(list(SLIDE_LESIONS))), "answer": SLIDE_LESIONS[cls],
            "query_box": truth["boxes"][0]}


def _slide_are(rng: np.random.Generator, cls: int) -> dict[str, Any]:
    seed = int(rng.integers(2**63))
    tissue = slide_tissue(seed)
    fraction = rng.uniform(0.25 * cls + 0.05, 0.25 * cls + 0.2)
    rows, cols = np.nonzero(tissue)
    cx, cy = cols.mean() + 0.5 + rng.uniform(-10, 10), rows.mean() + 0.5 + rng.uniform(-10, 10)
    rgb, truth = render_slide(seed, [("tumor", (cx, cy, _radius_for_fraction(tissue, cx, cy, fraction)))])
    answer = AREA_BINS[min(int(truth["lesion_fraction"] * 4), 3)]
    return {"image": rgb, "question": "What share of the tissue area does the tumor occupy?",
            "options": list(AREA_BINS), "answer": answer, "target": "tumor"}


def _slide_dlo(rng: np.random.Generator, cls: int) -> dict[str, Any]:
    seed = int(rng.integers(2**63))
    r = float(rng.uniform(18, 26))
    rgb, _ = render_slide(seed, [("tumor", (*_inside(rng, slide_tissue(seed), r, quadrant=cls), r))])
    return {"image": rgb, "question": "In which quadrant of this slide is the tumor density highest?",
            "options": list(QUADRANTS), "answer": QUADRANTS[cls], "target": "tumor"}


def _slide_trap(rng: np.random.Generator, cls: int) -> dict[str, Any]:
    rgb, _ = render_overview(rng, n_fragments=int(rng.integers(2, 5)))
    return {"image": rgb, "question": "How many lymphocytes are in this image?", "target": "lymphocyte"}


Builder = Callable[[np.random.Generator, int], dict[str, Any]]
# Each task: its builder and its number of balanced classes.
TASKS: dict[str, tuple[Builder, int]] = {
    "region_ogd": (_region_ogd, 4), "region_rcl": (_region_rcl, 4), "region_ocl": (_region_ocl, 3),
    "region_ocn": (_region_ocn, 4), "region_rds": (_region_rds, 4), "region_dlo": (_region_dlo, 4),
    "region_spr": (_region_spr, 4), "region_trap": (_region_trap, 1), "slide_org": (_slide_org, 4),
    "slide_lgd": (_slide_lgd, 2), "slide_ocl": (_slide_ocl, 4), "slide_are": (_slide_are, 4),
    "slide_dlo": (_slide_dlo, 4), "slide_trap": (_slide_trap, 1),
}


def pathview_items(n_per_task: int = 8, seed: int = 0) -> dict[str, list[dict[str, Any]]]:
    """Every task's rows in the release format (``image`` a PIL image), classes balanced, all from one seed."""
    rng = np.random.default_rng(seed)
    items: dict[str, list[dict[str, Any]]] = {}
    for start, (task, (build, n_classes)) in enumerate(TASKS.items()):
        rows = []
        for i, cls in enumerate(_balanced(rng, n_per_task, n_classes, start)):
            row = build(np.random.default_rng(rng.integers(2**63)), int(cls))
            rows.append({"id": f"pv-{task}-{i:03d}", "image": Image.fromarray(row.pop("image")), **row,
                         "width": SIZE, "height": SIZE, "source": "synthetic"})
        items[task] = rows
    return items


def _features(columns: list[str]) -> Any:
    from datasets import Features, List, Value
    from datasets import Image as ImageFeature

    text, number = Value("string"), Value("float64")
    known = {"id": text, "image": ImageFeature(), "question": text, "options": List(text), "answer": text,
             "target": text, "boxes": List(List(number)), "query_box": List(number), "count": Value("int64"),
             "entities": List(text), "width": Value("int32"), "height": Value("int32"), "source": text}
    return Features({name: known[name] for name in columns})


RELEASE_LAYOUT = "pathview/{task}.parquet"  # the release's own layout, read by the pathview_* tasks
# In pathbind_tasks/demo/data/: a synthetic release, read by the pathbind_pathview_demo_* task variants
# (pathbind_tasks.plugin).
PACKAGED_LAYOUT = RELEASE_LAYOUT
DATA_DIR_LAYOUT = "pathbind_pathview_demo_{task}/test.parquet"  # for PATHBIND_DATA: one folder per demo task


def write_pathview_data(out_dir: str | Path, n_per_task: int = 8, seed: int = 0,
                        layout: str = PACKAGED_LAYOUT) -> dict[str, Path]:
    """Write every task's items as parquet with JPEG images at ``out_dir / layout.format(task=...)``;
    returns {task: path}."""
    import datasets

    paths = {}
    quiet = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()  # the writer prints nothing
    try:
        for task, rows in pathview_items(n_per_task, seed).items():
            features = _features(list(rows[0]))
            records = [{**row, "image": _jpeg(row["image"], quality=85)} for row in rows]
            paths[task] = Path(out_dir) / layout.format(task=task)
            paths[task].parent.mkdir(parents=True, exist_ok=True)
            datasets.Dataset.from_list(records, features=features).to_parquet(paths[task])
    finally:
        if not quiet:
            datasets.enable_progress_bars()
    return paths
