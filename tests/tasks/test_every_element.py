"""Every element of the data is checked by the rules the first one gets: its structure, the types of its fields,
where its image path points, its images (one reading path for single images and montages) and its box. A fault
drops that item, named and counted; the others are evaluated."""

from __future__ import annotations

import io
import json
import unicodedata
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pandas as pd
import pytest
from conftest import lmms_eval, metric
from PIL import Image
from source_data import jpeg, medxpert_record, omnimed_record, pathmmu_item, png, write_parquet, write_quilt_vqa

from pathbind.cli import main
from pathbind.faults import Fault
from pathbind_tasks.common import grounding as grounding_task
from pathbind_tasks.common.image_paths import ImageFolder
from pathbind_tasks.medxpert_path import utils as medxpert
from pathbind_tasks.omnimed_bright import utils as omnimed
from pathbind_tasks.pathbind_vqa import utils as pathbind_vqa
from pathbind_tasks.pathmmu import utils as pathmmu
from pathbind_tasks.pathvg import utils as pathvg

OUTSIDE = "is a path outside the data folder"
PATHMMU_DROPS = {"field 'No' is missing": 1, "item is not an object": 2, "field 'img' " + OUTSIDE: 2,
                 "split is not a list of items": 1}


def load(builder: str, path: Path, **kwargs: Any) -> datasets.Dataset:
    return datasets.load_dataset(builder, data_files={"test": str(path)}, split="test", **kwargs)


def encoded(image: Image.Image, fmt: str = "PNG", **save: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **save)
    return buffer.getvalue()


def write_faulty_pathmmu(folder: Path, outside: Path) -> None:
    """data.json as users edit it: the first item good, later ones lacking ``No``, not objects, with an image path
    leaving the folder (absolute, ``..``), a split that is not a list; one image file stored under its NFD name."""
    nfc = unicodedata.normalize("NFC", "café_1.jpg")
    (folder / "images").mkdir(parents=True)
    for no in (1, 2, 5):
        (folder / "images" / f"img_{no}.jpg").write_bytes(png(40 * no))
    (folder / "images" / unicodedata.normalize("NFD", nfc)).write_bytes(png(99))
    outside.write_bytes(png(7))  # a readable image, which the run must never read
    no_key = {k: v for k, v in pathmmu_item(3).items() if k != "No"}
    data = {"PubMed": {"test": [pathmmu_item(1), no_key, "stray text", pathmmu_item(4, img=str(outside)),
                                ["a", "list"], pathmmu_item(6, img=f"../{outside.name}"), pathmmu_item(7, img=nfc)],
                       "test_tiny": [pathmmu_item(2)]},
            "Atlas": {"test": "not a list", "test_tiny": [pathmmu_item(5)]}, "version": "1.0"}
    (folder / "data.json").write_text(json.dumps(data), encoding="utf-8")


def test_pathmmu_items_after_the_first_are_checked_each(tmp_path, monkeypatch, running_task):
    """An item lacking a key, an entry that is not an object, a split that is not a list and an image path outside
    the data folder are each dropped by name, never the end of the task; an NFD file name is found by its NFC
    name."""
    monkeypatch.setenv("PATHBIND_DATA", str(tmp_path / "data"))
    write_faulty_pathmmu(tmp_path / "data" / "pathmmu", tmp_path / "outside.png")
    raw = load("json", tmp_path / "data" / "pathmmu" / "data.json", chunksize=1 << 30)
    docs = pathmmu.test_image_only(raw)
    assert sorted(docs["id"]) == ["Atlas-test_tiny-5", "PubMed-test-1", "PubMed-test-7", "PubMed-test_tiny-2"]
    ledger = running_task.ledger
    assert ledger.rows == 10 and ledger.kept == 4 and ledger.dropped == PATHMMU_DROPS
    assert ledger.examples["field 'No' is missing"] == "'PubMed-test-#2': no such key"


def test_pathmmu_without_any_item_of_the_published_shape_stops_naming_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("PATHBIND_DATA", str(tmp_path / "data"))
    folder = tmp_path / "data" / "pathmmu"
    (folder / "images").mkdir(parents=True)
    items = [{k: v for k, v in pathmmu_item(n).items() if k != "No"} for n in (1, 2)]
    (folder / "data.json").write_text(json.dumps({"PubMed": {"test": items}}))
    with pytest.raises(ValueError, match="no item key 'No'"):
        pathmmu.test_image_only(load("json", folder / "data.json", chunksize=1 << 30))


