"""Training examples for the tiny control, drawn from the demo generators with seeds the demo never uses."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from pathbind import render_template
from pathbind_models.occlusion import fill_colour, occlude
from pathbind_tasks.common.faithfulness import question as presence_question
from pathbind_tasks.demo.grounding_synth import PATTERNS, TILE, grounding_items
from pathbind_tasks.demo.synth import demo_items
from pathbind_tasks.demo.tissue import QUADRANTS

DEMO_SEED = 0  # the shipped demo items' seed: never drawn here, so the demo stays held out
OCCLUDED_PER_MOSAIC = 3  # occluded copies of each mosaic's true presence question
MARGIN = 4.0  # the Yes margin taught with the quadrant in full view; each hidden cell of it lowers it by MARGIN / 8
GRID = 8  # the demo faithfulness task's occlusion grid: a 128-pixel quadrant is 4 × 4 cells


@dataclass(frozen=True)
class Example:
    """One prompt about one image: the answer to learn (or None) and the quadrant its entity should attend to."""

    image: Image.Image | None
    text: str  # the user message, rendered from the project's templates
    answer: str | None  # "Yes", "No" or an option letter, learned as the whole reply
    entity: str | None = None  # the expression whose tokens' attention is taught
    quadrant: int | None = None  # index into QUADRANTS of the entity's target and of the evidence (None: anywhere)
    yes_share: float | None = None  # instead of ``answer``: the probability of "Yes" to learn


def examples(n_tiles: int, n_mosaics: int, n_mcq: int, n_text: int, seed: int) -> list[Example]:
    """Yes/no and multiple-choice tiles, presence questions and localisation prompts about mosaics, and yes/no
    questions without an image (balanced, so the text alone never tells the answer), shuffled."""
    if seed == DEMO_SEED:
        raise ValueError(f"seed {DEMO_SEED} draws the demo's own items; train on another seed")
    rng = np.random.default_rng(seed)
    mcq, yes_no = demo_items(n_per_dimension=n_mcq, n_yes_no=n_tiles, seed=seed)
    out = [Example(row["image"], render_template("yesno", question=row["question"], thinking=False),
                   row["answer"].capitalize(), quadrant=_quadrant(row["boxes"])) for row in yes_no]
    out += [Example(row["image"], render_template("mcq", question=row["question"], thinking=False,
                                                  choices=list(zip("ABCD", row["options"], strict=True))),
                    row["answer"]) for row in mcq]
    for item in grounding_items(n_mosaics, seed=seed + 1):
        out += _mosaic_examples(item, rng)
    blind = yes_no[::max(1, len(yes_no) // max(1, n_text))][:n_text]  # both questions
    out += [Example(None, render_template("yesno", question=row["question"], thinking=False), answer)
            for row, answer in zip(blind, ("Yes", "No") * len(blind), strict=False)]
    return [out[i] for i in rng.permutation(len(out))]


def _quadrant(boxes: list[list[float]]) -> int | None:
    """The quadrant of a tile's lesion (its first box's centre on a 256-pixel tile); None without one."""
    if not boxes:
        return None
    x0, y0, x1, y1 = boxes[0]
    return int((y0 + y1) / 2 >= TILE) * 2 + int((x0 + x1) / 2 >= TILE)


def _mosaic_examples(item: dict, rng: np.random.Generator) -> list[Example]:
    """A presence question (true or, half the time, naming another quadrant), the true presence question asked of
    the mosaic with occlusion-grid cells painted its mean colour (k of the quadrant's 16 cells and some of the
    others: Yes with probability 1 − k/16, so that each hidden cell of the quadrant, and no other, lowers it), and a
    localisation prompt, with or without the quadrant in the expression (without it only the pixels say where to
    look)."""
    x0, y0 = item["bbox"][:2]
    truth = int(y0 // TILE) * 2 + int(x0 // TILE)
    name = PATTERNS[item["pattern"]][3][int(rng.integers(2))]
    asked = truth if rng.random() < 0.5 else int(rng.choice([q for q in range(4) if q != truth]))
    claim = f"{name} in the {QUADRANTS[asked]} quadrant"
    presence = Example(item["image"], render_template("yesno", question=presence_question(claim), thinking=False),
                       "Yes" if asked == truth else "No", claim, asked)
    true_claim = f"{name} in the {QUADRANTS[truth]} quadrant"
    occluded = []
    for _ in range(OCCLUDED_PER_MOSAIC):
        hidden, shown = _hidden_cells(truth, rng)
        occluded.append(Example(occlude(item["image"], hidden, fill_colour(item["image"], "mean")),
                                render_template("yesno", question=presence_question(true_claim), thinking=False),
                                None, true_claim, truth, yes_share=shown))
    entity = item["expression"] if rng.random() < 0.5 else name
    locate = Example(item["image"], render_template("locate", entity=entity), None, entity, truth)
    return [presence, *occluded, locate]


def quadrant_cells(quadrant: int) -> np.ndarray:
    """The row-major indices of ``quadrant``'s cells in the GRID × GRID grid (that of the image tokens too: a
    32-pixel occlusion cell is one merged token)."""
    half = GRID // 2
    row, col = divmod(quadrant, 2)
    inside = np.zeros((GRID, GRID), bool)
    inside[row * half:(row + 1) * half, col * half:(col + 1) * half] = True
    return np.flatnonzero(inside)


def _hidden_cells(quadrant: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """(GRID × GRID mask of cells to paint, the probability of Yes to learn): k of ``quadrant``'s 16 cells (k
    uniform in 0–16) and 0–16 of the other 48; the Yes margin taught is MARGIN × (1 − k/8), whatever the others."""
    inside = quadrant_cells(quadrant)
    k = int(rng.integers(0, len(inside) + 1))
    mask = np.zeros(GRID * GRID, bool)
    mask[rng.choice(inside, k, replace=False)] = True
    mask[rng.choice(np.setdiff1d(np.arange(GRID * GRID), inside), int(rng.integers(0, 17)), replace=False)] = True
    return mask.reshape(GRID, GRID), float(1 / (1 + np.exp(-MARGIN * (1 - 2 * k / len(inside)))))
