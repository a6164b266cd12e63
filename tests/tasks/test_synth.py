"""Synthetic histology generator and the committed demo dataset."""

from __future__ import annotations

import collections
import io
from pathlib import Path

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

import pathbind_conventions as stains
from pathbind_tasks.demo import synth, tissue

DATA = Path(synth.__file__).parent / "data"
LETTERS = "ABCD"


@pytest.fixture(scope="module")
def default_items() -> tuple[list[dict], list[dict]]:
    return synth.demo_items()


def _pixels(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("RGB"), dtype=np.int16)


def _without_image(row: dict) -> dict:
    return {k: v for k, v in row.items() if k != "image"}


def test_same_seed_gives_identical_items_and_pixels() -> None:
    """Two runs with one seed agree on every field and every pixel, tiles and traps included."""
    first, second = synth.demo_items(3, 6, seed=5), synth.demo_items(3, 6, seed=5)
    for rows_a, rows_b in zip(first, second, strict=True):
        assert [_without_image(r) for r in rows_a] == [_without_image(r) for r in rows_b]
        for a, b in zip(rows_a, rows_b, strict=True):
            assert np.array_equal(_pixels(a["image"]), _pixels(b["image"]))
    for render in (tissue.render_isolated_cells, tissue.render_overview):
        assert np.array_equal(render(3)[0], render(3)[0])
    spec = tissue.TileSpec(n_nuclei=40, lesion_quadrant=2, dab_fraction=0.3)
    assert tissue.render_tile(spec, 9)[0].tobytes() == tissue.render_tile(spec, 9)[0].tobytes()


def test_different_seed_gives_different_items() -> None:
    """Another seed changes the pixels of every item and the answer key."""
    (mcq_a, _), (mcq_b, _) = synth.demo_items(4, 0, seed=1), synth.demo_items(4, 0, seed=2)
    assert all(not np.array_equal(_pixels(a["image"]), _pixels(b["image"])) for a, b in zip(mcq_a, mcq_b, strict=True))
    assert [r["answer"] for r in mcq_a] != [r["answer"] for r in mcq_b]
    assert not np.array_equal(tissue.render_overview(1)[0], tissue.render_overview(2)[0])


def test_answers_are_balanced_and_not_given_away(default_items: tuple[list[dict], list[dict]]) -> None:
    """Correct letters are balanced overall and per dimension; yes/no is balanced; options are distinct."""
    mcq, yes_no = default_items
    assert len(mcq) == 60 and len(yes_no) == 24
    overall = collections.Counter(r["answer"] for r in mcq)
    assert set(overall) == set(LETTERS) and max(overall.values()) - min(overall.values()) <= 1
    for dimension in ("D1", "D2", "D3", "D4", "D5", "D6"):
        counts = collections.Counter(r["answer"] for r in mcq if r["dimension"] == dimension)
        assert sum(counts.values()) == 10 and max(counts.values()) - min(counts.get(x, 0) for x in LETTERS) <= 1
    assert collections.Counter(r["answer"] for r in yes_no) == {"yes": 12, "no": 12}
    for row in mcq:
        correct = row["options"][LETTERS.index(row["answer"])]
        assert len(set(row["options"])) == 4 and correct.lower() not in row["question"].lower()
    # Option order is shuffled: the same class does not always sit at the same letter.
    d1 = [r for r in mcq if r["dimension"] == "D1"]
    assert len({tuple(r["options"]) for r in d1}) > 1


def test_rows_follow_the_task_schema(default_items: tuple[list[dict], list[dict]]) -> None:
    """Every row has the MCQ / yes-no columns with the documented types."""
    mcq, yes_no = default_items
    for row in mcq + yes_no:
        assert row["id"].startswith("demo-") and row["source"] == "synthetic"
        assert isinstance(row["image"], Image.Image) and row["image"].mode == "RGB"
        assert row["image"].size == (row["width"], row["height"]) == (256, 256)
        assert row["question"].endswith("?") and row["tissue"] in tissue.TISSUES
        assert isinstance(row["nuclei_count"], int) and row["nuclei_count"] > 0
        assert 0.0 <= row["dab_fraction"] <= 1.0
    assert all(r["answer"] in LETTERS and len(r["options"]) == 4 for r in mcq)
    assert all(r["answer"] in ("yes", "no") and "options" not in r for r in yes_no)
    assert all(len(r["boxes"]) == 1 for r in mcq if r["dimension"] == "D4")


