"""Image sources of the duplicate audit: folders, text lists of paths, single images and Parquet image columns."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pathbind_analysis.audit.leakage.inventory import SOURCE_NAME, InventoryError, open_text, split_column

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp", ".gif"})
# Tables that a text list of paths is not: read as one, every row (a header, several columns) would be a missing file.
TABLE_SUFFIXES = frozenset({".csv", ".tsv", ".tab", ".json", ".jsonl", ".ndjson", ".xlsx", ".xls", ".npy", ".npz",
                            ".pt", ".h5", ".hdf5", ".feather", ".arrow"})
ID_COLUMNS = ("id", "image_id", "uid", "key", "file_name", "filename", "name")  # first found names a Parquet row
_BATCH_ROWS = 64  # Parquet rows decoded at a time: embedded images stay on disk until hashed


class DuplicateError(InventoryError):
    """An input the duplicate audit cannot read; the message names the file or column and the fix."""


@dataclass(frozen=True)
class ImageSource:
    """One ``[NAME=]PATH[:image_column[,id_column]]`` argument."""

    name: str
    path: Path
    image_column: str | None = None
    id_column: str | None = None

    @property
    def kind(self) -> str:
        if self.path.is_dir():
            return "folder"
        suffix = self.path.suffix.lower()
        return "parquet" if suffix == ".parquet" else "image" if suffix in IMAGE_SUFFIXES else "list"


@dataclass(frozen=True)
class ImageItem:
    """One image to hash: embedded ``data`` (Parquet bytes) or a file ``path``, named by ``id`` in the report."""

    id: str
    path: str | None = None
    data: bytes | None = None

    def encoded(self) -> dict[str, Any]:
        """The ``{bytes, path}`` value ``datasets`` decodes (bytes win, as there)."""
        return {"bytes": self.data, "path": self.path}


def parse_image_source(text: str, option: str) -> ImageSource:
    """``[NAME=]PATH[:image_column[,id_column]]``; NAME defaults to the file or folder name without suffix."""
    name, sep, rest = text.partition("=")
    if not sep or not SOURCE_NAME.fullmatch(name) or Path(text).exists():
        name, rest = "", text
    path, columns = split_column(rest)
    if not path.exists():
        raise DuplicateError(f"{option} {text!r}: no such file or folder: {path}")
    image_column, _, id_column = (columns or "").partition(",")
    source = ImageSource(name or path.stem or path.resolve().name, path, image_column or None, id_column or None)
    if source.kind == "list" and path.suffix.lower() in TABLE_SUFFIXES:
        raise DuplicateError(f"{option} {text!r}: {path.name} is a {path.suffix.lower()[1:].upper()} table, not an "
                             "image source; give a folder, an image, a text list of image paths (one per line, "
                             "e.g. a .txt) or a .parquet file with an image or path column")
    if columns and source.kind != "parquet":
        raise DuplicateError(f"{option} {text!r}: ':{columns}' names Parquet columns, but {path} is a "
                             f"{source.kind}")
    return source


def iter_items(source: ImageSource) -> Iterator[ImageItem]:
    """The source's images in a fixed order (folders: sorted relative paths), read as a stream."""
    if source.kind == "folder":
        for path in sorted(p for p in source.path.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file()):
            yield ImageItem(path.relative_to(source.path).as_posix(), path=str(path))
    elif source.kind == "image":
        yield ImageItem(source.path.name, path=str(source.path))
    elif source.kind == "list":
        yield from _listed(source.path)
    else:
        yield from _parquet_items(source)


def _listed(path: Path) -> Iterator[ImageItem]:
    """One image path per line (``#`` comments); relative paths are relative to the list's folder."""
    with open_text(path) as handle:
        for line in handle:
            entry = line.strip()
            if entry and not entry.startswith("#"):
                yield ImageItem(entry, path=str(path.parent / entry))


def _parquet_items(source: ImageSource) -> Iterator[ImageItem]:
    parquet, columns = _open_parquet(source)
    row = 0
    for batch in parquet.iter_batches(batch_size=_BATCH_ROWS, columns=columns):
        for record in batch.to_pylist():
            yield _parquet_item(record, columns, row, source.path)
            row += 1


