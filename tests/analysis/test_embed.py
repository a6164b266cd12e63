"""`pathbind embed`: mean-pooled vision-tower embeddings of an image folder that `pathbind audit-features` reads."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from conftest import BIN, run
from PIL import Image
from transformers import AutoModelForImageTextToText, AutoProcessor

from pathbind.cli import main

# Two sites × two patients × two slides: the smallest cohort both probes accept.
SLIDES = [f"TCGA-{site}-000{patient}-01Z-00-DX{k}" for site in ("AA", "BB") for patient in (1, 2) for k in (1, 2)]


def write_images(folder, names: list[str]) -> None:
    for n, name in enumerate(names):
        pixels = np.random.default_rng(n).integers(0, 256, (180 + 20 * (n % 3), 224, 3), dtype=np.uint8)
        path = folder / ("nested" if n % 2 else "") / f"{name}.png"  # subfolders are walked too
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels).save(path)


def tower_tokens(family: str, checkpoint, image: Image.Image) -> torch.Tensor:
    """The vision tower's output tokens, computed here from the model's own vision module."""
    processor = AutoProcessor.from_pretrained(checkpoint)
    model = AutoModelForImageTextToText.from_pretrained(checkpoint).eval()
    inputs = processor.image_processor(images=[image], return_tensors="pt")
    with torch.no_grad():
        if family == "qwen2_vl":
            return model.model.visual(inputs["pixel_values"], grid_thw=inputs["image_grid_thw"]).last_hidden_state
        return model.model.vision_tower(inputs["pixel_values"]).last_hidden_state[0]


@pytest.mark.parametrize("family", ["llava", "qwen2_vl"])
def test_embeddings_are_the_mean_of_the_vision_towers_tokens(family, tiny_model, tmp_path, capsys):
    write_images(tmp_path / "images", SLIDES[:2])
    assert main(["embed", "--model", str(tiny_model(family)), str(tmp_path / "images"), "--out",
                 str(tmp_path / "emb.parquet")]) == 0
    assert "wrote 2 32-dimensional embeddings" in capsys.readouterr().out
    table = pq.read_table(tmp_path / "emb.parquet")
    assert table.column_names == ["id", "embedding"] and table.column("id").to_pylist() == SLIDES[:2]
    image = Image.open(tmp_path / "images" / "nested" / f"{SLIDES[1]}.png").convert("RGB")
    expected = tower_tokens(family, tiny_model(family), image).mean(dim=0).numpy()
    assert np.allclose(table.column("embedding")[1].as_py(), expected, atol=1e-5)
    metadata = json.loads(table.schema.metadata[b"pathbind"])
    assert (metadata["family"], metadata["features"]) == (family, "vision")


def test_projected_features_are_the_language_models_image_tokens(tiny_model, tmp_path, capsys):
    write_images(tmp_path / "images", SLIDES[:1])
    checkpoint = tiny_model("llava")
    assert main(["embed", "--model", str(checkpoint), str(tmp_path / "images"), "--out", str(tmp_path / "e.parquet"),
                 "--features", "projected"]) == 0
    model = AutoModelForImageTextToText.from_pretrained(checkpoint).eval()
    pixels = AutoProcessor.from_pretrained(checkpoint).image_processor(
        images=[Image.open(tmp_path / "images" / f"{SLIDES[0]}.png").convert("RGB")], return_tensors="pt")
    with torch.no_grad():  # the tokens LLaVA's decoder reads: layer -2 without CLS, through the projector
        tokens = model.get_image_features(pixels["pixel_values"], vision_feature_layer=-2,
                                          vision_feature_select_strategy="default").pooler_output[0]
    embedding = pq.read_table(tmp_path / "e.parquet").column("embedding")[0].as_py()
    assert len(embedding) == model.config.text_config.hidden_size
    assert np.allclose(embedding, tokens.mean(dim=0).numpy(), atol=1e-5)


def test_installed_command_output_is_audited_as_it_is(tiny_model, tmp_path):
    write_images(tmp_path / "images", SLIDES)
    done = run([str(BIN / "pathbind"), "embed", "--model", str(tiny_model("qwen2_vl")), "images", "--out",
                "emb.parquet"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "embed: 8/8 images" in done.stderr  # progress
    assert main(["audit-features", str(tmp_path / "emb.parquet"), "--json", str(tmp_path / "audit.json"),
                 "--encoder", "tiny-qwen2-vl", "--n-resamples", "20"]) == 0
    report = json.loads((tmp_path / "audit.json").read_text())
    assert report["rows"] == {"read": 8, "used": 8, "dropped": {}, "dropped_examples": {}, "slides_by_rows": {"1": 8},
                              "repeated_slides": {}}
    assert (report["tss"]["n_sites"], report["reid"]["n_patients"], report["reid_chance"]) == (2, 4, 0.25)


@pytest.mark.parametrize(("names", "message"), [
    ([], "no images"),
    (["TCGA-AA-0001", "TCGA-AA-0001"], "name the same slide 'TCGA-AA-0001'"),
    (["TCGA-AA-0001", "tcga-aa-0001"], "name the same slide 'tcga-aa-0001'"),
])
def test_bad_image_folders_are_named_errors(tmp_path, capsys, names, message):
    (tmp_path / "images").mkdir()
    write_images(tmp_path / "images", names)  # the second of a repeated name lands in the subfolder
    assert main(["embed", "--model", "unused", str(tmp_path / "images"), "--out", str(tmp_path / "e.parquet")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pathbind embed: error: ") and message in err


def test_an_unreadable_image_is_named(tiny_model, tmp_path, capsys):
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "TCGA-AA-0001.png").write_bytes(b"not a png")
    assert main(["embed", "--model", str(tiny_model("llava")), str(tmp_path / "images"), "--out",
                 str(tmp_path / "e.parquet")]) == 1
    assert "TCGA-AA-0001.png: unreadable image" in capsys.readouterr().err
    assert not (tmp_path / "e.parquet").exists()


@pytest.mark.parametrize("name", ["llava", "qwen2_5_vl"])
def test_a_16_bit_image_is_embedded_by_its_bit_depth_through_a_real_processor(name, realtok_model, tmp_path, capsys):
    """A non-square 16-bit greyscale slide thumbnail embeds as its 8-bit rendering (v / 257), not as white."""
    grey = np.random.default_rng(0).integers(0, 256, (150, 260), dtype=np.uint16) * 257
    for folder, image in (("sixteen", Image.fromarray(grey)), ("eight", Image.fromarray((grey // 257).astype("uint8"))),
                          ("white", Image.new("L", (260, 150), 255))):
        (tmp_path / folder).mkdir()
        image.save(tmp_path / folder / "TCGA-AA-0001-01Z-00-DX1.png")
        assert main(["embed", "--model", str(realtok_model(name)), str(tmp_path / folder), "--out",
                     str(tmp_path / f"{folder}.parquet")]) == 0
    capsys.readouterr()
    sixteen, eight, white = (np.array(pq.read_table(tmp_path / f"{f}.parquet").column("embedding")[0].as_py())
                             for f in ("sixteen", "eight", "white"))
    assert np.array_equal(sixteen, eight)
    assert not np.allclose(sixteen, white, atol=1e-3)


def test_help_does_not_import_torch():
    code = ("import sys\nfrom pathbind.cli import main\nfor argv in (['--help'], ['embed', '--help'], "
            "['audit-features', '--help']):\n    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "print(sorted({'torch', 'sklearn'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip().splitlines()[-1] == "[]", done.stderr


def test_an_unusable_out_or_pixel_limit_fails_before_the_model_loads(tmp_path, capsys, monkeypatch):
    """--out that is a folder, or PATHBIND_MAX_IMAGE_PIXELS that is no number: one line, no model loaded (the model
    named does not exist)."""
    (tmp_path / "images").mkdir()
    write_images(tmp_path / "images", ["TCGA-AA-0001"])
    assert main(["embed", "--model", "nowhere", str(tmp_path / "images"), "--out", str(tmp_path)]) == 1
    assert capsys.readouterr().err == f"pathbind embed: error: --out {tmp_path}: a folder, not a file\n"
    monkeypatch.setenv("PATHBIND_MAX_IMAGE_PIXELS", "-5")
    assert main(["embed", "--model", "nowhere", str(tmp_path / "images"), "--out", str(tmp_path / "e.parquet")]) == 1
    assert capsys.readouterr().err == ("pathbind embed: error: PATHBIND_MAX_IMAGE_PIXELS='-5' is not a positive "
                                       "number of pixels\n")