@pytest.mark.parametrize("quadrant", range(4))
def test_lesion_box_lies_in_its_quadrant_around_the_lesion_nuclei(quadrant: int) -> None:
    """The returned box is inside the image and the quadrant and is exactly the lesion nuclei's extent."""
    for seed in range(3):
        rgb, truth = tissue.render_tile(tissue.TileSpec(n_nuclei=25, lesion_quadrant=quadrant), seed)
        (x0, y0, x1, y1), = truth["lesion_boxes"]
        row, col = divmod(quadrant, 2)
        assert col * 128 <= x0 < x1 <= (col + 1) * 128 and row * 128 <= y0 < y1 <= (row + 1) * 128
        lesion = truth["nucleus_boxes"][truth["lesion"]]
        assert len(lesion) >= 5
        assert np.allclose([x0, y0, x1, y1], [*lesion[:, :2].min(axis=0), *lesion[:, 2:].max(axis=0)])
        centres = truth["centres"][truth["lesion"]]
        assert np.all((centres >= [x0, y0]) & (centres <= [x1, y1]))
        # The lesion nuclei are drawn there: the box is far darker in hematoxylin than the image overall.
        assert rgb[int(y0):int(y1), int(x0):int(x1), 0].mean() < rgb[..., 0].mean() - 20


def test_truth_counts_match_what_was_drawn() -> None:
    """The truth record's counts follow the spec: nuclei count and exact DAB-positive fraction."""
    rgb, truth = tissue.render_tile(tissue.TileSpec(n_nuclei=60, radius=5.0, ihc=True, dab_fraction=0.25), 4)
    assert rgb.shape == (256, 256, 3) and rgb.dtype == np.uint8
    assert truth["nuclei_count"] == 60 == len(truth["centres"])
    assert truth["dab_positive_count"] == 15 and truth["dab_fraction"] == pytest.approx(0.25)
    _, fat = tissue.render_tile(tissue.TileSpec("adipose", n_nuclei=6), 4)
    assert fat["white_fraction"] > 0.6 > truth["white_fraction"]


def test_beer_lambert_forward_model() -> None:
    """RGB = 255 exp(-C @ stains): pure stains give the normalised Ruifrok-Johnston colours."""
    assert np.allclose(np.linalg.norm(stains.STAIN_MATRIX, axis=1), 1.0)
    assert np.array_equal(stains.concentrations_to_rgb(np.zeros(3)), [255, 255, 255])
    for stain in range(3):
        conc = np.zeros(3)
        conc[stain] = 1.0
        expected = np.rint(255 * np.exp(-stains.STAIN_MATRIX[stain]))
        assert np.array_equal(stains.concentrations_to_rgb(conc), expected)


def test_field_of_view_traps() -> None:
    """Isolated cells sit on clean glass; the overview is mostly glass with smooth, nucleus-free fragments."""
    cells, truth = tissue.render_isolated_cells(1)
    assert truth["n_cells"] == 4 and not truth["organ_determinable"]
    assert (cells.min(axis=-1) > 235).mean() > 0.8
    overview, truth = tissue.render_overview(1)
    assert truth["n_fragments"] == 3 and not truth["nuclei_resolvable"]
    assert 0.1 < truth["tissue_fraction"] < 0.6
    assert (overview.min(axis=-1) > 235).mean() > 0.3


def test_committed_data_equals_regeneration(default_items: tuple[list[dict], list[dict]]) -> None:
    """pathbind_tasks/demo/data is write_demo_data() with the defaults (images up to JPEG error)."""
    for name, rows in zip(("vqa", "yesno"), default_items, strict=True):
        table = pq.read_table(DATA / f"{name}.parquet").to_pylist()
        assert len(table) == len(rows)
        for stored, fresh in zip(table, rows, strict=True):
            for key in ("id", "question", "options", "answer", "dimension", "tissue", "nuclei_count", "width"):
                assert stored.get(key) == fresh.get(key), key
            assert np.allclose(np.asarray(stored["boxes"], float).reshape(-1, 4),
                               np.asarray(fresh["boxes"], float).reshape(-1, 4))
            assert stored["dab_fraction"] == pytest.approx(fresh["dab_fraction"], abs=1e-6)
            decoded = Image.open(io.BytesIO(stored["image"]["bytes"]))
            assert decoded.format == "JPEG"
            # JPEG q90 costs ~3-4 grey levels on these textures; another tile differs by > 10.
            assert np.abs(_pixels(decoded) - _pixels(fresh["image"])).mean() < 6.0


def test_load_dataset_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """write_demo_data prints nothing and datasets.load_dataset('parquet') gives back PIL images."""
    paths = synth.write_demo_data(tmp_path / "demo", n_per_dimension=1, n_yes_no=2, seed=3)
    assert capsys.readouterr().out == ""
    assert set(paths) == {"vqa", "yesno"} and all(p.exists() for p in paths.values())
    for name, expected in (("vqa", 6), ("yesno", 2)):
        data = datasets.load_dataset("parquet", data_files={"test": str(paths[name])}, split="test",
                                     cache_dir=str(tmp_path / "cache"))
        assert len(data) == expected
        assert isinstance(data[0]["image"], Image.Image) and data[0]["image"].size == (256, 256)
    committed = datasets.load_dataset("parquet", data_files={"test": str(DATA / "vqa.parquet")}, split="test",
                                      cache_dir=str(tmp_path / "cache"))
    assert isinstance(committed[0]["image"], Image.Image) and len(committed[0]["options"]) == 4
