"""The files a data source's folder holds, as its README documents them: what ``pathbind data check`` expects."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

from pathbind.data import saved_dataset


@dataclass(frozen=True)
class Layout:
    """The published layout of ``$PATHBIND_DATA/<name>/``, declared once per source as ``LAYOUT`` in the module of
    its tasks' ``process_docs``.

    Parameters
    ----------
    data
        Glob patterns relative to the folder; each must match a file, unless the folder is a ``save_to_disk`` copy
        (which any data folder may be). ``("test.parquet",)``, ``("data.json",)``.
    images
        Where the image files are: folders (``"images/"``, with the slash) or archives (``"images.zip"``) relative to
        the folder, any one of which suffices; empty when the images are embedded in the data.
    readme
        Where the layout is documented, named in the report of what is missing.
    embedded
        Glob patterns of data files that carry their images (a parquet file with an image column), which a run reads
        instead of ``data`` (see ``pathbind.data.apply_data_root``): one of them needs no other file.

    Examples
    --------
    >>> Layout(data=("data.json",), images=("images/", "images.zip")).compare(Path("/no/such/folder"))
    ([], ['data.json', 'images/ or images.zip'])
    """

    data: tuple[str, ...]
    images: tuple[str, ...] = ()
    readme: str = ""
    embedded: tuple[str, ...] = ()

    def compare(self, folder: Path, read: list[str] | None = None) -> tuple[list[str], list[str]]:
        """(found, missing): the files of ``folder`` that match the layout, and each entry that nothing matches.

        ``read``: the data files a run reads from the folder (``pathbind.data.files_read``), when it reads any: those
        are its data whatever the patterns say (``test.jsonl`` for ``test.parquet``, a ``save_to_disk`` copy), and
        one that carries its images (``embedded``) needs no image folder beside it.
        """
        found, missing = [], []
        if read is not None:
            if any(fnmatch(name, pattern) for name in read for pattern in self.embedded):
                return read, []
            found.extend(read)
        elif saved_dataset(folder):
            found.append("a save_to_disk copy")
        else:
            data = [_matches(folder, (pattern,)) for pattern in self.data]
            carrying = _matches(folder, self.embedded)
            if carrying and not any(data):  # the run reads the file that carries the images
                return carrying, []
            for pattern, matches in zip(self.data, data, strict=True):
                found.extend(matches)
                if not matches:
                    missing.append(pattern)
        present = [name for name in self.images if _present(folder, name)]
        found.extend(present[:1])
        if self.images and not present:
            missing.append(" or ".join(self.images))
        return found, missing


def _matches(folder: Path, patterns: tuple[str, ...]) -> list[str]:
    return sorted(str(p.relative_to(folder)) for pattern in patterns for p in folder.glob(pattern) if p.is_file())


def _present(folder: Path, name: str) -> bool:
    """A folder entry (``images/``) must be a folder, an archive a file."""
    path = folder / name
    return path.is_dir() if name.endswith("/") else path.is_file()
