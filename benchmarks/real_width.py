"""A real-width CPU proxy: Qwen2.5-VL with the text width and depth of Qwen2.5-0.5B, a slim vision tower, random
weights, an image of about 1.3k tokens.

Tiny models (hidden 32-128) hide per-token costs under Python overhead; this one has the published text dimensions
of Qwen/Qwen2.5-0.5B-Instruct (hidden 896, 24 layers, 14 query and 2 key-value heads, MLP 4,864, vocabulary 151,936)
under Qwen2.5-VL's multimodal rotary positions, and a 2-block vision tower of width 128 (the tower is not what
PathBind changes). Built with ``benchmarks/gpu_scale.py``'s builder and measures, on the CPU in float32:

- one forward with SDPA vs the row-only probe (time, medians of ``--repeats``, alternating) and the extra peak
  RSS of SDPA, the probe and eager ``output_attentions`` over a forward (the kernel's high-water mark, reset before
  each; extra = a mode's growth minus SDPA's, the probe's floored at the rows it keeps);
- a grounding item's three queries through the shared prefix vs ONE plain SDPA forward of one query;
- occlusion images/s on a ``--grid``² grid at the automatic batch vs one image per forward;
- greedy generation tokens/s at batch 1 (``--new-tokens`` exactly, the prefill included).

One JSON line with torch's thread count and the load average; progress on stderr. About 10 minutes on 2 idle
cores. ``--smoke``: the same code on gpu_scale's shrunken Qwen2.5-VL (seconds), as the tests run it.

    python benchmarks/real_width.py [--repeats 2] [--grid 2] [--new-tokens 8] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_scale  # the sibling benchmark's builder and measures

FAMILY = "qwen2_5_vl"
# Qwen/Qwen2.5-0.5B-Instruct's config.json; head_dim 64, so Qwen2.5-VL's mrope_section [16, 24, 24] halves.
TEXT_05B: dict[str, Any] = {
    "vocab_size": 151936, "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
    "num_attention_heads": 14, "num_key_value_heads": 2, "max_position_embeddings": 32768, "rms_norm_eps": 1e-6,
    "rope_parameters": {"rope_type": "default", "rope_theta": 1_000_000.0, "mrope_section": [8, 12, 12]}}
SLIM_VISION: dict[str, Any] = {
    "depth": 2, "hidden_size": 128, "intermediate_size": 256, "num_heads": 2, "out_hidden_size": 896,
    "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "window_size": 112,
    "fullatt_block_indexes": [1], "tokens_per_second": 2}
IMAGE_PX = 1008  # 36 × 36 merged tokens = 1,296 image tokens
TOP = {"tie_word_embeddings": True}  # as Qwen2.5-0.5B


def dims(smoke: bool, tokenizer_size: int) -> dict[str, Any]:
    if smoke:
        return gpu_scale.dimensions(FAMILY, True, tokenizer_size)
    return {"text": TEXT_05B, "vision": SLIM_VISION, "top": TOP, "image_px": IMAGE_PX}


def _kib(field: str) -> int:
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith(field + ":"))
    return int(line.split()[1])


def peak_growth(fn: Callable[[], Any]) -> tuple[int, Any]:
    """(peak RSS growth in bytes over ``fn()``, its result): the high-water mark reset to the RSS before it."""
    Path("/proc/self/clear_refs").write_text("5")
    before = _kib("VmRSS")
    with torch.inference_mode():
        result = fn()
    return (_kib("VmHWM") - before) * 1024, result


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    with torch.inference_mode():
        fn()
    return time.perf_counter() - start


def forward_costs(adapter: Any, inputs: dict[str, torch.Tensor], repeats: int) -> dict[str, Any]:
    """SDPA vs probe time (alternating) and the three modes' extra peak memory over one forward."""
    from pathbind_models.hf import probe

    model, length = adapter.model, int(inputs["input_ids"].shape[1])
    rows, modules = list(range(length - 8, length - 3)), {m: i for i, m in enumerate(adapter.decoder_layers)}

    def probed() -> int:
        with probe.recording(rows, modules) as record:
            model(**inputs)
        return sum(r.numel() * r.element_size() for r in record.rows_by_layer.values())

    def sdpa() -> None:
        model(**inputs)

    growth = {"sdpa": peak_growth(sdpa)[0]}  # also the warm-up
    growth["probe"], kept = peak_growth(probed)
    times: dict[str, list[float]] = {"sdpa": [], "probe": []}
    for _ in range(repeats):
        times["sdpa"].append(timed(sdpa))
        times["probe"].append(timed(probed))
    model.set_attn_implementation("eager")
    try:
        growth["eager"] = peak_growth(lambda: model(**inputs, output_attentions=True).attentions)[0]
    finally:
        model.set_attn_implementation(probe.register())
    sdpa_s, probe_s = statistics.median(times["sdpa"]), statistics.median(times["probe"])
    probe_extra, eager_extra = max(growth["probe"] - growth["sdpa"], kept), growth["eager"] - growth["sdpa"]
    return {"sequence_tokens": length,
            "image_tokens": int((inputs["input_ids"][0] == adapter.config.image_token_id).sum()),
            "forward_s_sdpa": round(sdpa_s, 3), "forward_s_probe": round(probe_s, 3),
            "time_ratio_probe_vs_sdpa": round(probe_s / sdpa_s, 4),
            "forward_runs_s": {k: [round(t, 3) for t in v] for k, v in times.items()},
            "extra_peak_mb_probe": round(probe_extra / 2**20, 2), "extra_peak_mb_eager": round(eager_extra / 2**20, 1),
            "peak_growth_mb_sdpa": round(growth["sdpa"] / 2**20, 1),
            "mem_ratio_eager_vs_probe": round(eager_extra / probe_extra, 1)}


