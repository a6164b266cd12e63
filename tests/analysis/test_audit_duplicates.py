"""`pathbind audit-duplicates`: planted near-duplicates of synthetic tissue tiles found, new tiles not, exactly."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from itertools import permutations
from pathlib import Path

import datasets
import numpy as np
import pandas as pd
import pytest
from conftest import BIN, run
from PIL import Image

from pathbind_analysis.audit.duplicates.command import DHASH_THRESHOLD, PHASH_THRESHOLD
from pathbind_analysis.audit.duplicates.edits import crop, jpeg, resize
from pathbind_analysis.audit.duplicates.hashing import image_hashes
from pathbind_analysis.audit.duplicates.index import HammingIndex, brute_force_pairs
from pathbind_analysis.audit.duplicates.sources import ImageItem
from pathbind_tasks.demo.tissue import TISSUES, TileSpec, render_tile

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "duplicates.py"
PNG = b"\x89PNG\r\n\x1a\n"


def tile(seed: int, size: int = 192) -> Image.Image:
    """A synthetic tissue tile: every tissue in turn, so unrelated tiles look alike (the false-positive risk)."""
    return Image.fromarray(render_tile(TileSpec(tissue=TISSUES[seed % len(TISSUES)]), seed=seed, size=size)[0])


def encoded(image: Image.Image, fmt: str = "PNG", **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def sixteen_bit_grey(seed: int) -> tuple[Image.Image, Image.Image]:
    """A 16-bit greyscale tile (mostly above 8-bit white if clipped) and its 8-bit rendering by bit depth."""
    grey = np.asarray(tile(seed).convert("L"), dtype=np.uint16) * 257  # v / 257 is the 8-bit value again
    return Image.fromarray(grey), Image.fromarray((grey // 257).astype(np.uint8))


# Test image -> (training source, training image) it was planted from; every other test image is new.
PLANTED = {"jpeg_q50.jpg": ("slides", "tile_00.png"), "jpeg_q95.jpg": ("slides", "nested/tile_01.png"),
           "half.png": ("slides", "tile_02.png"), "double.png": ("slides", "tile_03.png"),
           "crop10_corner.png": ("slides", "tile_04.png"), "crop10_side.png": ("slides", "tile_05.png"),
           "crop5_resize_jpeg.jpg": ("hub", "hub-1"), "grey8.png": ("slides", "grey16.png"),
           "hf-0": ("hub", "hub-0"), "rgba_copy.png": ("slides", "rgba.png")}


def write_inputs(root: Path) -> None:
    slides, hub_rows = root / "train_slides", []
    (slides / "nested").mkdir(parents=True)
    for seed in range(6):
        tile(seed).save(slides / ("nested/" if seed == 1 else "") / f"tile_{seed:02d}.png")
    sixteen, eight = sixteen_bit_grey(6)
    sixteen.save(slides / "grey16.png")
    rgba = tile(7).convert("RGBA")
    rgba.putalpha(200)
    rgba.save(slides / "rgba.png")
    (slides / "broken.png").write_bytes(encoded(tile(8))[:600])  # truncated: counted, listed, never dropped
    (slides / "notes.txt").write_text("not an image\n")
    for seed in (10, 11, 12):
        hub_rows.append({"slide": f"hub-{seed - 10}", "img": encoded(tile(seed), "JPEG", quality=90)})
    pd.DataFrame(hub_rows).to_parquet(root / "train_hub.parquet")  # bytes column, id named as PATH:img,slide

    test = root / "test_images"
    test.mkdir()
    jpeg(tile(0), 50).save(test / "jpeg_q50.jpg", quality=95)
    tile(1).save(test / "jpeg_q95.jpg", quality=95)
    resize(tile(2), 0.5).save(test / "half.png")
    resize(tile(3), 2.0).save(test / "double.png")
    crop(tile(4), 0.10, 0, 0).save(test / "crop10_corner.png")
    crop(tile(5), 0.10, 0.3, 0.8).save(test / "crop10_side.png")
    resize(crop(jpeg(tile(11), 90), 0.05, 1, 0), 0.75).save(test / "crop5_resize_jpeg.jpg", quality=75)
    eight.save(test / "grey8.png")
    Image.new("RGB", (192, 192), "white").save(test / "white.png")  # a 16-bit image clipped to white would match
    rgba.convert("RGB").save(test / "rgba_copy.png")
    for seed in range(20, 26):  # new tiles of the same tissues: must not be flagged
        tile(seed).save(test / f"new_{seed}.png")
    (test / "cut.jpg").write_bytes(encoded(tile(9), "JPEG")[:900])

    features = datasets.Features({"id": datasets.Value("string"), "image": datasets.Image()})
    rows = [{"id": "hf-0", "image": jpeg(tile(10), 70)}, {"id": "hf-new", "image": tile(30)}]
    datasets.Dataset.from_list(rows, features=features).to_parquet(str(root / "bench.parquet"))
    (root / "list.txt").write_text("# one path per line, relative to this file\ntest_images/new_20.png\n"
                                   "test_images/missing.png\n")


def audit(root: Path, *args: str) -> subprocess.CompletedProcess:
    return run([str(BIN / "pathbind"), "audit-duplicates", *args], cwd=root)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("duplicates")
    write_inputs(root)
    done = audit(root, "--train", "slides=train_slides", "--train", "hub=train_hub.parquet:img,slide",
                 "--test", "folder=test_images", "--test", "hf=bench.parquet", "--test", "listed=list.txt",
                 "--json", "report.json", "--out", "out", "--workers", "2")
    assert done.returncode == 0, done.stderr
    return {"root": root, "json": json.loads((root / "report.json").read_text()), "stdout": done.stdout,
            "stderr": done.stderr}


def test_planted_copies_are_found_with_their_distances_and_new_tiles_are_not(report):
    """JPEG q50-95, 0.5x and 2x, 10% crops (corner, off-centre), crop+resize+JPEG, 16-bit, RGBA: one pair each."""
    pairs = {pair["test"]: pair for pair in report["json"]["pairs"]}
    assert {test: (p["train_source"], p["train"]) for test, p in pairs.items()} == PLANTED
    assert len(report["json"]["pairs"]) == len(PLANTED)  # new tiles, the white image: no pair
    for pair in report["json"]["pairs"]:
        assert pair["distance"]["phash"] <= PHASH_THRESHOLD and pair["distance"]["dhash"] <= DHASH_THRESHOLD
    assert pairs["jpeg_q95.jpg"]["distance"]["phash"] <= 2 and pairs["grey8.png"]["distance"] == {"phash": 0,
                                                                                                  "dhash": 0}
    assert pairs["half.png"]["train_window"] == "whole image"
    assert pairs["crop10_corner.png"]["train_window"] == "90% crop, top left"


def test_rho_image_counts_unreadable_test_images_as_not_assessed(report):
    """16 folder images hashed + 1 truncated; HF parquet 1 of 2; the list: 1 missing file, and 1 image the folder
    already holds (under another path): assessed once, counted as a repeat, so rho_image's denominator is 18."""
    per_test = {row["test"]: row for row in report["json"]["per_test"]}
    assert [(r["n_assessed"], r["n_not_assessed"], r["n_duplicated"]) for r in per_test.values()] == [
        (16, 1, 9), (2, 0, 1), (0, 1, 0)]
    assert per_test["folder"]["rho_image"] == pytest.approx(9 / 16) and per_test["listed"]["rho_image"] is None
    assert report["json"]["rho_image"] == pytest.approx(10 / 18)
    assert report["json"]["repeated"]["test"] == {"n": 1, "examples": [
        {"source": "listed", "id": "test_images/new_20.png", "same_as": "new_20.png"}]}
    assert any("hashed and counted once" in note for note in report["json"]["notes"])
    assert (report["json"]["n_test_not_assessed"], report["json"]["n_train_unreadable"]) == (2, 1)
    assert any("lower bound" in note for note in report["json"]["notes"]) and "lower bound" in report["stdout"]


