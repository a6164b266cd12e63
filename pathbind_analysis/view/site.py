"""Writes the site: index.html, its script and style (copied from ``static/``), the items as ``data.js`` (a script,
not JSON: a page opened from the file system may not fetch files beside it) and the pictures."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from pathbind.lmms.queries import task_documents
from pathbind_analysis.report.runs import load_runs
from pathbind_analysis.view.items import MISS_IOU, Documents, collect
from pathbind_analysis.view.pictures import Pictures

STATIC = Path(__file__).with_name("static")
OUTCOMES = {"image_only": "right only with the image", "right_without_image": "right without the image",
            "invalid": "invalid answer", "grounding_miss": f"grounding miss (IoU < {MISS_IOU} at the default q)"}


def write_site(run_dirs: list[Path], out: Path, documents: Documents = task_documents) -> dict[str, Any]:
    """The site of ``run_dirs`` in ``out``; returns its counts (items, runs, notes). Raises ReportError for a run
    folder without results, as ``pathbind report`` does."""
    runs = load_runs(run_dirs)
    out.mkdir(parents=True, exist_ok=True)
    items, notes = collect(runs, documents, Pictures(out))
    data = {"site": _site_id(runs), "runs": [run.name for run in runs], "outcomes": OUTCOMES, "notes": notes,
            "items": items}
    (out / "data.js").write_text("window.PATHBIND_VIEW = " + json.dumps(data, separators=(",", ":"), allow_nan=False)
                                 + ";\n", encoding="utf-8")
    for name in ("index.html", "viewer.js", "viewer.css"):
        shutil.copyfile(STATIC / name, out / name)
    return {"items": len(items), "runs": len(runs), "notes": notes}


def _site_id(runs: list[Any]) -> str:
    """Names the reviews kept in the browser: the same runs viewed again find their reviews."""
    return hashlib.sha1(json.dumps(sorted(run.name for run in runs)).encode()).hexdigest()[:12]

