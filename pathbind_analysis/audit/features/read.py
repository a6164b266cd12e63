"""Embedding files as named columns: Parquet, .npy/.npz, .pt, HDF5 (one file, or a folder of one file per slide)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

FORMATS_HELP = (".parquet (a list column, or one numeric column per dimension: 0..D-1, dim_0.., f1..); .npy with "
                "--ids FILE (one id per line); .npz (a string array of ids and an N×D array, e.g. ids + "
                "embeddings); .pt (a dict of an id list and an N×D tensor, or a dict slide id -> tensor, or one "
                "N×D tensor with --ids); .h5/.hdf5 (a string dataset of ids and an N×D dataset, or one dataset or "
                "group per slide named by its id); or a folder of one .h5/.pt file per slide (id = file stem, "
                "dataset 'features')")
PER_SLIDE_SUFFIXES = (".h5", ".hdf5", ".pt")
_INDEXED = re.compile(r"^(.*?)(\d+)$")
# An HDF5 dataset may compress well, but not by more than this over what the file stores, once it is this large.
MAX_EXPANSION = 1000
MAX_UNSTORED_BYTES = 64 * 2**20


class FeatureInputError(ValueError):
    """An embeddings input the audit cannot read; the message names the file, column or array and the fix."""


@dataclass
class Table:
    """An embeddings input as columns: text labels and per-row vectors (None where missing), not yet validated.

    ``pooled`` counts rows whose N×D patch features were pooled into one vector (see :func:`pool_patches`);
    ``ignored`` names the arrays that are neither labels nor vectors, with why.
    """

    path: Path
    format: str
    labels: dict[str, list[str | None]] = field(default_factory=dict)
    vectors: dict[str, list[np.ndarray | None]] = field(default_factory=dict)
    pooled: int = 0
    ignored: dict[str, str] = field(default_factory=dict)


def read_table(path: Path, ids_file: Path | None = None) -> Table:
    """Read ``path`` (a file, or a folder of per-slide files) in the format its suffix names."""
    if path.is_dir():
        return _read_folder(path)
    if not path.is_file():
        raise FeatureInputError(f"no such file or folder: {path}")
    suffix = path.suffix.lower()
    if ids_file is not None and suffix not in (".npy", ".pt"):
        raise FeatureInputError(f"--ids names the rows of a bare array (.npy, or a .pt holding one tensor); "
                                f"{path.name} carries its own ids")
    readers = {".parquet": _read_parquet, ".npz": _read_npz, ".h5": _read_hdf5, ".hdf5": _read_hdf5,
               ".npy": lambda p: _bare_array(p, "npy", np.load(p, allow_pickle=False), ids_file),
               ".pt": lambda p: _read_torch(p, ids_file)}
    if suffix not in readers:
        raise FeatureInputError(f"{path.name}: unknown embeddings format {suffix or '(no suffix)'!r}; read are "
                                + FORMATS_HELP)
    return _reading(path, readers[suffix])


def _reading(path: Path, reader: Callable[[Path], Any]) -> Any:
    """``reader(path)``, with a damaged or foreign file reported as a FeatureInputError that names it."""
    try:
        return reader(path)
    except FeatureInputError:
        raise
    except Exception as exc:  # each library has its own errors (ArrowInvalid, BadZipFile, UnpicklingError, …)
        raise FeatureInputError(f"{path.name}: not a readable {path.suffix} file ({exc})") from exc


def pool_patches(features: np.ndarray) -> np.ndarray:
    """One slide vector from its features: a D vector (or 1×D) as it is; N×D patch features ℓ2-normalised per
    patch, then mean-pooled (the paper's slide representation for patch encoders such as CONCH)."""
    features = np.asarray(features, dtype=np.float64)
    if features.ndim == 2 and features.shape[0] > 1:
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # a zero or NaN patch: non-finite slide
            # Each patch scaled by its largest value first, so that values of 1e200 or 1e-200 neither overflow
            # nor underflow when squared; the direction, hence the normalised patch, is the same.
            features = features / np.abs(features).max(axis=1, keepdims=True)
            return (features / np.linalg.norm(features, axis=1, keepdims=True)).mean(axis=0)
    return features.reshape(-1)


# -- Parquet ---------------------------------------------------------------------------------------------------------

def _read_parquet(path: Path) -> Table:
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow = pq.read_table(path)
    table = Table(path, "parquet")
    scalars: dict[str, Any] = {}
    for name, column in zip(arrow.column_names, arrow.columns, strict=True):
        kind = column.type
        if name.startswith("__index_level_"):  # pandas' saved index: not data
            continue
        if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
            if pa.types.is_integer(kind.value_type) or pa.types.is_floating(kind.value_type):
                values = column.to_numpy(zero_copy_only=False)
                table.vectors[name] = [None if v is None else np.asarray(v, dtype=np.float64) for v in values]
            else:
                table.ignored[name] = f"a list of {kind.value_type}, not of numbers"
            continue
        scalars[name] = column
    for name, members in _dimension_groups(scalars).items():
        block = np.column_stack([scalars.pop(m).to_numpy(zero_copy_only=False).astype(np.float64) for m in members])
        table.vectors[name] = list(block)  # a null cell reads NaN: a non-finite vector
    table.labels = {name: _texts(column.to_pylist()) for name, column in scalars.items()}
    return table


def _dimension_groups(scalars: dict[str, Any]) -> dict[str, list[str]]:
    """Numeric columns named prefix+0..D-1 (or 1..D), D ≥ 2, as one vector named ``prefix{first}..prefix{last}``."""
    import pyarrow as pa

    groups: dict[str, dict[int, str]] = {}
    for name, column in scalars.items():
        match = _INDEXED.match(name)
        if match and (pa.types.is_floating(column.type) or pa.types.is_integer(column.type)):
            groups.setdefault(match[1], {})[int(match[2])] = name
    found = {}
    for members in groups.values():
        order = sorted(members)
        if len(order) >= 2 and order[0] in (0, 1) and order == list(range(order[0], order[0] + len(order))):
            found[f"{members[order[0]]}..{members[order[-1]]}"] = [members[i] for i in order]
    return found


# -- NumPy, torch ----------------------------------------------------------------------------------------------------

def _read_npz(path: Path) -> Table:
    table = Table(path, "npz")
    with np.load(path, allow_pickle=False) as arrays:
        for name in arrays.files:
            try:
                _add_array(table, name, arrays[name])
            except ValueError as exc:  # object arrays need pickle, which a data file must not run
                raise FeatureInputError(f"{path.name}: array {name!r} cannot be read without pickle; save ids as "
                                        "a string array (np.array(ids, dtype=str))") from exc
    return table


def _read_torch(path: Path, ids_file: Path | None) -> Table:
    import torch

    loaded = torch.load(path, map_location="cpu", weights_only=True)  # no pickle code runs
    if isinstance(loaded, torch.Tensor):
        return _bare_array(path, "pt", loaded.double().numpy(), ids_file)
    if ids_file is not None:
        raise FeatureInputError(f"{path.name} holds a {type(loaded).__name__}, not one tensor: --ids does not apply")
    if not isinstance(loaded, dict):
        raise FeatureInputError(f"{path.name}: expected a tensor or a dict, found a {type(loaded).__name__}")
    table = Table(path, "pt")
    if any(_is_text_list(value) for value in loaded.values()):  # columns: {"ids": [...], "embeddings": N×D}
        for name, value in loaded.items():
            _add_array(table, str(name), value.double().numpy() if isinstance(value, torch.Tensor) else value)
        return table
    for name, value in loaded.items():  # {slide id: D vector or N×D patch features}
        if not isinstance(value, torch.Tensor):
            raise FeatureInputError(f"{path.name}: entry {name!r} is a {type(value).__name__}; a dict of slides "
                                    "maps each slide id to a tensor")
        _add_slide(table, str(name), value.double().numpy())
    return table


def _bare_array(path: Path, fmt: str, array: np.ndarray, ids_file: Path | None) -> Table:
    if ids_file is None:
        raise FeatureInputError(f"{path.name} holds one array without ids: give --ids FILE (one id per line, in "
                                "row order)")
    if array.ndim != 2:
        raise FeatureInputError(f"{path.name}: expected an N×D array, found shape {tuple(array.shape)}")
    if not ids_file.is_file():
        raise FeatureInputError(f"--ids: no such file: {ids_file}")
    ids = ids_file.read_text(encoding="utf-8").splitlines()
    while ids and not ids[-1].strip():  # a trailing blank line is the file's end, not an id
        ids.pop()
    if len(ids) != len(array):
        raise FeatureInputError(f"--ids {ids_file.name} has {len(ids):,} lines for the {len(array):,} rows of "
                                f"{path.name}")
    return Table(path, fmt, labels={"id": _texts(ids)}, vectors={"embedding": list(array.astype(np.float64))})


# -- HDF5 and folders ------------------------------------------------------------------------------------------------

def _read_hdf5(path: Path) -> Table:
    import h5py

    table = Table(path, "hdf5")
    with h5py.File(path, "r") as handle:
        datasets = {name: item for name, item in handle.items() if isinstance(item, h5py.Dataset)}
        if any(_is_text_dataset(item) for item in datasets.values()):  # columns: ids + an N×D dataset
            for name, item in datasets.items():
                _add_array(table, name, _dataset_values(item, f"{path.name}:{name}"))
            for name in handle.keys() - datasets.keys():
                table.ignored[name] = "a group beside the id and vector datasets"
            return table
        for name, item in handle.items():  # one dataset, or one group holding 'features', per slide
            _add_slide(table, name, _slide_features(item, f"{path.name}:{name}"))
    return table


def _read_folder(folder: Path) -> Table:
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in PER_SLIDE_SUFFIXES and p.is_file())
    if not files:
        raise FeatureInputError(f"{folder}: a folder of embeddings holds one .h5, .hdf5 or .pt file per slide; "
                                "found none")
    table = Table(folder, "folder")
    for number, path in enumerate(files, 1):
        _add_slide(table, path.stem, _reading(path, _file_features))
        if number % 1000 == 0:
            print(f"read {number:,} of {len(files):,} slide files", flush=True)
    table.ignored |= {p.name: "not a .h5, .hdf5 or .pt file" for p in folder.iterdir()
                      if p.suffix.lower() not in PER_SLIDE_SUFFIXES}
    return table


