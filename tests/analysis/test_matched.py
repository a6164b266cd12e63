"""`pathbind matched`: PathView slide perception on the slides a model answered correctly in an external benchmark,
on a PathView release where the truth is planted: half the slides are blank, so no model can perceive them."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import datasets
import numpy as np
import pytest
from conftest import BIN, lmms_eval, run
from PIL import Image

from pathbind_analysis.matched.command import MatchedError, analyse
from pathbind_tasks.demo.pathview_synth import SIZE, TASKS
from pathbind_tasks.demo.synth import _balanced

SLIDE_TASKS = ("slide_org", "slide_lgd", "slide_are", "slide_dlo", "slide_ocl")
N_SLIDES = 16
TEXT = datasets.Value("string")
FEATURES = {"id": TEXT, "image": datasets.Image(), "question": TEXT, "options": datasets.List(TEXT), "answer": TEXT,
            "target": TEXT, "boxes": datasets.List(datasets.List(datasets.Value("float64"))),
            "query_box": datasets.List(datasets.Value("float64")), "width": datasets.Value("int32"),
            "height": datasets.Value("int32"), "source": TEXT, "slide_id": TEXT}


def barcode(slide: int) -> str:
    return f"TCGA-A{slide % 4}-{1000 + slide}-01Z-00-DX1"


def write_release(root: Path) -> Path:
    """``root/pathview/slide_*.parquet``: item k of every task shows slide k (named as a GDC file path); the even
    slides are rendered as usual, the odd ones blank (the same truth, nothing to see)."""
    rng = np.random.default_rng(7)
    for task in SLIDE_TASKS:
        build, n_classes = TASKS[task]
        rows = []
        for k, cls in enumerate(_balanced(rng, N_SLIDES, n_classes)):
            row = build(np.random.default_rng(rng.integers(2**63)), int(cls))
            drawn = row.pop("image")
            pixels = drawn if k % 2 == 0 else np.full_like(drawn, 235)
            rows.append({"id": f"{task}-{k}", "image": Image.fromarray(pixels), **row, "width": SIZE, "height": SIZE,
                         "source": "synthetic", "slide_id": f"/gdc/{barcode(k).lower()}.5a1f.svs"})
        features = datasets.Features({name: FEATURES[name] for name in rows[0]})
        path = root / "pathview" / f"{task}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        datasets.Dataset.from_list(rows, features=features).to_parquet(str(path))
    return root


def write_external(path: Path, correct: dict[int, bool]) -> Path:
    """An external benchmark's answers as a CSV of slide_id,correct, the ids written as bare barcodes."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["slide_id", "correct"])
        writer.writerows([barcode(slide), int(ok)] for slide, ok in correct.items())
    return path


@pytest.fixture(scope="module")
def pathview_runs(tmp_path_factory):
    """The positive and the blind control on the five slide tasks of the planted release."""
    folder = tmp_path_factory.mktemp("matched")
    data = write_release(folder / "data")
    tasks = ",".join(f"pathbind_pathview_{task}" for task in SLIDE_TASKS)
    return {model: lmms_eval(folder, model, tasks, env={"PATHBIND_DATA": str(data)})["out"]
            for model in ("pathbind_control", "pathbind_blind")}


@pytest.mark.slow
def test_perception_planted_on_the_correct_slides_shows_as_a_gap_with_an_interval_above_zero(pathview_runs,
                                                                                             tmp_path):
    """The control perceives exactly the slides it can see, which are the ones the external benchmark (here its own
    organ answers, read from the run's sample log) marks correct: each measure is higher there, the interval of the
    gap above 0; the report draws the seed's table."""
    control = pathview_runs["pathbind_control"]
    log = next(control.rglob("*_samples_pathbind_pathview_slide_org.jsonl"))
    out = tmp_path / "matched.json"
    done = run([str(BIN / "pathbind"), "matched", f"{control}={log}", "--min-slides", "6", "--json", str(out)],
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    analysis = json.loads(out.read_text())
    model = analysis["models"][0]
    assert model["pathview_slides"] == model["shared_slides"] == N_SLIDES and model["correct_slides"] >= 6
    for measure in ("slide_lgd", "slide_are", "slide_dlo", "slide_ocl"):
        compared = model["measures"][measure]
        assert compared["slides"] == N_SLIDES and compared["gap"]["ci95"]["cluster"] == "slide"
        assert compared["matched"]["value"] > compared["all"]["value"] and compared["gap"]["ci95"]["low"] > 0
    assert "LGD Dice" in done.stdout and "macro average (1 model)" in done.stdout

    report = tmp_path / "report"
    done = run([str(BIN / "pathbind"), "report", str(control), "--out", str(report), "--matched", str(out)],
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    markdown = (report / "report.md").read_text()
    assert "| Subset | LGD Dice | ARE macro-F1 | DLO macro-F1 | OCL accuracy |" in markdown
    assert "| Ideal upper bound | 1.000 | 1.000 | 1.000 | 1.000 |" in markdown


@pytest.mark.slow
def test_without_planted_perception_the_gap_interval_covers_zero(pathview_runs, tmp_path):
    """Negative controls: the blind model ignores every image, and the control judged by an external benchmark
    whose verdicts have nothing to do with what it can see; in both the gap's interval holds 0."""
    unrelated = write_external(tmp_path / "unrelated.csv", {k: k % 4 in (0, 1) for k in range(N_SLIDES)})
    analysis = analyse([(pathview_runs["pathbind_blind"], str(unrelated)),
                        (pathview_runs["pathbind_control"], str(unrelated))], min_slides=6)
    for model in analysis["models"]:
        for compared in model["measures"].values():
            low, high = compared["gap"]["ci95"]["low"], compared["gap"]["ci95"]["high"]
            assert low <= 0 <= high, (model["model"], compared)
    assert analysis["macro"]["slide_lgd"]["models"] == ["pathbind_blind", "pathbind_control"]


@pytest.mark.slow
def test_an_empty_or_small_overlap_is_refused_in_words(pathview_runs, tmp_path):
    """No shared slide names both sides' examples; a handful of shared slides names --min-slides."""
    control = pathview_runs["pathbind_control"]
    other = write_external(tmp_path / "other.csv", {100 + k: True for k in range(20)})
    with pytest.raises(MatchedError, match=r"share no slide: PathView names slides like TCGA-A0-1000-01Z-00-DX1"):
        analyse([(control, str(other))])
    few = write_external(tmp_path / "few.csv", {k: True for k in range(4)})
    done = run([str(BIN / "pathbind"), "matched", f"{control}={few}"], cwd=tmp_path)
    assert done.returncode == 1
    assert "share 4 slides, 4 of them answered correctly: fewer than --min-slides 10" in done.stderr
