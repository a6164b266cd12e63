"""PathBind's harness at scale: synthetic Path-VQA-shaped data through ``pathbind_blind`` vs a plain lmms-eval task.

Each run is a fresh ``lmms_eval`` process (``--log_samples``, one process, as a user runs it) whose stages are timed
from inside: task build (loading, ``process_docs``: conversion, image checks, the ledger), request building, the
model, scoring (lmms-eval's loop over ``process_results`` and the sample records), aggregation, and writing results
and samples. Each stage reports its seconds and the process's peak RSS within it. Path-VQA-shaped: tiny embedded
PNGs, one question in ten open-ended (dropped by the converter, as in the release). ``pathbind_path_vqa`` asks each
item twice (with and without its image); ``pathbind_path_vqa_image`` once, as the baseline does: a minimal plain
lmms-eval task (YAML + four functions, exact match, ``mean``) on the same file with a trivial model that answers
from ``doc_to_visual`` like a real one. PathVG-shaped: ``pathbind_pathvg_testa`` with one expression per record (the
blind control's uniform attention map, so it measures the grounding stage, not a model).

Reports per run ``seconds``/``peak_mib`` per stage and per item, and over the sizes the fitted growth exponent of
the harness's time (everything but the process start-up, least squares in log-log) and the peak memory's growth
per item (KiB, the slope between the smallest and largest size). The image-only task and the plain one run in turn
(ABAB…, ``--repeats`` pairs per size), so a change of the machine's load falls on both; the overhead ratio per size
is the median of the pairs' ratios, with their range. One JSON line.

Run: python benchmarks/harness_scale.py [--items 5000,20000,50000] [--repeats 1] [--no-full] [--pathvg 10000]
                                        [--smoke]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

PLAIN_TASK = "harness_plain_vqa"
PLAIN_YAML = """task: {task}
dataset_path: parquet
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
process_docs: !function plain_utils.process_docs
doc_to_visual: !function plain_utils.doc_to_visual
doc_to_text: !function plain_utils.doc_to_text
doc_to_target: answer
process_results: !function plain_utils.process_results
generation_kwargs:
  max_new_tokens: 16
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
"""
# The plain task as an lmms-eval user writes one: keep the yes/no rows, ask, compare. It asks PathBind's yes/no
# prompt and the model gives PathBind's answer format, so that the two sample logs' lmms-eval fields (the prompt, the
# answer) are the same size and the difference between the tasks is PathBind's harness, not the prompt's length.
PLAIN_UTILS = '''
import re

from PIL import Image

PROMPT = (
    "You are a pathology expert. Your task is to answer a yes/no question. Carefully examine the histological "
    "features in the pathology image, recall the relevant pathology knowledge, and reason your way to the answer.\\n"
    "Output your response strictly in this format:\\n<answer>Yes</answer> or <answer>No</answer>\\n\\n{question}\\n\\n"
    'Answer with "Yes" or "No". Put only "Yes" or "No" inside <answer>...</answer>.')


def process_docs(dataset):
    return dataset.filter(lambda doc: doc["answer"].strip().lower() in ("yes", "no"))


def doc_to_visual(doc):
    return [doc["image"].convert("RGB")]


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    return PROMPT.format(question=doc["question"])


def process_results(doc, results):
    answer = re.search(r"<answer>(.*?)</answer>", results[0])
    return {"exact_match": float(answer is not None and answer[1].strip().lower() == doc["answer"].strip().lower())}
'''


def write_path_vqa(folder: Path, items: int) -> Path:
    """``items`` Path-VQA rows (image, question, answer) in one parquet file; every tenth row open-ended."""
    from PIL import Image

    pngs = []
    for shade in range(16):  # a few distinct tiny images, as bytes embedded in every row
        buffer = io.BytesIO()
        Image.new("RGB", (16, 16), (shade * 16, 255 - shade * 16, 128)).save(buffer, format="PNG")
        pngs.append(buffer.getvalue())
    open_ended = [i % 10 == 9 for i in range(items)]
    columns = {
        "image": [{"bytes": pngs[i % 16], "path": f"test_{i}.jpg"} for i in range(items)],
        "question": [f"what organ is shown in slide {i}?" if o else f"is there necrosis in field {i}?"
                     for i, o in enumerate(open_ended)],
        "answer": ["liver" if o else ("yes" if i % 3 else "no") for i, o in enumerate(open_ended)]}
    return write_path_vqa_columns(folder, columns)


def write_path_vqa_columns(folder: Path, columns: dict[str, list]) -> Path:
    """Path-VQA's ``test.parquet`` (image, question, answer) under ``folder/path_vqa``, as ``datasets`` writes it."""
    import datasets

    features = datasets.Features({"image": datasets.Image(), "question": datasets.Value("string"),
                                  "answer": datasets.Value("string")})
    path = folder / "path_vqa" / "test.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_dict(columns, features=features).to_parquet(str(path))
    return path