def _file_features(path: Path) -> np.ndarray:
    if path.suffix.lower() == ".pt":
        import torch

        loaded = torch.load(path, map_location="cpu", weights_only=True)
        if isinstance(loaded, dict) and isinstance(loaded.get("features"), torch.Tensor):
            loaded = loaded["features"]
        if not isinstance(loaded, torch.Tensor):
            raise FeatureInputError(f"{path.name}: expected a tensor (or a dict with 'features'), found a "
                                    f"{type(loaded).__name__}")
        return loaded.double().numpy()
    import h5py

    with h5py.File(path, "r") as handle:
        return _slide_features(handle, path.name)


def _slide_features(item: Any, where: str) -> np.ndarray:
    """A slide's dataset, or its group's ``features`` dataset (the name CLAM and Trident write)."""
    import h5py

    if isinstance(item, h5py.Dataset):
        return np.asarray(_dataset_values(item, where), dtype=np.float64)
    if "features" in item and isinstance(item["features"], h5py.Dataset):
        return np.asarray(_dataset_values(item["features"], f"{where}/features"), dtype=np.float64)
    raise FeatureInputError(f"{where}: no 'features' dataset (found {', '.join(item.keys()) or 'nothing'})")


def _dataset_values(item: Any, where: str) -> np.ndarray:
    """An HDF5 dataset's values, after checking the size its header declares against what the file stores and
    the memory there is: a damaged 2 KB file declaring 10^8 values is refused before gigabytes are allocated."""
    declared = int(np.prod(item.shape, dtype=np.float64)) * item.dtype.itemsize
    stored = item.id.get_storage_size()  # bytes of data written (compressed); unwritten chunks are not stored
    if declared > MAX_UNSTORED_BYTES and declared > MAX_EXPANSION * max(stored, 1):
        raise FeatureInputError(f"{where}: its header declares {_size(declared)} of data ({item.shape} "
                                f"{item.dtype}) but the file stores {_size(stored)}: a damaged or unfinished file")
    if declared > _memory() // 2:
        raise FeatureInputError(f"{where}: {_size(declared)} of data ({item.shape} {item.dtype}) is more than "
                                f"half of this machine's memory ({_size(_memory())})")
    return np.asarray(item[()])


