"""PathBind's ``pathbind_hf`` side by side with lmms-eval's own wrappers (``qwen2_5_vl``, ``llava_hf``).

The same checkpoint for both: Qwen2.5-VL-7B-Instruct's and llava-1.5-7b-hf's real tokenizer, processor and chat
template files (``../shared/realtok``) with tiny random weights saved by ``save_pretrained`` (``tests/realtok.py``),
the same task (``pathbind_demo_vqa_image``: 256² px tissue images, answer-scored), the same ``--limit``,
``--gen_kwargs`` and ``--batch_size``. Each run is a fresh ``lmms_eval`` process whose model stage (requests
answered and scored) is timed from inside (``benchmarks/harness_scale.py``'s stage marks), and whose every
``generate`` call is recorded: the prompt's token ids (padding removed) and the new tokens. Where the two send
the same token ids, the greedy answers are compared token for token; where they differ, the first differing
prompt is shown decoded.

lmms-eval's ``qwen2_5_vl`` runs twice: as a user runs it (its own ``min_pixels`` of 256·28² enlarges a 256² image
to 16×16 merged tokens) and with the checkpoint's ``preprocessor_config.json`` pixel bounds (``min_pixels=3136``),
which ``pathbind_hf`` reads, so the token ids can agree. One JSON line.

    python benchmarks/vs_native.py [--limit 16] [--batches 1 8] [--new-tokens 8] [--families qwen2_5_vl llava]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TASK = "pathbind_demo_vqa_image"
CPU = "device=cpu,device_map=cpu"
IMAGE_TOKENS = ("<|image_pad|>", "<image>")
# family -> (lmms-eval model, extra model_args per variant): "default" as a user runs it, "matched" with the
# checkpoint's own pixel bounds (Qwen's wrapper overrides them; LLaVA's processor has none to override).
NATIVE: dict[str, tuple[str, dict[str, str]]] = {
    "qwen2_5_vl": ("qwen2_5_vl", {"default": "", "matched": ",min_pixels=3136,max_pixels=12845056"}),
    "llava": ("llava_hf", {"default": ""}),
}
# pathbind_hf's model_args per family: the dtype the native wrapper uses (lmms-eval's qwen2_5_vl always loads
# bfloat16; llava_hf and pathbind_hf take the checkpoint's own, float32 here).
OURS = {"qwen2_5_vl": ",dtype=bfloat16", "llava": ""}


# --- the child: one lmms-eval run, its model stage timed and its generate calls recorded ----------------------


def _record_generate(path: Path) -> None:
    """Append each ``generate`` call's rows (prompt ids without padding, new ids) to ``path`` as JSON lines."""
    from transformers import GenerationMixin

    original = GenerationMixin.generate

    def generate(self: Any, *args: Any, **kwargs: Any) -> Any:
        output = original(self, *args, **kwargs)
        ids, mask = kwargs["input_ids"], kwargs.get("attention_mask")
        width = ids.shape[1]
        sequences = output if not hasattr(output, "sequences") else output.sequences
        pixels = kwargs.get("pixel_values")  # the call's image input: its sum tells two runs' pixels apart
        checksum = None if pixels is None else float(pixels.double().sum())
        with open(path, "a") as out:
            for row in range(ids.shape[0]):
                prompt = ids[row] if mask is None else ids[row][mask[row].bool()]
                out.write(json.dumps({"prompt": prompt.tolist(), "new": sequences[row, width:].tolist(),
                                     "pixels": checksum if ids.shape[0] == 1 else None}) + "\n")
        return output

    GenerationMixin.generate = generate  # type: ignore[method-assign]


