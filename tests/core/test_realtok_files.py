"""The real tokenizer/processor files some tests read: pinned by revision and sha256, fetched only when they match."""

from __future__ import annotations

import hashlib

import pytest
import realtok


def test_the_pinned_checksums_are_those_of_the_files_the_tests_read():
    """Each folder holds exactly the pinned files, byte for byte (so `make realtok` fetches what the tests read)."""
    if not realtok.available():
        pytest.skip(realtok.skip_reason())
    for name, (_, _, files) in realtok.SOURCES.items():
        folder = realtok.REALTOK / name
        assert sorted(path.name for path in folder.iterdir()) == sorted(files)
        assert {path.name: realtok.sha256(path) for path in folder.iterdir()} == files


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """A one-repository stand-in for the hub: ``org/model`` at revision ``abc`` holds two files."""
    contents = {"config.json": b'{"model_type": "x"}', "vocab.json": b'{"a": 0}'}
    monkeypatch.setattr(realtok, "SOURCES", {"model": ("org/model", "abc", {
        filename: hashlib.sha256(content).hexdigest() for filename, content in contents.items()})})
    served = tmp_path / "hub"
    served.mkdir()
    for filename, content in contents.items():
        (served / filename).write_bytes(content)
    asked: list[tuple[str, str, str]] = []

    def download(repo_id: str, filename: str, revision: str) -> str:
        asked.append((repo_id, filename, revision))
        return str(served / filename)

    return served, download, asked


def test_fetch_copies_each_file_at_its_pinned_revision(tmp_path, hub):
    served, download, asked = hub
    realtok.fetch(tmp_path / "cache", download)
    assert asked == [("org/model", "config.json", "abc"), ("org/model", "vocab.json", "abc")]
    assert (tmp_path / "cache" / "model" / "vocab.json").read_bytes() == (served / "vocab.json").read_bytes()


def test_a_file_that_differs_from_its_checksum_stops_the_fetch_and_writes_nothing(tmp_path, hub):
    served, download, _ = hub
    (served / "vocab.json").write_bytes(b'{"a": 1}')
    with pytest.raises(ValueError, match=r"org/model@abc/vocab.json: sha256 [0-9a-f]{64}, pinned [0-9a-f]{64}"):
        realtok.fetch(tmp_path / "cache", download)
    assert not (tmp_path / "cache" / "model").exists()
