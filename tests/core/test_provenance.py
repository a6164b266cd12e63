"""Every run records what it read: ``pathbind.data`` per task (source, file hashes, folders, rows, fingerprint)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
from PIL import Image

from pathbind.data import DataLocationError, apply_data_root
from pathbind.provenance import data_differences, fingerprint, task_provenance

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def demo_file(name: str) -> Path:
    """A parquet file of the installed demo tasks."""
    import pathbind_tasks.demo

    return Path(pathbind_tasks.demo.__file__).parent / "data" / name


def test_a_run_records_each_tasks_file_hashes_and_raw_rows(demo_blind):
    """Every task of the demo group has a record: its parquet file's sha256 and size as hashlib reads them, and
    the rows lmms-eval loaded before process_docs (the VQA tasks ask each row twice: with and without the image)."""
    results = demo_blind["results"]
    data = results["pathbind"]["data"]
    groups = {name for name, tasks in results["group_subtasks"].items() if tasks}
    assert set(data) == set(results["results"]) - groups
    for task, record in data.items():
        assert record["source"] == "local" and record["dataset_path"] == "parquet", task
        [entry] = record["files"]
        path = Path(entry["path"])
        assert entry["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest(), task
        assert entry["bytes"] == path.stat().st_size and entry["split"] == "test", task
        assert record["rows"] == {"test": pq.ParquetFile(path).metadata.num_rows}, task
        assert record["fingerprint"] == fingerprint(record), task
    assert data["pathbind_demo_vqa"]["rows"] == {"test": 60}
    assert results["results"]["pathbind_demo_vqa"]["accounting,none"]["rows"] == 60
    assert data["pathbind_demo_vqa"]["fingerprint"] == data["pathbind_demo_vqa_ablation"]["fingerprint"]


def test_a_limited_run_of_the_same_data_has_the_same_fingerprint(demo_blind, limited_blind):
    """--limit chooses documents, not data: a full and a --limit 8 run of one task record one fingerprint."""
    full, limited = (run["results"]["pathbind"]["data"]["pathbind_demo_vqa"] for run in (demo_blind, limited_blind))
    assert full["fingerprint"] == limited["fingerprint"]


@pytest.fixture
def data_copy(tmp_path, monkeypatch):
    """A PATHBIND_DATA copy of the demo yes/no set: its parquet file, an id list, an image archive and an image
    folder with a subfolder."""
    folder = tmp_path / "data" / "pathbind_demo_yesno"
    (folder / "images" / "extra").mkdir(parents=True)
    shutil.copy(demo_file("yesno.parquet"), folder / "test.parquet")
    (folder / "ids.txt").write_text("a\nb\n")
    (folder / "images.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    (folder / "images" / "1.png").write_bytes(b"x" * 10)
    (folder / "images" / "extra" / "2.png").write_bytes(b"y" * 5)
    monkeypatch.setenv("PATHBIND_DATA", str(tmp_path / "data"))
    return folder


def load(task_manager, name: str):
    """The task as lmms-eval builds it in this process (the seam applies the overrides and counts rows)."""
    return task_manager.load_task_or_group([name])[name]


def test_a_data_folder_is_recorded_file_by_file_and_folder_by_listing(task_manager, data_copy):
    """The data file and the other top-level files are hashed; subfolders are counted and listed, not hashed."""
    record = task_provenance("pathbind_demo_yesno", load(task_manager, "pathbind_demo_yesno"))
    assert record["data_dir"] == str(data_copy) and record["rows"] == {"test": 24}
    assert [(f["name"], f["sha256"]) for f in record["files"]] == [
        ("test.parquet", hashlib.sha256(demo_file("yesno.parquet").read_bytes()).hexdigest())]
    assert [(f["name"], f["bytes"], f["sha256"]) for f in record["other_files"]] == [
        (name, (data_copy / name).stat().st_size, hashlib.sha256((data_copy / name).read_bytes()).hexdigest())
        for name in ("ids.txt", "images.zip")]
    [images] = record["folders"]
    assert (images["name"], images["files"], images["bytes"]) == ("images", 2, 15)


def test_one_changed_byte_of_the_data_file_changes_the_fingerprint(task_manager, data_copy):
    """Flipping one byte of test.parquet changes its sha256 and the fingerprint; the difference names the file."""
    task = load(task_manager, "pathbind_demo_yesno")
    before = task_provenance("pathbind_demo_yesno", task)
    content = bytearray((data_copy / "test.parquet").read_bytes())
    content[len(content) // 2] ^= 1
    (data_copy / "test.parquet").write_bytes(bytes(content))
    after = task_provenance("pathbind_demo_yesno", task)
    assert after["fingerprint"] != before["fingerprint"]
    [difference] = data_differences(before, after)
    assert difference == (f"test.parquet sha256: {before['files'][0]['sha256'][:12]} vs "
                          f"{after['files'][0]['sha256'][:12]}")


def test_an_image_folder_changes_the_fingerprint_by_name_or_size_only(task_manager, data_copy):
    """Images are listed, not hashed: an image of the same size with other bytes keeps the fingerprint (the price
    of not reading tens of thousands of images per run); a renamed or resized image changes it."""
    task = load(task_manager, "pathbind_demo_yesno")
    original = task_provenance("pathbind_demo_yesno", task)["fingerprint"]
    (data_copy / "images" / "1.png").write_bytes(b"z" * 10)
    assert task_provenance("pathbind_demo_yesno", task)["fingerprint"] == original
    (data_copy / "images" / "1.png").write_bytes(b"z" * 11)
    resized = task_provenance("pathbind_demo_yesno", task)
    assert resized["fingerprint"] != original
    (data_copy / "images" / "1.png").rename(data_copy / "images" / "one.png")
    renamed = task_provenance("pathbind_demo_yesno", task)
    assert renamed["fingerprint"] not in (original, resized["fingerprint"])
    assert data_differences(resized, renamed) == [
        f"images listing_sha256: {resized['folders'][0]['listing_sha256'][:12]} vs "
        f"{renamed['folders'][0]['listing_sha256'][:12]}"]


def cache_as_hub(parquet: Path, cache: Path, hub_id: str, commit: str) -> None:
    """Lay out ``parquet`` in ``cache`` the way datasets caches a hub dataset it downloaded at ``commit``."""
    loaded = datasets.load_dataset("parquet", data_files={"test": str(parquet)}, cache_dir=str(cache / "build"))
    organisation, name = hub_id.split("/")
    target = cache / f"{organisation}___{name}" / "default" / "0.0.0" / commit
    shutil.copytree(Path(loaded["test"].cache_files[0]["filename"]).parent, target)
    for arrow in target.glob("parquet-*.arrow"):
        arrow.rename(target / arrow.name.replace("parquet-", f"{name}-"))


@pytest.fixture
def datasets_cache(tmp_path, monkeypatch):
    """A datasets cache of this test's own for lmms-eval (which reads its location once per process)."""
    from lmms_eval.api.task import _resolve_hf_datasets_cache_dir

    monkeypatch.setenv("LMMS_EVAL_DATASETS_CACHE", str(tmp_path / "cache"))
    _resolve_hf_datasets_cache_dir.cache_clear()
    yield tmp_path / "cache"
    _resolve_hf_datasets_cache_dir.cache_clear()


