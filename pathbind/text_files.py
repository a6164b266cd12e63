"""Text data files in words: why a JSON, JSON Lines or CSV file cannot be read as data, naming the line and cause.

``datasets`` reads these files as UTF-8 and fails on anything else with ``DatasetGenerationError: An error occurred
while generating the dataset`` (the file and the cause only in a log line above it), and on an empty file with a
bare ``StopIteration``. :func:`text_file_problem` reads the file first and says what is wrong and how to fix it.
"""

from __future__ import annotations

import codecs
import csv
import json
from pathlib import Path

TEXT_SUFFIXES = (".json", ".jsonl", ".csv")
_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"), (codecs.BOM_UTF16_LE, "UTF-16"),
         (codecs.BOM_UTF16_BE, "UTF-16"))
SAVE_AS_UTF8 = "save it as UTF-8 (e.g. pandas' to_json/to_csv, or iconv -t UTF-8)"


def text_file_problem(path: Path) -> str:
    """Why ``path`` (a ``.json``, ``.jsonl`` or ``.csv`` file) cannot be read as data, "" when it can: not UTF-8
    (with the line and the byte, and the encoding it looks like), empty, or not valid JSON (with the line and
    column; a last line cut short says the file is truncated).

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "test.jsonl"
    >>> _ = path.write_text('{"a": 1}\\n{"a": ')
    >>> text_file_problem(path)
    'line 2 is cut short: not valid JSON (Expecting value: column 7); the file looks truncated: copy it again'
    """
    data = path.read_bytes()
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return f"is {encoding} text (it starts with a {encoding} byte-order mark), not UTF-8; {SAVE_AS_UTF8}"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        looks = "UTF-16 without a byte-order mark" if data[:200].count(b"\x00") > 10 else "Latin-1 or Windows-1252"
        return (f"line {line}: byte 0x{data[exc.start]:02x} is not UTF-8 (the file looks {looks}); {SAVE_AS_UTF8}")
    if not text.strip():
        return "is empty: no rows, nothing to evaluate"
    if path.suffix == ".csv":
        return _csv_problem(text)
    if path.suffix == ".json":  # one JSON value, or JSON Lines (datasets' json loader reads both)
        whole = _json_problem(text, lines=False)
        return whole and (_json_problem(text, lines=True) if "Extra data" in whole else whole)
    return _json_problem(text, lines=True)


def _json_problem(text: str, lines: bool) -> str:
    """Where ``text`` is not JSON (one value, or one per line)."""
    chunks = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()] if lines else [(1, text)]
    last = chunks[-1][0]
    for first_line, chunk in chunks:
        try:
            json.loads(chunk)
        except json.JSONDecodeError as exc:
            line = first_line + exc.lineno - 1
            # the last line of a file that ends mid-line (JSON Lines end each line), or an error at the very end
            cut = line >= last and (not text.endswith("\n") if lines else exc.pos >= len(chunk.rstrip()) - 1)
            where = f"line {line} is cut short" if cut else f"line {line}"
            fix = "the file looks truncated: copy it again" if cut else "fix that line"
            return f"{where}: not valid JSON ({exc.msg}: column {exc.colno}); {fix}"
    return ""


def _csv_problem(text: str) -> str:
    """Where ``text`` is not CSV with a header and at least one row."""
    try:
        rows = sum(1 for _ in csv.reader(text.splitlines()))
    except csv.Error as exc:
        return f"is not valid CSV ({exc})"
    return "" if rows > 1 else "has a header and no rows: nothing to evaluate"