def test_per_source_counts(report):
    cells = {(row["train"], row["test"]): (row["n_duplicated"], row["n_pairs"]) for row in report["json"]["matrix"]}
    assert cells == {("slides", "folder"): (8, 8), ("slides", "hf"): (0, 0), ("slides", "listed"): (0, 0),
                     ("hub", "folder"): (1, 1), ("hub", "hf"): (1, 1), ("hub", "listed"): (0, 0)}
    assert report["json"]["train"] == {"slides": {"hashed": 8, "unreadable": 1}, "hub": {"hashed": 3,
                                                                                         "unreadable": 0}}


def test_unreadable_files_are_listed_with_their_reason(report):
    unreadable = {(u["side"], u["source"], u["id"]): u["reason"] for u in report["json"]["unreadable"]}
    assert set(unreadable) == {("train", "slides", "broken.png"), ("test", "folder", "cut.jpg"),
                               ("test", "listed", "test_images/missing.png")}
    assert "truncated" in unreadable["train", "slides", "broken.png"]
    assert unreadable["test", "listed", "test_images/missing.png"].startswith("image file not found")
    table = (report["root"] / "out" / "duplicates.md").read_text()
    assert "| train | test_images/missing.png |" not in table and "| test | listed | test_images/missing.png |" in table


def test_contact_sheet_and_table_are_written(report):
    out = report["root"] / "out"
    sheet = out / "contact_sheet.png"
    assert sheet.read_bytes()[:8] == PNG
    with Image.open(sheet) as image:
        assert image.height > len(PLANTED) * 160
    assert "| folder | grey8.png | slides | grey16.png | 0 | 0 |" in (out / "duplicates.md").read_text()
    assert "rho_image" in report["stdout"].lower() and "10 near-duplicate pair(s)" in report["stdout"]


