"""Real-scale costs without downloads: full-size Qwen2.5-VL-7B and LLaVA-1.5-7B configs with random weights.

Each family's published dimensions (written once below, checked against the real ``config.json`` by
``tests/models/test_gpu_scale.py``) go on top of the project's tiny builders' tokenizer, processor and token ids;
random bf16 weights are initialised directly on the GPU. Per family and prompt length (image tokens + filler
text) it measures, each against a baseline in the same run:

- one forward with SDPA vs the row-only probe vs eager ``output_attentions``: time and peak CUDA memory;
- grounding items/s, three queries per item: shared prefix (``entity_attention_batch``) vs three forwards;
- occlusion images/s through ``image_option_logprobs`` at the automatic batch size vs one image per forward;
- generation tokens/s (new tokens over the whole ``generate`` call, prefill included) at batch 1, 8 and 32.

Forward and grounding times are medians of ``--repeats`` runs after a warm-up; occlusion and generation, long
on their own, run once. An out-of-memory or a spent ``--budget-s`` is recorded in the row, never a crash.
Prints ONE JSON line; progress goes to stderr. ``--smoke``: the same code with shrunken configs, on the CPU.

    python benchmarks/gpu_scale.py [--smoke] [--families qwen2_5_vl llava] [--tokens 1300 2000 4000]
                                   [--repeats 3] [--budget-s 420]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import torch
from PIL import Image

from pathbind_models.hf import probe
from pathbind_models.hf.adapter import HFAdapter
from pathbind_models.hf.tiny_checkpoints import build_tiny
from pathbind_models.occlusion import fill_colour, occlude

# The published dimensions: Qwen/Qwen2.5-VL-7B-Instruct and llava-hf/llava-1.5-7b-hf (Vicuna-7B + CLIP ViT-L/14-336).
# ``image_px``: the benchmark's square image (Qwen: 896² px = 32×32 merged tokens = 1,024; LLaVA: 24×24 = 576).
FULL: dict[str, dict[str, Any]] = {
    "qwen2_5_vl": {
        "text": {"vocab_size": 152064, "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
                 "num_attention_heads": 28, "num_key_value_heads": 4, "max_position_embeddings": 128000,
                 "rms_norm_eps": 1e-6, "rope_parameters": {"rope_type": "default", "rope_theta": 1_000_000.0,
                                                           "mrope_section": [16, 24, 24]}},
        "vision": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16,
                   "out_hidden_size": 3584, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2,
                   "window_size": 112, "fullatt_block_indexes": [7, 15, 23, 31], "tokens_per_second": 2},
        "top": {"tie_word_embeddings": False},
        "image_px": 896,
    },
    "llava": {
        "text": {"vocab_size": 32064, "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
                 "num_attention_heads": 32, "num_key_value_heads": 32, "max_position_embeddings": 4096,
                 "rms_norm_eps": 1e-5},
        "vision": {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24, "num_attention_heads": 16,
                   "image_size": 336, "patch_size": 14, "projection_dim": 768, "hidden_act": "quick_gelu"},
        "top": {"image_seq_length": 576, "vision_feature_layer": -2, "vision_feature_select_strategy": "default",
                "projector_hidden_act": "gelu", "tie_word_embeddings": False},
        "image_px": 336,
    },
}
# --smoke: the same structure, shrunk (head_dim 16: mrope_section must sum to 8); vocab: the tokenizer's own.
SMOKE: dict[str, dict[str, Any]] = {
    "qwen2_5_vl": {
        "text": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "rope_parameters": {**FULL["qwen2_5_vl"]["text"]["rope_parameters"],
                                                               "mrope_section": [2, 3, 3]}},
        "vision": {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 64,
                   "fullatt_block_indexes": [1]},
        "top": {}, "image_px": 224,
    },
    "llava": {
        "text": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
                 "num_key_value_heads": 2},
        "vision": {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
                   "image_size": 112, "projection_dim": 32},
        "top": {"image_seq_length": 64}, "image_px": 112,
    },
}
RUNS: dict[str, dict[str, Any]] = {  # what a run measures, full size and --smoke (grid: G×G occluded patches)
    "full": {"tokens": (1300, 2000, 4000), "repeats": 3, "items": 4, "grid": 8, "new_tokens": 32,
             "batches": (1, 8, 32)},
    "smoke": {"tokens": (160, 320), "repeats": 1, "items": 2, "grid": 3, "new_tokens": 4, "batches": (1, 8, 32)},
}

FILLER = "The section shows glands lined by columnar epithelium with crowded hyperchromatic nuclei. "
ENTITIES = ("nuclei with prominent nucleoli", "tumour cells infiltrating the stroma", "the mitotic figure")
OPTIONS = ["Yes", "No"]
START = time.monotonic()


def log(message: str) -> None:
    print(f"[{time.monotonic() - START:7.1f}s] {message}", file=sys.stderr, flush=True)


# -- the model ----------------------------------------------------------------------------------------------------

def dimensions(family: str, smoke: bool, tokenizer_size: int) -> dict[str, Any]:
    """``family``'s dimensions: the published ones, or their shrunken copy; the vocabulary covers the tokenizer."""
    full, small = FULL[family], SMOKE[family] if smoke else {}
    dims = {part: {**full[part], **small.get(part, {})} for part in ("text", "vision", "top")}
    dims["text"]["vocab_size"] = tokenizer_size if smoke else full["text"]["vocab_size"]
    if dims["text"]["vocab_size"] < tokenizer_size:
        raise ValueError(f"{family}: vocabulary {dims['text']['vocab_size']} < the tokenizer's {tokenizer_size}")
    dims["image_px"] = small.get("image_px", full["image_px"])
    return dims


