"""Batched patch occlusion (B images per forward) against one forward per patch, on a tiny checkpoint, same run.

Prints one JSON line: both wall times (the median of ``--repeats`` runs each, every run listed),
``speedup_batched_vs_loop``, whether the two occlusion maps are identical (exact equality) with their maximum
absolute difference (batching may change float rounding), and the machine's state (CPUs, load average before and
after, torch threads), since other work on the machine inflates per-call overhead and so the ratio.

    python benchmarks/occlusion.py [--family qwen2_vl] [--grid 16] [--batch 32] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from pathbind_metrics.faithfulness import occlusion_map
from pathbind_models.hf.adapter import HFAdapter
from pathbind_models.hf.tiny_checkpoints import make_tiny_model
from pathbind_models.occlusion import fill_colour, occlude, rgb_pixels
from pathbind_tasks.demo.grounding_synth import grounding_items

OPTIONS = ["Yes", "No"]


def occluded_images(image, grid: int) -> list:
    colour, pixels = fill_colour(image, "mean"), rgb_pixels(image)
    masks = np.eye(grid * grid, dtype=bool).reshape(-1, grid, grid)
    return [image, *(occlude(pixels, mask, colour) for mask in masks)]


def timed(run, repeats: int) -> tuple[list[float], np.ndarray]:
    """Wall times of ``repeats`` runs and the last run's result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return times, np.asarray(result)


def load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="qwen2_vl")
    parser.add_argument("--grid", type=int, default=16)
    parser.add_argument("--batch", type=int, default=None, help="images per forward (default: from free memory)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each variant; the median is reported")
    args = parser.parse_args()
    load_before = load_average()
    with tempfile.TemporaryDirectory() as folder:
        adapter = HFAdapter(str(make_tiny_model(args.family, Path(folder) / args.family)), occlusion_batch=args.batch)
        item = grounding_items(1)[0]
        images = occluded_images(item["image"], args.grid)
        text = f"Is there {item['expression']} in this image? Answer Yes or No."
        adapter.image_option_logprobs(images[:2], text, OPTIONS)  # warm-up: first-call allocations and kernels
        batched_runs, batched = timed(lambda: adapter.image_option_logprobs(images, text, OPTIONS), args.repeats)
        loop_runs, loop = timed(lambda: [adapter.option_logprobs([image], text, OPTIONS) for image in images],
                                args.repeats)
    maps = [occlusion_map(scores[0], scores[1:], 0, args.grid) for scores in (batched, loop)]
    batched_s, loop_s = statistics.median(batched_runs), statistics.median(loop_runs)
    print(json.dumps({
        "benchmark": "occlusion", "family": args.family, "grid": args.grid, "images": len(images),
        "images_per_forward": adapter.occlusion_batch or "auto", "repeats": args.repeats,
        "batched_s": round(batched_s, 3), "loop_s": round(loop_s, 3),
        "speedup_batched_vs_loop": round(loop_s / batched_s, 2),
        "batched_runs_s": [round(t, 3) for t in batched_runs], "loop_runs_s": [round(t, 3) for t in loop_runs],
        "maps_identical": bool(np.array_equal(maps[0], maps[1])),
        "max_abs_diff": float(np.abs(maps[0] - maps[1]).max()),
        "max_abs_delta": float(np.abs(maps[1]).max()),
        "machine": {"cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                    "load_average_before": load_before, "load_average_after": load_average()}}))


if __name__ == "__main__":
    main()