def test_a_hub_task_records_the_requested_revision_and_the_cached_commit(task_manager, datasets_cache, tmp_path,
                                                                         monkeypatch):
    """PATHBIND_HUB_REVISION_PATH_VQA reaches the task's dataset_kwargs; the record names the hub id, that
    revision and the commit datasets read (from its cache folder), and the rows loaded."""
    parquet = tmp_path / "test.parquet"
    rows = {"image": [Image.new("RGB", (8, 8), (shade, 0, 0)) for shade in (0, 100, 200)],
            "question": ["is it benign?", "what organ?", "is there necrosis?"], "answer": ["yes", "liver", "no"]}
    datasets.Dataset.from_dict(rows).to_parquet(str(parquet))
    cache_as_hub(parquet, datasets_cache, "flaviagiammarino/path-vqa", COMMIT)
    monkeypatch.delenv("PATHBIND_DATA", raising=False)
    monkeypatch.setenv("PATHBIND_HUB_REVISION_PATH_VQA", "v1.0")
    assert task_manager._get_config("pathbind_path_vqa")["dataset_kwargs"]["revision"] == "v1.0"
    task = load(task_manager, "pathbind_path_vqa")
    record = task_provenance("pathbind_path_vqa", task)
    assert {key: record[key] for key in ("source", "hub_id", "dataset_name", "revision", "resolved_revision",
                                         "rows")} == {
        "source": "hub", "hub_id": "flaviagiammarino/path-vqa", "dataset_name": None, "revision": "v1.0",
        "resolved_revision": COMMIT, "rows": {"test": 3}}
    other = {**record, "resolved_revision": "f" * 40}
    assert fingerprint(other) != record["fingerprint"]
    assert data_differences(record, {**other, "fingerprint": fingerprint(other)}) == [
        f"hub revision: {COMMIT} vs {'f' * 40}"]


def test_a_revision_for_a_task_that_reads_local_files_is_an_error(monkeypatch):
    """A pin that nothing would read is refused, naming the variable."""
    monkeypatch.delenv("PATHBIND_DATA", raising=False)
    monkeypatch.setenv("PATHBIND_HUB_REVISION_SETX", COMMIT)
    config = {"task": "t", "dataset_path": "parquet", "metadata": {"pathbind_data": "setx"},
              "dataset_kwargs": {"data_files": {"test": "/data/test.parquet"}}}
    with pytest.raises(DataLocationError, match=rf"^PATHBIND_HUB_REVISION_SETX={COMMIT}: task 't' does not read"):
        apply_data_root(config)
