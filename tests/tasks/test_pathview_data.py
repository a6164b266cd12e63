"""PathView data: the release format through lmms-eval and PATHBIND_DATA, and the synthetic demo items."""

from __future__ import annotations

import argparse
import io
from collections import Counter
from pathlib import Path

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from pathbind import make_plugin_manager
from pathbind.catalog import plugin_tasks
from pathbind.lmms.queries import load_task_yaml
from pathbind.lmms.tasks import TaskBuildError
from pathbind_tasks.demo import command, pathview_synth

DATA = Path(pathview_synth.__file__).parent / "data"
REAL_TASKS = [f"pathbind_pathview_{task}" for task in pathview_synth.TASKS]
# The demo tasks under their canonical names (their old names, pathview_demo_*, are the same variants again).
DEMO_VARIANTS = sorted(e.name for e in plugin_tasks(make_plugin_manager())
                       if e.variants is not None and e.name.startswith("pathbind_"))


@pytest.fixture(scope="module")
def items() -> dict[str, list[dict]]:
    return pathview_synth.pathview_items(8, 0)


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    """A PATHBIND_DATA root holding a small release in its own layout (<root>/pathview/<task>.parquet)."""
    root = tmp_path_factory.mktemp("release")
    pathview_synth.write_pathview_data(root, 4, 3, layout=pathview_synth.RELEASE_LAYOUT)
    return root


def _pixels(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("RGB"), dtype=np.int16)


def test_same_seed_same_items_other_seed_other_pixels():
    """Generation is deterministic per seed, and the seed matters."""
    first, again, other = (pathview_synth.pathview_items(2, seed) for seed in (5, 5, 6))
    for task in pathview_synth.TASKS:
        for a, b, c in zip(first[task], again[task], other[task], strict=True):
            assert {k: v for k, v in a.items() if k != "image"} == {k: v for k, v in b.items() if k != "image"}
            assert np.array_equal(_pixels(a["image"]), _pixels(b["image"]))
            assert not np.array_equal(_pixels(a["image"]), _pixels(c["image"]))


def test_classes_are_balanced(items):
    """Answer classes appear equally often (8 items: two per class of four)."""
    for task in ("region_rcl", "region_dlo", "region_spr", "slide_org", "slide_ocl", "slide_are", "slide_dlo"):
        assert set(Counter(row["answer"] for row in items[task]).values()) == {2}, task
        assert all(row["answer"] in row["options"] for row in items[task])


def test_grounding_truth_is_exact(items):
    """OGD boxes are the nuclei of one lesion cluster, all in one quadrant; LGD has one or two lesion boxes."""
    for row in items["region_ogd"]:
        boxes = np.asarray(row["boxes"])
        assert 5 <= len(boxes) <= 14 and (boxes[:, 2:] > boxes[:, :2]).all()  # up to 14 nuclei fit the cluster
        centres = (boxes[:, :2] + boxes[:, 2:]) / 2
        assert len({(bool(x > 128), bool(y > 128)) for x, y in centres}) == 1
    assert {len(row["boxes"]) for row in items["slide_lgd"]} == {1, 2}
    for row in items["slide_lgd"]:
        assert all(0 <= b[0] < b[2] <= 256 and 0 <= b[1] < b[3] <= 256 for b in row["boxes"])


def test_slide_lesions_have_exact_masks_boxes_and_areas():
    """A painted lesion is its disk within the tissue: its box bounds its mask, its area is the lesion fraction."""
    tissue = pathview_synth.slide_tissue(7)
    _, truth = pathview_synth.render_slide(7, [("tumor", (80.0, 90.0, 25.0)), ("necrosis", (180.0, 150.0, 20.0))])
    for mask, (x0, y0, x1, y1) in zip(truth["masks"], truth["boxes"], strict=True):
        rows, cols = np.nonzero(mask)
        assert (cols.min(), rows.min(), cols.max() + 1, rows.max() + 1) == (x0, y0, x1, y1)
        assert not (mask & ~tissue).any()
    assert truth["lesion_fraction"] == pytest.approx((truth["masks"][0] | truth["masks"][1]).sum() / tissue.sum())


def test_counts_are_what_was_drawn(items):
    """Counting items span 15-78 lymphocytes; every count is a whole number drawn on the tile."""
    counts = [row["count"] for row in items["region_ocn"]]
    assert min(counts) >= 15 and max(counts) <= 78 and len(set(counts)) > 4


