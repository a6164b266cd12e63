"""Grounding tasks: the attention-map protocol, alternatives, per-item records, loaders."""

from __future__ import annotations

import io
import json
import math
import zipfile
from pathlib import Path

import datasets
import numpy as np
import pytest
from conftest import lmms_eval, metric
from loguru import logger
from PIL import Image

from pathbind import make_plugin_manager
from pathbind.catalog import plugin_tasks, read_task_yaml
from pathbind.data import apply_data_root
from pathbind.wire import AttentionResponse
from pathbind_metrics import grounding
from pathbind_tasks.common import grounding as grounding_task
from pathbind_tasks.common import grounding_aggregations as ga
from pathbind_tasks.common import grounding_records as gr
from pathbind_tasks.common.grounding import draw_alternatives, process_results
from pathbind_tasks.pathvg import utils as pathvg


def test_alternatives_are_other_expressions_of_the_same_split_and_never_change():
    expressions = ["gland", "gland", "vessel", "nerve", "fat", "tumour", "necrosis"]
    splits = ["testA"] * 4 + ["testB"] * 3
    drawn = draw_alternatives(expressions, splits)
    assert drawn == draw_alternatives(expressions, splits)
    for own, split, alternatives in zip(expressions, splits, drawn, strict=True):
        pool = {e for e, s in zip(expressions, splits, strict=True) if s == split and e != own}
        assert len(alternatives) == min(2, len(pool)) == len(set(alternatives)) and set(alternatives) <= pool


def doc(**fields) -> dict:
    return {"id": "x1", "split": "testA", "bbox": [0, 0, 8, 8], "width": 16, "height": 16,
            "expression": "gland", **fields}


def response(*maps) -> str:
    return AttentionResponse((4, 4), {"mid": [1]}, list(maps)).encode()


def corner_map() -> np.ndarray:
    attn = np.full((4, 4), 0.01)
    attn[:2, :2] = 1.0
    return attn


def test_a_map_on_the_box_scores_and_unscorable_answers_are_lost_with_their_reason():
    good = process_results(doc(), [response(*[{"mid": corner_map()}] * 3)])["attn_iou"]
    assert good["iou"]["0.2"] > 0.5 and good["lost"] == {} and good["cross_query_r"] == pytest.approx(1.0)
    words = process_results(doc(), ["The gland is at the top."])["attn_iou"]
    inverted = process_results(doc(bbox=[8, 8, 0, 0]), [response({"mid": corner_map()})])["attn_iou"]
    no_entity = process_results(doc(), [response("ValueError: entity 'gland' covers no token")])["attn_iou"]
    assert "not an attention response" in words["lost"]["item"]
    assert inverted["lost"]["iou"] == grounding.BOX_INVERTED and math.isnan(inverted["iou"]["0.2"])
    assert "covers no token" in no_entity["lost"]["item"]
    counts = ga.lost_items([good, words, inverted, no_entity])
    assert counts["items"] == 4 and counts["scored"] == 1
    assert counts[f"iou: {grounding.BOX_INVERTED}"] == 1


def test_aggregations_average_scored_items_and_bracket_them():
    maps = [{"mid": corner_map(), "deep": corner_map()[::-1]}, {"mid": corner_map().T}, {"mid": np.eye(4) + 0.1}]
    records = [gr.item_record(maps, [0, 0, 8, 8], (16, 16)), gr.item_record(["no map"], [0, 0, 8, 8], (16, 16))]
    iou = ga.headline_value(records, "iou")
    assert iou == records[0]["iou"]["0.2"]
    interval = ga.cluster_intervals(records)["attn_iou"]
    assert math.isnan(interval["low"]) and math.isnan(interval["high"])  # one scored item: no interval, not a point
    assert (interval["cluster"], interval["clusters"], interval["items"]) == ("item", 1, 1)
    two = ga.cluster_intervals([records[0], {**records[0], "id": "other"}])["attn_iou"]
    assert two["low"] == two["high"] == iou and two["clusters"] == 2
    assert set(ga.q_sweep(records)) == {str(q) for q in gr.Q_SWEEP}
    layers = ga.layer_sweep(records)
    assert layers["mid"]["iou"] == iou and layers["deep"]["iou"] < iou
    assert records[0]["cross_query_r"] == pytest.approx(
        grounding.cross_query_correlation([m["mid"] for m in maps], image_size=(16, 16)))


