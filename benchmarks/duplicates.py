"""Near-duplicate audit at scale: the multi-index hash table against a brute-force numpy scan, same run, same hashes.

Synthetic 64-bit hashes (seed 0), shaped as the command holds them: ``--train-images`` training images x 19 hashes
each (the whole image and its 18 crop windows, uniform here) and ``--test`` test hashes, of which a quarter are
training hashes with 0..T bits flipped (near-duplicates), a quarter with T+1..T+4 (near misses), the rest new.
Both methods list every (test, train) hash pair within pHash distance T (the index's job; dHash is then checked
on those pairs only); the pair sets must be identical. Times are wall times (the index's build and queries apart,
and projected to 100,000 test images), memory the tracemalloc peak of each method beyond the hashes themselves.
A small image part hashes synthetic tissue tiles (training side: with crop windows) and planted copies (JPEG
quality 50-95, resize 0.5-2x, crops of 10%) with the command's own decoding, and reports the largest distance of
each kind of copy and the nearest pair of different tiles: the evidence for the default thresholds. A last row
matches ``--identical`` identical tiles on each side (blank background, the commonest tile) as the command does,
every pair counted but only 1,000 listed, with its peak memory against enumerating every pair. Prints one JSON
line.

    python benchmarks/duplicates.py [--train-images 1000000] [--test 1000] [--tiles 40] [--identical 10000] [--quick]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import time
import tracemalloc
from array import array
from collections.abc import Callable
from itertools import permutations
from typing import Any

import numpy as np
from PIL import Image

from pathbind_analysis.audit.duplicates.command import DHASH_THRESHOLD, PHASH_THRESHOLD
from pathbind_analysis.audit.duplicates.edits import crop, jpeg, resize
from pathbind_analysis.audit.duplicates.hashing import WINDOWS, Hashes, image_hashes
from pathbind_analysis.audit.duplicates.index import HammingIndex, brute_force_pairs, popcount
from pathbind_analysis.audit.duplicates.matching import near_duplicates
from pathbind_analysis.audit.duplicates.sources import ImageItem
from pathbind_tasks.demo.tissue import TISSUES, TileSpec, render_tile


def synthetic_hashes(n_train: int, n_test: int, radius: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    train = rng.integers(0, 2**64, n_train, dtype=np.uint64)
    test = rng.integers(0, 2**64, n_test, dtype=np.uint64)
    quarter = n_test // 4
    flips = np.concatenate([rng.integers(0, radius + 1, quarter), rng.integers(radius + 1, radius + 5, quarter)])
    for row, n_flips in enumerate(flips):
        bits = rng.choice(64, size=n_flips, replace=False)
        test[row] = train[rng.integers(n_train)] ^ np.uint64(sum(1 << int(bit) for bit in bits))
    return train, test


def measured(run: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall seconds, tracemalloc peak (MiB) and result of ``run``."""
    tracemalloc.start()
    start = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return seconds, peak, result


def variants(tile: Image.Image, rng: np.random.Generator) -> dict[str, Image.Image]:
    """Planted copies: re-encoded, resized, cropped by 10% of each side (a corner, anywhere) and all three."""
    copies = {f"jpeg_q{quality}": jpeg(tile, quality) for quality in (50, 75, 95)}
    copies |= {f"resize_{factor}x": resize(tile, factor) for factor in (0.5, 0.75, 1.5, 2.0)}
    copies["crop_10%_corner"] = crop(tile, 0.1, 0.0, 1.0)
    copies["crop_10%_anywhere"] = crop(tile, 0.1, *rng.random(2))
    copies["crop_10%_anywhere_resize_0.75x_jpeg_q75"] = jpeg(resize(crop(tile, 0.1, *rng.random(2)), 0.75), 75)
    return copies


def hashes_of(image: Image.Image, crops: bool = False) -> np.ndarray:
    """(pHash, dHash) rows: the whole image's, and with ``crops`` every crop window's (as training images)."""
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    result = image_hashes(ImageItem("tile", data=buffer.getvalue()), crops)
    assert not isinstance(result, str), result
    return np.array(result, dtype=np.uint64)


def closest(test: np.ndarray, windows: np.ndarray) -> tuple[int, int]:
    """(pHash, dHash) distance of a test image's hashes to the training window nearest to passing both."""
    distances = popcount(windows ^ test[0]).astype(np.int64)
    best = np.argmin(np.maximum(distances[:, 0] - PHASH_THRESHOLD, distances[:, 1] - DHASH_THRESHOLD))
    return int(distances[best, 0]), int(distances[best, 1])


def threshold_evidence(n_tiles: int) -> dict[str, Any]:
    """Per kind of planted copy the largest (pHash, dHash) distance to its tile's nearest window; between
    different tiles the nearest pair; how many of those fall within the thresholds."""
    rng = np.random.default_rng(0)
    tiles = [Image.fromarray(render_tile(TileSpec(tissue=TISSUES[i % len(TISSUES)]), seed=100 + i, size=256)[0])
             for i in range(n_tiles)]
    windows = [hashes_of(tile, crops=True) for tile in tiles]
    worst: dict[str, list[int]] = {}
    for tile, own in zip(tiles, windows, strict=True):
        for kind, copy in variants(tile, rng).items():
            worst[kind] = np.maximum(worst.get(kind, [0, 0]), closest(hashes_of(copy), own)).tolist()
    unrelated = [closest(windows[a][:1], windows[b]) for a, b in permutations(range(n_tiles), 2)]
    return {"tiles": n_tiles, "tile_px": 256, "max_copy_distance": worst,
            "nearest_unrelated": min(unrelated, key=lambda d: max(d[0] - PHASH_THRESHOLD, d[1] - DHASH_THRESHOLD)),
            "unrelated_pairs": len(unrelated),
            "unrelated_pairs_within_thresholds": sum(p <= PHASH_THRESHOLD and d <= DHASH_THRESHOLD
                                                     for p, d in unrelated)}