def test_an_image_path_must_stay_inside_the_data_folder(tmp_path):
    """A name resolves under the folder, normalised; one that leaves it (absolute elsewhere, ``..`` above it, a link
    out of it) is refused; an absolute path inside it is its file."""
    root = tmp_path / "data"
    (root / "images").mkdir(parents=True)
    (root / "images" / "a.png").write_bytes(png(1))
    (root / "images" / "out.png").symlink_to(tmp_path / "elsewhere.png")
    (tmp_path / "elsewhere.png").write_bytes(png(2))
    images = ImageFolder(root, ("", "images"))
    a = str(root / "images" / "a.png")
    assert images.file("a.png") == images.file(a) == ImageFolder(root).file("images/../images/a.png") == (a, None)
    assert ImageFolder(root, ("images",)).file("missing.png") == (str(root / "images" / "missing.png"), None)
    for name in (str(tmp_path / "elsewhere.png"), "../elsewhere.png", "images/../../x.png"):
        assert images.file(name) == (None, Fault(f"field 'image' {OUTSIDE}", f"got {name!r}"))
    path, fault = images.file("out.png")
    assert path is None
    assert fault == Fault(f"field 'image' {OUTSIDE}", f"got 'out.png', a link to {tmp_path}/elsewhere.png")
    assert images.image(None) == images.image("  ") == (None, None)


def test_pathbind_vqa_file_names_outside_the_folder_are_dropped(tmp_path, monkeypatch, running_task):
    """The local format's image column may hold file names (pandas); an absolute one is not read."""
    monkeypatch.setenv("PATHBIND_DATA", str(tmp_path / "data"))
    folder = tmp_path / "data" / "pathbind_vqa"
    (folder / "images").mkdir(parents=True)
    (folder / "images" / "a.png").write_bytes(png(10))
    (tmp_path / "b.png").write_bytes(png(20))
    pd.DataFrame({"id": ["a", "b"], "image": ["a.png", str(tmp_path / "b.png")], "question": ["Which?"] * 2,
                  "options": [["Gland", "Vessel"]] * 2, "answer": ["A", "B"], "dimension": ["D1"] * 2,
                  "source": ["s"] * 2}).to_parquet(folder / "test.parquet")
    docs = pathbind_vqa.vqa_image_only(load("parquet", folder / "test.parquet"))
    assert docs["id"] == ["a"] and running_task.ledger.dropped == {f"field 'image' {OUTSIDE}": 1}


def grey16(value: int, size: tuple[int, int] = (20, 10)) -> Image.Image:
    return Image.frombytes("I;16", size, np.full(size[::-1], value, dtype="<u2").tobytes())


def rotated_jpeg() -> bytes:
    """A 20x10 JPEG whose EXIF orientation (6: rotate 90°) makes it 10x20 as shown."""
    exif = Image.Exif()
    exif[0x0112] = 6
    return encoded(Image.new("RGB", (20, 10), (200, 30, 30)), "JPEG", exif=exif)