def write_pathvg(folder: Path, items: int) -> None:
    """``items`` PathVG testA records (one expression each) over 16 small JPEGs under refpath_image/."""
    from PIL import Image

    root = folder / "pathvg"
    (root / "refpath_image").mkdir(parents=True, exist_ok=True)
    for k in range(16):
        Image.new("RGB", (64, 48), (16 * k, 90, 200 - 8 * k)).save(root / "refpath_image" / f"s{k}.jpg")
    with open(root / "testA.jsonl", "w") as out:
        for i in range(items):
            out.write(json.dumps({"image_id": f"s{i % 16}", "image": f"refpath_image/s{i % 16}.jpg", "height": 48,
                                  "width": 64, "bbox": [i % 32, 4, i % 32 + 24, 40], "bbox_id": i,
                                  "expression": [f"gland lumen number {i}"]}) + "\n")


def run_child(kind: str, task: str, data: Path, out: Path) -> dict[str, Any]:
    """One ``lmms_eval`` process through this script's ``--child`` mode; its stage figures."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PATHBIND_DATA": str(data),
           "HF_DATASETS_CACHE": str(out / "hf_cache"), "TOKENIZERS_PARALLELISM": "false"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--child", kind, "--task", task, "--data", str(data),
                           "--out", str(out)], env=env, capture_output=True, text=True)
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"{kind} {task} failed:\n{done.stderr[-4000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures["process_seconds"] = round(time.perf_counter() - start, 2)
    return figures


# --- the child: lmms-eval in this process, its stages marked --------------------------------------------------


def _status_kib(field: str) -> int:
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith(field + ":"))
    return int(line.split()[1])


class Stages:
    """Stage boundaries: each stage's seconds, its CPU seconds (every thread of the process: unlike the wall
    clock, not stretched by other processes waiting for the same cores) and the peak RSS within it (the kernel's
    high-water mark, reset at every boundary)."""

    def __init__(self) -> None:
        self.figures: dict[str, dict[str, float]] = {}
        self.last, self.last_cpu = time.perf_counter(), time.process_time()
        self.peak_kib = 0

    def end(self, stage: str) -> None:
        now, cpu, peak = time.perf_counter(), time.process_time(), _status_kib("VmHWM")
        entry = self.figures.setdefault(stage, {"seconds": 0.0, "cpu_seconds": 0.0, "peak_mib": 0.0})
        entry["seconds"] += now - self.last
        entry["cpu_seconds"] += cpu - self.last_cpu
        entry["peak_mib"] = max(entry["peak_mib"], peak / 1024)
        self.peak_kib = max(self.peak_kib, peak)
        Path("/proc/self/clear_refs").write_text("5")  # reset the high-water mark to the current RSS
        self.last, self.last_cpu = now, cpu


def _around(owner: Any, name: str, stages: Stages, before: str | None, after: str | None) -> None:
    """Wrap ``owner.name`` so that the stage ``before`` ends at its call and ``after`` at its return."""
    original = getattr(owner, name)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if before:
            stages.end(before)
        result = original(*args, **kwargs)
        if after:
            stages.end(after)
        return result

    setattr(owner, name, wrapped)


def _echo_model_class() -> type:
    from lmms_eval.api.model import lmms

    class Echo(lmms):
        """A trivial model: opens each request's images as a real model would and answers yes as asked."""

        def __init__(self, **kwargs: Any) -> None:
            super().__init__()

        def generate_until(self, requests: list) -> list[str]:
            answers = []
            for request in requests:
                _, _, doc_to_visual, doc_id, task, split = request.args
                [image.size for image in doc_to_visual(self.task_dict[task][split][doc_id])]
                answers.append("<answer>Yes</answer>")  # the blind control's answer, in the prompt's format
            return answers

        def loglikelihood(self, requests: list) -> list:
            raise NotImplementedError

        def generate_until_multi_round(self, requests: list) -> list:
            raise NotImplementedError

    return Echo


