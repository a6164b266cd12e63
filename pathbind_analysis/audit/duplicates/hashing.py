"""Perceptual hashes of images decoded as models are shown them: pHash (indexed) and dHash (confirms), 64 bits each."""

from __future__ import annotations

import os
import sys
import time
from array import array
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from itertools import islice

import numpy as np
from PIL import Image

from pathbind_analysis.audit.duplicates.sources import ImageItem, ImageSource, iter_items

PROGRESS_EVERY_S = 10.0
# A crop of more than a few percent moves a whole-image hash as far as an unrelated image's, so training images are
# also hashed in crop windows: a test image cut from one by up to 10% of each side lies a few percent from a window.
# (share of each side kept, horizontal place, vertical place); the first is the whole image.
WINDOWS = [(1.0, 0.5, 0.5)] + [(scale, x, y) for scale in (0.95, 0.9) for y in (0.0, 0.5, 1.0) for x in (0.0, 0.5, 1.0)]
REPEAT_EXAMPLES = 20  # repeated files quoted in the report
_WORKER_BATCH = 64  # images handed to a worker at a time: memory stays bounded by one batch per worker
Result = list[tuple[int, int]] | str  # (phash, dhash) per window, or why the image could not be read


@dataclass
class Hashes:
    """One side's hashes in input order: per image its id, source and place; per hash (window) its image."""

    ids: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)  # place in the side's listing, to fetch the image again
    source_sizes: list[int] = field(default_factory=list)  # images listed by each ImageSource, in order
    phash: array = field(default_factory=lambda: array("Q"))  # 8 bytes a hash, not a Python int's 36
    dhash: array = field(default_factory=lambda: array("Q"))
    image: array = field(default_factory=lambda: array("q"))  # the image (index into ids) of each hash
    window: array = field(default_factory=lambda: array("B"))  # the WINDOWS entry of each hash
    unreadable: list[dict[str, str]] = field(default_factory=list)  # {"source", "id", "reason"}
    n_repeated: int = 0  # files listed again on this side: hashed once
    repeated: list[dict[str, str]] = field(default_factory=list)  # the first few: {"source", "id", "same_as"}

    def add(self, source: str, position: int, image_id: str, result: Result) -> None:
        """Record one image's hashes (each window's), or why it is unreadable."""
        if isinstance(result, str):
            self.unreadable.append({"source": source, "id": image_id, "reason": result})
            return
        for window, (phash, dhash) in enumerate(result):
            self.phash.append(phash)
            self.dhash.append(dhash)
            self.image.append(len(self.ids))
            self.window.append(window)
        self.ids.append(image_id)
        self.sources.append(source)
        self.positions.append(position)

    def repeat(self, source: str, image_id: str, same_as: str) -> None:
        self.n_repeated += 1
        if len(self.repeated) < REPEAT_EXAMPLES:
            self.repeated.append({"source": source, "id": image_id, "same_as": same_as})

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """pHash, dHash, image and window of every hash as numpy arrays (views, no copy)."""
        return (np.frombuffer(self.phash, np.uint64), np.frombuffer(self.dhash, np.uint64),
                np.frombuffer(self.image, np.int64), np.frombuffer(self.window, np.uint8))


def image_hashes(item: ImageItem, crops: bool = False) -> Result:
    """``(phash, dhash)`` of the image (and with ``crops`` of every crop window) as 64-bit integers, or why it
    cannot be read (the evaluation's own reason: truncated, too large, undecodable)."""
    from pathbind_tasks.common.images import image_problem, max_pixels, rgb_image

    problem = image_problem(item.encoded(), max_pixels())
    if problem:
        return str(problem)
    # 16-bit and greyscale images map to 8 bits by declared depth (not clipped to white), RGBA drops alpha.
    grey = rgb_image(item.encoded()).convert("L")  # both hashes read luminance: convert once, not per window
    return [_hash_pair(_window(grey, *window)) for window in (WINDOWS if crops else WINDOWS[:1])]


def _window(image: Image.Image, scale: float, x: float, y: float) -> Image.Image:
    if scale == 1.0:
        return image
    width, height = round(scale * image.width), round(scale * image.height)
    left, top = round(x * (image.width - width)), round(y * (image.height - height))
    return image.crop((left, top, left + width, top + height))


