"""Cost of PathBind's TaskManager hook: lmms-eval task indexing with the plugins' folders vs without.

Both are measured in this process, alternating, so machine noise hits both alike. Prints one JSON line.
Run: python benchmarks/task_hook.py [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from lmms_eval.tasks import TaskManager

from pathbind.lmms.tasks import install_task_hook


def seconds_to_index() -> float:
    start = time.perf_counter()
    TaskManager("ERROR")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    load_before = [round(v, 2) for v in os.getloadavg()]
    assert install_task_hook(), "the task hook did not install"
    with_hook = TaskManager.initialize_tasks
    plain, hooked = [], []
    for _ in range(args.repeats):
        TaskManager.initialize_tasks = with_hook.__wrapped__  # lmms-eval's own method
        plain.append(seconds_to_index())
        TaskManager.initialize_tasks = with_hook
        hooked.append(seconds_to_index())
    print(json.dumps({
        "benchmark": "task_hook",
        "repeats": args.repeats,
        "index_seconds_plain": round(statistics.median(plain), 3),
        "index_seconds_hooked": round(statistics.median(hooked), 3),
        "time_ratio_hooked_vs_plain": round(statistics.median(hooked) / statistics.median(plain), 4),
        "runs_s": {"plain": [round(t, 3) for t in plain], "hooked": [round(t, 3) for t in hooked]},
        "machine": {"cpu_count": os.cpu_count(), "load_average_before": load_before,
                    "load_average_after": [round(v, 2) for v in os.getloadavg()]},
    }))


if __name__ == "__main__":
    main()