def test_traps_are_unanswerable_by_construction(items):
    """Region trap: a few isolated cells on glass; slide trap: an overview with no resolved nucleus."""
    for row in items["region_trap"]:
        assert (_pixels(row["image"]).min(axis=-1) > 235).mean() > 0.8 and len(row["options"]) == 4
    for row in items["slide_trap"]:
        assert row["question"] == items["region_ocn"][0]["question"]  # the same words as the answerable count


def test_committed_demo_data_equals_regeneration(items):
    """pathbind_tasks/demo/data/pathview/*.parquet is write_pathview_data() with the defaults (up to JPEG error)."""
    for task, rows in items.items():
        table = pq.read_table(DATA / "pathview" / f"{task}.parquet").to_pylist()
        assert len(table) == len(rows) == 8
        for stored, fresh in zip(table, rows, strict=True):
            assert {k: v for k, v in stored.items() if k != "image"} == {k: v for k, v in fresh.items() if k != "image"}
            decoded = Image.open(io.BytesIO(stored["image"]["bytes"]))
            assert decoded.format == "JPEG" and np.abs(_pixels(decoded) - _pixels(fresh["image"])).mean() < 6.0


def test_committed_demo_data_is_under_two_megabytes():
    """The 14 packaged PathView demo files stay small."""
    assert sum(p.stat().st_size for p in DATA.glob("pathview/*.parquet")) < 2 * 2**20


def test_demo_data_command_writes_every_pathview_task(tmp_path, capsys):
    """`pathbind demo-data` writes one folder per PathView demo task next to the VQA sets."""
    args = argparse.Namespace(out=tmp_path, n=1, n_yes_no=2, n_pathview=1, n_grounding=0, seed=2)
    assert command.run(args) == 0
    for task in pathview_synth.TASKS:
        written = datasets.Dataset.from_parquet(str(tmp_path / f"pathbind_pathview_demo_{task}" / "test.parquet"))
        assert len(written) == 1
    assert "pathbind_pathview_demo_slide_trap" in capsys.readouterr().out


@pytest.mark.parametrize("name", REAL_TASKS)
def test_release_tasks_load_through_lmms_eval_from_pathbind_data(task_manager, release, monkeypatch, name):
    """Each real task reads <PATHBIND_DATA>/pathview/<task>.parquet; two docs render and have their image."""
    monkeypatch.setenv("PATHBIND_DATA", str(release))
    task = task_manager.load_task_or_group([name])[name]
    docs = list(task.test_docs())
    assert len(docs) == 4 and all("doc_error" not in doc for doc in docs)
    for doc in docs[:2]:
        assert "<answer>insufficient evidence</answer>" in task.doc_to_text(doc)
        assert task.doc_to_target(doc) not in (None, "")
        assert [image.size for image in task.doc_to_visual(doc)] == [(256, 256)]


def test_release_with_image_files_and_a_bad_row(task_manager, tmp_path, monkeypatch):
    """Images given by file name resolve under <root>/pathview/images/; a missing file, a bad box and a stated
    size that is not the file's are faults of the data: dropped with their reasons, counted, never scored."""
    folder = tmp_path / "pathview"
    (folder / "images").mkdir(parents=True)
    Image.new("RGB", (40, 30), (230, 180, 220)).save(folder / "images" / "a.png")
    rows = [{"id": "a", "image": "a.png", "question": "Locate every tumor.", "target": "tumor",
             "boxes": [[1.0, 1.0, 20.0, 20.0]], "width": 40, "height": 30},
            {"id": "b", "image": "missing.png", "question": "Locate every tumor.", "target": "tumor",
             "boxes": [[1.0, 1.0, 20.0, 20.0]], "width": 40, "height": 30},
            {"id": "c", "image": "a.png", "question": "Locate every tumor.", "target": "tumor",
             "boxes": [[50.0, 1.0, 60.0, 20.0]], "width": 40, "height": 30},
            {"id": "d", "image": "a.png", "question": "Locate every tumor.", "target": "tumor",
             "boxes": [[1.0, 1.0, 20.0, 20.0]], "width": 80, "height": 60}]
    datasets.Dataset.from_list(rows).to_parquet(str(folder / "region_ogd.parquet"))
    monkeypatch.setenv("PATHBIND_DATA", str(tmp_path))
    task = task_manager.load_task_or_group(["pathbind_pathview_region_ogd"])["pathbind_pathview_region_ogd"]
    docs = list(task.test_docs())
    assert [doc["id"] for doc in docs] == ["a"]
    ledger = task.config.process_docs.task.ledger  # the seam hands it to the task's functions, not the documents
    assert (ledger.rows, ledger.kept) == (4, 1)
    assert ledger.dropped == {"image file not found": 1, "width x height disagrees with the image's size": 1,
                                 "field 'boxes' has boxes that cannot be drawn on the image": 1}
    record = task.process_results({k: v for k, v in docs[0].items() if k != "image"},
                                  ["<answer>[1, 1, 20, 20]</answer>"])
    assert record["dice"]["outcome"] == "answered"