def test_thresholds_separate_planted_copies_from_other_tissue_tiles():
    """The defaults' evidence: every copy within both thresholds of its tile's closest window; every pair of
    different tiles (36 tiles, 6 tissues, 1,260 ordered pairs) at least 5 bits outside one threshold."""
    tiles = [tile(seed, 256) for seed in range(200, 236)]  # not the benchmark's tiles (100-139)
    hashes = [image_hashes(ImageItem(str(i), data=encoded(t)), crops=True) for i, t in enumerate(tiles)]

    def distance(test: Image.Image, windows: list) -> tuple[int, int]:
        result = image_hashes(ImageItem("copy", data=encoded(test.convert("RGB"))))
        assert not isinstance(result, str), result
        (phash, dhash), = result
        return min(((bin(phash ^ p).count("1"), bin(dhash ^ d).count("1")) for p, d in windows), key=sum)

    copies = [jpeg(t, 50) for t in tiles[:6]] + [resize(t, f) for t, f in zip(tiles[6:12], (0.5, 0.75, 2.0) * 2,
                                                                                strict=True)]
    copies += [crop(t, 0.1, x, y) for t, (x, y) in zip(tiles[12:18], [(0, 0), (1, 1), (0.5, 0.5), (0.2, 0.7),
                                                                      (1, 0.4), (0.6, 0)], strict=True)]
    worst = np.max([distance(copy, hashes[i]) for i, copy in enumerate(copies)], axis=0)
    assert worst[0] <= PHASH_THRESHOLD and worst[1] <= DHASH_THRESHOLD, worst

    def excess(pair: tuple[int, int]) -> int:  # bits beyond the nearer-to-pass threshold: > 0 is not flagged
        return max(pair[0] - PHASH_THRESHOLD, pair[1] - DHASH_THRESHOLD)

    closest = min((min(((bin(a[0][0] ^ p).count("1"), bin(a[0][1] ^ d).count("1")) for p, d in b), key=excess)
                   for a, b in permutations(hashes, 2)), key=excess)
    assert excess(closest) >= 5, closest


@pytest.mark.parametrize("radius", [0, 3, 10, 20])
def test_index_finds_exactly_the_pairs_of_a_full_scan(radius):
    rng = np.random.default_rng(radius)
    train = rng.integers(0, 2**64, 30_000, dtype=np.uint64)
    train[:50] = train[50:100]  # repeated hashes: each listed
    test = rng.integers(0, 2**64, 400, dtype=np.uint64)
    flips = [np.uint64(sum(1 << int(b) for b in rng.choice(64, k, replace=False))) for k in rng.integers(0, 24, 200)]
    test[:200] = train[rng.integers(0, 30_000, 200)] ^ np.array(flips, dtype=np.uint64)
    found, expected = HammingIndex(train, radius).pairs(test), brute_force_pairs(train, test, radius)
    assert len(expected[0]) > 0
    for got, want in zip(found, expected, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("args", "message"), [
    (["--train", "nowhere", "--test", "t"], "--train 'nowhere': no such file or folder: nowhere"),
    (["--train", "empty", "--test", "t"], "--train empty: no images in empty"),
    (["--train", "t", "--test", "plain.parquet"], "no image column"),
    (["--train", "t", "--test", "paths.csv"], "--test 'paths.csv': paths.csv is a CSV table, not an image source"),
    (["--train", "t", "--test", "t", "--json", "t"], "--json t: a folder, not a file"),
    (["--train", "t", "--test", "t", "--json", "file/r.json"], "--json file/r.json: file is a file, not a folder"),
    (["--train", "t", "--test", "t", "--out", "file"], "--out file: a file, not a folder"),
])
def test_errors_are_one_line(tmp_path, args, message):
    (tmp_path / "empty").mkdir()
    (tmp_path / "t").mkdir()
    tile(0, 64).save(tmp_path / "t" / "a.png")
    pd.DataFrame({"id": ["a"], "caption": ["no image here"]}).to_parquet(tmp_path / "plain.parquet")
    (tmp_path / "paths.csv").write_text("path,label\nt/a.png,tumour\n")
    (tmp_path / "file").write_text("")
    done = audit(tmp_path, *args, *([] if "--json" in args else ["--json", "r.json"]))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("pathbind audit-duplicates: error: ") and message in done.stderr
    assert done.stderr.count("\n") == 1
    if "image column" in message:
        assert "id (" in done.stderr and "caption (" in done.stderr