def child(argv: list[str], out: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import harness_scale
    from lmms_eval.__main__ import cli_evaluate
    from lmms_eval.api.task import ConfigurableTask
    from lmms_eval.evaluator_utils import TaskOutput

    stages = harness_scale.Stages()
    harness_scale._around(ConfigurableTask, "build_all_requests", stages, None, "start-up")
    harness_scale._around(TaskOutput, "calculate_aggregate_metric", stages, "model", None)
    _record_generate(out / "generate.jsonl")
    sys.argv = ["lmms_eval", *argv]
    cli_evaluate()
    model = stages.figures.get("model")  # absent when the wrapper failed (lmms-eval logs it and exits 0)
    print(json.dumps({"model_seconds": model and model["seconds"]}))


# --- the parent -------------------------------------------------------------------------------------------------


def run(model: str, model_args: str, batch: int, args: argparse.Namespace, scratch: Path, label: str) -> dict:
    """Seconds per item of the model stage and the generate calls; or the wrapper's error."""
    out = scratch / label
    out.mkdir()
    argv = ["--model", model, "--model_args", model_args, "--tasks", TASK, "--limit", str(args.limit),
            "--batch_size", str(batch), "--gen_kwargs", f"max_new_tokens={args.new_tokens}",
            "--output_path", str(out / "out"), "--log_samples", "--verbosity", "ERROR"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run([sys.executable, __file__, "--child", str(out), "--", *argv], env=env,
                          capture_output=True, text=True)
    last = (done.stdout.strip().splitlines() or ["{}"])[-1]
    seconds = json.loads(last).get("model_seconds") if last.startswith("{") else None
    if done.returncode != 0 or seconds is None:
        errors = [line for line in done.stderr.splitlines() if re.match(r"\w+(Error|Exception): ", line)]
        return {"error": errors[-1] if errors else done.stderr[-500:]}
    print(f"{label}: {seconds / args.limit:.3f} s per item", file=sys.stderr, flush=True)
    calls = [json.loads(line) for line in (out / "generate.jsonl").read_text().splitlines()]
    return {"seconds_per_item": seconds / args.limit, "calls": calls}


def compare(native: list[dict], ours: list[dict], tokenizer: Any) -> dict[str, Any]:
    """How many prompts have the same token ids, whether their greedy answers agree, the first differing pair."""
    answers = {tuple(c["prompt"]): c["new"] for c in native}
    same = [c for c in ours if tuple(c["prompt"]) in answers]
    differing = [c for c in ours if tuple(c["prompt"]) not in answers]
    agreeing = [c for c in same if answers[tuple(c["prompt"])] == c["new"]]
    pixels = {tuple(c["prompt"]): c["pixels"] for c in native}
    result: dict[str, Any] = {"prompts": len(ours), "same_token_ids": len(same),
                              "answers_identical": len(agreeing) == len(same) if same else None,
                              "identical_answers": len(agreeing),
                              # batch 1 only: whether the image arrived as the same pixel values
                              "same_pixel_sums": sum(c["pixels"] is not None and pixels[tuple(c["prompt"])] ==
                                                     c["pixels"] for c in same),
                              "new_tokens_mean": [round(sum(len(c["new"]) for c in calls) / len(calls), 2)
                                                  for calls in (ours, native)]}
    if len(agreeing) < len(same):  # the first answer that differs, as token ids: where greedy decoding parted
        first = next(c for c in same if answers[tuple(c["prompt"])] != c["new"])
        result["first_difference"] = {"pathbind": first["new"], "native": answers[tuple(first["prompt"])]}
    if differing:
        # The first prompt of each run (not always the same document: each orders its requests its own way).
        result["example"] = {"pathbind": _shown(tokenizer, ours[0]["prompt"]),
                             "native": _shown(tokenizer, native[0]["prompt"])}
    return result


def _shown(tokenizer: Any, ids: list[int]) -> str:
    """The prompt decoded, each run of image placeholder tokens shown once with its length."""
    pieces: list[str] = []
    for token in tokenizer.convert_ids_to_tokens(ids):
        if token in IMAGE_TOKENS and pieces and pieces[-1].startswith("<image×"):
            pieces[-1] = f"<image×{int(pieces[-1][7:-1]) + 1}>"
        else:
            pieces.append("<image×1>" if token in IMAGE_TOKENS else token)
    return "".join(piece if piece.startswith("<image×") else tokenizer.convert_tokens_to_string([piece])
                   for piece in pieces)


def family_rows(family: str, args: argparse.Namespace, scratch: Path) -> list[dict[str, Any]]:
    from transformers import AutoTokenizer

    sys.path.insert(0, str(ROOT / "tests"))
    import realtok

    checkpoint = realtok.make_realtok_model(family, scratch / family)
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    model, variants = NATIVE[family]
    rows = []
    for batch in args.batches:
        ours = run("pathbind_hf", f"pretrained={checkpoint},device=cpu{OURS[family]}", batch, args, scratch,
                   f"{family}-pathbind-{batch}")
        for variant, extra in variants.items():
            native = run(model, f"pretrained={checkpoint},{CPU}{extra}", batch, args, scratch,
                         f"{family}-{model}-{variant}-{batch}")
            if "error" in native or "error" in ours:
                rows.append({"family": family, "native": model, "native_args": variant, "batch_size": batch,
                             "error_native": native.get("error"), "error_pathbind": ours.get("error")})
                continue
            ratio = ours["seconds_per_item"] / native["seconds_per_item"]
            rows.append({"family": family, "native": model, "native_args": variant, "batch_size": batch,
                         "seconds_per_item_pathbind": round(ours["seconds_per_item"], 4),
                         "seconds_per_item_native": round(native["seconds_per_item"], 4),
                         "time_ratio_pathbind_vs_native": round(ratio, 3),
                         **compare(native["calls"], ours["calls"], tokenizer)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=16, help="documents per run")
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 8])
    parser.add_argument("--new-tokens", type=int, default=8)
    parser.add_argument("--families", nargs="+", default=list(NATIVE), choices=list(NATIVE))
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.child:
        child(rest[1:] if rest[:1] == ["--"] else rest, args.child)
        return
    import torch

    load_before = [round(v, 2) for v in os.getloadavg()]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="vs_native-") as folder:
        rows = [row for family in args.families for row in family_rows(family, args, Path(folder))]
    print(json.dumps({
        "benchmark": "vs_native", "task": TASK, "limit": args.limit, "new_tokens": args.new_tokens, "rows": rows,
        "elapsed_s": round(time.perf_counter() - start, 1),
        "machine": {"cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                    "load_average_before": load_before, "load_average_after": [round(v, 2) for v in os.getloadavg()]}}))


if __name__ == "__main__":
    main()
