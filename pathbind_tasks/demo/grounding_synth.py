"""Synthetic grounding items: four tissue patterns, one per quadrant, each with an exact box and expressions.

Every image is a mosaic of four 128-pixel tiles drawn by ``tissue.render_tile``: fat, DAB-positive nuclei, a
dense lymphocytic infiltrate and atypical carcinoma nuclei, in an order drawn per item. The item's expression
names one of them and its quadrant, and the box is that quadrant. A model that localises what it is asked
about reaches a high attention IoU; different expressions about one image point at different quadrants.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from pathbind_tasks.demo.tissue import QUADRANTS, TileSpec, render_tile

TILE = 128
PATTERNS = {  # pattern -> (tile, nuclei per 256² tile, DAB-positive fraction, expressions)
    "fat": (TileSpec("adipose", radius=3.5, elongation=3.0), 7, 0.0,
            ("adipocytes with large clear fat vacuoles", "mature adipose tissue with empty lipid vacuoles")),
    "dab": (TileSpec(radius=5.0, ihc=True), 110, 0.9,
            ("DAB-positive brown-stained nuclei", "immunopositive nuclei with brown DAB chromogen")),
    "lymphocytes": (TileSpec("lymphoid", radius=3.4), 280, 0.0,
                    ("dense lymphocytic infiltrate of small dark nuclei", "densely packed lymphocytes")),
    "atypia": (TileSpec("neoplasm", radius=5.5, elongation=1.1, atypia=1.0), 45, 0.0,
               ("enlarged hyperchromatic atypical nuclei", "pleomorphic atypical tumour nuclei")),
}


def grounding_items(n: int = 24, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` items with the grounding schema; targets cycle through the patterns, the layout is drawn."""
    rng = np.random.default_rng(seed)
    names = list(PATTERNS)
    items = []
    for i in range(n):
        layout = [names[k] for k in rng.permutation(len(names))]  # quadrant -> pattern
        image = _mosaic(layout, rng)
        target = names[i % len(names)]
        quadrant = layout.index(target)
        row, col = divmod(quadrant, 2)
        _, expression = grounding_expression(target, quadrant, rng)
        items.append({"id": f"demo-G-{i:03d}", "image": image, "expression": expression,
                      "bbox": [float(col * TILE), float(row * TILE), float((col + 1) * TILE), float((row + 1) * TILE)],
                      "width": 2 * TILE, "height": 2 * TILE, "split": "demo", "pattern": target})
    return items


def grounding_expression(pattern: str, quadrant: int, rng: np.random.Generator) -> tuple[str, str]:
    """(name, expression): one of ``pattern``'s names, drawn with ``rng``, and the expression placing it in
    ``quadrant`` (an index into ``QUADRANTS``)."""
    names = PATTERNS[pattern][3]
    name = names[int(rng.integers(len(names)))]
    return name, f"{name} in the {QUADRANTS[quadrant]} quadrant"


def _mosaic(layout: list[str], rng: np.random.Generator) -> Image.Image:
    canvas = np.zeros((2 * TILE, 2 * TILE, 3), np.uint8)
    for quadrant, name in enumerate(layout):
        spec, nuclei, dab, _ = PATTERNS[name]
        tile_spec = replace(spec, n_nuclei=nuclei, dab_fraction=dab)
        rgb, _ = render_tile(tile_spec, np.random.default_rng(rng.integers(2**63)), size=TILE)
        row, col = divmod(quadrant, 2)
        canvas[row * TILE:(row + 1) * TILE, col * TILE:(col + 1) * TILE] = rgb
    return Image.fromarray(canvas)


def write_grounding_data(path: str | Path, n: int = 24, seed: int = 0) -> Path:
    """The items as parquet (JPEG images) at ``path``."""
    import datasets

    from pathbind_tasks.demo.synth import _jpeg

    features = datasets.Features({
        "id": datasets.Value("string"), "image": datasets.Image(), "expression": datasets.Value("string"),
        "bbox": datasets.List(datasets.Value("float32")), "width": datasets.Value("int32"),
        "height": datasets.Value("int32"), "split": datasets.Value("string"), "pattern": datasets.Value("string")})
    rows = [{**item, "image": _jpeg(item["image"])} for item in grounding_items(n, seed)]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(rows, features=features).to_parquet(path)
    return path