def build(family: str, smoke: bool, device: torch.device, dtype: torch.dtype,
          dims: dict[str, Any] | None = None) -> tuple[HFAdapter, int]:
    """A random-weight ``family`` model at (shrunken) full size, or at ``dims`` (``dimensions``' shape), made on
    ``device``, with the tiny tokenizer and processor (image-token ids kept); also the benchmark's image side."""
    from transformers import AutoModelForImageTextToText

    _, tiny, processor = build_tiny(family)
    size = "given dimensions" if dims else "smoke" if smoke else "full size"
    dims = dims or dimensions(family, smoke, len(processor.tokenizer))
    tiny_dict = tiny.to_dict()
    ids = {k: v for k, v in tiny_dict.items() if k.endswith(("_token_id", "_token_index"))}
    text = {k: tiny_dict["text_config"][k] for k in ("model_type", "bos_token_id", "eos_token_id", "pad_token_id")}
    vision = {"model_type": tiny_dict["vision_config"]["model_type"]}
    config = type(tiny)(text_config={**text, **dims["text"]}, vision_config={**vision, **dims["vision"]},
                        **ids, **dims["top"])
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForImageTextToText.from_config(config, dtype=dtype, attn_implementation=probe.register())
    resize_images(processor, family, dims)
    return HFAdapter.from_model(model, processor, f"random {family} ({size})"), dims["image_px"]


def resize_images(processor: Any, family: str, dims: dict[str, Any]) -> None:
    """Make the tiny processor give the benchmark's image its real token count."""
    side = dims["image_px"]
    if family == "qwen2_5_vl":  # up to side² pixels: (side / 28)² merged tokens
        processor.image_processor.size = {"shortest_edge": 56 * 56, "longest_edge": side * side}
    else:  # CLIP: resize and centre-crop to the tower's input, patch grid (side / patch)²
        processor.patch_size = dims["vision"]["patch_size"]
        processor.image_processor.size = {"shortest_edge": side}
        processor.image_processor.crop_size = {"height": side, "width": side}


def noise_image(side: int, seed: int) -> Image.Image:
    return Image.fromarray((np.random.default_rng(seed).random((side, side, 3)) * 255).astype("uint8"))


def encode(adapter: HFAdapter, image: Image.Image, text: str, copies: int = 1) -> dict[str, torch.Tensor]:
    return adapter._encode([adapter._prompt(1, text)] * copies, [[image]] * copies, padding_side="left")


