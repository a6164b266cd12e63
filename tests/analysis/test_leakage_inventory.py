"""Inventory readers: every format streams (line, id) pairs; unusable input fails naming the file and the fix."""

from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pathbind_analysis.audit.leakage import inventory
from pathbind_analysis.audit.leakage.inventory import InventoryError, Source, iter_ids, parse_source


def ids(path, column=None):
    return list(iter_ids(Source("x", path, column)))


def test_text_lists_skip_blank_lines_and_comments_and_keep_line_numbers(tmp_path):
    """One id per line, CRLF or not; '#' lines and blank lines are skipped."""
    path = tmp_path / "slides.lst"
    path.write_bytes(b"# corpus\r\nTCGA-AA-0001\r\n\r\n  /x/TCGA-AA-0002.svs  \r\n")
    assert ids(path) == [(2, "TCGA-AA-0001"), (4, "/x/TCGA-AA-0002.svs")]


def test_csv_column_is_the_first_holding_barcodes(tmp_path):
    """Auto-detection skips columns without barcodes, and quoted fields keep their commas."""
    path = tmp_path / "inv.csv"
    path.write_text('label,note,slide\nluad,"a, b",TCGA-AA-0001-01Z\nlusc,c,CPTAC-1\n')
    assert ids(path) == [(2, "TCGA-AA-0001-01Z"), (3, "CPTAC-1")]


def test_tsv_named_column_wins_over_detection(tmp_path):
    """NAME=FILE:column reads that column even when an earlier one holds barcodes too."""
    path = tmp_path / "inv.tsv"
    path.write_text("source\ttarget\nTCGA-AA-0001\tTCGA-BB-0002\n")
    assert ids(path, "target") == [(2, "TCGA-BB-0002")]


def test_json_arrays_stream_item_by_item_across_buffer_refills(tmp_path, monkeypatch):
    """A 7-character buffer still decodes strings, records, numbers and nesting, with each item's line."""
    monkeypatch.setattr(inventory, "_CHUNK", 7)
    path = tmp_path / "inv.json"
    path.write_text('[\n  {"slide": "TCGA-AA-0001", "meta": {"n": [1, 2]}},\n  {"slide": "TCGA-BB-0002"},\n'
                    '  {"slide": 12345}\n]\n')
    assert ids(path) == [(2, "TCGA-AA-0001"), (3, "TCGA-BB-0002"), (4, "12345")]
    path.write_text('["TCGA-AA-0001",\n"tcga-bb-0002", 123456789]')
    assert ids(path) == [(1, "TCGA-AA-0001"), (2, "tcga-bb-0002"), (2, "123456789")]
    path.write_text("[]")
    assert ids(path) == []


@pytest.mark.parametrize(("content", "message"), [
    ('[\n"TCGA-AA-0001",\n"TCGA-BB-0002"\n"TCGA-CC-0003"]', r"inv\.json:4: found '\"' after an item"),
    ('[\n"TCGA-AA-0001",\n{"slide": }\n]', r"inv\.json:3: not valid JSON"),
    ('{"data": ["TCGA-AA-0001"]}', r"inv\.json:1: the file does not start with '\['.*name the file \.jsonl"),
])
def test_broken_json_names_the_file_and_line(tmp_path, content, message):
    """JSON errors point at the line and say what an inventory should look like."""
    path = tmp_path / "inv.json"
    path.write_text(content)
    with pytest.raises(InventoryError, match=message):
        ids(path)


