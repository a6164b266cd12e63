"""Near-duplicates of test images in training, counted and summarised in memory bounded by the output asked for.

Identical hashes are matched once: the training hashes and the test hashes are each reduced to their distinct
(pHash, dHash) values, so 10^4 identical blank tiles on each side are one query against one indexed value, and
every figure (pairs per source cell, training images within the thresholds of each test image) is multiplied out
from the counts, never enumerated. Only the listing of pairs (``max_pairs`` closest) and each test image's
``nearest`` training images are kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pathbind_analysis.audit.duplicates.hashing import Hashes, window_name
from pathbind_analysis.audit.duplicates.index import HammingIndex, popcount

EXPANDED_PER_BATCH = 2_000_000  # (test value, training hash) rows expanded at a time: bounds the working memory


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


@dataclass
class Matches:
    """What the matching found: counts for every pair, the listing and each test image's nearest for a few.

    ``within[v]`` and ``nearest[v]`` belong to a distinct test hash value ``v``; ``test_value[t]`` is test image
    ``t``'s value (-1: unreadable images have none).
    """

    n_pairs: int = 0
    listed: list[Pair] = field(default_factory=list)
    test_value: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    within: dict[int, int] = field(default_factory=dict)
    nearest: dict[int, list[tuple[int, int, int, int]]] = field(default_factory=dict)  # (train, phash, dhash, win)
    cell_pairs: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))  # [train source, test source]
    duplicated: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), bool))  # [train source + any, test image]

    def per_image(self, train: Hashes, test: Hashes) -> list[dict[str, Any]]:
        """Each test image with a near-duplicate, in test order: how many training images lie within the
        thresholds and the nearest of them, closest first."""
        rows = []
        for image in np.flatnonzero(self.duplicated[-1]).tolist():
            value = int(self.test_value[image])
            rows.append({"test_source": test.sources[image], "test": test.ids[image],
                         "n_train_within": self.within[value],
                         "nearest": [{"train_source": train.sources[t], "train": train.ids[t],
                                      "distance": {"phash": p, "dhash": d}, "train_window": window_name(w)}
                                     for t, p, d, w in self.nearest[value]]})
        return rows


def near_duplicates(train: Hashes, test: Hashes, phash_max: int, dhash_max: int, train_names: list[str],
                    test_names: list[str], *, max_pairs: int = 1000, nearest: int = 3) -> Matches:
    """Every (test image, training image) pair with a hash of each within pHash distance ``phash_max`` and dHash
    distance ``dhash_max`` (by its closest hash pair, pHash + dHash), counted; listed are the ``max_pairs`` closest
    (ties: test order, then training order), and per test image its ``nearest`` training images."""
    train_phash, train_dhash, train_image, train_window = train.arrays()
    test_phash, test_dhash, test_image, _ = test.arrays()
    values, members = _distinct(train_phash, train_dhash)
    queries, query_of = _distinct(test_phash, test_dhash)
    tests_of = _tests_of(query_of, test_image, len(queries))
    train_source = _codes(train.sources, train_names)
    test_source = _codes(test.sources, test_names)
    matches = Matches(test_value=np.full(len(test.ids), -1, np.int64),
                      cell_pairs=np.zeros((len(train_names), len(test_names)), np.int64),
                      duplicated=np.zeros((len(train_names) + 1, len(test.ids)), bool))
    for value, tests in enumerate(tests_of):
        matches.test_value[tests] = value
    for query, item, phash in HammingIndex(values[:, 0], phash_max).iter_pairs(queries[:, 0]):
        dhash = popcount(queries[query, 1] ^ values[item, 1])
        keep = dhash <= dhash_max
        query, item = query[keep], item[keep]
        phash, dhash = phash[keep].astype(np.int64), dhash[keep].astype(np.int64)
        for rows in _batches(query, members.counts[item]):
            found = _expanded(query[rows], item[rows], phash[rows], dhash[rows], members, train_image, train_window)
            for value, matched in _by_value(*found):
                _record(matches, value, matched, tests_of[value], train_source, test_source, max_pairs, nearest)
    return matches


@dataclass(frozen=True)
class _Members:
    """The hashes of each distinct value: ``order[start[u]:start[u] + counts[u]]``."""

    order: np.ndarray
    start: np.ndarray
    counts: np.ndarray


def _distinct(phash: np.ndarray, dhash: np.ndarray) -> tuple[np.ndarray, _Members]:
    """The distinct (pHash, dHash) rows, U×2, and which hashes hold each."""
    pairs = np.column_stack([phash, dhash]) if len(phash) else np.zeros((0, 2), np.uint64)
    values, inverse = np.unique(pairs, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    counts = np.bincount(inverse, minlength=len(values))
    return values, _Members(order, np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64), counts)


def _tests_of(members: _Members, test_image: np.ndarray, n_values: int) -> list[np.ndarray]:
    """The test images of each distinct test value, in test order (a test image has one hash)."""
    return [np.sort(test_image[members.order[members.start[v]:members.start[v] + members.counts[v]]])
            for v in range(n_values)]


def _codes(names: list[str], order: list[str]) -> np.ndarray:
    index = {name: i for i, name in enumerate(order)}
    return np.array([index[name] for name in names], dtype=np.int64)


def _batches(query: np.ndarray, sizes: np.ndarray) -> list[slice]:
    """Row ranges of the (sorted by query) matches whose expansions stay near EXPANDED_PER_BATCH, never
    splitting one query's rows (a query bigger than that is a batch of its own)."""
    if not len(query):
        return []
    starts = np.flatnonzero(np.concatenate(([True], query[1:] != query[:-1])))
    ends = np.concatenate((starts[1:], [len(query)]))
    per_query = np.add.reduceat(sizes, starts)
    batches, first, total = [], 0, 0
    for number, size in enumerate(per_query.tolist()):
        if total and total + size > EXPANDED_PER_BATCH:
            batches.append(slice(int(starts[first]), int(ends[number - 1])))
            first, total = number, 0
        total += size
    batches.append(slice(int(starts[first]), int(ends[-1])))
    return batches