def child(kind: str, task: str, data: Path, out: Path) -> None:
    from lmms_eval import evaluator
    from lmms_eval.__main__ import cli_evaluate
    from lmms_eval.api.task import ConfigurableTask
    from lmms_eval.evaluator_utils import TaskOutput
    from lmms_eval.loggers.evaluation_tracker import EvaluationTracker
    from lmms_eval.models import MODEL_REGISTRY_V2
    from lmms_eval.models.registry_v2 import ModelManifest

    stages = Stages()
    globals()["EchoModel"] = _echo_model_class()  # lmms-eval imports it as __main__.EchoModel
    MODEL_REGISTRY_V2.register_manifest(ModelManifest(model_id="harness_echo", simple_class_path="__main__.EchoModel"),
                                        overwrite=True)
    _around(evaluator, "get_task_dict", stages, "start-up", "task_build")
    _around(ConfigurableTask, "build_all_requests", stages, None, "requests")
    _around(evaluator, "_process_document_results", stages, None, None)
    _around(TaskOutput, "calculate_aggregate_metric", stages, "model+scoring", "aggregation")
    _around(EvaluationTracker, "save_results_aggregated", stages, None, "results")
    _around(EvaluationTracker, "save_results_samples", stages, None, "samples")
    model = "harness_echo" if kind == "plain" else "pathbind_blind"
    extra = ["--include_path", str(data / "plain")] if kind == "plain" else []
    sys.argv = ["lmms_eval", "--model", model, "--tasks", task, "--output_path", str(out / "out"), "--log_samples",
                "--verbosity", "ERROR", *extra]
    cli_evaluate()
    stages.end("exit")
    print(json.dumps({"stages": {k: {"seconds": round(v["seconds"], 3), "cpu_seconds": round(v["cpu_seconds"], 3),
                                     "peak_mib": round(v["peak_mib"], 1)} for k, v in stages.figures.items()},
                      "peak_mib": round(stages.peak_kib / 1024, 1)}))


# --- the parent ----------------------------------------------------------------------------------------------


def measure(kind: str, task: str, items: int, scratch: Path, pathvg: bool = False) -> dict[str, Any]:
    data = scratch / f"data-{items}"
    if not data.exists():
        (write_pathvg if pathvg else write_path_vqa)(data, items)
        if not pathvg:
            (data / "plain").mkdir()
            (data / "plain" / f"{PLAIN_TASK}.yaml").write_text(
                PLAIN_YAML.format(task=PLAIN_TASK, data=data / "path_vqa" / "test.parquet"))
            (data / "plain" / "plain_utils.py").write_text(PLAIN_UTILS)
    out = scratch / f"out-{kind}-{task}-{items}"
    figures = run_child(kind, task, data, out)
    harness = sum(v["seconds"] for k, v in figures["stages"].items() if k != "start-up")
    harness_cpu = sum(v["cpu_seconds"] for k, v in figures["stages"].items() if k != "start-up")
    log = sum(path.stat().st_size for path in (out / "out").rglob("*_samples_*.jsonl"))
    subprocess.run(["rm", "-rf", str(out)], check=True)
    return {"kind": kind, "task": task, "items": items, "harness_seconds": round(harness, 2),
            "harness_cpu_seconds": round(harness_cpu, 2), "ms_per_item": round(1000 * harness / items, 3),
            "sample_log_bytes_per_item": round(log / items), **figures}


