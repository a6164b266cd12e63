"""Bad rows of the box tasks (grounding, faithfulness, PathView): a row whose data is at fault is dropped, counted
by its reason naming the field; a model's missing answer is a lost/invalid item; nothing ends the run and nothing
is rescaled."""

from __future__ import annotations

import io
import json
import math

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import BIN, lmms_eval, metric, run
from PIL import Image

from pathbind.faults import Fault
from pathbind.lmms.running import running_task as running_task_now
from pathbind.wire import AttentionResponse
from pathbind_tasks.common import box_rows, faithfulness, grounding
from pathbind_tasks.common import pathview as scoring
from pathbind_tasks.common.failures import MODEL_FAILED
from pathbind_tasks.pathview.schema import converter

SPLITS = ["testA", " testa ", "TestB", None, "testA", "testA", "testB", "testA", "val"]
OTHER_B, NO_SPLIT, VAL = ("split is testB (this task evaluates testA)", "split is None, not testA or testB",
                          "split is 'val', not testA or testB")
# rows 4, 5 and 7: faults of the data
BBOX, SIZE, HEIGHT = ("field 'bbox' is not [x_min, y_min, x_max, y_max]",
                      "width x height disagrees with the image's size",
                      "field 'height' is not a positive whole number of pixels")


def png(width: int, height: int) -> dict:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 120, 160)).save(buffer, format="PNG")
    return {"bytes": buffer.getvalue(), "path": None}


def grounding_rows() -> list[dict]:
    """Nine rows of a 64x32 image: split variants, no split, an unknown split, a bad bbox, width, height and a
    stated size that is not the image's; plus columns named like the ones PathBind adds."""
    rows = [{"id": f"g{i}", "image": png(64, 32), "expression": f"structure {i}", "bbox": [0.0, 0.0, 32.0, 16.0],
             "width": 64.0, "height": 32.0, "split": split, "alternatives": ["from the file"], "image_error": "no"}
            for i, split in enumerate(SPLITS)]
    rows[4]["bbox"] = None
    rows[5]["width"], rows[5]["height"] = 128.0, 64.0
    rows[7]["height"] = math.nan
    return rows


@pytest.fixture(autouse=True)
def _in_a_task(running_task):
    """Every test builds its documents as the seam does: with a running task, which keeps the row ledger."""


def ledger(docs: datasets.Dataset) -> dict:
    """The ledger the running task kept for ``docs``, the last documents built."""
    kept = running_task_now().ledger
    assert kept is not None and kept.kept == len(set(docs["id"]))
    return {"rows": kept.rows, "kept": kept.kept, "dropped": dict(kept.dropped)}


def without_image(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "image"}  # what lmms-eval's process_results gets


def corner_response(n: int = 3) -> str:
    attn = np.full((4, 4), 0.01)
    attn[:2, :2] = 1.0
    return AttentionResponse((4, 4), {"mid": [1]}, [{"mid": attn}] * n).encode()


def test_split_variants_are_kept_normalised_and_the_rest_dropped_by_value():
    docs = grounding.by_split_testa(datasets.Dataset.from_list(grounding_rows()))
    assert list(docs["id"]) == ["g0", "g1"] and set(docs["split"]) == {"testA"}
    account = ledger(docs)
    assert account["dropped"] == {OTHER_B: 2, NO_SPLIT: 1, VAL: 1, BBOX: 1, SIZE: 1, HEIGHT: 1}
    assert account["rows"] == 9 == account["kept"] + sum(account["dropped"].values())
    testb = grounding.by_split_testb(datasets.Dataset.from_list(grounding_rows()))
    assert list(testb["id"]) == ["g2", "g6"]
    assert ledger(testb)["dropped"]["split is testA (this task evaluates testB)"] == 5


def test_repeated_ids_are_two_items_not_one():
    rows = grounding_rows()
    rows[1]["id"] = "g0"
    docs = grounding.by_split_testa(datasets.Dataset.from_list(rows))
    assert list(docs["id"]) == ["g0", "g0#2"] and ledger(docs)["kept"] == 2


def test_columns_pathbind_adds_replace_the_files_own():
    """alternatives and image_error in the file are ignored: PathBind's own values are used."""
    docs = grounding.by_split_testa(datasets.Dataset.from_list(grounding_rows()))
    assert all("from the file" not in alternatives for alternatives in docs["alternatives"])
    assert "image_error" not in docs.column_names and ledger(docs)["rows"] == 9