def _expanded(query: np.ndarray, item: np.ndarray, phash: np.ndarray, dhash: np.ndarray, members: _Members,
              train_image: np.ndarray, train_window: np.ndarray) -> tuple[np.ndarray, ...]:
    """(test value, training image, pHash, dHash, window) of each training hash behind the matched values, reduced
    to the closest hash of each (test value, training image), sorted by value, closeness, training image."""
    counts = members.counts[item]
    ends = np.cumsum(counts)
    slots = np.repeat(members.start[item] - (ends - counts), counts) + np.arange(int(ends[-1]) if len(ends) else 0)
    hashes = members.order[slots]
    value, phash, dhash = (np.repeat(a, counts) for a in (query, phash, dhash))
    image, window = train_image[hashes], train_window[hashes].astype(np.int64)
    order = np.lexsort((window, phash + dhash, image, value))
    first = np.ones(len(order), bool)
    first[1:] = (np.diff(value[order]) != 0) | (np.diff(image[order]) != 0)
    best = order[first]
    best = best[np.lexsort((image[best], phash[best] + dhash[best], value[best]))]
    return value[best], image[best], phash[best], dhash[best], window[best]


def _by_value(value: np.ndarray, *columns: np.ndarray) -> list[tuple[int, tuple[np.ndarray, ...]]]:
    if not len(value):
        return []
    starts = np.flatnonzero(np.concatenate(([True], value[1:] != value[:-1]))).tolist()
    ends = [*starts[1:], len(value)]
    return [(int(value[s]), tuple(c[s:e] for c in columns)) for s, e in zip(starts, ends, strict=True)]


def _record(matches: Matches, value: int, matched: tuple[np.ndarray, ...], tests: np.ndarray,
            train_source: np.ndarray, test_source: np.ndarray, max_pairs: int, nearest: int) -> None:
    """Add one distinct test value's matches (training images, closest first) for all its test images."""
    images = matched[0]
    matches.within[value] = len(images)
    matches.nearest[value] = list(zip(*(a[:nearest].tolist() for a in matched), strict=True))
    matches.n_pairs += len(images) * len(tests)
    by_train = np.bincount(train_source[images], minlength=matches.cell_pairs.shape[0])
    by_test = np.bincount(test_source[tests], minlength=matches.cell_pairs.shape[1])
    matches.cell_pairs += np.outer(by_train, by_test)
    matches.duplicated[np.flatnonzero(by_train)[:, None], tests[None, :]] = True
    matches.duplicated[-1, tests] = True
    _list(matches, tests, matched, max_pairs)


def _list(matches: Matches, tests: np.ndarray, matched: tuple[np.ndarray, ...], max_pairs: int) -> None:
    """Merge this value's closest pairs (at most ``max_pairs``, in closeness, test, training order) into the
    listing, kept to the ``max_pairs`` closest overall."""
    images, phash, dhash, window = matched
    closeness = phash + dhash
    if max_pairs == 0 or (len(matches.listed) == max_pairs and closeness[0] > _closeness(matches.listed[-1])):
        return
    new: list[Pair] = []
    for level in np.unique(closeness):  # pairs of one closeness: every test image with each such training image
        at = np.flatnonzero(closeness == level)
        count = min(max_pairs - len(new), len(at) * len(tests))
        index = np.arange(count)
        rows, picks = tests[index // len(at)], at[index % len(at)]
        new += [Pair(int(t), int(images[k]), int(phash[k]), int(dhash[k]), int(window[k]))
                for t, k in zip(rows.tolist(), picks.tolist(), strict=True)]
        if len(new) == max_pairs:
            break
    merged = sorted([*matches.listed, *new], key=lambda p: (_closeness(p), p.test, p.train))
    matches.listed = merged[:max_pairs]


def _closeness(pair: Pair) -> int:
    return pair.phash + pair.dhash


def overlap(matches: Matches, test: Hashes, train_names: list[str],
            test_names: list[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """rho_image per test source (against all training) and per (training source, test source) cell.

    rho_image = test images with a near-duplicate / test images assessed (hashed); unreadable test images are
    not assessed and are counted apart, never as clean.
    """
    source = _codes(test.sources, test_names)
    assessed = np.bincount(source, minlength=len(test_names))
    not_assessed = {name: sum(u["source"] == name for u in test.unreadable) for name in test_names}

    def row(train_index: int, test_index: int) -> dict[str, Any]:
        hits = int(np.count_nonzero(matches.duplicated[train_index] & (source == test_index)))
        n = int(assessed[test_index])
        name = test_names[test_index]
        return {"test": name, "n_assessed": n, "n_not_assessed": not_assessed[name], "n_duplicated": hits,
                "rho_image": hits / n if n else float("nan")}

    per_test = [row(-1, t) for t in range(len(test_names))]
    matrix = [{"train": train_name, **row(r, t), "n_pairs": int(matches.cell_pairs[r, t])}
              for r, train_name in enumerate(train_names) for t in range(len(test_names))]
    return per_test, matrix
