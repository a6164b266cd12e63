"""PathBind's ``pathbind_hf`` side by side with lmms-eval's own wrappers (``qwen2_5_vl``, ``llava_hf``).

The same checkpoint for both: Qwen2.5-VL-7B-Instruct's and llava-1.5-7b-hf's real tokenizer, processor and chat
template files (``../shared/realtok``) with tiny random weights saved by ``save_pretrained`` (``tests/realtok.py``),
the same task (``pathbind_demo_vqa_image``: 256² px tissue images, answer-scored), the same ``--limit``,
``--gen_kwargs`` and ``--batch_size``. Per family and batch size one process runs lmms-eval's CLI ``--repeats``
times over the wrappers in turn (``pathbind_hf``, then each native variant, the order reversed every other round:
ABBA…), so a change of the machine's load falls on both sides of a round; each run's model stage (requests answered
and scored) is timed from inside (``benchmarks/harness_scale.py``'s stage marks), and each ratio is ours over the
native run of the same round: the line reports their median and range. Every ``generate`` call of the first round
is recorded: the prompt's token ids (padding removed) and the new tokens. Where the two send the same token ids,
the greedy answers are compared token for token; where they differ, the first differing prompt is shown decoded.

lmms-eval's ``qwen2_5_vl`` runs twice: as a user runs it (its own ``min_pixels`` of 256·28² enlarges a 256² image
to 16×16 merged tokens) and with the checkpoint's ``preprocessor_config.json`` pixel bounds (``min_pixels=3136``),
which ``pathbind_hf`` reads, so the token ids can agree. One JSON line.

    python benchmarks/vs_native.py [--limit 16] [--batches 1 8] [--repeats 3] [--new-tokens 8]
                                   [--families qwen2_5_vl llava]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
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


# --- the child: lmms-eval runs in turn in one process, each model stage timed, the generate calls recorded ------


def _record_generate(current: dict[str, Any]) -> None:
    """Append each ``generate`` call's rows (prompt ids without padding, new ids) as JSON lines to
    ``current["record"]`` (nothing when it is None)."""
    from transformers import GenerationMixin

    original = GenerationMixin.generate

    def generate(self: Any, *args: Any, **kwargs: Any) -> Any:
        output = original(self, *args, **kwargs)
        path = current.get("record")
        if path is None:
            return output
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


def child(plan: Path) -> None:
    """Run the plan's lmms-eval runs (``[[label, argv], ...]``) ``repeats`` times in turn, the order reversed every
    other round; one JSON line per run."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import harness_scale
    from lmms_eval.__main__ import cli_evaluate
    from lmms_eval.api.task import ConfigurableTask
    from lmms_eval.evaluator_utils import TaskOutput

    spec = json.loads(plan.read_text())
    current: dict[str, Any] = {}

    class Marks:  # the stage marks of whichever run is current
        def end(self, stage: str) -> None:
            current["stages"].end(stage)

    harness_scale._around(ConfigurableTask, "build_all_requests", Marks(), None, "start-up")  # type: ignore[arg-type]
    harness_scale._around(TaskOutput, "calculate_aggregate_metric", Marks(), "model", None)  # type: ignore[arg-type]
    _record_generate(current)
    for repeat in range(spec["repeats"]):
        # Every other round in reverse order (ABBA…): neither run always goes first, after the other's warm-up.
        for label, argv in spec["runs"][::-1] if repeat % 2 else spec["runs"]:
            current["stages"] = harness_scale.Stages()
            current["record"] = plan.parent / f"{label}.generate.jsonl" if repeat == 0 else None
            sys.argv = ["lmms_eval", *argv]
            cli_evaluate()
            model = current["stages"].figures.get("model")  # absent when the wrapper failed (lmms-eval logs it)
            print(json.dumps({"label": label, "repeat": repeat, "model_seconds": model and model["seconds"]}),
                  flush=True)


# --- the parent -------------------------------------------------------------------------------------------------