def filled(adapter: HFAdapter, image: Image.Image, tokens: int, question: str) -> str:
    """``question`` after as many filler sentences as bring the prompt closest to ``tokens`` tokens."""
    def length(n: int) -> int:
        return int(encode(adapter, image, FILLER * n + question)["input_ids"].shape[1])

    base, per_sentence = length(0), length(2) - length(1)
    return FILLER * max(0, round((tokens - base) / per_sentence)) + question


# -- timing and memory --------------------------------------------------------------------------------------------

def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run(fn: Callable[[], Any], device: torch.device) -> tuple[float, int | None, Any]:
    """(seconds, peak CUDA bytes above what was allocated before — None on the CPU, result) of ``fn()``."""
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
    _sync(device)
    start = time.perf_counter()
    with torch.inference_mode():
        result = fn()
    _sync(device)
    seconds = time.perf_counter() - start
    return seconds, (torch.cuda.max_memory_allocated(device) - before) if cuda else None, result


def repeated(fn: Callable[[], Any], device: torch.device, repeats: int) -> tuple[float, int | None, Any]:
    """Median seconds and largest peak of ``repeats`` runs after a warm-up run; the last result (only that one is
    kept: eager attention weights at 4k tokens take tens of GB)."""
    seconds: list[float] = []
    peaks: list[int] = []
    result = run(fn, device)[2]
    for _ in range(repeats):
        del result
        took, peak, result = run(fn, device)
        seconds.append(took)
        peaks += [] if peak is None else [peak]
    return statistics.median(seconds), max(peaks) if peaks else None, result


def mb(value: int | None) -> float | None:
    return None if value is None else round(value / 2**20, 2)


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else round(a / b, 4)


# -- the measures -------------------------------------------------------------------------------------------------

def forward_costs(adapter: HFAdapter, image: Image.Image, text: str, repeats: int) -> dict[str, Any]:
    """SDPA vs probe vs eager ``output_attentions`` on one prompt, and the probe's rows against eager's."""
    inputs, device, model = encode(adapter, image, text), adapter.input_device, adapter.model
    length = int(inputs["input_ids"].shape[1])
    rows = list(range(length - 8, length - 3))
    modules = {module: i for i, module in enumerate(adapter.decoder_layers)}

    def probed() -> dict[int, torch.Tensor]:
        with probe.recording(rows, modules) as record:
            model(**inputs)
        return record.rows_by_layer

    sdpa_s, sdpa_peak, _ = repeated(lambda: model(**inputs).logits, device, repeats)
    probe_s, probe_peak, kept = repeated(probed, device, repeats)
    model.set_attn_implementation("eager")
    try:
        eager_s, eager_peak, eager = repeated(lambda: model(**inputs, output_attentions=True).attentions,
                                              device, repeats)
        eager_rows = {i: w[:, :, rows].float().mean(dim=1).cpu() for i, w in enumerate(eager)}
        del eager
    finally:
        model.set_attn_implementation(probe.register())
    kept_bytes = sum(r.numel() * r.element_size() for r in kept.values())
    probe_extra = eager_extra = None
    if sdpa_peak is not None and probe_peak is not None and eager_peak is not None:
        probe_extra, eager_extra = max(probe_peak - sdpa_peak, kept_bytes), eager_peak - sdpa_peak
    stacked = torch.stack([kept[i] for i in sorted(kept)])
    return {
        "sequence_tokens": length,
        "image_tokens": int((inputs["input_ids"][0] == adapter.config.image_token_id).sum()),
        "forward_s_sdpa": round(sdpa_s, 4), "forward_s_probe": round(probe_s, 4), "forward_s_eager": round(eager_s, 4),
        "time_ratio_probe_vs_sdpa": ratio(probe_s, sdpa_s), "time_ratio_eager_vs_sdpa": ratio(eager_s, sdpa_s),
        "peak_mb_sdpa": mb(sdpa_peak), "peak_mb_probe": mb(probe_peak), "peak_mb_eager": mb(eager_peak),
        "mem_ratio_eager_vs_probe": ratio(eager_extra, probe_extra),
        "probe_rows_finite": bool(torch.isfinite(stacked).all()),
        "probe_row_sum_max_dev": float((stacked.sum(dim=-1) - 1).abs().max()),
        "probe_vs_eager_max_abs_diff": float(max((kept[i][0] - eager_rows[i][0]).abs().max() for i in kept)),
    }


