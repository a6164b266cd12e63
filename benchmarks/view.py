"""`pathbind view` at 5,000 items: the site's size and the seconds headless Chromium takes to open it from the file
system, against a site of a tenth of the items and a blank page opened by the same browser in the same command.

The run is real: `pathbind demo-data` writes a synthetic demo set of ``--items`` VQA items (each on an image of its
own), `lmms_eval --model pathbind_blind --tasks pathbind_demo_vqa --log_samples` answers each with and without its
image (the tenth: the same set with ``--limit``), and `pathbind view` writes each site. Opening is timed from the
browser's navigation to the first page of cards with the thumbnails in view decoded (median of ``--repeats``), in the
Chromium and WebDriver the tests use (tests/browser.py). One JSON line.

Run: python benchmarks/view.py [--items 5000] [--repeats 3] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
# The first screen: cards drawn and the images in view decoded (those below load lazily, as the reader scrolls).
SHOWN = """return document.querySelectorAll('.item').length > 0 && [...document.querySelectorAll('.item img')]
  .filter(image => image.getBoundingClientRect().top < innerHeight).every(image => image.complete)"""


def command(*args: str, env: dict[str, str]) -> float:
    """Seconds of one command; its output when it fails."""
    started = time.perf_counter()
    done = subprocess.run(args, env={**os.environ, **OFFLINE, **env}, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return time.perf_counter() - started


def site(data: Path, items: int, folder: Path) -> dict[str, float]:
    """The site of a blind run of ``items`` demo VQA items: seconds to write it, its MiB and files."""
    env = {"PATHBIND_DATA": str(data)}
    command(str(BIN / "lmms_eval"), "--model", "pathbind_blind", "--tasks", "pathbind_demo_vqa", "--output_path",
            str(folder / "run"), "--log_samples", "--limit", str(2 * items), env=env)  # two documents per item
    seconds = command(str(BIN / "pathbind"), "view", str(folder / "run"), "--out", str(folder / "site"), env=env)
    files = [path for path in (folder / "site").rglob("*") if path.is_file()]
    return {"items": items, "write_seconds": round(seconds, 2), "files": len(files),
            "mib": round(sum(path.stat().st_size for path in files) / 2**20, 2),
            "data_js_mib": round((folder / "site" / "data.js").stat().st_size / 2**20, 2)}


def open_seconds(browser: object, page: Path, repeats: int) -> float:
    """The median seconds from navigation to the first page's cards with their images decoded."""
    from selenium.webdriver.support.ui import WebDriverWait

    times = []
    for _ in range(repeats):
        browser.get("about:blank")  # type: ignore[attr-defined]
        started = time.perf_counter()
        browser.get(page.as_uri())  # type: ignore[attr-defined]
        if page.name == "index.html":
            WebDriverWait(browser, 60, poll_frequency=0.01).until(lambda b: b.execute_script(SHOWN))
        times.append(time.perf_counter() - started)
    return round(statistics.median(times), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=5000, help="VQA items of the large site (default 5,000)")
    parser.add_argument("--repeats", type=int, default=3, help="openings of each page (default 3)")
    parser.add_argument("--smoke", action="store_true", help="300 and 30 items, one opening")
    args = parser.parse_args()
    items, repeats = (300, 1) if args.smoke else (args.items, args.repeats)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from browser import chromium

    load_before = [round(v, 2) for v in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="view-") as folder:
        root = Path(folder)
        # demo-data's --n is per diagnostic dimension (six): enough MCQ items for the large site
        command(str(BIN / "pathbind"), "demo-data", "--out", str(root / "data"), "--n", str(math.ceil(items / 6)),
                env={})
        sites = [site(root / "data", n, root / f"site-{n}") for n in (items // 10, items)]
        (root / "blank.html").write_text("<!DOCTYPE html><title>blank</title><p>blank</p>", encoding="utf-8")
        with chromium(1280, 1000) as browser:
            blank = open_seconds(browser, root / "blank.html", repeats)
            for entry in sites:
                entry["open_seconds"] = open_seconds(browser, root / f"site-{entry['items']}" / "site" / "index.html",
                                                     repeats)
    small, large = sites
    print(json.dumps({
        "benchmark": "view", "sites": sites, "blank_page_open_seconds": blank,
        "open_ratio_large_vs_blank": round(large["open_seconds"] / blank, 1),
        "open_ratio_large_vs_tenth": round(large["open_seconds"] / small["open_seconds"], 2),
        "size_ratio_large_vs_tenth": round(large["mib"] / small["mib"], 2),
        "machine": {"cpu_count": os.cpu_count(), "load_average_before": load_before,
                    "load_average_after": [round(v, 2) for v in os.getloadavg()]}}))


if __name__ == "__main__":
    main()