def _hash_pair(image: Image.Image) -> tuple[int, int]:
    import imagehash

    return int(str(imagehash.phash(image)), 16), int(str(imagehash.dhash(image)), 16)


def _hash_batch(items: list[tuple[int, ImageItem]], crops: bool) -> list[Result]:
    return [image_hashes(item, crops) for _, item in items]


def hash_side(sources: list[ImageSource], label: str, workers: int, crops: bool = False) -> Hashes:
    """Hash every image of every source, streaming; a progress line goes to stderr every ten seconds. A file listed
    again on this side (another spelling of its path, another list or folder naming it) is hashed once: the
    repeat is counted in ``repeated``, never assessed twice."""
    hashes, started, last = Hashes(), time.monotonic(), time.monotonic()
    seen: dict[str, str] = {}  # resolved file path -> the id it was first hashed under
    with ProcessPoolExecutor(workers) if workers > 1 else _Inline() as pool:
        for source in sources:
            first = len(hashes.positions) + len(hashes.unreadable) + hashes.n_repeated
            listed = _first_listings(source, seen, hashes, first)
            for batch, results in _batched_results(listed, pool, workers, crops):
                for (position, item), result in zip(batch, results, strict=True):
                    hashes.add(source.name, position, item.id, result)
                if time.monotonic() - last >= PROGRESS_EVERY_S:
                    last = time.monotonic()
                    _progress(label, hashes, last - started)
            hashes.source_sizes.append(len(hashes.positions) + len(hashes.unreadable) + hashes.n_repeated - first)
    _progress(label, hashes, time.monotonic() - started)
    return hashes


def _first_listings(source: ImageSource, seen: dict[str, str], hashes: Hashes,
                    first: int) -> Iterator[tuple[int, ImageItem]]:
    """``(place in the side's listing, item)`` for each image of ``source`` not already listed on this side; the
    repeats are counted (embedded Parquet images have no path to compare and are never merged)."""
    for position, item in enumerate(iter_items(source), start=first):
        key = os.path.normcase(os.path.realpath(item.path)) if item.path and item.data is None else None
        if key is not None and key in seen:
            hashes.repeat(source.name, item.id, seen[key])
            continue
        if key is not None:
            seen[key] = item.id
        yield position, item


def default_workers() -> int:
    return min(4, os.cpu_count() or 1)


def _batched_results(items: Iterator[tuple[int, ImageItem]], pool: ProcessPoolExecutor | _Inline, workers: int,
                     crops: bool) -> Iterator[tuple[list[tuple[int, ImageItem]], list[Result]]]:
    """Results in input order, at most ``workers`` batches in flight."""
    while True:
        batches = [batch for batch in (list(islice(items, _WORKER_BATCH)) for _ in range(workers)) if batch]
        if not batches:
            return
        yield from zip(batches, pool.map(partial(_hash_batch, crops=crops), batches), strict=True)


class _Inline:
    """The pool's ``map`` in this process (``--workers 1``): no start-up cost, easier debugging."""

    def __enter__(self) -> _Inline:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def map(self, function: Callable[[list[tuple[int, ImageItem]]], list[Result]],
            batches: list[list[tuple[int, ImageItem]]]) -> Iterator[list[Result]]:
        return map(function, batches)


def _progress(label: str, hashes: Hashes, elapsed: float) -> None:
    done = len(hashes.ids) + len(hashes.unreadable)
    rate = f", {done / elapsed:,.0f}/s" if elapsed > 0 else ""
    print(f"pathbind audit-duplicates: {label}: hashed {done:,} images ({len(hashes.unreadable):,} unreadable) "
          f"in {elapsed:,.0f} s{rate}", file=sys.stderr, flush=True)


def window_name(window: int) -> str:
    """``whole image`` or e.g. ``90% crop, top left``."""
    scale, x, y = WINDOWS[window]
    if scale == 1.0:
        return "whole image"
    place = f"{('top', 'middle', 'bottom')[int(2 * y)]} {('left', 'centre', 'right')[int(2 * x)]}"
    return f"{round(100 * scale)}% crop, {'centre' if place == 'middle centre' else place}"
