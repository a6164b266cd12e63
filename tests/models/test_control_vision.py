"""Positive control's image analysis: reads the demo from pixels and fails without them."""

from __future__ import annotations

import ast
import collections
import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from scipy import ndimage

import pathbind_conventions as stains
from pathbind_models.controls import questions, vision
from pathbind_tasks.demo import synth

SEED = 2024  # not the packaged seed: the control must work on items it was not tuned on
LETTERS = "ABCD"


def _jpeg(image: Image.Image) -> Image.Image:
    """What the harness feeds: the image after the dataset's JPEG round trip."""
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=90)
    return Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")


def _blur(image: Image.Image, sigma: float = 8.0) -> Image.Image:
    blurred = ndimage.gaussian_filter(np.asarray(image, dtype=float), (sigma, sigma, 0))
    return Image.fromarray(np.clip(np.rint(blurred), 0, 255).astype(np.uint8))


@pytest.fixture(scope="module")
def groups() -> dict[str, list[dict]]:
    """Fresh items (20 per dimension, 24 yes/no) grouped by dimension and question kind, JPEG'd."""
    mcq, yes_no = synth.demo_items(n_per_dimension=20, n_yes_no=24, seed=SEED)
    grouped = collections.defaultdict(list)
    for row in mcq + yes_no:
        kind = "mcq" if "options" in row else "yes/no"
        grouped[f"{row['dimension']} {kind}"].append({**row, "image": _jpeg(row["image"])})
    return dict(grouped)


def _truth(row: dict) -> str:
    """The answer's meaning: the correct option's text, or yes/no."""
    return row["options"][LETTERS.index(row["answer"])] if "options" in row else row["answer"]


def _correct(row: dict, image: Image.Image) -> bool:
    if "options" in row:
        index = questions.answer_choice(row["question"], row["options"], image)
        return index is not None and LETTERS[index] == row["answer"]
    verdict = questions.answer_yes_no(row["question"], image)
    return verdict is not None and ("yes" if verdict else "no") == row["answer"]


def _accuracy(rows: list[dict], images: list[Image.Image]) -> float:
    return float(np.mean([_correct(row, image) for row, image in zip(rows, images, strict=True)]))


def test_reads_every_dimension_from_the_pixels(groups: dict[str, list[dict]]) -> None:
    """With its own image the control answers >= 95% of items in every dimension and question kind."""
    assert len(groups) == 8
    accuracy = {name: _accuracy(rows, [r["image"] for r in rows]) for name, rows in groups.items()}
    assert all(value >= 0.95 for value in accuracy.values()), accuracy


def test_blank_image_answers_nothing(groups: dict[str, list[dict]]) -> None:
    """On a blank white slide the control abstains, so accuracy falls to <= 50% everywhere."""
    blank = Image.new("RGB", (256, 256), "white")
    accuracy = {name: _accuracy(rows, [blank] * len(rows)) for name, rows in groups.items()}
    assert all(value <= 0.5 for value in accuracy.values()), accuracy
    assert vision.describe(blank) == "The image shows no stained tissue."


def test_swapped_image_changes_the_answer(groups: dict[str, list[dict]]) -> None:
    """Given the image of the next item whose true answer differs, the control follows that image (<= 50%)."""
    accuracy = {}
    for name, rows in groups.items():
        partners = [next(other for other in rows[i + 1:] + rows[:i] if _truth(other) != _truth(row))
                    for i, row in enumerate(rows)]
        accuracy[name] = _accuracy(rows, [p["image"] for p in partners])
    assert all(value <= 0.5 for value in accuracy.values()), accuracy


def test_strong_blur_destroys_the_evidence(groups: dict[str, list[dict]]) -> None:
    """Under a Gaussian blur of sigma 8 px nuclei can no longer be segmented: accuracy <= 50%."""
    accuracy = {name: _accuracy(rows, [_blur(r["image"]) for r in rows]) for name, rows in groups.items()}
    assert all(value <= 0.5 for value in accuracy.values()), accuracy


def test_deconvolution_recovers_stain_concentrations() -> None:
    """Deconvolving the generator's Beer-Lambert forward model returns its H, E and DAB concentrations."""
    conc = np.random.default_rng(0).uniform(0.0, 1.2, (64, 64, 3))
    recovered = vision.deconvolve(stains.concentrations_to_rgb(conc))
    assert recovered.shape == conc.shape
    assert np.abs(recovered - conc).max() < 0.04  # uint8 quantisation only
    assert np.abs(vision.deconvolve(Image.new("RGB", (4, 4), "white"))).max() < 1e-9


def test_evidence_map_points_at_the_lesion(groups: dict[str, list[dict]]) -> None:
    """For D4 items the evidence map's hottest patch lies inside the true lesion box, and so does the estimate."""
    for row in groups["D4 mcq"]:
        evidence = vision.evidence_map(row["image"])
        assert evidence.shape == (16, 16) and evidence.max() == pytest.approx(1.0)
        i, j = np.unravel_index(evidence.argmax(), evidence.shape)
        x, y = (j + 0.5) * row["width"] / 16, (i + 0.5) * row["height"] / 16
        (x0, y0, x1, y1), = row["boxes"]
        assert x0 <= x <= x1 and y0 <= y <= y1, (row["id"], (x, y), row["boxes"])
        box = vision.analyze(row["image"]).lesion_box
        assert box is not None and box[0] >= x0 - 2 and box[1] >= y0 - 2 and box[2] <= x1 + 2 and box[3] <= y1 + 2
    assert np.array_equal(vision.evidence_map(Image.new("RGB", (64, 64), "white")), np.zeros((16, 16)))


def test_other_modes_and_sizes(groups: dict[str, list[dict]]) -> None:
    """RGBA, greyscale and a 300x200 image are analysed; RGBA gives the same findings as RGB."""
    image = groups["D3 mcq"][0]["image"]
    rgb, rgba = vision.analyze(image), vision.analyze(image.convert("RGBA"))
    assert rgba.nuclei_count == rgb.nuclei_count > 0 and np.array_equal(rgba.evidence, rgb.evidence)
    wide = image.resize((300, 200))
    findings = vision.analyze(wide)
    assert (findings.width, findings.height) == (300, 200) and findings.nuclei_count > 0
    assert vision.evidence_map(wide, "where are the nuclei?").shape == (16, 16)
    assert questions.answer_choice(groups["D3 mcq"][0]["question"], groups["D3 mcq"][0]["options"], wide) is not None
    assert vision.analyze(image.convert("L")).evidence.shape == (16, 16)
    assert vision.describe(np.asarray(image)).startswith("The image shows")


def test_unknown_questions_are_not_guessed(groups: dict[str, list[dict]]) -> None:
    """An unrecognised question or options that name none of its findings give None."""
    row = groups["D1 mcq"][0]
    assert questions.answer_choice("What is the patient's age?", ["20", "40", "60", "80"], row["image"]) is None
    assert questions.answer_choice(row["question"], ["kidney", "liver", "lung", "skin"], row["image"]) is None
    assert questions.answer_yes_no("Is this slide from a woman?", row["image"]) is None


@pytest.mark.parametrize("module", [vision, questions])
def test_vision_never_reads_the_generator(module) -> None:
    """The analysis and the question reading import nothing from pathbind_tasks: they can only see the pixels."""
    tree = ast.parse(Path(module.__file__).read_text())
    modules = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    modules |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not any(name.startswith("pathbind_tasks") for name in modules), modules
