"""Cost of the grounding metric stage against the model stage that produces its maps, in the same run.

Items: random 1024×1024 images with a random box and three expressions (the true one and two alternatives).
Model stage: a tiny Qwen2-VL checkpoint's entity attention for the three queries (one shared prefill), every
layer recorded, then the four layer-set maps, as ``pathbind_hf`` answers an attention request. Metric stage:
``item_record`` on those maps (q sweep and pixel-AP from one heat map, layer sets at q=0.2, effective support,
cross-query r). A tiny model's forward is far cheaper than a real checkpoint's, so the ratio is an upper bound for
real models. Prints one JSON line.
Run: python benchmarks/grounding_metrics.py [--items 500]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

from pathbind_tasks.common.grounding_records import item_record

SIZE = 1024
EXPRESSIONS = ("nuclei with prominent nucleoli", "tumour cells infiltrating the stroma",
               "lymphocytes clustered around the blood vessel", "the mitotic figure in the centre")
LAYER_SETS = ("shallow", "mid", "deep", "all")


def items(count: int, seed: int = 0) -> list[tuple[Image.Image, list[float], list[str]]]:
    rng = np.random.default_rng(seed)
    made = []
    for _ in range(count):
        pixels = (rng.random((64, 64, 3)) * 255).astype("uint8")
        image = Image.fromarray(pixels).resize((SIZE, SIZE), Image.Resampling.NEAREST)
        x0, y0 = rng.uniform(0, SIZE * 0.7, 2)
        box = [float(x0), float(y0), float(x0 + rng.uniform(50, SIZE * 0.3)), float(y0 + rng.uniform(50, SIZE * 0.3))]
        made.append((image, box, [EXPRESSIONS[i] for i in rng.permutation(len(EXPRESSIONS))[:3]]))
    return made


def model_stage(adapter, image: Image.Image, expressions: list[str]) -> list[dict[str, np.ndarray]]:
    queries = [(f"Look at the image and locate: {entity}", entity) for entity in expressions]
    answers = adapter.entity_attention_batch([(image, queries)], layers="all")[0]  # one prefill, as pathbind_hf
    return [{name: attention.layer_set_map(name)[0] for name in LAYER_SETS} for attention in answers]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--model", help="a tiny checkpoint folder (default: build one)")
    args = parser.parse_args()
    from pathbind_models import load_adapter

    with tempfile.TemporaryDirectory() as scratch:
        model_dir = args.model
        if model_dir is None:
            from pathbind_models.hf.tiny_checkpoints import make_tiny_model

            model_dir = str(make_tiny_model("qwen2_vl", Path(scratch) / "qwen2_vl"))
        adapter = load_adapter(model_dir)
        model_seconds = metric_seconds = 0.0
        scored = 0
        for image, box, expressions in items(args.items):
            start = time.perf_counter()
            maps = model_stage(adapter, image, expressions)
            middle = time.perf_counter()
            record = item_record(maps, box, (SIZE, SIZE))
            metric_seconds += time.perf_counter() - middle
            model_seconds += middle - start
            scored += bool(np.isfinite(record["iou"]["0.2"]))
    print(json.dumps({
        "benchmark": "grounding_metrics", "items": args.items, "image_size": SIZE, "scored": scored,
        "grid": list(maps[0]["mid"].shape), "model_stage_seconds": round(model_seconds, 2),
        "metric_stage_seconds": round(metric_seconds, 2),
        "metric_ms_per_item": round(1000 * metric_seconds / args.items, 1),
        "metric_share_of_model_stage": round(metric_seconds / model_seconds, 4),
    }))


if __name__ == "__main__":
    main()
