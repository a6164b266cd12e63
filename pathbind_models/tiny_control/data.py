"""Training examples for the tiny control, drawn from the demo generators with seeds the demo never uses.

The generators and the presence question's wording are the demo data functions a plugin offers (``pathbind_tasks``,
through the ``pathbind_demo_data`` hook): the control trains on the tasks' own items and words without importing them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

from pathbind import get_plugin_manager, render_template
from pathbind_models.occlusion import fill_colour, occlude

DEMO_SEED = 0  # the shipped demo items' seed: never drawn here, so the demo stays held out
OCCLUDED_PER_MOSAIC = 5  # presence questions asked of occluded copies of each mosaic
MARGIN = 6.0  # the Yes margin taught with the quadrant in full view; each hidden cell of it lowers it by MARGIN / 8
GRID = 8  # the demo faithfulness task's occlusion grid: a 128-pixel quadrant is 4 × 4 cells


@dataclass(frozen=True)
class Example:
    """One prompt about one image: the answer to learn (or None) and the image-token cells its entity and its
    answer should attend to."""

    image: Image.Image | None
    text: str  # the user message, rendered from the project's templates
    answer: str | None  # "Yes", "No" or an option letter, learned as the whole reply
    entity: str | None = None  # the expression whose tokens' attention is taught
    cells: tuple[int, ...] | None = None  # image-token cells of the entity's target and of the evidence (None: all)
    yes_share: float | None = None  # instead of ``answer``: the probability of "Yes" to learn


def examples(n_tiles: int, n_mosaics: int, n_mcq: int, n_text: int, seed: int) -> list[Example]:
    """Yes/no and multiple-choice tiles, presence questions and localisation prompts about mosaics, and yes/no
    questions without an image (balanced, so the text alone never tells the answer), shuffled."""
    if seed == DEMO_SEED:
        raise ValueError(f"seed {DEMO_SEED} draws the demo's own items; train on another seed")
    rng = np.random.default_rng(seed)
    mcq, yes_no = _demo("demo_items")(n_per_dimension=n_mcq, n_yes_no=n_tiles, seed=seed)
    out = [Example(row["image"], render_template("yesno", question=row["question"], thinking=False),
                   row["answer"].capitalize(), cells=_evidence(row)) for row in yes_no]
    out += [Example(row["image"], render_template("mcq", question=row["question"], thinking=False,
                                                  choices=list(zip("ABCD", row["options"], strict=True))),
                    row["answer"]) for row in mcq]
    for item in _demo("grounding_items")(n_mosaics, seed=seed + 1):
        out += _mosaic_examples(item, rng)
    blind = yes_no[::max(1, len(yes_no) // max(1, n_text))][:n_text]  # both questions
    out += [Example(None, render_template("yesno", question=row["question"], thinking=False), answer)
            for row, answer in zip(blind, ("Yes", "No") * len(blind), strict=False)]
    return [out[i] for i in rng.permutation(len(out))]


def _demo(name: str) -> Callable[..., Any]:
    """The demo data function ``name``, from the plugin that offers it."""
    offered = get_plugin_manager().demo_data()
    if name not in offered:
        raise LookupError(f"no PathBind plugin offers the demo data function {name!r} (pathbind_tasks does); "
                          f"offered: {', '.join(sorted(offered)) or 'none'}")
    return offered[name].value


def _evidence(row: dict) -> tuple[int, ...] | None:
    """The cells of a yes/no tile's evidence: its lesion's quadrant (its first box's centre), or the cells that hold
    its DAB-positive nuclei (to find brown nuclei the answer must look at them, not at the field's mean colour);
    None when the tile shows neither."""
    if row["boxes"]:
        x0, y0, x1, y1 = row["boxes"][0]
        return quadrant_cells(int(y0 + y1 >= row["height"]) * 2 + int(x0 + x1 >= row["width"]))
    cell = row["width"] // GRID  # an image token's side: 32 pixels of a 256-pixel tile
    cells = {int(y // cell) * GRID + int(x // cell) for x, y in row["dab_centres"]}
    return tuple(sorted(cells)) or None


def _mosaic_examples(item: dict, rng: np.random.Generator) -> list[Example]:
    """The true presence question asked of the mosaic in full view and of OCCLUDED_PER_MOSAIC copies with
    occlusion-grid cells painted its mean colour, all learning a probability of Yes (one margin for full view and
    the occluded copies alike, so that painted cells are not a cue of their own), and a localisation prompt, with
    or without the quadrant in the expression (without it only the pixels say where to look)."""
    half = item["width"] // 2  # a mosaic is four quadrant tiles
    x0, y0 = item["bbox"][:2]
    truth = int(y0 // half) * 2 + int(x0 // half)
    name, claim = _demo("grounding_expression")(item["pattern"], truth, rng)
    text = render_template("yesno", question=_demo("presence_question")(claim), thinking=False)
    images = [(item["image"], np.zeros((GRID, GRID), bool))]
    images += [(occlude(item["image"], hidden, fill_colour(item["image"], "mean")), hidden)
               for hidden in (_hidden_cells(truth, rng) for _ in range(OCCLUDED_PER_MOSAIC))]
    entity = item["expression"] if rng.random() < 0.5 else name
    return [*(Example(image, text, None, claim, quadrant_cells(truth), yes_share(hidden, truth))
              for image, hidden in images),
            Example(item["image"], render_template("locate", entity=entity), None, entity, quadrant_cells(truth))]


def quadrant_cells(quadrant: int) -> tuple[int, ...]:
    """The row-major indices of ``quadrant``'s cells in the GRID × GRID grid (that of the image tokens too: a
    32-pixel occlusion cell is one merged token)."""
    half = GRID // 2
    row, col = divmod(quadrant, 2)
    inside = np.zeros((GRID, GRID), bool)
    inside[row * half:(row + 1) * half, col * half:(col + 1) * half] = True
    return tuple(np.flatnonzero(inside).tolist())


def _hidden_cells(quadrant: int, rng: np.random.Generator) -> np.ndarray:
    """A GRID × GRID mask of cells to paint: k of ``quadrant``'s 16 cells (k uniform in 0–16) and 0–16 of the
    other 48."""
    inside = np.array(quadrant_cells(quadrant))
    mask = np.zeros(GRID * GRID, bool)
    mask[rng.choice(inside, int(rng.integers(0, len(inside) + 1)), replace=False)] = True
    mask[rng.choice(np.setdiff1d(np.arange(GRID * GRID), inside), int(rng.integers(0, 17)), replace=False)] = True
    return mask.reshape(GRID, GRID)


def yes_share(hidden: np.ndarray, quadrant: int) -> float:
    """The probability of Yes taught for the true presence question with ``hidden`` cells painted: its margin is
    MARGIN × (1 − k/8) for k hidden cells of the quadrant, whatever the others."""
    k = int(hidden.ravel()[list(quadrant_cells(quadrant))].sum())
    return float(1 / (1 + np.exp(-MARGIN * (1 - k / 8))))