def _open_parquet(source: ImageSource) -> tuple[Any, list[str]]:
    """The Parquet file and the columns to read: the image column, then the id column if there is one."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(source.path)
    except (OSError, pa.ArrowException) as exc:
        raise DuplicateError(f"{source.path}: unreadable Parquet ({exc})") from None
    schema = parquet.schema_arrow
    image_column = source.image_column or _image_column(schema, source.path)
    id_column = source.id_column or next((c for c in ID_COLUMNS if c in schema.names and c != image_column), None)
    for column in (image_column, id_column):
        if column is not None and column not in schema.names:
            raise DuplicateError(f"{source.path}: no column {column!r}; columns: {', '.join(schema.names)}")
    return parquet, [image_column] + ([id_column] if id_column else [])


def _image_column(schema: Any, path: Path) -> str:
    """The image column: an HF ``Image`` struct ``{bytes, path}``, else binary, else a text column named image*."""
    import pyarrow as pa

    def is_image_struct(field: Any) -> bool:
        return pa.types.is_struct(field.type) and "bytes" in [child.name for child in field.type]

    def is_binary(field: Any) -> bool:
        return pa.types.is_binary(field.type) or pa.types.is_large_binary(field.type)

    def is_path_text(field: Any) -> bool:
        text = pa.types.is_string(field.type) or pa.types.is_large_string(field.type)
        return text and field.name.lower() in ("image", "image_path", "path", "file", "img")

    for test in (is_image_struct, is_binary, is_path_text):
        found = [field.name for field in schema if test(field)]
        if found:
            return str(found[0])
    raise DuplicateError(f"{path}: no image column (an HF Image struct {{bytes, path}}, a binary column, or paths in "
                         f"a column named image or image_path); name it as PATH:column (columns: "
                         f"{', '.join(f'{f.name} ({f.type})' for f in schema) or 'none'})")


def _parquet_item(record: dict[str, Any], columns: list[str], row: int, path: Path) -> ImageItem:
    """A row's image (bytes, a ``{bytes, path}`` struct or a path relative to the Parquet file's folder), named by
    the id column, else the stored path, else ``row N`` (from 1)."""
    value = record.get(columns[0])
    key = record.get(columns[1]) if len(columns) > 1 else None
    stored = value.get("path") if isinstance(value, dict) else value if isinstance(value, str) else None
    data = value.get("bytes") if isinstance(value, dict) else value if isinstance(value, bytes) else None
    file = str(path.parent / stored) if stored and data is None else stored
    return ImageItem(str(key) if key is not None else stored or f"row {row + 1}", path=file, data=data)


def fetch_items(source: ImageSource, positions: set[int]) -> dict[int, ImageItem]:
    """The items at these places of :func:`iter_items`'s listing (Parquet: reading only their row groups)."""
    if source.kind != "parquet":
        found = {}
        for position, item in enumerate(iter_items(source)):
            if position in positions:
                found[position] = item
                if len(found) == len(positions):
                    break
        return found
    parquet, columns = _open_parquet(source)
    first, found = 0, {}
    for group in range(parquet.num_row_groups):
        size = parquet.metadata.row_group(group).num_rows
        wanted = sorted(p for p in positions if first <= p < first + size)
        if wanted:
            table = parquet.read_row_group(group, columns=columns).take([p - first for p in wanted])
            for position, record in zip(wanted, table.to_pylist(), strict=True):
                found[position] = _parquet_item(record, columns, position, source.path)
        first += size
    return found


def check_source(source: ImageSource, option: str) -> None:
    """Fail now, not after hours of hashing, on an input without images or a Parquet file without an image column."""
    if next(iter_items(source), None) is None:
        raise DuplicateError(f"{option} {source.name}: no images in {source.path}"
                             + (f" (looked for {' '.join(sorted(IMAGE_SUFFIXES))})" if source.kind == "folder" else ""))