def grounding_costs(adapter: HFAdapter, items: list[tuple[Image.Image, list[tuple[str, str]]]],
                    repeats: int) -> dict[str, Any]:
    """Items/s with each item's three queries sharing one prefill vs three forwards, and the largest map difference."""
    device = adapter.input_device

    def unshared_run() -> list[list[Any]]:
        return [[adapter.entity_attention(image, text, entity, layers="all") for text, entity in queries]
                for image, queries in items]

    shared_s, _, shared = repeated(lambda: adapter.entity_attention_batch(items, layers="all"), device, repeats)
    unshared_s, _, unshared = repeated(unshared_run, device, repeats)
    failures = [f"{type(a).__name__}: {a}" for answers in shared for a in answers if isinstance(a, Exception)]
    pairs = [(a, b) for x, y in zip(shared, unshared, strict=True) for a, b in zip(x, y, strict=True)
             if not isinstance(a, Exception)]
    diff = max((float(np.abs(a.per_layer[i] - b.per_layer[i]).max()) for a, b in pairs for i in b.per_layer),
               default=None)
    return {"grounding_items": len(items), "grounding_items_per_s_shared": round(len(items) / shared_s, 3),
            "grounding_items_per_s_unshared": round(len(items) / unshared_s, 3),
            "grounding_speedup_shared_vs_unshared": ratio(unshared_s, shared_s),
            "grounding_max_abs_diff": diff, "grounding_failures": failures}


def occlusion_costs(adapter: HFAdapter, image: Image.Image, text: str, grid: int) -> dict[str, Any]:
    """Images/s of the base image and its G² single-patch occlusions, automatic batch vs one image per forward."""
    colour = fill_colour(image, "mean")
    masks = np.eye(grid * grid, dtype=bool).reshape(-1, grid, grid)
    images = [image, *(occlude(image, mask, colour) for mask in masks)]
    single = HFAdapter.from_model(adapter.model, adapter.processor, adapter.pretrained, occlusion_batch=1)
    device = adapter.input_device
    auto_s, auto_peak, auto = run(lambda: adapter.image_option_logprobs(images, text, OPTIONS), device)
    one_s, _, one = run(lambda: single.image_option_logprobs(images, text, OPTIONS), device)
    return {"occlusion_images": len(images), "occlusion_images_per_s_auto": round(len(images) / auto_s, 3),
            "occlusion_images_per_s_1": round(len(images) / one_s, 3),
            "occlusion_speedup_auto_vs_1": ratio(one_s, auto_s), "occlusion_peak_mb_auto": mb(auto_peak),
            "occlusion_max_abs_diff": float(np.abs(auto - one).max()),
            "occlusion_scores_finite": bool(np.isfinite(auto).all() and np.isfinite(one).all())}


def generation_costs(adapter: HFAdapter, image: Image.Image, text: str, new_tokens: int,
                     batches: tuple[int, ...], errors: dict[str, str]) -> dict[str, Any]:
    """New tokens/s of greedy ``generate`` at each batch size; exactly ``new_tokens`` each (EOS suppressed)."""
    options = {"do_sample": False, "num_beams": 1, "max_new_tokens": new_tokens, "min_new_tokens": new_tokens,
               "pad_token_id": adapter.processor.tokenizer.pad_token_id}
    speeds: dict[str, float | None] = {}
    exact = True
    run(lambda: adapter.model.generate(**encode(adapter, image, text), **options), adapter.input_device)  # warm-up
    for batch in batches:
        inputs = encode(adapter, image, text, batch)
        generate = partial(adapter.model.generate, **inputs, **options)
        outcome = guarded(partial(run, generate, adapter.input_device), f"generation_batch_{batch}", errors)
        if outcome is None:
            speeds[str(batch)] = None
            continue
        seconds, _, output = outcome
        exact &= output.shape == (batch, inputs["input_ids"].shape[1] + new_tokens)
        speeds[str(batch)] = round(batch * new_tokens / seconds, 2)
        del output, outcome
    return {"generation_new_tokens": new_tokens, "generation_tokens_per_s": speeds,
            "generation_lengths_exact": bool(exact)}


