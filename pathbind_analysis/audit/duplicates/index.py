"""Multi-index hashing over 64-bit hashes: every pair within a Hamming radius, exactly the pairs a full scan finds."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations
from math import comb

import numpy as np

BITS = 64
MIN_CHUNKS = 3  # chunks of at most 22 bits: bucket tables of at most 4M offsets
KEY_COST = 8  # a bucket looked up costs about as much as 8 candidates checked (measured at 10^6 hashes, radius 12)
_CANDIDATES_PER_BATCH = 4_000_000  # bounds the candidate arrays' memory (~100 MB) whatever the index's size
Triples = tuple[np.ndarray, np.ndarray, np.ndarray]  # (query, item, distance)


def popcount(values: np.ndarray) -> np.ndarray:
    """Set bits of each uint64 (numpy >= 2 has a native instruction; older ones count bytes)."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(values)
    return _BYTE_BITS[values.view(np.uint8)].reshape(*values.shape, 8).sum(axis=-1, dtype=np.uint8)


_BYTE_BITS = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


@dataclass(frozen=True)
class _Chunk:
    shift: int
    width: int
    flips: np.ndarray  # every XOR mask of at most the chunk radius bits
    order: np.ndarray  # indexed positions sorted by this chunk's key
    hashes: np.ndarray  # the hashes in that order: a bucket's candidates are read contiguously
    offsets: np.ndarray  # bucket table: the hashes with key k are at offsets[k]:offsets[k + 1] of the order

    @classmethod
    def build(cls, hashes: np.ndarray, shift: int, width: int, radius: int) -> _Chunk:
        keys = cls._key(hashes, shift, width)
        positions = np.int32 if len(hashes) < 2**31 else np.int64  # half the memory below 2 billion hashes
        order = np.argsort(keys.astype(np.uint32), kind="stable").astype(positions)  # a radix sort on 32 bits
        offsets = np.zeros(2**width + 1, np.int64)
        np.cumsum(np.bincount(keys, minlength=2**width), out=offsets[1:])
        return cls(shift, width, _flips(width, radius), order, hashes[order], offsets)

    @staticmethod
    def _key(hashes: np.ndarray, shift: int, width: int) -> np.ndarray:
        return ((hashes >> np.uint64(shift)) & np.uint64((1 << width) - 1)).astype(np.int64)

    def candidates(self, queries: np.ndarray) -> int:
        """How many indexed hashes :meth:`near` would check for these queries."""
        wanted = (self._key(queries, self.shift, self.width)[:, None] ^ self.flips[None, :]).ravel()
        return int((self.offsets[wanted + 1] - self.offsets[wanted]).sum())

    def near(self, queries: np.ndarray, radius: int) -> tuple[np.ndarray, np.ndarray]:
        """(query, position) of every indexed hash within ``radius`` whose chunk lies within the chunk radius of
        the query's: the buckets of every key within the chunk radius, expanded and checked without a Python loop."""
        wanted = (self._key(queries, self.shift, self.width)[:, None] ^ self.flips[None, :]).ravel()
        low = self.offsets[wanted]
        counts = self.offsets[wanted + 1] - low
        ends = np.cumsum(counts)
        slots = np.repeat(low - (ends - counts), counts) + np.arange(int(ends[-1]) if len(ends) else 0)
        values = np.repeat(np.repeat(queries, len(self.flips)), counts)
        (found,) = np.nonzero(popcount(self.hashes[slots] ^ values) <= radius)
        key = np.searchsorted(ends, found, side="right")  # the looked-up key each survivor came from
        return key // len(self.flips), self.order[slots[found]].astype(np.int64)