def _memory() -> int:
    """Physical memory in bytes (unknown: taken as unlimited)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def _size(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB" if n < 2**30 else f"{n / 2**30:,.2f} GiB"


def _add_slide(table: Table, slide_id: str, features: np.ndarray) -> None:
    if features.ndim not in (1, 2) or not np.issubdtype(features.dtype, np.number):
        raise FeatureInputError(f"{table.path.name}: slide {slide_id!r} has features of shape "
                                f"{tuple(features.shape)}; expected D or N×D numbers")
    table.pooled += int(features.ndim == 2 and features.shape[0] > 1)
    table.labels.setdefault("id", []).append(slide_id)
    table.vectors.setdefault("features", []).append(pool_patches(features))


def _add_array(table: Table, name: str, value: Any) -> None:
    """A column from one named array: text (or 1-D numbers) as labels, N×D numbers as vectors."""
    array = np.asarray(value)
    if (array.ndim == 1 and array.dtype.kind in "USOiu") or _is_text_list(value):  # ids, sites, cases
        table.labels[name] = _texts(array.tolist())
    elif array.ndim == 2 and array.dtype.kind in "iuf":
        table.vectors[name] = list(array.astype(np.float64))
    else:
        table.ignored[name] = f"shape {tuple(array.shape)} of {array.dtype}: neither ids/labels nor N×D vectors"


def _texts(values: list[Any]) -> list[str | None]:
    return [None if v is None else v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in values]


def _is_text_list(value: Any) -> bool:
    return isinstance(value, list | tuple) and bool(value) and all(isinstance(v, str) for v in value)


def _is_text_dataset(item: Any) -> bool:
    return item.ndim == 1 and item.dtype.kind in "SOU"