def grounding_costs(adapter: Any, image: Any, queries: list[tuple[str, str]], repeats: int) -> dict[str, Any]:
    """One item's three queries with one shared prefill vs one plain SDPA forward of one query's encoded prompt."""
    inputs = gpu_scale.encode(adapter, image, queries[0][0])
    item = [(image, queries)]
    answers = adapter.entity_attention_batch(item)[0]  # warm-up
    failures = [f"{type(a).__name__}: {a}" for a in answers if isinstance(a, Exception)]
    one, shared = [], []
    for _ in range(repeats):
        one.append(timed(lambda: adapter.model(**inputs)))
        shared.append(timed(lambda: adapter.entity_attention_batch(item)))
    one_s, shared_s = statistics.median(one), statistics.median(shared)
    return {"grounding_queries": len(queries), "grounding_one_forward_s": round(one_s, 3),
            "grounding_shared_s": round(shared_s, 3),
            "time_ratio_k_queries_vs_one_forward": round(shared_s / one_s, 4), "grounding_failures": failures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2, help="timed forwards of each mode (medians)")
    parser.add_argument("--grid", type=int, default=2, help="occlusion grid side (grid² + 1 images)")
    parser.add_argument("--new-tokens", type=int, default=8)
    parser.add_argument("--smoke", action="store_true", help="gpu_scale's shrunken Qwen2.5-VL: checks it runs")
    args = parser.parse_args()
    load_before = [round(v, 2) for v in os.getloadavg()]
    gpu_scale.log("building the model")
    tokenizer_size = len(gpu_scale.build_tiny(FAMILY)[2].tokenizer)
    adapter, side = gpu_scale.build(FAMILY, args.smoke, torch.device("cpu"), torch.float32,
                                    dims(args.smoke, tokenizer_size))
    image = gpu_scale.noise_image(side, 0)
    locate = [f"Look at the image and locate: {entity}" for entity in gpu_scale.ENTITIES]
    question = f"Is there {gpu_scale.ENTITIES[0]} in this image? Answer Yes or No."
    row: dict[str, Any] = {"parameters": sum(p.numel() for p in adapter.model.parameters())}
    gpu_scale.log("forward")
    row.update(forward_costs(adapter, gpu_scale.encode(adapter, image, locate[0]), args.repeats))
    gpu_scale.log("grounding")
    row.update(grounding_costs(adapter, image, list(zip(locate, gpu_scale.ENTITIES, strict=True)), args.repeats))
    gpu_scale.log("occlusion")
    row.update(gpu_scale.occlusion_costs(adapter, image, question, args.grid))
    gpu_scale.log("generation")
    errors = row.setdefault("errors", {})
    row.update(gpu_scale.generation_costs(adapter, image, question, args.new_tokens, (1,), errors))
    print(json.dumps({
        "benchmark": "real_width", "smoke": args.smoke, "model": adapter.pretrained,
        "text": {k: v for k, v in (TEXT_05B if not args.smoke else {}).items() if k != "rope_parameters"},
        "repeats": args.repeats, "grid": args.grid, **row, "elapsed_s": round(time.monotonic() - gpu_scale.START, 1),
        "machine": {"cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                    "load_average_before": load_before, "load_average_after": [round(v, 2) for v in os.getloadavg()]},
        "torch": torch.__version__}))


if __name__ == "__main__":
    main()