class HammingIndex:
    """The hashes (uint64) bucketed by chunk; ``pairs`` finds every hash within ``radius`` of a query.

    Each hash is split into ``m`` bit-chunks. Two hashes within distance ``R`` agree to within ``R // m`` bits on at
    least one chunk (pigeonhole), so reading, per chunk, the buckets of every key within ``R // m`` bits of the
    query's chunk finds every candidate; the exact distance then keeps the true ones. ``m`` (3 or more, so that a
    bucket table has at most 2^22 entries) is chosen for the index's size and radius.
    """

    def __init__(self, hashes: np.ndarray, radius: int) -> None:
        self.hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
        self.radius = radius
        self.n_chunks = best_chunk_count(len(self.hashes), radius)
        widths = [BITS // self.n_chunks + (i < BITS % self.n_chunks) for i in range(self.n_chunks)]
        shifts = np.cumsum([0, *widths[:-1]]).tolist()
        self._chunks = [_Chunk.build(self.hashes, shift, width, radius // self.n_chunks)
                        for shift, width in zip(shifts, widths, strict=True)]
        expected = max(1.0, _expected_candidates(len(self.hashes), radius, self.n_chunks))
        self._batch = max(1, int(_CANDIDATES_PER_BATCH / expected))

    def pairs(self, queries: np.ndarray) -> Triples:
        """``(query, item, distance)`` for every indexed hash within ``radius`` of a query, sorted by query, item."""
        return _joined(list(self.iter_pairs(queries)))

    def iter_pairs(self, queries: np.ndarray) -> Iterator[Triples]:
        """:meth:`pairs` in batches of consecutive queries, each checking at most about 4 million candidates
        (one query with more is a batch of its own): memory stays bounded however alike the hashes are."""
        queries = np.ascontiguousarray(queries, dtype=np.uint64)
        for start in range(0, len(queries), self._batch):
            yield from self._bounded(queries[start:start + self._batch], start)

    def _bounded(self, queries: np.ndarray, offset: int) -> Iterator[Triples]:
        """The batch's pairs, halving it while it would check more candidates than the budget."""
        if len(queries) > 1 and sum(c.candidates(queries) for c in self._chunks) > _CANDIDATES_PER_BATCH:
            half = len(queries) // 2
            yield from self._bounded(queries[:half], offset)
            yield from self._bounded(queries[half:], offset + half)
        else:
            yield self._batch_pairs(queries, offset)

    def _batch_pairs(self, queries: np.ndarray, offset: int) -> Triples:
        codes = []
        for chunk in self._chunks:
            query, item = chunk.near(queries, self.radius)
            codes.append(query * np.int64(len(self.hashes)) + item)
        # A pair near on several chunks is found once per chunk: sort the codes, keep each once.
        code = np.sort(np.concatenate(codes))
        code = code[np.concatenate(([True], code[1:] != code[:-1]))] if len(code) else code
        query, item = np.divmod(code, np.int64(max(1, len(self.hashes))))
        return query + offset, item, popcount(queries[query] ^ self.hashes[item]).astype(np.uint8)


def brute_force_pairs(hashes: np.ndarray, queries: np.ndarray, radius: int) -> Triples:
    """The same triples as :meth:`HammingIndex.pairs` by comparing every query with every hash (for checks)."""
    hashes = np.asarray(hashes, dtype=np.uint64)
    found = []
    for query, value in enumerate(np.asarray(queries, dtype=np.uint64)):
        distance = popcount(hashes ^ value)
        (item,) = np.nonzero(distance <= radius)
        found.append((np.full(len(item), query, dtype=np.int64), item.astype(np.int64),
                      distance[item].astype(np.uint8)))
    return _joined(found)


def best_chunk_count(n: int, radius: int) -> int:
    """The chunk count with the least expected work per query for ``n`` uniform hashes: keys looked up plus
    candidates checked (more chunks: fewer keys each, but shorter chunks and so fuller buckets)."""
    def cost(m: int) -> float:
        keys = m * sum(comb(BITS // m, k) for k in range(radius // m + 1))
        return KEY_COST * keys + _expected_candidates(n, radius, m)

    return min(range(MIN_CHUNKS, max(MIN_CHUNKS, min(radius + 1, 16)) + 1), key=cost)


def _expected_candidates(n: int, radius: int, m: int) -> float:
    width = BITS // m
    return m * sum(comb(width, k) for k in range(radius // m + 1)) * n / 2.0**width


def _joined(found: Sequence[tuple[np.ndarray, ...]]) -> Triples:
    if not found:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.uint8)
    query, item, distance = (np.concatenate(parts) for parts in zip(*found, strict=True))
    return query, item, distance


def _flips(width: int, radius: int) -> np.ndarray:
    """Every ``width``-bit mask with at most ``radius`` bits set."""
    masks = [sum(1 << bit for bit in bits) for k in range(min(radius, width) + 1)
             for bits in combinations(range(width), k)]
    return np.array(masks, dtype=np.int64)
