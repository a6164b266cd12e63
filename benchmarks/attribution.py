"""What each attribution method costs per item, against the occlusion map measured in the same run, on tiny
checkpoints of the real templates (Qwen2-VL, LLaVA, Idefics3 by default).

For every family, the occlusion map (the G² + 1 images the faithfulness task always scores) is the baseline; then
each method's map is computed alone (``pathbind_models.occlusion.heat_maps``), each in a forked child process so its
peak resident memory is its own. Prints one JSON line: per family and method, model calls (``forwards``), sequences
through the model (``rows``: an image once per distinct option prefix, two for the tiny tokenizer's "Yes"/"No"),
backward passes (``backwards``: autograd calls, each over a batch), the images its insertion/deletion curves add
(``curve_images``), seconds and their ratio to the occlusion map's, peak RSS (MB) and its excess over the occlusion
child's, and for the attention-based methods the attention values the probe records against what eager
``output_attentions`` would hold (``recorded_values``, ``eager_values``); plus the machine's state.

    python benchmarks/attribution.py [--families qwen2_vl,llava,idefics3] [--grid 8] [--rise-masks 64] [--ig-steps 16]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from pathbind.wire import OcclusionRequest
from pathbind_models.adapter import layer_indices
from pathbind_models.attribution import METHODS, AttributionSettings, heat_maps, layer_spec
from pathbind_models.hf.adapter import HFAdapter
from pathbind_models.hf.tiny_checkpoints import make_tiny_model
from pathbind_models.occlusion import fill_colour, occlude, rgb_pixels
from pathbind_tasks.demo.grounding_synth import grounding_items


def counted(adapter: HFAdapter, run: Any) -> dict[str, Any]:
    """Run ``run()`` counting model calls, their rows (sequences with an image) and autograd passes."""
    calls, rows, backwards = [0], [0], [0]

    def on_forward(_module: Any, _args: Any, kwargs: dict[str, Any], _output: Any) -> None:
        calls[0] += 1
        rows[0] += int(kwargs["input_ids"].shape[0]) if "pixel_values" in kwargs else 0

    grad = torch.autograd.grad

    def counting_grad(*args: Any, **kwargs: Any) -> Any:
        backwards[0] += 1
        return grad(*args, **kwargs)

    hook = adapter.model.register_forward_hook(on_forward, with_kwargs=True)
    torch.autograd.grad = counting_grad
    start = time.perf_counter()
    try:
        run()
    finally:
        seconds = time.perf_counter() - start
        hook.remove()
        torch.autograd.grad = grad
    return {"s": round(seconds, 3), "forwards": calls[0], "rows": rows[0], "backwards": backwards[0],
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def in_child(work: Any) -> dict[str, Any]:
    """``work()`` in a forked child (its peak RSS its own), its result returned through a pipe."""
    reader, writer = multiprocessing.Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(target=lambda: writer.send(work()))
    child.start()
    result = reader.recv()
    child.join()
    return result


def attention_values(adapter: HFAdapter, request: OcclusionRequest, image: Any, method: str,
                     settings: AttributionSettings) -> dict[str, int] | None:
    """Attention values the probe records for a method against eager ``output_attentions`` (all layers and heads,
    S × S each)."""
    if method not in ("attention", "rollout", "gradient_attention"):
        return None
    text = adapter.config.get_text_config()
    prompt = adapter._prompt(1, request.prompt)
    ids = adapter._encode([prompt], [[image]])["input_ids"][0].numpy()
    length, layers, heads = len(ids), text.num_hidden_layers, text.num_attention_heads
    chosen = len(layer_indices(layer_spec(settings.layers, layers), layers))
    tokens = len(adapter._entity_positions(prompt, ids, request.prompt, request.entity))
    recorded = {"attention": chosen * tokens * length, "rollout": layers * length * length,
                "gradient_attention": chosen * heads * tokens * length}[method]
    return {"recorded_values": recorded, "eager_values": layers * heads * length * length}


def family_costs(family: str, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    adapter = HFAdapter(str(make_tiny_model(family, folder / family)), device="cpu")
    item = grounding_items(1)[0]
    image = item["image"]
    request = OcclusionRequest(f"Is there {item['expression']} in this image? Answer Yes or No.", ("Yes", "No"), 0,
                               entity=item["expression"], grid=args.grid, steps=args.steps,
                               rise_masks=args.rise_masks, ig_steps=args.ig_steps)
    colour, pixels = fill_colour(image, "mean"), rgb_pixels(image)
    masks = torch.eye(args.grid * args.grid, dtype=torch.bool).reshape(-1, args.grid, args.grid).numpy()
    occlusion = [image, *(occlude(pixels, m, colour) for m in masks)]
    adapter.image_option_logprobs(occlusion[:2], request.prompt, list(request.options))  # warm-up
    baseline = in_child(lambda: counted(adapter, lambda: adapter.image_option_logprobs(
        occlusion, request.prompt, list(request.options))))
    methods = {}
    for method in METHODS:
        settings = AttributionSettings(methods=(method,))
        cost = in_child(lambda s=settings: counted(adapter, lambda: heat_maps(adapter, image, request, s, colour)))
        cost.update(ratio_to_occlusion=round(cost["s"] / baseline["s"], 2),
                    rss_over_occlusion_mb=round(cost["peak_rss_mb"] - baseline["peak_rss_mb"], 1),
                    curve_images=2 * (args.steps - 1))  # per order: each curve's ends are scored once for all
        cost.update(attention_values(adapter, request, image, method, settings) or {})
        methods[method] = cost
    return {"occlusion": baseline, "methods": methods}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default="qwen2_vl,llava,idefics3")
    parser.add_argument("--grid", type=int, default=8)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--rise-masks", type=int, default=64)
    parser.add_argument("--ig-steps", type=int, default=16)
    args = parser.parse_args()
    load_before = [round(v, 2) for v in os.getloadavg()]
    with tempfile.TemporaryDirectory() as folder:
        costs = {family: family_costs(family, args, Path(folder)) for family in args.families.split(",")}
    print(json.dumps({
        "benchmark": "attribution", "grid": args.grid, "steps": args.steps, "rise_masks": args.rise_masks,
        "ig_steps": args.ig_steps, "families": costs,
        "machine": {"cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                    "load_average_before": load_before,
                    "load_average_after": [round(v, 2) for v in os.getloadavg()]}}))


if __name__ == "__main__":
    main()