# -- one run ------------------------------------------------------------------------------------------------------

def guarded(fn: Callable[[], Any], name: str, errors: dict[str, str]) -> Any:
    """``fn()``, or None with the out-of-memory recorded under ``name``."""
    try:
        return fn()
    except torch.OutOfMemoryError as exc:
        errors[name] = f"out of memory: {str(exc).splitlines()[0]}"
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return None


def measure_row(adapter: HFAdapter, side: int, tokens: int, settings: dict[str, Any], repeats: int,
                deadline: float, budget_s: float) -> dict[str, Any]:
    """Every measure of one family at one prompt length; a measure that would start after ``deadline`` is skipped."""
    image = noise_image(side, 0)
    locate = [filled(adapter, image, tokens, f"Look at the image and locate: {entity}") for entity in ENTITIES]
    question = filled(adapter, image, tokens, f"Is there {ENTITIES[0]} in this image? Answer Yes or No.")
    items = [(noise_image(side, seed), list(zip(locate, ENTITIES, strict=True))) for seed in range(settings["items"])]
    row: dict[str, Any] = {"tokens": tokens, "errors": {}, "skipped": {}}
    measures: dict[str, Callable[[], dict[str, Any]]] = {
        "forward": lambda: forward_costs(adapter, image, locate[0], repeats),
        "grounding": lambda: grounding_costs(adapter, items, repeats),
        "occlusion": lambda: occlusion_costs(adapter, image, question, settings["grid"]),
        "generation": lambda: generation_costs(adapter, image, question, settings["new_tokens"],
                                               settings["batches"], row["errors"]),
    }
    for name, measure in measures.items():
        if time.monotonic() > deadline:
            row["skipped"][name] = f"time budget spent (--budget-s {budget_s:g})"
            continue
        log(f"{adapter.family.name} {tokens} tokens: {name}")
        row.update(guarded(measure, name, row["errors"]) or {})
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="shrunken configs on the CPU, float32")
    parser.add_argument("--families", nargs="+", default=list(FULL), choices=list(FULL))
    parser.add_argument("--tokens", nargs="+", type=int, help="prompt lengths (default 1300 2000 4000; smoke 160 320)")
    parser.add_argument("--repeats", type=int, help="timed runs of the forward and grounding measures (default 3)")
    parser.add_argument("--budget-s", type=float, default=420.0,
                        help="seconds from the start after which the remaining measures are skipped")
    args = parser.parse_args()
    settings = RUNS["smoke" if args.smoke else "full"]
    tokens, repeats = args.tokens or settings["tokens"], args.repeats or settings["repeats"]
    if not args.smoke and not torch.cuda.is_available():
        parser.error("the full-size run needs a CUDA GPU; use --smoke on a CPU")
    device = torch.device("cpu" if args.smoke else "cuda")
    dtype = torch.float32 if args.smoke else torch.bfloat16
    end, rows = START + args.budget_s, []
    for n, family in enumerate(args.families):
        deadline = time.monotonic() + (end - time.monotonic()) / (len(args.families) - n)  # an even share of the rest
        log(f"{family}: building the model")
        adapter, side = build(family, args.smoke, device, dtype)
        parameters = sum(p.numel() for p in adapter.model.parameters())
        for count in tokens:
            row = measure_row(adapter, side, count, settings, repeats, deadline, args.budget_s)
            rows.append({"family": family, "parameters": parameters, **row})
        del adapter
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
    import transformers

    print(json.dumps({
        "benchmark": "gpu_scale", "smoke": args.smoke,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "dtype": str(dtype).removeprefix("torch."), "torch": torch.__version__,
        "transformers": transformers.__version__, "repeats": repeats, "budget_s": args.budget_s,
        "elapsed_s": round(time.monotonic() - START, 1), "rows": rows}))


if __name__ == "__main__":
    main()