def paired(sizes: list[int], repeats: int,
           scratch: Path) -> tuple[list[dict], list[dict], dict[str, list[list[float]]], list[dict]]:
    """Per size, ``repeats`` pairs of the image-only task then the plain one: the median run of each kind (by
    harness seconds), every run, and each size's pair ratios (wall clock, then CPU time), sorted."""
    image, plain, ratios, every = [], [], {"seconds": [], "cpu_seconds": []}, []
    for n in sizes:
        pairs = [(measure("pathbind", "pathbind_path_vqa_image", n, scratch), measure("plain", PLAIN_TASK, n, scratch))
                 for _ in range(repeats)]
        every += [run for pair in pairs for run in pair]
        for clock in ratios:
            ratios[clock].append(sorted(a[f"harness_{clock}"] / b[f"harness_{clock}"] for a, b in pairs))
        for kind, runs in zip((image, plain), zip(*pairs, strict=True), strict=True):
            kind.append(sorted(runs, key=lambda run: run["harness_seconds"])[len(runs) // 2])
    return image, plain, ratios, every


def exponent(runs: list[dict[str, Any]]) -> float:
    """The slope of log(harness seconds) against log(items): 1 is linear."""
    x = np.log([r["items"] for r in runs])
    y = np.log([r["harness_seconds"] for r in runs])
    return float(np.polyfit(x, y, 1)[0])


def kib_per_item(runs: list[dict[str, Any]]) -> float:
    first, last = runs[0], runs[-1]
    return (last["peak_mib"] - first["peak_mib"]) * 1024 / (last["items"] - first["items"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", default="5000,20000,50000", help="Path-VQA-shaped sizes, comma-separated")
    parser.add_argument("--repeats", type=int, default=1, help="image-only/plain pairs per size, in turn")
    parser.add_argument("--full", action=argparse.BooleanOptionalAction, default=True,
                        help="also the task with and without the image")
    parser.add_argument("--pathvg", type=int, default=10000, help="PathVG-shaped expressions (0: none)")
    parser.add_argument("--smoke", action="store_true", help="200 and 400 items, PathVG 100: checks it runs")
    parser.add_argument("--child", choices=("pathbind", "plain"), help=argparse.SUPPRESS)
    parser.add_argument("--task", help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.task, args.data, args.out)
        return
    sizes = [200, 400] if args.smoke else [int(n) for n in args.items.split(",")]
    pathvg_items = 100 if args.smoke else args.pathvg
    load_before = [round(v, 2) for v in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="harness_scale-") as folder:
        scratch = Path(folder)
        full = [measure("pathbind", "pathbind_path_vqa", n, scratch) for n in sizes] if args.full else []
        image, plain, ratios, pairs = paired(sizes, args.repeats, scratch)
        grounding = ([measure("pathbind", "pathbind_pathvg_testa", pathvg_items, scratch, pathvg=True)]
                     if pathvg_items else [])
    several = len(sizes) > 1
    print(json.dumps({
        "benchmark": "harness_scale", "sizes": sizes, "repeats": args.repeats,
        "time_exponent_pathbind_full": round(exponent(full), 3) if several and full else None,
        "time_exponent_pathbind_image": round(exponent(image), 3) if several else None,
        "time_exponent_plain": round(exponent(plain), 3) if several else None,
        "peak_kib_per_item_pathbind_full": round(kib_per_item(full), 2) if several and full else None,
        "peak_kib_per_item_pathbind_image": round(kib_per_item(image), 2) if several else None,
        "peak_kib_per_item_plain": round(kib_per_item(plain), 2) if several else None,
        "overhead_ratio_pathbind_image_vs_plain": [round(statistics.median(r), 3) for r in ratios["seconds"]],
        "overhead_ratio_range": [[round(r[0], 3), round(r[-1], 3)] for r in ratios["seconds"]],
        "cpu_overhead_ratio_pathbind_image_vs_plain": [round(statistics.median(r), 3) for r in ratios["cpu_seconds"]],
        "cpu_overhead_ratio_range": [[round(r[0], 3), round(r[-1], 3)] for r in ratios["cpu_seconds"]],
        "runs": full + pairs + grounding,
        "machine": {"cpu_count": os.cpu_count(), "load_average_before": load_before,
                    "load_average_after": [round(v, 2) for v in os.getloadavg()]}}))


if __name__ == "__main__":
    main()