def test_jsonl_records_and_lmms_eval_sample_logs(tmp_path):
    """JSONL records use their barcode field; a sample-log line is read through its doc."""
    records = tmp_path / "inv.jsonl"
    records.write_text('{"id": 1, "wsi": "TCGA-AA-0001.svs"}\n\n{"id": 2, "wsi": "TCGA-BB-0002.svs"}\n')
    assert ids(records) == [(1, "TCGA-AA-0001.svs"), (3, "TCGA-BB-0002.svs")]
    log = tmp_path / "samples.jsonl"
    log.write_text("\n".join(json.dumps({"doc_id": i, "doc": {"question": "q?", "slide_id": s},
                                         "target": "A", "exact_match": 1.0})
                             for i, s in enumerate(["TCGA-AA-0001", "TCGA-CC-0003"])) + "\n")
    assert ids(log) == [(1, "TCGA-AA-0001"), (2, "TCGA-CC-0003")]
    with pytest.raises(InventoryError, match=r"inv\.jsonl:2: not valid JSON"):
        records.write_text('{"wsi": "TCGA-AA-0001"}\n{"wsi": \n')
        ids(records)


def test_parquet_reads_only_text_columns_and_gzip_is_transparent(tmp_path):
    """A benchmark parquet with image bytes yields its slide column; a .txt.gz list reads like a .txt."""
    table = pa.table({"image": [b"\x89PNG...", b"\x89PNG..."], "question": ["q1", "q2"],
                      "slide_id": ["TCGA-AA-0001-01Z-00-DX1", "TCGA-BB-0002"]})
    pq.write_table(table, tmp_path / "bench.parquet")
    assert ids(tmp_path / "bench.parquet") == [(1, "TCGA-AA-0001-01Z-00-DX1"), (2, "TCGA-BB-0002")]
    with gzip.open(tmp_path / "slides.txt.gz", "wt") as handle:
        handle.write("TCGA-AA-0001\nTCGA-BB-0002\n")
    assert ids(tmp_path / "slides.txt.gz") == [(1, "TCGA-AA-0001"), (2, "TCGA-BB-0002")]


def test_missing_columns_name_the_available_ones(tmp_path):
    """A named column that is absent, or no barcode column among several, asks for NAME=FILE:column."""
    path = tmp_path / "inv.csv"
    path.write_text("slide,label\nTCGA-AA-0001,x\n")
    with pytest.raises(InventoryError, match=r"inv\.csv: no column 'wsi'; columns: slide, label"):
        ids(path, "wsi")
    path.write_text("a,b\nCPTAC-1,x\n")
    with pytest.raises(InventoryError, match=r"no column holds a TCGA barcode in the first 1 rows; name the id "
                                             r"column as NAME=FILE:column \(columns: a, b\)"):
        ids(path)
    records = tmp_path / "inv.jsonl"
    records.write_text('{"slide": "TCGA-AA-0001"}\n')
    with pytest.raises(InventoryError, match=r"no column 'wsi' in the first 1 rows; name one of: slide"):
        ids(records, "wsi")


def test_binary_files_are_refused(tmp_path):
    """A file that is not text (an image, a zip) is named, not read as garbage ids."""
    path = tmp_path / "slides.txt"
    path.write_bytes(b"PK\x03\x04\x00\x00binary")
    with pytest.raises(InventoryError, match=r"slides\.txt: looks binary"):
        ids(path)


def test_source_specs(tmp_path):
    """NAME=FILE, NAME=FILE:column; a bad name, a missing file and a column on a text list are errors."""
    (tmp_path / "a.csv").write_text("slide\n")
    (tmp_path / "a.txt").write_text("")
    assert parse_source(f"wsi-bench={tmp_path}/a.csv:slide") == Source("wsi-bench", tmp_path / "a.csv", "slide")
    with pytest.raises(InventoryError, match="expected NAME=FILE or NAME=FILE:column"):
        parse_source(f"{tmp_path}/a.csv")
    with pytest.raises(InventoryError, match=r"--test gone: no such file: .*missing\.csv"):
        parse_source(f"gone={tmp_path}/missing.csv", "--test")
    with pytest.raises(InventoryError, match="is a plain list of ids; ':slide' applies to CSV"):
        parse_source(f"t={tmp_path}/a.txt:slide")