def truncated_jpeg() -> bytes:
    data = encoded(Image.fromarray(np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8)), "JPEG")
    return data[: len(data) // 2]


WIDE, TALL = round(20 * 768 / 10), round(10 * 768 / 20)  # a 20x10 image, and one shown 10x20, at height 768


@pytest.mark.parametrize(("second", "reason", "width", "value"), [
    (encoded(grey16(128 * 257)), "", WIDE, 128),  # dim 16-bit grey stays dim (128), never white
    (rotated_jpeg(), "", TALL, None),  # turned by its EXIF orientation
    (b"not an image", "unreadable image", None, None),
    (truncated_jpeg(), "unreadable image", None, None),
    (None, "image file not found", None, None),
])
def test_montage_images_follow_the_single_image_rules(tmp_path, monkeypatch, running_task, second, reason, width,
                                                      value):
    """A MedXpertQA item's images are each read as a single image is: 16-bit by its depth, EXIF rotation applied;
    an unreadable, truncated or absent one drops the item, naming which image, never left out or shown grey."""
    monkeypatch.setenv("PATHBIND_DATA", str(tmp_path / "data"))
    folder = tmp_path / "data" / "medxpert_path"
    (folder / "images").mkdir(parents=True)
    (folder / "images" / "MM-1-a.jpeg").write_bytes(png(30, (20, 10)))
    (folder / "images" / "MM-2-a.jpeg").write_bytes(png(60, (20, 10)))
    if second is not None:
        (folder / "images" / "MM-2-b.png").write_bytes(second)
    records = [medxpert_record("MM-1", "A photomicrograph of the biopsy is shown. Diagnosis?"),
               medxpert_record("MM-2", "Histologic sections are shown. Diagnosis?",
                               images=["MM-2-a.jpeg", "MM-2-b.png"])]
    (folder / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    docs = medxpert.image_only(load("json", folder / "test.jsonl"))
    if reason:
        assert docs["id"] == ["MM-1"] and running_task.ledger.dropped == {reason: 1}
        assert "image 2 of 2" in running_task.ledger.examples[reason]
        return
    assert docs["id"] == ["MM-1", "MM-2"] and not running_task.ledger.dropped
    montage = np.asarray(docs[1]["image"].convert("RGB"))
    assert montage.shape[:2] == (768, WIDE + 16 + width)
    if value is not None:
        assert np.all(montage[:, WIDE + 16:] == value)


def test_omnimed_items_of_datasets_whose_images_are_not_distributed_say_why(tmp_path, monkeypatch, running_task):
    monkeypatch.setenv("PATHBIND_DATA", str(tmp_path / "data"))
    folder = tmp_path / "data" / "omnimed_bright"
    records = [omnimed_record("q1", "LC25000", "Microscopy Images", "Adenocarcinoma"),
               omnimed_record("q2", "LC25000", "Microscopy Images", "Lymphoma"),
               omnimed_record("q3", "Restricted-Set", "Microscopy Images", "Lymphoma")]
    (folder / "Images" / "LC25000").mkdir(parents=True)
    (folder / "Images" / "LC25000" / "q1.png").write_bytes(png(9))
    (folder / "test.json").write_text(json.dumps(records))
    docs = omnimed.image_only(load("json", folder / "test.json"))
    assert docs["id"] == ["q1"]
    assert running_task.ledger.dropped == {"image file not found": 1, "image folder of its dataset is absent": 1}
    assert "Restricted-access" in running_task.ledger.examples["image folder of its dataset is absent"]


def write_refpath(folder: Path, records: list[dict[str, Any]]) -> None:
    (folder / "refpath_image").mkdir(parents=True)
    (folder / "refpath_image" / "s1.jpg").write_bytes(jpeg(50, (64, 32)))
    (folder / "testA.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def refpath_record(bbox_id: int, bbox: list[float], expression: Any) -> dict[str, Any]:
    return {"image_id": "s1", "image": "refpath_image/s1.jpg", "height": 32, "width": 64, "bbox": bbox,
            "bbox_id": bbox_id, "expression": expression}


REFPATH = [refpath_record(1, [0, 0, 32, 16], ["[the cluster of lymphocytes ]", "plain text"]),
           refpath_record(2, [40, 0, 10, 16], ["an inverted box"]), refpath_record(3, [8, 8, 8, 20], ["no area"]),
           refpath_record(4, [0, 0, 8, 8], ["[]"])]
BOX_DROPS = {"field 'bbox' is unusable: box is inverted (x_max < x_min or y_max < y_min)": 1,
             "field 'bbox' is unusable: box has zero area": 1,
             "field 'expression' is empty": 1}


def test_refpath_boxes_the_metrics_cannot_score_are_data_faults_and_brackets_go(tmp_path, monkeypatch, running_task):
    """x_max < x_min or a zero-area box is dropped before any model call (never a lost item charged to the model);
    an expression wrapped in brackets is asked, and targeted, without them (as json2pt.py reads it)."""
    monkeypatch.setenv("PATHBIND_DATA", str(tmp_path / "data"))
    write_refpath(tmp_path / "data" / "pathvg", REFPATH)
    docs = pathvg.testa(load("json", tmp_path / "data" / "pathvg" / "testA.jsonl"))
    assert docs["id"] == ["testA-1-0", "testA-1-1"] and running_task.ledger.dropped == BOX_DROPS
    assert docs["expression"] == ["the cluster of lymphocytes", "plain text"]
    prompt = grounding_task.doc_to_text(docs.remove_columns("image")[0])
    assert "the cluster of lymphocytes" in prompt and "[the cluster" not in prompt


def data_check(capsys, *args: str) -> tuple[int, str]:
    code = main(["data", "check", *args])
    return code, capsys.readouterr().out


def test_data_check_reports_every_element_fault_the_run_drops(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("PATHBIND_DATA", raising=False)
    write_faulty_pathmmu(tmp_path / "pathmmu", tmp_path / "outside.png")
    write_refpath(tmp_path / "pathvg", REFPATH)
    code, out = data_check(capsys, "pathmmu", str(tmp_path / "pathmmu"))
    assert code == 1, out
    for reason, count in PATHMMU_DROPS.items():
        assert f"pathbind_pathmmu_test_image: {count} row{'s' if count > 1 else ''} dropped: {reason}" in out, out
    code, out = data_check(capsys, "pathvg", str(tmp_path / "pathvg"))
    assert code == 1 and ("1 row dropped: field 'bbox' is unusable: box is inverted (x_max < x_min or y_max < y_min) "
                          "(first 'testA-2-0'") in out, out


def test_quilt_test_parquet_with_embedded_images_passes_the_data_check(tmp_path, capsys, monkeypatch):
    """The hub's test split as one parquet file carries its images: no image folder is expected beside it."""
    monkeypatch.delenv("PATHBIND_DATA", raising=False)
    records = [r for r in json.loads(write_quilt_vqa(tmp_path / "src").read_text()) if r["yes_no_answer"]]
    write_parquet(tmp_path / "quilt_vqa" / "test.parquet", {
        "image": [{"bytes": jpeg(20 * i), "path": None} for i in range(len(records))],
        **{key: [str(r[key]) for r in records] for key in ("id", "question", "answer", "answer_type",
                                                            "yes_no_answer")}})
    code, out = data_check(capsys, "quilt_vqa", str(tmp_path / "quilt_vqa"))
    assert code == 0 and "missing" not in out and "files found: test.parquet" in out, out


@pytest.mark.slow
def test_a_faulty_pathmmu_folder_runs_its_good_items_through_lmms_eval(tmp_path):
    """Through lmms_eval: the good items are evaluated, every faulty one counted under its reason, the image
    outside the folder never read."""
    write_faulty_pathmmu(tmp_path / "data" / "pathmmu", tmp_path / "outside.png")
    result = lmms_eval(tmp_path, "pathbind_blind", "pathbind_pathmmu_test_image",
                       env={"PATHBIND_DATA": str(tmp_path / "data")})
    assert metric(result, "pathbind_pathmmu_test_image", "accounting") == {
        "rows": 10, "evaluated": 4, "dropped": PATHMMU_DROPS}
    assert str(tmp_path / "outside.png") not in json.dumps(result["results"]["pathbind"]["data"])


@pytest.mark.slow
def test_a_refpath_box_the_metrics_cannot_score_is_never_a_lost_item_through_lmms_eval(tmp_path):
    """Through lmms_eval: inverted and zero-area boxes are counted in accounting as data, lost_items holds only what
    the model failed, and the bracketed expression is the prompt's entity without its brackets."""
    write_refpath(tmp_path / "data" / "pathvg", REFPATH)
    result = lmms_eval(tmp_path, "pathbind_control", "pathbind_pathvg_testa",
                       env={"PATHBIND_DATA": str(tmp_path / "data")})
    assert metric(result, "pathbind_pathvg_testa", "accounting") == {"rows": 5, "evaluated": 2, "dropped": BOX_DROPS}
    assert metric(result, "pathbind_pathvg_testa", "lost_items")["items"] == 2
    samples = [json.loads(line) for path in result["out"].rglob("*_pathvg_testa.jsonl")
               for line in path.read_text().splitlines()]
    logged = json.dumps(samples)  # the documents and the requests the model was sent
    assert "the cluster of lymphocytes" in logged and "[the cluster" not in logged