def test_release_tasks_stop_before_any_model_call_without_pathbind_data(task_manager, monkeypatch):
    """Without PATHBIND_DATA the release tasks say what to set."""
    monkeypatch.delenv("PATHBIND_DATA", raising=False)
    with pytest.raises(TaskBuildError, match=r"^task pathbind_pathview_slide_lgd: pathview is read from a local copy "
                                             r"only: set PATHBIND_DATA=<root> with the data in <root>/pathview/ \(.*"
                                             r"docs/data-access\.md#pathview\)$"):
        task_manager.load_task_or_group(["pathbind_pathview_slide_lgd"])


def _functions(config: dict) -> dict:
    """``config`` with its task functions as the YAML names them (the seam runs each inside its task)."""
    def unwrap(value):
        return getattr(value, "__wrapped__", value)

    metrics = [{**m, "aggregation": unwrap(m["aggregation"])} for m in config["metric_list"]]
    return {**{key: unwrap(value) for key, value in config.items()}, "metric_list": metrics}


@pytest.mark.parametrize("name", DEMO_VARIANTS)
def test_each_demo_task_is_its_pathview_task_on_the_packaged_data(task_manager, release, monkeypatch, name):
    """What each deleted pathview_demo_*.yaml gave, derived from the real task's config as lmms-eval loads both: the
    demo name, the packaged file of the same name, no metadata sending it to PATHBIND_DATA; process_docs,
    metric_list and everything else the real task's. A release under PATHBIND_DATA (which the real task needs to
    load) moves the real task only."""
    monkeypatch.setenv("PATHBIND_DATA", str(release))
    source = name.replace("pathbind_pathview_demo_", "pathbind_pathview_", 1)
    real, demo = (_functions(task_manager._get_config(task)) for task in (source, name))
    files = load_task_yaml(task_manager.task_index[source]["yaml_path"])["dataset_kwargs"]["data_files"]
    assert real["metadata"] == {"version": 1, "pathbind_data": "pathview",
                                "requires_pathbind_data": "docs/data-access.md#pathview"}
    assert real["dataset_kwargs"]["data_files"] == {"test": str(release / "pathview" / files["test"])}
    assert demo == {**real, "task": name, "metadata": {"version": 1},
                    "dataset_kwargs": {"data_files": {"test": str(DATA / "pathview" / files["test"])}}}


def test_pathbind_data_holding_a_release_does_not_redirect_the_demo(task_manager, release, monkeypatch):
    """The real task reads the release (4 items), its demo variant the packaged data (8); the catalog agrees and
    finds no data problem for any of the 24 demo tasks, with or without PATHBIND_DATA."""
    monkeypatch.setenv("PATHBIND_DATA", str(release))
    loaded = task_manager.load_task_or_group(["pathbind_pathview_region_ocl", "pathbind_pathview_demo_region_ocl"])
    tasks = ("pathbind_pathview_region_ocl", "pathbind_pathview_demo_region_ocl")
    assert [len(loaded[task].test_docs()) for task in tasks] == [4, 8]
    assert _demo_data() == ({DATA / "pathview"}, [])
    monkeypatch.delenv("PATHBIND_DATA")
    assert _demo_data() == ({DATA / "pathview"}, [])


def _demo_data() -> tuple[set[Path], list[str]]:
    """The folders the catalog says the demo tasks read, and their data problems."""
    entries = [e for e in plugin_tasks(make_plugin_manager()) if e.variants is not None]
    assert [e.name for e in entries if e.name in DEMO_VARIANTS] == DEMO_VARIANTS and len(entries) == 2 * 24
    return {f.parent for e in entries for f in e.data.local_files}, [e.data_problem for e in entries if e.data_problem]