def test_bad_fields_and_a_size_that_is_not_the_images_are_data_faults_not_lost_items():
    """A missing bbox, a stated size that is not the image's and a NaN height drop their rows (never asked, never
    a lost item charged to the model); the kept items' alternatives are drawn from usable expressions only."""
    converted = grounding.by_split_testa(datasets.Dataset.from_list(grounding_rows()))
    docs = {doc["id"]: without_image(doc) for doc in converted}
    reasons = {i: grounding.process_results(docs[i], [corner_response()])["lost_items"]["lost"].get("item")
               for i in docs}
    assert reasons == {"g0": None, "g1": None}
    assert all(doc["alternatives"] and None not in doc["alternatives"] for doc in docs.values())


@pytest.mark.parametrize(("field", "value", "reason"), [
    ("width", 2.0**40, "field 'width' is more pixels than the 2147483647 a side can have (got 1099511627776.0)"),
    ("width", math.inf, "field 'width' is not a positive whole number of pixels (got inf)"),
    ("height", None, "field 'height' is not a positive whole number of pixels (got None)"),
    ("bbox", [0, 0, 8], "field 'bbox' is not [x_min, y_min, x_max, y_max] (got [0, 0, 8])"),
    ("expression", None, "field 'expression' is missing (null)"),
    ("expression", ["gland"], "field 'expression' is a list, not text (got ['gland'])"),
    ("expression", " ", "field 'expression' is empty (got ' ')"),
])
def test_each_unusable_field_is_named(field, value, reason):
    row = {"expression": "gland", "bbox": [0, 0, 8, 8], "width": 64, "height": 32, field: value}
    assert str(box_rows.box_problem(row, (64, 32))) == reason


def test_an_exif_rotated_image_is_measured_as_datasets_decodes_it():
    """A JPEG stored 64x32 with orientation 6 decodes as 32x64: that is the size boxes must be stated in."""
    exif = Image.Exif()
    exif[0x0112] = 6
    buffer = io.BytesIO()
    Image.new("RGB", (64, 32)).save(buffer, format="JPEG", exif=exif)
    value = {"bytes": buffer.getvalue(), "path": None}
    assert box_rows.header_size(value) == datasets.Image().decode_example(value).size == (32, 64)


def test_a_task_with_no_rows_of_its_split_fails_once_naming_the_splits():
    rows = [row for row in grounding_rows() if row["split"] == "testB"]
    with pytest.raises(ValueError, match=r"grounding testA: no row of .* has split testA \(its splits: 'testB': 1\)"):
        grounding.by_split_testa(datasets.Dataset.from_list(rows))


def test_no_answer_is_lost_with_the_models_reason_not_a_decoding_error():
    doc = without_image(grounding.process_docs(datasets.Dataset.from_list(grounding_rows()[:1]))[0])
    empty = grounding.process_results(doc, [""])["lost_items"]["lost"]["item"]
    failed = grounding.process_results(doc, [f"{MODEL_FAILED} OSError: image file is truncated"])
    assert empty.startswith("empty answer") and "JSONDecodeError" not in empty
    assert failed["lost_items"]["lost"]["item"] == "the model could not answer: OSError: image file is truncated"


def test_faithfulness_drops_rows_without_a_split_and_rows_whose_data_is_at_fault():
    docs = faithfulness.by_split(datasets.Dataset.from_list(grounding_rows()))
    assert ledger(docs)["dropped"] == {NO_SPLIT: 1, VAL: 1, BBOX: 1, SIZE: 1, HEIGHT: 1}
    assert set(docs["subgroup"]) == {"testA", "testB"} and "g4" not in docs["id"]


# ----------------------------------------------------------------------------------------- PathView


def pathview_rows() -> list[dict]:
    base = {"question": "Locate every tumor.", "target": "tumor", "boxes": [[1.0, 1.0, 20.0, 20.0]]}
    sizes = [(64.0, 32.0), (math.nan, 32.0), (math.inf, 32.0), (2.0**40, 32.0), (128.0, 64.0), (64.0, 32.0)]
    return [{"id": f"v{i}", "image": png(64, 32), **base, "width": w, "height": h} for i, (w, h) in enumerate(sizes)]


PATHVIEW_REASONS = ["", "field 'width' is not a positive whole number of pixels (got nan)",
                    "field 'width' is not a positive whole number of pixels (got inf)",
                    "field 'width' is more pixels than the 2147483647 a side can have (got 1099511627776.0)",
                    "width x height disagrees with the image's size (stated 128x64, image 64x32)", ""]


