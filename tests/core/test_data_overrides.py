"""PATHBIND_DATA misconfigured: the error names the path tried and what is there, instead of falling back silently."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pathbind.data import DataLocationError, DataOverrideError, apply_data_root, override_dir

CONFIG = {"task": "t", "dataset_path": "parquet", "metadata": {"pathbind_data": "setx"},
          "dataset_kwargs": {"data_files": {"test": "release/test.parquet"}}}
GATED = {**CONFIG, "metadata": {"pathbind_data": "setx", "requires_pathbind_data": True}}


def test_a_root_that_is_a_file_or_missing_is_an_error(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("PATHBIND_DATA", str(tmp_path / "file"))
    with pytest.raises(DataOverrideError, match=r"PATHBIND_DATA=.*/file: expected a folder .* found a file there"):
        apply_data_root(CONFIG)
    monkeypatch.setenv("PATHBIND_DATA", str(tmp_path / "typo"))
    with pytest.raises(DataOverrideError, match=r"PATHBIND_DATA=.*/typo: expected a folder .* found nothing there"):
        override_dir("setx")


def test_a_data_name_that_is_a_file_is_an_error(tmp_path, monkeypatch):
    (tmp_path / "setx").write_text("")
    monkeypatch.setenv("PATHBIND_DATA", str(tmp_path))
    with pytest.raises(DataOverrideError, match=rf"tried {tmp_path / 'setx'} for data 'setx', found a file"):
        apply_data_root(CONFIG)


def test_a_folder_without_the_tasks_files_names_what_was_tried_and_found(tmp_path, monkeypatch):
    (tmp_path / "setx" / "images").mkdir(parents=True)
    (tmp_path / "setx" / "notes.txt").write_text("")
    monkeypatch.setenv("PATHBIND_DATA", str(tmp_path))
    with pytest.raises(DataOverrideError) as error:
        apply_data_root(CONFIG)
    folder = tmp_path / "setx"
    assert str(error.value) == (f"PATHBIND_DATA: tried {folder / 'release/test.parquet'}, "
                                f"{folder / 'test'}.parquet/.jsonl/.json/.csv (one format) and a save_to_disk "
                                f"dataset in {folder}, found images/, notes.txt")


def test_a_gated_task_with_the_root_set_but_no_folder_lists_the_root(tmp_path, monkeypatch):
    """Not an override error (the doctor warns): a root may hold only the sets its user runs."""
    (tmp_path / "other").mkdir()
    monkeypatch.setenv("PATHBIND_DATA", str(tmp_path))
    with pytest.raises(DataLocationError) as error:
        apply_data_root(GATED)
    assert str(error.value) == (f"PATHBIND_DATA: tried {tmp_path / 'setx'}/, found no such folder (setx is read from "
                                f"a local copy only; {tmp_path} holds other/; where setx is published and how to get "
                                "it: its README)")


def test_a_gated_task_without_the_root_says_what_to_set_and_where_the_data_is_published(monkeypatch):
    """The task's metadata says where its data is published: the message names it (else the task's README)."""
    monkeypatch.delenv("PATHBIND_DATA", raising=False)
    published = {**CONFIG, "metadata": {"pathbind_data": "setx", "requires_pathbind_data": "docs/setx.md#access"}}
    with pytest.raises(DataLocationError) as error:
        apply_data_root(published)
    assert str(error.value) == ("setx is read from a local copy only: set PATHBIND_DATA=<root> with the data in "
                                "<root>/setx/ (where it is published and how to get it: docs/setx.md#access)")


def test_a_public_task_without_its_folder_reads_its_yaml_location(tmp_path, monkeypatch):
    """The documented fallback: only the folders present override."""
    monkeypatch.setenv("PATHBIND_DATA", str(tmp_path))
    assert apply_data_root(CONFIG) == CONFIG
    (tmp_path / "setx").mkdir()
    pq.write_table(pa.table({"id": ["a"]}), tmp_path / "setx" / "test.parquet")
    local = str(tmp_path / "setx" / "test.parquet")
    assert apply_data_root(CONFIG)["dataset_kwargs"] == {"data_files": {"test": local}}


def test_an_empty_parquet_file_is_named_before_any_model_call(tmp_path, monkeypatch):
    """datasets' parquet loader fails on a file with no rows, or not parquet at all, without naming it."""
    folder = tmp_path / "pathbind_vqa"
    folder.mkdir()
    pq.write_table(pa.table({"id": pa.array([], pa.string()), "question": pa.array([], pa.string())}),
                   folder / "test.parquet")
    monkeypatch.setenv("PATHBIND_DATA", str(tmp_path))
    with pytest.raises(DataOverrideError, match=r"test\.parquet \(split 'test' of task 'pathbind_vqa'\) has no rows"):
        apply_data_root({"task": "pathbind_vqa", "metadata": {"pathbind_data": "pathbind_vqa"}})
    (folder / "test.parquet").write_bytes(b"not parquet")
    with pytest.raises(DataOverrideError, match=r"test\.parquet .* is not a readable parquet file \(ArrowInvalid"):
        apply_data_root({"task": "pathbind_vqa", "metadata": {"pathbind_data": "pathbind_vqa"}})
