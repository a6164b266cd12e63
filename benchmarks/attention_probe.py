"""Cost of the row-only attention probe against a plain SDPA forward and eager ``output_attentions``.

A tiny Qwen2-VL checkpoint (``pathbind make-tiny-model``) reads one image and a prompt of about 2k tokens.
Time: SDPA and probe forwards alternate in this process (median of ``--repeats``). Memory: each mode runs
in a fresh subprocess that resets the kernel's peak-RSS counter after a warm-up forward and reports the
peak growth of one measured forward; extra memory = that growth minus SDPA's. The probe's extra is floored
at the bytes of the rows it keeps (below that, RSS cannot resolve it). Prints one JSON line.
Run: python benchmarks/attention_probe.py [--tokens 2048] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENTITY = "nuclei with prominent nucleoli"
FILLER = "The section shows glands lined by columnar epithelium with crowded hyperchromatic nuclei. "


def setup(model_dir: str, tokens: int) -> tuple:
    import numpy as np
    from PIL import Image

    from pathbind_models import load_adapter

    adapter = load_adapter(model_dir)
    image = Image.fromarray((np.random.default_rng(0).random((224, 224, 3)) * 255).astype("uint8"))
    filler_tokens = len(adapter.processor.tokenizer(FILLER)["input_ids"])
    text = FILLER * max(1, tokens // filler_tokens) + f"Look at the image and locate: {ENTITY}"
    inputs = adapter._encode([adapter._prompt(1, text)], [[image]])
    return adapter, image, text, inputs


def forward(adapter, inputs, mode: str) -> int:
    """One forward pass in ``mode``; returns the bytes of attention weights it keeps."""
    import torch

    from pathbind_models.hf import probe

    with torch.inference_mode():
        if mode == "eager":
            weights = adapter.model(**inputs, output_attentions=True).attentions
            return sum(w.numel() * w.element_size() for w in weights)
        if mode == "probe":
            modules = {adapter.decoder_layers[i]: i for i in range(len(adapter.decoder_layers))}
            rows = list(range(inputs["input_ids"].shape[1] - 8, inputs["input_ids"].shape[1] - 3))
            with probe.recording(rows, modules) as record:
                adapter.model(**inputs)
            return sum(r.numel() * r.element_size() for r in record.rows_by_layer.values())
        adapter.model(**inputs)
        return 0


def peak_growth(model_dir: str, tokens: int, mode: str) -> tuple[int, int]:
    """(peak RSS growth in bytes during one ``mode`` forward, bytes of attention kept), in this process."""
    adapter, _, _, inputs = setup(model_dir, tokens)
    if mode == "eager":
        adapter.model.set_attn_implementation("eager")
    forward(adapter, inputs, mode)  # warm-up: allocator arenas and lazy initialisation
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    before = _status("VmRSS")
    kept = forward(adapter, inputs, mode)
    return _status("VmHWM") - before, kept


def _status(field: str) -> int:
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith(field + ":"))
    return int(line.split()[1]) * 1024


def measure_memory(model_dir: str, tokens: int, repeats: int) -> dict[str, tuple[int, int]]:
    results: dict[str, list[tuple[int, int]]] = {"sdpa": [], "probe": [], "eager": []}
    for _ in range(repeats):
        for mode in results:
            done = subprocess.run([sys.executable, __file__, "--child", mode, "--model", model_dir,
                                   "--tokens", str(tokens)], capture_output=True, text=True, check=True)
            growth, kept = json.loads(done.stdout.strip().splitlines()[-1])
            results[mode].append((growth, kept))
    return {mode: (int(statistics.median(g for g, _ in runs)), runs[0][1]) for mode, runs in results.items()}


def measure_time(model_dir: str, tokens: int, repeats: int) -> tuple[dict[str, float], int]:
    adapter, _, _, inputs = setup(model_dir, tokens)
    times: dict[str, list[float]] = {"sdpa": [], "probe": []}
    forward(adapter, inputs, "sdpa")
    for _ in range(repeats):
        for mode in times:
            start = time.perf_counter()
            forward(adapter, inputs, mode)
            times[mode].append(time.perf_counter() - start)
    return {mode: statistics.median(values) for mode, values in times.items()}, int(inputs["input_ids"].shape[1])


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--model", help="a tiny checkpoint folder (default: build one)")
    parser.add_argument("--child", choices=("sdpa", "probe", "eager"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(peak_growth(args.model, args.tokens, args.child)))
        return
    load_before = [round(v, 2) for v in os.getloadavg()]
    with tempfile.TemporaryDirectory() as scratch:
        model_dir = args.model
        if model_dir is None:
            from pathbind_models.hf.tiny_checkpoints import make_tiny_model

            model_dir = str(make_tiny_model("qwen2_vl", Path(scratch) / "qwen2_vl"))
        seconds, length = measure_time(model_dir, args.tokens, args.repeats)
        memory = measure_memory(model_dir, args.tokens, max(1, args.repeats // 2))
    probe_extra = max(memory["probe"][0] - memory["sdpa"][0], memory["probe"][1])
    eager_extra = memory["eager"][0] - memory["sdpa"][0]
    print(json.dumps({
        "benchmark": "attention_probe", "model": "tiny qwen2_vl", "sequence_tokens": length, "repeats": args.repeats,
        "forward_seconds_sdpa": round(seconds["sdpa"], 4), "forward_seconds_probe": round(seconds["probe"], 4),
        "time_ratio_probe_vs_sdpa": round(seconds["probe"] / seconds["sdpa"], 4),
        "extra_peak_mb_eager": round(eager_extra / 2**20, 2), "extra_peak_mb_probe": round(probe_extra / 2**20, 3),
        "attention_kept_mb_eager": round(memory["eager"][1] / 2**20, 2),
        "attention_kept_mb_probe": round(memory["probe"][1] / 2**20, 4),
        "mem_ratio_eager_vs_probe": round(eager_extra / probe_extra, 1),
        "machine": {"cpu_count": os.cpu_count(), "torch_threads": _torch_threads(), "load_average_before": load_before,
                    "load_average_after": [round(v, 2) for v in os.getloadavg()]},
    }))


if __name__ == "__main__":
    main()