def identical_hashes(n_train: int, n_test: int) -> tuple[Hashes, Hashes]:
    """Two sides of identical tiles (a blank background tile's hashes), shaped as the command holds them: each
    training image with its 19 window hashes, each test image with one."""
    train, test = Hashes(), Hashes()
    for hashes, n, windows in ((train, n_train, len(WINDOWS)), (test, n_test, 1)):
        hashes.ids = [f"{k:05d}.png" for k in range(n)]
        hashes.sources = ["blank"] * n
        hashes.phash = array("Q", [0x8000_0000_0000_0000] * (n * windows))
        hashes.dhash = array("Q", [0] * (n * windows))
        hashes.image = array("q", np.repeat(np.arange(n), windows).tolist())
        hashes.window = array("B", list(range(windows)) * n)
    return train, test


def identical_tiles(n: int, n_baseline: int) -> dict[str, Any]:
    """``n`` identical tiles on each side, counted and summarised as the command does (every pair counted, 1,000
    listed, 3 nearest per test image), against enumerating every pair as the command did before, which can only
    be run at ``n_baseline`` (its memory grows with the square of n); the ratio is per pair."""
    train, test = identical_hashes(n, n)
    seconds, peak, matches = measured(lambda: near_duplicates(train, test, PHASH_THRESHOLD, DHASH_THRESHOLD,
                                                              ["blank"], ["blank"]))
    assert matches.n_pairs == n * n and len(matches.listed) == 1000
    small_train, small_test = identical_hashes(n_baseline, n_baseline)
    base_s, base_peak, base = measured(lambda: HammingIndex(small_train.arrays()[0], PHASH_THRESHOLD).pairs(
        small_test.arrays()[0]))
    assert len(base[0]) == n_baseline * n_baseline * len(WINDOWS)
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the whole process so far (Linux: KiB)
    return {"tiles_each_side": n, "pairs": matches.n_pairs, "seconds": round(seconds, 3),
            "peak_mib": round(peak, 1), "process_rss_peak_mib": round(rss_mib),
            "baseline_enumerating_every_pair": {"tiles_each_side": n_baseline, "seconds": round(base_s, 3),
                                                "peak_mib": round(base_peak, 1),
                                                "projected_peak_mib_at_n": round(base_peak * (n / n_baseline) ** 2)},
            "peak_ratio_vs_enumerating_at_n": round(peak / (base_peak * (n / n_baseline) ** 2), 6)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-images", type=int, default=1_000_000,
                        help="training images (default 1,000,000): 19 hashes each")
    parser.add_argument("--test", type=int, default=1_000, help="test hashes (default 1,000)")
    parser.add_argument("--tiles", type=int, default=40, help="tissue tiles for the threshold evidence (default 40)")
    parser.add_argument("--identical", type=int, default=10_000,
                        help="identical tiles on each side for the bounded-memory row (default 10,000)")
    parser.add_argument("--quick", action="store_true",
                        help="2,000 training images, 100 test hashes, 4 tiles, 1,000 identical tiles")
    args = parser.parse_args()
    if args.quick:
        args.train_images, args.test, args.tiles, args.identical = 2_000, 100, 4, 1_000
    load_before = [round(v, 2) for v in os.getloadavg()]
    train, test = synthetic_hashes(args.train_images * len(WINDOWS), args.test, PHASH_THRESHOLD)
    build_s, build_mib, index = measured(lambda: HammingIndex(train, PHASH_THRESHOLD))
    query_s, query_mib, index_pairs = measured(lambda: index.pairs(test))
    brute_s, brute_mib, brute_pairs = measured(lambda: brute_force_pairs(train, test, PHASH_THRESHOLD))
    identical = all(np.array_equal(a, b) for a, b in zip(index_pairs, brute_pairs, strict=True))
    projected = 100_000 / args.test
    print(json.dumps({
        "benchmark": "duplicates", "train_images": args.train_images, "train_hashes": len(train),
        "test_hashes": args.test, "phash_threshold": PHASH_THRESHOLD, "index_chunks": index.n_chunks,
        "pairs": len(index_pairs[0]), "pairs_identical": identical,
        "max_pair_distance": int(popcount(train[index_pairs[1]] ^ test[index_pairs[0]]).max(initial=0)),
        "index_build_s": round(build_s, 3), "index_query_s": round(query_s, 3), "brute_s": round(brute_s, 3),
        "time_ratio_index_vs_brute": round((build_s + query_s) / brute_s, 4),  # this run, the build included
        "time_ratio_per_query": round(query_s / brute_s, 4),
        "query_ms_index": round(1000 * query_s / args.test, 3), "query_ms_brute": round(1000 * brute_s / args.test, 3),
        "projected_100k_test_s": {"index": round(build_s + projected * query_s), "brute": round(projected * brute_s)},
        "index_peak_mib": round(max(build_mib, query_mib), 1), "brute_peak_mib": round(brute_mib, 1),
        "hashes_mib": round((train.nbytes + test.nbytes) / 2**20, 1),
        "thresholds_evidence": threshold_evidence(args.tiles),
        "identical_tiles": identical_tiles(args.identical, min(args.identical, 400)),
        "machine": {"cpu_count": os.cpu_count(), "load_average_before": load_before,
                    "load_average_after": [round(v, 2) for v in os.getloadavg()]}}))


if __name__ == "__main__":
    main()
