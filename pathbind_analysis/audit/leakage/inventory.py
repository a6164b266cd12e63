"""Streaming readers for slide inventories: text lists, CSV/TSV, JSON, JSONL, Parquet, lmms-eval sample logs."""

from __future__ import annotations

import csv
import gzip
import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from pathbind_metrics.tcga import classify

DETECT_ROWS = 1000  # rows read ahead to find the id column when none is named
FORMATS = {".txt": "text", ".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".json": "json", ".jsonl": "jsonl",
           ".ndjson": "jsonl", ".parquet": "parquet"}
SOURCE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")  # the NAME of a NAME=FILE argument
_CHUNK = 1 << 20


class InventoryError(ValueError):
    """An inventory the audit cannot read; the message names the file, line or column and the fix."""


@dataclass(frozen=True)
class Source:
    """One inventory file given as ``NAME=FILE[:column]``."""

    name: str
    path: Path
    column: str | None = None

    @property
    def format(self) -> str:
        suffixes = [s.lower() for s in self.path.suffixes if s.lower() != ".gz"]
        return FORMATS.get(suffixes[-1] if suffixes else "", "text")  # anything else: one id per line


def parse_source(text: str, option: str = "--train") -> Source:
    """``NAME=FILE`` or ``NAME=FILE:column``; the file must exist."""
    name, _, rest = text.partition("=")
    if not SOURCE_NAME.fullmatch(name) or not rest:
        raise InventoryError(f"{option} {text!r}: expected NAME=FILE or NAME=FILE:column, with a NAME of letters, "
                             "digits, '.', '_', '+' or '-'")
    path, column = split_column(rest)
    if not path.is_file():
        raise InventoryError(f"{option} {name}: no such file: {path}")
    source = Source(name, path, column)
    if source.column and source.format == "text":
        raise InventoryError(f"{option} {name}: {path} is a plain list of ids; ':{column}' applies to CSV, TSV, JSON, "
                             f"JSONL and Parquet files (or give the file a {', '.join(sorted(FORMATS))} suffix)")
    return source


def split_column(text: str) -> tuple[Path, str | None]:
    """``FILE`` or ``FILE:column``: the colon splits only when ``text`` is not itself an existing path."""
    if Path(text).exists() or ":" not in text:
        return Path(text), None
    head, _, column = text.rpartition(":")
    return Path(head), column or None


def iter_ids(source: Source) -> Iterator[tuple[int, str]]:
    """``(line, id)`` for each entry, reading the file as a stream (Parquet: row number for line)."""
    if source.format == "text":
        with open_text(source.path) as handle:
            for line, text in enumerate(handle, start=1):
                text = text.strip()
                if text and not text.startswith("#"):
                    yield line, text
        return
    if source.format == "parquet":
        yield from _ids(_parquet_rows(source), source)
        return
    with open_text(source.path) as handle:
        if source.format in ("csv", "tsv"):
            yield from _ids(_table_rows(handle, source), source)
        else:
            yield from _ids(iter_records(handle, source.format, str(source.path)), source)


def iter_records(handle: TextIO, fmt: str, where: str) -> Iterator[tuple[int, Any]]:
    """``(line, value)`` per item of a JSON array (decoded one item at a time) or per JSONL line."""
    if fmt == "json":
        yield from _json_array(handle, where)
        return
    for line, text in enumerate(handle, start=1):
        if text.strip():
            try:
                yield line, json.loads(text)
            except json.JSONDecodeError as exc:
                raise InventoryError(f"{where}:{line}: not valid JSON ({exc.msg}); a JSONL file holds one JSON value "
                                     "per line") from None


def doc_of(value: Any) -> Any:
    """The document of an lmms-eval sample-log line (``{"doc_id", "doc", ...}``); other values unchanged."""
    if isinstance(value, dict) and "doc_id" in value and isinstance(value.get("doc"), dict):
        return value["doc"]
    return value


def detect_field(rows: list[dict[str, Any]], where: str) -> str:
    """The first field holding TCGA barcodes (else TCGA-like text, else the only text field) in ``rows``."""
    fields = list(dict.fromkeys(key for row in rows for key in row))
    for wanted in ("tcga", "malformed"):
        for field in fields:
            if any(isinstance(row.get(field), str) and classify(row[field])[0] == wanted for row in rows):
                return field
    texts = [field for field in fields if any(isinstance(row.get(field), str) for row in rows)]
    if len(texts) == 1:
        return texts[0]  # a single id column without TCGA barcodes: every entry is of unknown provenance
    raise InventoryError(f"{where}: no column holds a TCGA barcode in the first {len(rows)} rows; name the id "
                         f"column as NAME=FILE:column (columns: {', '.join(map(str, fields)) or 'none'})")