def test_benchmark_quick_mode_runs_and_agrees_with_brute_force():
    done = subprocess.run([sys.executable, str(BENCHMARK), "--quick"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout.strip().splitlines()[-1])
    assert line["benchmark"] == "duplicates" and line["pairs_identical"] and line["pairs"] > 0
    assert line["time_ratio_index_vs_brute"] > 0
    assert line["thresholds_evidence"]["unrelated_pairs_within_thresholds"] == 0
    identical = line["identical_tiles"]  # 1,000 identical tiles each side: counted in far less than enumerated
    assert identical["pairs"] == 1_000_000 and identical["peak_ratio_vs_enumerating_at_n"] < 0.1


def test_a_bad_pixel_limit_is_one_line_before_any_hashing(tmp_path):
    """PATHBIND_MAX_IMAGE_PIXELS that is no number: exit 1, one line naming it, no report."""
    (tmp_path / "t").mkdir()
    tile(0, 64).save(tmp_path / "t" / "a.png")
    done = run([str(BIN / "pathbind"), "audit-duplicates", "--train", "t", "--test", "t", "--json", "r.json"],
               cwd=tmp_path, env={"PATHBIND_MAX_IMAGE_PIXELS": "lots"})
    assert done.returncode == 1 and not (tmp_path / "r.json").exists()
    assert done.stderr == ("pathbind audit-duplicates: error: PATHBIND_MAX_IMAGE_PIXELS='lots' is not a positive "
                           "number of pixels\n")


def test_a_pixel_limit_above_pils_own_decodes_instead_of_raising(tmp_path, monkeypatch):
    """With PIL's decompression-bomb guard below the image (as the real ~179 MP guard is below a 200 MP limit),
    an image under $PATHBIND_MAX_IMAGE_PIXELS is hashed, and one above it is unreadable with our reason."""
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1_000)  # PIL errors above 2,000 pixels
    monkeypatch.setenv("PATHBIND_MAX_IMAGE_PIXELS", "10000")
    assert not isinstance(image_hashes(ImageItem("a", data=encoded(tile(0, 96)))), str)  # 9,216 pixels
    assert image_hashes(ImageItem("b", data=encoded(tile(0, 128)))).startswith("image too large (128x128")
    assert Image.MAX_IMAGE_PIXELS == 1_000  # PIL's setting is left as it was


def test_nothing_measured_exits_1_with_a_strict_report(tmp_path):
    """No readable test image (rho undefined) or no readable training image (0% would be a false all-clear):
    exit 1 naming why; the report is written, with null for rho_image, and no NaN token."""
    (tmp_path / "good").mkdir()
    tile(0, 64).save(tmp_path / "good" / "a.png")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "cut.png").write_bytes(encoded(tile(1))[:300])
    for train, test, why in (("good", "bad", "no test image could be read"),
                             ("bad", "good", "no training image could be read")):
        done = audit(tmp_path, "--train", train, "--test", test, "--json", f"{why}.json", "--workers", "1")
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert done.stderr.splitlines()[-1].startswith(f"pathbind audit-duplicates: error: {why}")
        text = (tmp_path / f"{why}.json").read_text()
        assert "NaN" not in text and json.loads(text)["rho_image"] is None


def test_identical_tiles_are_counted_not_enumerated(tmp_path):
    """300 identical training tiles (blank background, the commonest tile) x 200 identical test tiles: 60,000 pairs
    counted, --max-pairs of them listed, each test image with its count and nearest training images."""
    blank = encoded(Image.new("RGB", (64, 64), (236, 230, 238)))
    for side, n in (("train", 300), ("test", 200)):
        (tmp_path / side).mkdir()
        for k in range(n):
            (tmp_path / side / f"{k:03d}.png").write_bytes(blank)
    done = audit(tmp_path, "--train", "train", "--test", "test", "--json", "r.json", "--max-pairs", "50",
                 "--nearest", "2", "--workers", "1")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert (report["n_pairs"], len(report["pairs"]), report["rho_image"]) == (60_000, 50, 1.0)
    assert report["matrix"][0]["n_pairs"] == 60_000
    assert [(p["test"], p["train"]) for p in report["pairs"][:3]] == [("000.png", "000.png"), ("000.png", "001.png"),
                                                                     ("000.png", "002.png")]
    images = report["duplicated_test_images"]
    assert len(images) == 200 and {i["n_train_within"] for i in images} == {300}
    assert [n["train"] for n in images[7]["nearest"]] == ["000.png", "001.png"]
    assert "60,000 near-duplicate pair(s) (50 closest listed)" in done.stdout
