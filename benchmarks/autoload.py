"""Cost of PathBind's start hook on ``import torch``: torch's extension autoload (entry-point group
``torch.backends``) runs ``pathbind_autoload.start`` in every process that imports torch.

Each round imports torch in fresh interpreters, one per arm, in an order that alternates between rounds so drift
and machine noise hit every arm alike:

- ``off``: ``TORCH_DEVICE_BACKEND_AUTOLOAD=0``, torch loads no extension;
- ``hook``: the autoload as installed, PathBind's start hook included;
- ``no_hook``: the autoload with PathBind's start hook replaced by one that does nothing (a ``pathbind_autoload``
  first on the path), so what remains is torch's own cost of looking for extensions, which it pays whenever the
  autoload is on, with or without PathBind.

Each ratio is the median over rounds of that round's ratio, of wall-clock time and of the child's CPU time (user +
system, less sensitive to other processes). Each run also reports whether the hook ran (``pathbind.lmms.watch``
imported): a run whose hook did not do what its arm says is refused. Prints one JSON line.
Run: python benchmarks/autoload.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROBE = "import sys, torch; print('pathbind.lmms.watch' in sys.modules)"
ARMS = ("off", "hook", "no_hook")


def run(arm: str, inert: str) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one ``import torch`` in a fresh interpreter under ``arm``."""
    env = {key: value for key, value in os.environ.items() if key != "TORCH_DEVICE_BACKEND_AUTOLOAD"}
    if arm == "off":
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    if arm == "no_hook":
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [inert, env.get("PYTHONPATH")]))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    ran = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(inert))  # not a checkout: its pathbind_autoload would come first
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if ran.stdout.strip() != str(arm == "hook"):
        raise SystemExit(f"arm {arm}: the start hook {'did not run' if arm == 'hook' else 'ran'}: "
                         f"{ran.stdout.strip()} {ran.stderr.strip()[-300:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    load_before = [round(v, 2) for v in os.getloadavg()]
    times: dict[str, list[tuple[float, float]]] = {arm: [] for arm in ARMS}
    with tempfile.TemporaryDirectory() as folder:
        inert = os.path.join(folder, "inert")
        os.mkdir(inert)
        (Path(inert) / "pathbind_autoload.py").write_text("def start():\n    pass\n")
        run("hook", inert)  # warm the file cache for every arm
        for round_ in range(args.rounds):
            for arm in ARMS if round_ % 2 == 0 else ARMS[::-1]:
                times[arm].append(run(arm, inert))

    def ratio(arm: str, baseline: str, which: int) -> float:
        pairs = zip(times[arm], times[baseline], strict=True)
        return round(statistics.median(a[which] / b[which] for a, b in pairs), 4)

    print(json.dumps({
        "benchmark": "autoload",
        "rounds": args.rounds,
        "import_torch_seconds": {arm: round(statistics.median(t[0] for t in times[arm]), 3) for arm in ARMS},
        "time_ratio_with_vs_without_autoload": ratio("hook", "off", 0),
        "cpu_ratio_with_vs_without_autoload": ratio("hook", "off", 1),
        "time_ratio_hook_vs_autoload_without_hook": ratio("hook", "no_hook", 0),
        "cpu_ratio_hook_vs_autoload_without_hook": ratio("hook", "no_hook", 1),
        "machine": {"cpu_count": os.cpu_count(), "load_average_before": load_before,
                    "load_average_after": [round(v, 2) for v in os.getloadavg()]},
    }))


if __name__ == "__main__":
    main()