def _ids(rows: Iterator[tuple[int, Any]], source: Source) -> Iterator[tuple[int, str]]:
    head = [(line, doc_of(value)) for line, value in itertools.islice(rows, DETECT_ROWS)]
    records = [value for _, value in head if isinstance(value, dict)]
    field = source.column
    if records and field is None:
        field = detect_field(records, str(source.path))
    elif records and not any(field in record for record in records):
        fields = ", ".join(dict.fromkeys(str(key) for record in records for key in record))
        raise InventoryError(f"{source.path}: no column {field!r} in the first {len(records)} rows; "
                             f"name one of: {fields}")
    for line, value in itertools.chain(head, ((line, doc_of(value)) for line, value in rows)):
        if isinstance(value, dict):
            value = value.get(field)  # a row without the field is listed as unknown, by line
        yield line, "" if value is None else str(value)


def _table_rows(handle: TextIO, source: Source) -> Iterator[tuple[int, dict[str, str]]]:
    reader = csv.reader(handle, delimiter="\t" if source.format == "tsv" else ",")
    header = next(reader, None)
    if header is None:
        return
    if source.column is not None and source.column not in header:
        raise InventoryError(f"{source.path}: no column {source.column!r}; columns: {', '.join(header)}")
    try:
        for row in reader:
            if row:
                yield reader.line_num, dict(zip(header, row, strict=False))
    except csv.Error as exc:  # an unclosed quote, an oversized field
        raise InventoryError(f"{source.path}:{reader.line_num}: unreadable {source.format.upper()} ({exc})") from None


def _parquet_rows(source: Source) -> Iterator[tuple[int, dict[str, Any]]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(source.path)
    except (OSError, pa.ArrowException) as exc:
        raise InventoryError(f"{source.path}: unreadable Parquet ({exc})") from None
    texts = [f.name for f in parquet.schema_arrow if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    if source.column is not None and source.column not in parquet.schema_arrow.names:
        raise InventoryError(f"{source.path}: no column {source.column!r}; columns: "
                             f"{', '.join(parquet.schema_arrow.names)}")
    rows = (row for batch in parquet.iter_batches(columns=[source.column] if source.column else texts)
            for row in batch.to_pylist())  # only text columns are read: images stay on disk
    yield from enumerate(rows, start=1)


def _json_array(handle: TextIO, where: str) -> Iterator[tuple[int, Any]]:
    # json.load would hold the whole file: decode one item at a time from a sliding buffer instead.
    decoder = json.JSONDecoder()
    buffer, pos, line, eof = "", 0, 1, False

    def fill() -> None:
        nonlocal buffer, pos, eof
        chunk = handle.read(_CHUNK)
        buffer, pos, eof = buffer[pos:] + chunk, 0, not chunk

    def next_char() -> str:  # the next non-blank character, "" at the end of the file
        nonlocal pos, line
        while True:
            while pos < len(buffer) and buffer[pos].isspace():
                line += buffer[pos] == "\n"
                pos += 1
            if pos < len(buffer) or eof:
                return buffer[pos] if pos < len(buffer) else ""
            fill()

    def fail(message: str) -> InventoryError:
        return InventoryError(f"{where}:{line}: {message}; expected a JSON list of ids or of records "
                              "(one record per line is JSONL: name the file .jsonl)")

    if next_char() != "[":
        raise fail("the file does not start with '['")
    pos += 1
    if next_char() == "]":
        return
    while True:
        try:
            item, end = decoder.raw_decode(buffer, pos)
            complete = end < len(buffer) or eof  # a number cut at the buffer's end decodes too soon
        except json.JSONDecodeError as exc:
            if eof:
                raise fail(f"not valid JSON ({exc.msg})") from None
            complete = False
        if not complete:
            fill()
            continue
        yield line, item
        line += buffer.count("\n", pos, end)
        pos = end
        separator = next_char()
        pos += 1
        if separator == "]":
            return
        if separator != ",":
            raise fail(f"found {separator or 'the end of the file'!r} after an item")
        next_char()


def open_text(path: Path) -> TextIO:
    """Open a (possibly gzipped) UTF-8 text file, BOM or not; a binary one is refused by name."""
    handle: TextIO  # returned open: the caller's with-block closes it
    if path.suffix.lower() == ".gz":
        handle = gzip.open(path, "rt", encoding="utf-8-sig", errors="replace", newline="")  # noqa: SIM115
    else:
        handle = open(path, encoding="utf-8-sig", errors="replace", newline="")  # noqa: SIM115
    if "\0" in handle.read(4096):
        handle.close()
        raise InventoryError(f"{path}: looks binary; an inventory is a text list of ids, CSV, TSV, JSON, JSONL or "
                             "Parquet (name it by its suffix)")
    handle.seek(0)
    return handle

