"""Near-duplicate pairs of test images in training (pHash radius from the index, confirmed by dHash) and rho_image."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pathbind_analysis.duplicates.hashing import Hashes, window_name
from pathbind_analysis.duplicates.index import HammingIndex, popcount


@dataclass(frozen=True)
class Pair:
    """A test image and a training image (indices among each side's images) within both thresholds, by the
    training image's closest hash (``window``: the whole image or a crop window)."""

    test: int
    train: int
    phash: int
    dhash: int
    window: int

    def record(self, train: Hashes, test: Hashes) -> dict[str, Any]:
        return {"test_source": test.sources[self.test], "test": test.ids[self.test],
                "train_source": train.sources[self.train], "train": train.ids[self.train],
                "distance": {"phash": self.phash, "dhash": self.dhash}, "train_window": window_name(self.window)}


def near_duplicates(train: Hashes, test: Hashes, phash_max: int, dhash_max: int) -> list[Pair]:
    """Every (test image, training image) pair with a hash of each within pHash distance ``phash_max`` and dHash
    distance ``dhash_max``, by its closest hash pair (pHash + dHash); in test order, closest first, then in
    training order."""
    train_phash, train_dhash, train_image, train_window = train.arrays()
    test_phash, test_dhash, test_image, _ = test.arrays()
    query, item, phash = HammingIndex(train_phash, phash_max).pairs(test_phash)
    dhash = popcount(test_dhash[query] ^ train_dhash[item])
    keep = dhash <= dhash_max
    query, item, phash, dhash = query[keep], item[keep], phash[keep].astype(np.int64), dhash[keep].astype(np.int64)
    tests, trains, windows = test_image[query], train_image[item], train_window[item]
    order = np.lexsort((windows, phash + dhash, trains, tests))
    first = np.ones(len(order), bool)  # the closest hash pair of each (test image, training image)
    first[1:] = (np.diff(tests[order]) != 0) | (np.diff(trains[order]) != 0)
    best = order[first]
    best = best[np.lexsort((trains[best], phash[best] + dhash[best], tests[best]))]
    return [Pair(*values) for values in zip(*(v[best].tolist() for v in (tests, trains, phash, dhash, windows)),
                                            strict=True)]


def overlap(pairs: list[Pair], train: Hashes, test: Hashes, train_names: list[str],
            test_names: list[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """rho_image per test source (against all training) and per (training source, test source) cell.

    rho_image = test images with a near-duplicate / test images assessed (hashed); unreadable test images are
    not assessed and are counted apart, never as clean.
    """
    assessed = {name: test.sources.count(name) for name in test_names}
    not_assessed = {name: sum(u["source"] == name for u in test.unreadable) for name in test_names}
    duplicated: dict[tuple[str | None, str], set[int]] = {}
    pair_counts: dict[tuple[str, str], int] = {}
    for pair in pairs:
        cell = (train.sources[pair.train], test.sources[pair.test])
        duplicated.setdefault(cell, set()).add(pair.test)
        duplicated.setdefault((None, cell[1]), set()).add(pair.test)  # None: any training source
        pair_counts[cell] = pair_counts.get(cell, 0) + 1

    def row(train_name: str | None, test_name: str) -> dict[str, Any]:
        hits = len(duplicated.get((train_name, test_name), ()))
        return {"test": test_name, "n_assessed": assessed[test_name], "n_not_assessed": not_assessed[test_name],
                "n_duplicated": hits, "rho_image": hits / assessed[test_name] if assessed[test_name] else float("nan")}

    per_test = [row(None, name) for name in test_names]
    matrix = [{"train": train_name, **row(train_name, test_name),
               "n_pairs": pair_counts.get((train_name, test_name), 0)}
              for train_name in train_names for test_name in test_names]
    return per_test, matrix
