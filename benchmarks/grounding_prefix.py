"""Grounding at the cost of one prefill: an item's three queries through the shared prefix vs one plain forward.

A tiny Qwen2-VL checkpoint (``pathbind make-tiny-model``) reads an image of about ``--tokens`` image tokens
(the processor's pixel limit raised to fit) and three "locate" prompts. In this process, medians of ``--repeats``:
``one_forward_s`` is ONE SDPA forward of one query's pre-encoded prompt (the probe attention recording nothing is
SDPA); ``shared_s`` the whole ``entity_attention_batch`` call for the item's three queries (processing, prefill,
suffixes, maps); ``unshared_s`` three ``entity_attention`` calls. Items/s: 8 items one call each (batch 1) and
in one call (batch 8). ``max_abs_diff``: shared vs unshared maps (map, every per-layer map). Prints one JSON line.
Run: python benchmarks/grounding_prefix.py [--tokens 1400] [--repeats 3] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

ENTITIES = ["nuclei with prominent nucleoli", "tumour cells infiltrating the stroma", "a mitotic figure"]
ITEMS = 8


def timed(run: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=1400, help="image tokens (28×28 pixels each)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="small image, one repeat: checks it runs")
    args = parser.parse_args()
    tokens, repeats = (64, 1) if args.smoke else (args.tokens, args.repeats)
    load_before = [round(v, 2) for v in os.getloadavg()]

    import numpy as np
    import torch
    from PIL import Image

    from pathbind_models.adapter import EntityAttention
    from pathbind_models.hf.adapter import HFAdapter
    from pathbind_models.hf.tiny_checkpoints import make_tiny_model

    with tempfile.TemporaryDirectory() as folder:
        pixels = {"shortest_edge": 28 * 28 * 4, "longest_edge": 28 * 28 * tokens}
        adapter = HFAdapter(str(make_tiny_model("qwen2_vl", Path(folder) / "qwen2_vl")), size=pixels)
        side = 28 * int(tokens ** 0.5)
        images = [Image.fromarray((np.random.default_rng(s).random((side, side, 3)) * 255).astype("uint8"))
                  for s in range(ITEMS)]
        queries = [(f"Look at the image and locate: {entity}", entity) for entity in ENTITIES]
        items = [(image, queries) for image in images]
        inputs = adapter._encode([adapter._prompt(1, queries[0][0])], [[images[0]]])

        def plain() -> None:
            with torch.inference_mode():
                adapter.model(**inputs)

        def unshared() -> list:
            return [adapter.entity_attention(images[0], text, entity, layers="all") for text, entity in queries]

        shared = adapter.entity_attention_batch(items[:1])[0]
        reference = unshared()
        if not all(isinstance(got, EntityAttention) for got in shared):
            raise RuntimeError(f"a query failed: {shared}")
        diff = max(max(np.abs(got.map - want.map).max(),
                       *(np.abs(got.per_layer[i] - want.per_layer[i]).max() for i in want.layers))
                   for got, want in zip(cast(list[EntityAttention], shared), reference, strict=True))
        one_forward_s = timed(plain, repeats)
        shared_s = timed(lambda: adapter.entity_attention_batch(items[:1]), repeats)
        unshared_s = timed(unshared, repeats)
        batch1_s = timed(lambda: [adapter.entity_attention_batch([item]) for item in items], repeats)
        batch8_s = timed(lambda: adapter.entity_attention_batch(items), repeats)
    print(json.dumps({
        "benchmark": "grounding_prefix", "model": "tiny qwen2_vl", "sequence_tokens": int(inputs["input_ids"].shape[1]),
        "queries_per_item": len(queries), "repeats": repeats, "threads": torch.get_num_threads(),
        "time_ratio_k_queries_vs_one_forward": round(shared_s / one_forward_s, 3),
        "time_ratio_unshared_vs_one_forward": round(unshared_s / one_forward_s, 3),
        "one_forward_s": round(one_forward_s, 4), "shared_s": round(shared_s, 4), "unshared_s": round(unshared_s, 4),
        "items_per_s_batch1": round(ITEMS / batch1_s, 3), "items_per_s_batch8": round(ITEMS / batch8_s, 3),
        "max_abs_diff": float(diff),
        "machine": {"cpu_count": os.cpu_count(), "load_average_before": load_before,
                    "load_average_after": [round(v, 2) for v in os.getloadavg()]}}))


if __name__ == "__main__":
    main()