def run_interleaved(runs: dict[str, tuple[str, str]], batch: int, args: argparse.Namespace,
                    folder: Path) -> dict[str, dict]:
    """Each labelled ``(model, model_args)`` run ``args.repeats`` times in turn in one process: per label its
    seconds per item of the model stage in each round and the first round's generate calls; or its error."""
    folder.mkdir()
    plan = {"repeats": args.repeats, "runs": [
        [label, ["--model", model, "--model_args", model_args, "--tasks", TASK, "--limit", str(args.limit),
                 "--batch_size", str(batch), "--gen_kwargs", f"max_new_tokens={args.new_tokens}",
                 "--output_path", str(folder / label), "--log_samples", "--verbosity", "ERROR"]]
        for label, (model, model_args) in runs.items()]}
    (folder / "plan.json").write_text(json.dumps(plan))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run([sys.executable, __file__, "--child", str(folder / "plan.json")], env=env,
                          capture_output=True, text=True)
    timed = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"label"')]
    errors = [line for line in done.stderr.splitlines() if re.match(r"\w+(Error|Exception): ", line)]
    found: dict[str, dict] = {}
    for label in runs:
        seconds = [t["model_seconds"] for t in timed if t["label"] == label]
        record = folder / f"{label}.generate.jsonl"
        if len(seconds) != args.repeats or None in seconds or not record.exists():
            found[label] = {"error": errors[-1] if errors else done.stderr[-500:]}
            continue
        print(f"{label}: {[round(s / args.limit, 3) for s in seconds]} s per item", file=sys.stderr, flush=True)
        found[label] = {"seconds_per_item": [s / args.limit for s in seconds],
                        "calls": [json.loads(line) for line in record.read_text().splitlines()]}
    return found


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
        runs = {"pathbind": ("pathbind_hf", f"pretrained={checkpoint},device=cpu{OURS[family]}"),
                **{variant: (model, f"pretrained={checkpoint},{CPU}{extra}") for variant, extra in variants.items()}}
        found = run_interleaved(runs, batch, args, scratch / f"{family}-{batch}")
        ours = found["pathbind"]
        for variant in variants:
            native = found[variant]
            if "error" in native or "error" in ours:
                rows.append({"family": family, "native": model, "native_args": variant, "batch_size": batch,
                             "error_native": native.get("error"), "error_pathbind": ours.get("error")})
                continue
            # Each round's ratio: ours over the native run next to it in the same process.
            ratios = sorted(a / b for a, b in zip(ours["seconds_per_item"], native["seconds_per_item"], strict=True))
            rows.append({"family": family, "native": model, "native_args": variant, "batch_size": batch,
                         "repeats": args.repeats,
                         "seconds_per_item_pathbind": [round(s, 4) for s in ours["seconds_per_item"]],
                         "seconds_per_item_native": [round(s, 4) for s in native["seconds_per_item"]],
                         "time_ratio_pathbind_vs_native": round(statistics.median(ratios), 3),
                         "time_ratio_range": [round(ratios[0], 3), round(ratios[-1], 3)],
                         **compare(native["calls"], ours["calls"], tokenizer)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=16, help="documents per run")
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 8])
    parser.add_argument("--new-tokens", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3, help="rounds of the interleaved runs (ABBA…)")
    parser.add_argument("--families", nargs="+", default=list(NATIVE), choices=list(NATIVE))
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    import torch

    load_before = [round(v, 2) for v in os.getloadavg()]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="vs_native-") as folder:
        rows = [row for family in args.families for row in family_rows(family, args, Path(folder))]
    print(json.dumps({
        "benchmark": "vs_native", "task": TASK, "limit": args.limit, "new_tokens": args.new_tokens,
        "repeats": args.repeats, "rows": rows,
        "elapsed_s": round(time.perf_counter() - start, 1),
        "machine": {"cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                    "load_average_before": load_before, "load_average_after": [round(v, 2) for v in os.getloadavg()]}}))


if __name__ == "__main__":
    main()