# ----------------------------------------------------------------------------------------- data loaders


def write_pathvg(root, images: dict[str, Image.Image], *, zipped: bool = False) -> None:
    """The RefPath release: testA.jsonl (one record per box, ``expression`` a list, ``image`` under
    refpath_image/) and the images as refpath_image/ or refpath_image.zip. Record 1 has two expressions; record 2
    names an image the release lacks."""
    folder = root / "pathvg"
    folder.mkdir(parents=True)
    encoded = {}
    for name, image in images.items():
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG")
        encoded[f"refpath_image/{name}.jpg"] = buffer.getvalue()
    if zipped:
        with zipfile.ZipFile(folder / "refpath_image.zip", "w") as bundle:
            for member, data in encoded.items():
                bundle.writestr(member, data)
    else:
        for member, data in encoded.items():
            (folder / member).parent.mkdir(exist_ok=True)
            (folder / member).write_bytes(data)
    records = [{"image_id": "slide1", "image": "refpath_image/slide1.jpg", "height": 256, "width": 256,
                "bbox": [0, 0, 128, 128], "bbox_id": 11, "expression": ["adipocytes with large clear fat vacuoles"]},
               {"image_id": "slide2", "image": "refpath_image/slide2.jpg", "height": 256, "width": 256,
                "bbox": [128, 128, 256, 256], "bbox_id": 12,
                "expression": ["dense lymphocytic infiltrate of small dark nuclei", "the sheet of lymphocytes"]},
               {"image_id": "missing", "image": "refpath_image/missing.jpg", "height": 256, "width": 256,
                "bbox": [0, 0, 64, 64], "bbox_id": 13, "expression": ["enlarged hyperchromatic atypical nuclei"]}]
    (folder / "testA.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))


def write_pathbind_grounding(root, items: list[dict]) -> None:
    folder = root / "pathbind_grounding"
    folder.mkdir(parents=True)
    rows = [{k: v for k, v in item.items() if k != "pattern"} for item in items]
    for i, row in enumerate(rows):
        row["split"] = "testA" if i % 3 else "testB"
    datasets.Dataset.from_list(rows).cast_column("image", datasets.Image()).to_parquet(folder / "test.parquet")


@pytest.mark.slow
def test_release_layouts_load_through_lmms_eval(tmp_path):
    """PathVG's JSON Lines + refpath_image/ and PathBind-Grounding's parquet both run: one item per expression,
    each prompt and entity the expression's text (never the list's), a missing image dropped and counted."""
    from pathbind_tasks.demo.grounding_synth import grounding_items

    items = grounding_items(6, seed=3)
    write_pathvg(tmp_path / "data", {"slide1": items[0]["image"], "slide2": items[1]["image"]})
    write_pathbind_grounding(tmp_path / "data", items)
    result = lmms_eval(tmp_path, "pathbind_control", "pathbind_pathvg_testa,pathbind_grounding",
                       env={"PATHBIND_DATA": str(tmp_path / "data")})
    assert metric(result, "pathbind_pathvg_testa", "accounting") == {"rows": 4, "evaluated": 3,
                                                             "dropped": {"image file not found": 1}}
    lost = metric(result, "pathbind_pathvg_testa", "lost_items")
    assert lost["items"] == 3 and lost["scored"] == 3
    samples = [json.loads(line) for path in result["out"].rglob("*_pathvg_testa.jsonl")
               for line in path.read_text().splitlines()]
    assert sorted(s["pathbind"]["id"] for s in samples) == ["testA-11-0", "testA-12-0", "testA-12-1"]
    assert metric(result, "pathbind_grounding_testa", "lost_items")["items"] == 4
    assert metric(result, "pathbind_grounding_testb", "lost_items")["items"] == 2


def test_pathvg_expressions_expand_one_item_each_and_faults_are_named():
    """expression lists become one item per text, ids <split>-<bbox_id>-<k>; a plain string is one item; an empty
    list, a number or a dict is a fault naming the field and its type."""
    records = [{"bbox_id": 5, "expression": ["a", "b"]}, {"bbox_id": 6, "expression": "c"},
               {"bbox_id": 7, "expression": []}, {"bbox_id": 8, "expression": [3]},
               {"bbox_id": 9, "expression": {"t": 1}}]
    items = pathvg.expressions(records, "testB")
    assert [(i["id"], i["expression"]) for i in items] == [
        ("testB-5-0", "a"), ("testB-5-1", "b"), ("testB-6-0", "c"), ("testB-7-0", None), ("testB-8-0", None),
        ("testB-9-0", None)]
    assert [str(i["doc_error"]) for i in items[3:]] == ["field 'expression' is an empty list (got [])",
                                                   "field 'expression' is a int, not text (got 3)",
                                                   "field 'expression' is a dict, not text (got {'t': 1})"]


def test_pathvg_reads_the_release_zip_and_checks_the_papers_counts(tmp_path, monkeypatch):
    """refpath_image.zip is unpacked once into datasets' cache; a split whose expression count is not the paper's
    says so; the specificity documents need no image."""
    from pathbind_tasks.demo.grounding_synth import grounding_items

    items = grounding_items(2, seed=3)
    write_pathvg(tmp_path / "data", {"slide1": items[0]["image"], "slide2": items[1]["image"]}, zipped=True)
    monkeypatch.setenv("PATHBIND_DATA", str(tmp_path / "data"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "cache"))
    raw = datasets.load_dataset("json", data_files={"test": str(tmp_path / "data" / "pathvg" / "testA.jsonl")},
                                split="test")
    messages: list[str] = []
    sink = logger.add(messages.append, level="WARNING")
    try:
        docs = pathvg.testa(raw)
    finally:
        logger.remove(sink)
    assert list(docs["id"]) == ["testA-11-0", "testA-12-0", "testA-12-1"] and docs[0]["image"].size == (256, 256)
    prompts = [grounding_task.doc_to_text(doc) for doc in docs.remove_columns("image")]
    assert "the sheet of lymphocytes" in prompts[2] and not any("['" in prompt for prompt in prompts)
    assert len(list((tmp_path / "cache" / "pathbind_unpacked").iterdir())) == 1
    assert any("4 expressions, the full release has 1,342" in message for message in messages)
    assert list(pathvg.specificity_testa(raw)["id"]) == ["testA-11-0", "testA-12-0", "testA-12-1", "testA-13-0"]


def test_pathvg_reads_the_public_hub_release_by_default(monkeypatch):
    """No PATHBIND_DATA: the tasks load fengluo/RefPath's JSON Lines (a public release, not a gated one)."""
    monkeypatch.delenv("PATHBIND_DATA", raising=False)
    for name, split in (("pathbind_pathvg_testa", "testA"), ("pathbind_pathvg_specificity_testb", "testB")):
        path = next(e.yaml_path for e in plugin_tasks(make_plugin_manager()) if e.name == name)
        config = apply_data_root(read_task_yaml(path))
        assert config["dataset_path"] == "fengluo/RefPath"
        assert config["dataset_kwargs"]["data_files"] == {"test": f"{split}.jsonl"}


@pytest.mark.parametrize("process_docs", [grounding_task.process_docs, grounding_task.by_split_testa])
def test_a_missing_column_names_the_data_set_and_a_readme_that_exists(process_docs):
    """The error says which data (grounding) lacks which column and points to the README describing the layout."""
    rows = datasets.Dataset.from_dict({"id": ["a"], "expression": ["x"], "split": ["testA"]})
    with pytest.raises(ValueError, match=r"^grounding: the raw data has no column 'image'") as error:
        process_docs(rows)
    readme = str(error.value).split("described in ")[1].split()[0]
    assert readme == "pathbind_tasks/pathbind_grounding/README.md"
    assert (Path(grounding_task.__file__).parents[2] / readme).is_file()
