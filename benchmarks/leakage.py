"""Leakage audit at scale: 1,000,000 training slide ids against 50,000 test ids, streaming vs naive pairwise.

Both run in this process on the same synthetic inventories (deterministic, seed 0): the streaming audit
(`run_audit`, files in, partitions file out) on everything; the naive audit (for each test id, a linear
scan of every training slide's parsed case and site, parsed before timing) on a subsample of test ids,
whose partitions must agree. Peak memory is the peak resident size of a forked child running the audit
over that of a bare fork (Linux), on the full training file and on one with 5x fewer rows over the same
cases: memory follows distinct cases, so the ratio stays near 1. Prints one JSON line.
Run: python benchmarks/leakage.py [--train-rows N] [--test-rows N] [--naive-test-ids N]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from pathbind_analysis.audit.leakage.inventory import Source
from pathbind_analysis.audit.leakage.matrix import run_audit
from pathbind_metrics.leakage import CLEAN, PATIENT, SITE
from pathbind_metrics.tcga import parse_barcode

ALPHABET = np.array(list("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"))


def codes(rng: np.random.Generator, n: int, width: int) -> list[str]:
    """``n`` distinct random upper-case alphanumeric codes of ``width`` characters."""
    found: dict[str, None] = {}
    while len(found) < n:
        for row in ALPHABET[rng.integers(0, len(ALPHABET), size=(n, width))]:
            found.setdefault("".join(row))
    return list(found)[:n]


def write_inventory(path: Path, cases: list[str], n_rows: int, rng: np.random.Generator) -> None:
    """``n_rows`` slide paths (GDC style, with a UUID suffix) drawn from ``cases``, DX1-DX3 siblings included."""
    picks, slides = rng.integers(0, len(cases), n_rows), rng.integers(1, 4, n_rows)
    uuids = rng.integers(0, 1 << 63, n_rows)
    with path.open("w") as handle:
        for case, slide, uuid in zip(picks, slides, uuids, strict=True):
            handle.write(f"/gdc/slides/{cases[case]}-01Z-00-DX{slide}.{uuid:016X}.svs\n")


def inventory_paths(root: Path) -> dict[str, Path]:
    return {"train": root / "train.txt", "train_fifth": root / "train_fifth.txt", "test": root / "test.txt"}


def synthetic(root: Path, train_rows: int, test_rows: int) -> None:
    """40,000 cases over 600 sites: training draws from 30,000; the test set holds 4,000 of them, 5,000 unseen
    cases from training sites and 3,000 from 100 sites never trained on."""
    rng = np.random.default_rng(0)
    sites = codes(rng, 600, 2)
    participants = codes(rng, 40_000, 4)
    cases = [f"TCGA-{sites[i % 500]}-{p}" for i, p in enumerate(participants)]
    new_site = [f"TCGA-{sites[500 + i % 100]}-{p}" for i, p in enumerate(participants[35_000:38_000])]
    paths = inventory_paths(root)
    write_inventory(paths["train"], cases[:30_000], train_rows, np.random.default_rng(1))
    write_inventory(paths["train_fifth"], cases[:30_000], train_rows // 5, np.random.default_rng(2))
    write_inventory(paths["test"], cases[26_000:35_000] + new_site, test_rows, np.random.default_rng(3))


def in_child(task: Callable[[], object]) -> float:
    """Run ``task`` in a forked child; its peak resident memory in MiB (Linux reports KiB)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            task()
            code = 0
        finally:
            os._exit(code)  # never return into the parent's code
    _, status, usage = os.wait4(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the child failed"
    return usage.ru_maxrss / 1024


def streaming(train: Path, test: Path, out: Path) -> dict[str, str]:
    """The audit as the command runs it; returns each test line's partition."""
    run_audit({"train": [Source("train", train)]}, {"test": [Source("test", test)]}, out, progress=None)
    with (out / "partitions_test.csv").open() as handle:
        next(handle)
        return {line.split(",")[1]: line.rstrip("\n").rsplit(",", 1)[1] for line in handle}


def naive(train_cases: list[str], train_tss: list[str], test_ids: list[tuple[str, str]]) -> dict[str, str]:
    """Per test id, a linear scan of every training slide's case, then of every training slide's site."""
    partitions = {}
    for line, text in test_ids:
        barcode = parse_barcode(text)
        assert barcode is not None
        if barcode.case in train_cases:
            partitions[line] = PATIENT
        else:
            partitions[line] = SITE if barcode.tss in train_tss else CLEAN
    return partitions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--train-rows", type=int, default=1_000_000)
    parser.add_argument("--test-rows", type=int, default=50_000)
    parser.add_argument("--naive-test-ids", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = inventory_paths(root)
        # Generated and measured in forked children: this process allocates nothing they could reuse.
        in_child(lambda: synthetic(root, args.train_rows, args.test_rows))
        bare = in_child(lambda: None)
        peak_full = in_child(lambda: streaming(paths["train"], paths["test"], root)) - bare
        peak_fifth = in_child(lambda: streaming(paths["train_fifth"], paths["test"], root)) - bare
        start = time.perf_counter()
        partitions = streaming(paths["train"], paths["test"], root)
        streaming_seconds = time.perf_counter() - start
        lines = paths["test"].read_text().splitlines()
        subsample = [(str(n), lines[n - 1]) for n in range(1, len(lines) + 1, len(lines) // args.naive_test_ids)]
        parsed = [b for line in paths["train"].open() if (b := parse_barcode(line.strip())) is not None]
        train_cases, train_tss = [b.case for b in parsed], [b.tss for b in parsed]  # parsed before the clock starts
        start = time.perf_counter()
        naive_partitions = naive(train_cases, train_tss, subsample)
        naive_seconds = time.perf_counter() - start
        counts = {p: sum(1 for v in partitions.values() if v == p) for p in (PATIENT, SITE, CLEAN)}
        train_file_mb = paths["train"].stat().st_size / 2**20
    per_id_streaming, per_id_naive = streaming_seconds / args.test_rows, naive_seconds / len(subsample)
    print(json.dumps({
        "benchmark": "leakage",
        "train_rows": args.train_rows,
        "test_rows": args.test_rows,
        "test_partitions": counts,
        "streaming_seconds": round(streaming_seconds, 3),
        "naive_test_ids": len(subsample),
        "naive_seconds": round(naive_seconds, 3),
        "naive_agrees": all(partitions[line] == p for line, p in naive_partitions.items()),
        "speedup_vs_naive_per_test_id": round(per_id_naive / per_id_streaming, 1),
        "train_file_mb": round(train_file_mb, 1),
        "peak_mem_mb": round(peak_full, 1),
        "peak_mem_mb_5x_fewer_rows": round(peak_fifth, 1),
        "peak_mem_ratio_5x_rows": round(peak_full / peak_fifth, 3),
    }))


if __name__ == "__main__":
    main()