def test_pathview_sizes_that_are_not_whole_int32_pixels_or_not_the_images_are_named_per_row():
    """The converter names each row's fault (process_docs then drops it); the scorer, total for documents that
    did not come through process_docs, scores such a document invalid with that reason."""
    docs = converter("grounding")(datasets.Dataset.from_list(pathview_rows()).cast_column("image", datasets.Image()))
    assert [str(Fault.read(value) or "") for value in docs["doc_error"]] == PATHVIEW_REASONS
    records = [scoring.score_grounding(without_image(doc), ["<answer>[1, 1, 20, 20]</answer>"])["dice"] for doc in docs]
    assert [r["outcome"] for r in records] == ["answered", "invalid", "invalid", "invalid", "invalid", "answered"]
    assert records[4]["reason"] == PATHVIEW_REASONS[4]
    failed = scoring.score_grounding(without_image(docs[0]), [f"{MODEL_FAILED} ValueError: no image"])["dice"]
    assert failed["outcome"] == "invalid" and failed["reason"] == "the model could not answer: ValueError: no image"


# ----------------------------------------------------------------------------------------- through lmms-eval


def write_copies(root, writer: str) -> None:
    """<root>/pathbind_grounding/test.parquet and <root>/pathview/region_ogd.parquet, written with datasets
    (image feature metadata) or with plain pyarrow (``{bytes, path}`` structs, no HF metadata)."""
    from pathbind_tasks.demo.grounding_synth import grounding_items

    rows = grounding_rows()
    for row, item in zip(rows, grounding_items(len(rows), seed=3), strict=True):
        buffer = io.BytesIO()
        item["image"].save(buffer, format="PNG")
        row.update(image={"bytes": buffer.getvalue(), "path": None}, bbox=row["bbox"] and item["bbox"],
                   width=row["width"] * 4, height=row["height"] * 8)  # the mosaics are 256x256
    views = pathview_rows()
    for row in views:
        row["width"], row["height"] = row["width"] * 4, row["height"] * 8
        row["image"] = rows[0]["image"]
    for name, table in (("pathbind_grounding/test.parquet", rows), ("pathview/region_ogd.parquet", views)):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if writer == "datasets":
            datasets.Dataset.from_list(table).cast_column("image", datasets.Image()).to_parquet(str(path))
        else:
            pq.write_table(pa.Table.from_pylist(table), path)
            assert pq.read_schema(path).metadata is None or b"huggingface" not in pq.read_schema(path).metadata


@pytest.mark.slow
@pytest.mark.parametrize("writer", ["datasets", "pyarrow"])
def test_bad_rows_through_lmms_eval(tmp_path, writer):
    """Every row is evaluated or dropped with its reason, under either writer: rows == evaluated + dropped."""
    write_copies(tmp_path / "data", writer)
    result = lmms_eval(tmp_path, "pathbind_control", "pathbind_grounding_testa,pathbind_grounding_testb,"
                       "pathbind_pathview_region_ogd", env={"PATHBIND_DATA": str(tmp_path / "data")})
    testa = metric(result, "pathbind_grounding_testa", "accounting")
    assert testa == {"rows": 9, "evaluated": 2,
                     "dropped": {NO_SPLIT: 1, OTHER_B: 2, VAL: 1, BBOX: 1, SIZE: 1, HEIGHT: 1}}
    assert metric(result, "pathbind_grounding_testa", "lost_items")["items"] == 2
    assert metric(result, "pathbind_grounding_testb", "accounting")["evaluated"] == 2
    assert metric(result, "pathbind_grounding_testb", "lost_items")["scored"] == 2
    assert metric(result, "pathbind_pathview_region_ogd", "accounting") == {"rows": 6, "evaluated": 2, "dropped": {
        "field 'width' is not a positive whole number of pixels": 2, SIZE: 1,
        "field 'width' is more pixels than the 2147483647 a side can have": 1}}
    samples = [json.loads(line) for path in result["out"].rglob("*pathbind_pathview_region_ogd*.jsonl")
               for line in path.read_text().splitlines()]
    assert sorted(s["doc_id"] for s in samples) == [0, 1] and all("disagrees" not in s["pathbind"]["reason"]
                                                                  for s in samples)


@pytest.mark.slow
def test_a_split_with_no_rows_fails_before_any_model_call_naming_the_file(tmp_path):
    folder = tmp_path / "data" / "pathbind_grounding"
    folder.mkdir(parents=True)
    rows = [row for row in grounding_rows() if row["split"] == "testB"]
    pq.write_table(pa.Table.from_pylist(rows), folder / "test.parquet")
    done = run([str(BIN / "lmms_eval"), "--model", "pathbind_blind", "--tasks", "pathbind_grounding_testa",
                "--output_path", str(tmp_path / "out")], cwd=tmp_path, env={"PATHBIND_DATA": str(tmp_path / "data")})
    assert f"file {folder / 'test.parquet'} has split testA" in done.stdout + done.stderr
    assert not list((tmp_path / "out").rglob("*_results.json"))
