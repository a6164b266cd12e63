"""Memory and time at many images: a yes/no set with one image per item through ``lmms_eval --model pathbind_blind``
at two sizes, and the VQA aggregation of many clusters, each against its tenth.

A Path-VQA-shaped parquet file written as users write it (``datasets``, embedded PNGs), every item on an image of its
own: each item is its own cluster, so every interval, test and design effect runs over as many clusters as items.
``pathbind_path_vqa`` asks each item with and without its image, and its aggregations compute ``ci95`` (the
accuracies, MG), ``reliance`` and the rest over them. Each size is a fresh ``lmms_eval`` process (``--log_samples``,
as a user runs it, staged by ``harness_scale.py``'s child): its peak RSS (the kernel's high-water mark) and its
seconds. The aggregation part calls the VQA aggregations directly on synthetic records of ``--clusters`` items (and a
tenth of them), each on its own image, in a fresh process each, the two sizes in turn ``--repeats`` times: peak RSS
and seconds of each size's fastest run by CPU time.

Reports the ratios large/small of peak memory and of time (by the wall clock and by CPU time), with the extra peak
memory in MiB, and for the aggregation the same ratio of a baseline in the same process: one dict of its records by
id, the least a pairing by id does. Linear time is a ratio near the ratio of sizes (10), or near the baseline's
where the machine's caches make a plain dict grow faster than its items. One JSON line.

Run: python benchmarks/many_images.py [--items 4000,40000] [--clusters 300000] [--repeats 3] [--smoke]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness_scale import run_child, write_path_vqa_columns  # this script's folder is first on the path


def write_yes_no(folder: Path, items: int) -> Path:
    """``items`` Path-VQA rows (image, question, answer), every row a yes/no question on a PNG of its own."""
    from PIL import Image

    def png(i: int) -> bytes:
        buffer = io.BytesIO()
        Image.new("RGB", (8, 8), (i % 256, (i // 256) % 256, (i // 65536) % 256)).save(buffer, format="PNG")
        return buffer.getvalue()

    return write_path_vqa_columns(folder, {
        "image": [{"bytes": png(i), "path": f"test_{i}.png"} for i in range(items)],
        "question": [f"is there necrosis in field {i}?" for i in range(items)],
        "answer": ["yes" if i % 3 else "no" for i in range(items)]})


def harness_run(items: int, scratch: Path) -> dict[str, Any]:
    """One ``lmms_eval`` run of ``pathbind_path_vqa`` on ``items`` one-image items: seconds and peak MiB."""
    data = scratch / f"data-{items}"
    write_yes_no(data, items)
    out = scratch / f"out-{items}"
    figures = run_child("pathbind", "pathbind_path_vqa", data, out)
    subprocess.run(["rm", "-rf", str(out), str(data)], check=True)
    stages = figures["stages"]
    return {"items": items, "peak_mib": figures["peak_mib"],
            **{clock: round(sum(v[clock] for k, v in stages.items() if k != "start-up"), 2)
               for clock in ("seconds", "cpu_seconds")}, "stages": stages}


# --- the aggregation of many clusters, in a child process of its own ------------------------------------------


def aggregate(clusters: int) -> None:
    """The VQA aggregations on ``clusters`` items (each on its own image) under the image and text conditions and
    a swap; prints seconds and peak MiB as one JSON line."""
    import numpy as np

    from pathbind_tasks.common import vqa_aggregations as va

    rng = np.random.default_rng(0)
    right = rng.random((3, clusters)) < np.array([[0.8], [0.5], [0.6]])
    records = [{"id": str(i), "cluster": f"image={i:x}", "condition": condition, "correct": bool(right[k, i]),
                "valid": True, "parsed": "yes" if right[k, i] else "no", "dimension": None, "task": "scale"}
               for k, condition in enumerate(("image", "text", "swap_same")) for i in range(clusters)]
    # The baseline: one dict of the records by id, the least any pairing of conditions by id does; its hash table's
    # memory traffic grows with the items as the aggregation's does.
    cpu = time.process_time()
    by_id = {r["id"]: r for r in records}
    baseline_cpu = time.process_time() - cpu
    del by_id
    baseline = _status_mib("VmRSS")
    start, cpu = time.perf_counter(), time.process_time()
    Path("/proc/self/clear_refs").write_text("5")  # the high-water mark from here: the aggregation's own
    intervals, measures = va.ci95(records), va.reliance(records)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    assert np.isfinite(intervals["mg"]["low"]) and np.isfinite(measures["vrs"]["swap_same"]["ci95"]["low"])
    print(json.dumps({"clusters": clusters, "seconds": round(seconds, 3), "cpu_seconds": round(cpu_seconds, 3),
                      "baseline_cpu_seconds": round(baseline_cpu, 4),
                      "peak_mib_over_records": round(_status_mib("VmHWM") - baseline, 1),
                      "records_mib": round(baseline, 1)}))


def _status_mib(field: str) -> float:
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith(field + ":"))
    return int(line.split()[1]) / 1024


def aggregation_run(clusters: int) -> dict[str, Any]:
    done = subprocess.run([sys.executable, __file__, "--aggregate", str(clusters)], capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    if done.returncode != 0:
        raise RuntimeError(f"aggregation of {clusters} clusters failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def ratios(small: dict[str, Any], large: dict[str, Any], peak: str) -> dict[str, float]:
    """Large over small: the sizes, the wall-clock and CPU times (CPU time is not stretched by other processes on
    the same cores), the peak memory, and the extra peak in MiB."""
    return {"size_ratio": round(large[next(iter(large))] / small[next(iter(small))], 2),
            "time_ratio": round(large["seconds"] / small["seconds"], 2),
            "cpu_time_ratio": round(large["cpu_seconds"] / small["cpu_seconds"], 2),
            "peak_ratio": round(large[peak] / small[peak], 3), "extra_peak_mib": round(large[peak] - small[peak], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", default="4000,40000", help="the two lmms_eval sizes, comma-separated")
    parser.add_argument("--clusters", type=int, default=300000, help="clusters of the aggregation (and a tenth)")
    parser.add_argument("--repeats", type=int, default=3, help="aggregation runs of each size, in turn (default 3)")
    parser.add_argument("--smoke", action="store_true", help="200 and 2,000 items, 20,000 clusters")
    parser.add_argument("--aggregate", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.aggregate:
        aggregate(args.aggregate)
        return
    small_items, large_items = (200, 2000) if args.smoke else (int(n) for n in args.items.split(","))
    clusters = 20000 if args.smoke else args.clusters
    load_before = [round(v, 2) for v in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="many_images-") as folder:
        runs = [harness_run(n, Path(folder)) for n in (small_items, large_items)]
    # Small and large in turn, --repeats times, each size's fastest by CPU time: on shared cores a run's CPU time
    # still grows with its neighbours' cache traffic, the least disturbed run is the cost.
    turns = [[aggregation_run(n) for n in (clusters // 10, clusters)] for _ in range(args.repeats)]
    sums = [min((turn[k] for turn in turns), key=lambda run: run["cpu_seconds"]) for k in (0, 1)]
    print(json.dumps({
        "benchmark": "many_images",
        "lmms_eval": {**ratios(runs[0], runs[1], "peak_mib"), "runs": runs},
        "aggregation": {**ratios(sums[0], sums[1], "peak_mib_over_records"),
                        "baseline_cpu_time_ratio": round(sums[1]["baseline_cpu_seconds"]
                                                         / sums[0]["baseline_cpu_seconds"], 2), "runs": sums,
                        "cpu_seconds_per_turn": [[run["cpu_seconds"] for run in turn] for turn in turns]},
        "machine": {"cpu_count": os.cpu_count(), "load_average_before": load_before,
                    "load_average_after": [round(v, 2) for v in os.getloadavg()]}}))


if __name__ == "__main__":
    main()
