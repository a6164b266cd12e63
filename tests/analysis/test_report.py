"""`pathbind report` on demo runs of the two controls: paper-style tables, offline HTML, figures, overlays, notes."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from pathlib import Path

import pytest
from conftest import BIN, run

from pathbind.provenance import fingerprint
from pathbind_analysis.report import ReportError, build_report
from pathbind_analysis.report.overlays import ItemMap, choose_items


@pytest.fixture(scope="module")
def runs(demo_control, demo_blind):
    """Both controls on the whole demo (VQA, ablation, grounding, faithfulness, PathView), with sample logs."""
    return {"pathbind_control": demo_control["out"], "pathbind_blind": demo_blind["out"]}


@pytest.fixture(scope="module")
def report(runs, tmp_path_factory):
    """The report of both runs written by the installed `pathbind report` command."""
    out = tmp_path_factory.mktemp("report") / "report"
    done = run([str(BIN / "pathbind"), "report", str(runs["pathbind_control"]), str(runs["pathbind_blind"]),
                "--out", str(out), "--pairs", "pathbind_blind:pathbind_control", "--overlays", "4"], cwd=out.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.mark.slow
def test_vqa_table_has_the_papers_form(report):
    """Accuracy↑gain per dimension, the text-only rows, best values marked and the random-choice row."""
    markdown = (report / "report.md").read_text()
    assert "| pathbind_control | VLM | **100.0↑80.0** |" in markdown
    assert "**100.0↑65.0** |" in markdown  # D-all (Avg.) of the positive control
    assert "| pathbind_blind | VLM | 20.0↑0.0 |" in markdown and "35.0↑0.0 |" in markdown  # the blind's MG is 0
    assert "|  | VLM-text | _20.0_ |" in markdown
    assert "| Random Choice | - | 25.0 |" in markdown


@pytest.mark.slow
def test_ablation_table_and_blur_heat_map_separate_the_controls(report):
    """Table A.3: the control loses its answers with the image replaced, the blind one keeps them; Figure A.1: the
    control's accuracy falls as the blur grows, the blind one's stays put."""
    markdown = (report / "report.md").read_text()
    task = "pathbind_demo_vqa_ablation"
    assert "| Model | Blank | Same subset | Cross subset | Avg. |" in markdown
    assert "| Model | original | σ = 2 px | σ = 4 px | σ = 8 px | σ = 16 px |" in markdown
    replaced = table_values(markdown, f"Table A.3 form: {task}, accuracy (%) with the image replaced")
    blurred = table_values(markdown, f"Figure A.1 values: {task}, accuracy (%) under progressive Gaussian blur")
    assert max(replaced["pathbind_control"]) <= 20 and len(set(replaced["pathbind_blind"])) == 1
    control, blind = blurred["pathbind_control"], blurred["pathbind_blind"]
    assert control == sorted(control, reverse=True) and control[-1] <= control[0] - 50
    assert len(set(blind)) == 1 and blind[0] == replaced["pathbind_blind"][0]
    assert (report / "figures" / f"blur_{task}.png").stat().st_size > 1000


def table_values(markdown: str, title: str) -> dict[str, list[float]]:
    """Each row's numbers of the table under the bold title, by model."""
    lines = markdown.split(f"**{title}**", 1)[1].split("\n\n", 2)[1].splitlines()[2:]
    return {cells[0]: [float(c) for c in cells[1:]] for cells in
            ([c.strip() for c in line.strip("|").split("|")] for line in lines)}


@pytest.mark.slow
def test_grounding_table_and_notes(report):
    """Table 3 in percent with CIs; the blind control's unscored items are a note, not a crash."""
    markdown = (report / "report.md").read_text()
    assert re.search(r"\| pathbind_control \| \*\*79\.\d \[79\.\d, 80\.\d; 24 images\]\*\* \|", markdown)
    assert "| pathbind_blind | n/a | n/a | n/a |" in markdown
    assert "0 of 24 items scored" in markdown and "attention map is constant after smoothing (24)" in markdown


@pytest.mark.slow
def test_overlap_controls_section_gives_each_model_its_verdict(report):
    """Seed 004's controls: the control's attention beats the three control boxes; the blind one's beats none."""
    markdown = (report / "report.md").read_text()
    assert ("pathbind_control on pathbind_demo_grounding: the true box beats all three controls (Holm p ≤ 0.05) in 1 "
            "of 1 layer sets (no decoder layers: one map for every layer set) (mid)") in markdown
    assert "pathbind_blind on pathbind_demo_grounding: the true box beats all three controls (Holm p ≤ 0.05) in 0 " \
           "of 1 layer sets" in markdown
    assert "| pathbind_control | mid | – | 40.0 |" in markdown  # a 10% mask inside a box of 25% of the image


@pytest.mark.slow
def test_html_is_self_contained_and_figures_exist(report):
    """No external URL in the HTML: every image is a data URI; each PNG the Markdown links exists and is non-empty."""
    page = (report / "index.html").read_text()
    assert not re.search(r"https?://", page)
    sources = re.findall(r"""(?:src|href)\s*=\s*['"]([^'"]*)""", page)
    assert sources and all(source.startswith("data:image/png;base64,") for source in sources)
    linked = re.findall(r"\]\((figures/[^)]+\.png)\)", (report / "report.md").read_text())
    names = {path.split("/")[-1] for path in linked}
    assert {"q_sweep_pathbind_demo_grounding.png", "layer_sweep_pathbind_demo_grounding.png", "pairs.png",
            "overlays_pathbind_demo_grounding_success.png"} <= names
    assert all((report / path).stat().st_size > 1000 for path in linked)


@pytest.mark.slow
def test_figures_and_tables_come_in_a_papers_formats(report, runs):
    """Each figure as PNG at 300 dpi, SVG and PDF; each table as CSV (its cells, read back by csv) and a booktabs
    LaTeX table; the Markdown holds no HTML tag and names the run folders relative to the report; the headline
    tables come before the accounting."""
    import csv

    from PIL import Image

    pngs = sorted((report / "figures").glob("*.png"))
    assert pngs
    for png in pngs:
        assert png.with_suffix(".svg").read_text().lstrip().startswith("<?xml")
        assert png.with_suffix(".pdf").read_bytes().startswith(b"%PDF")
        assert Image.open(png).info["dpi"] == pytest.approx((300, 300), abs=0.5)
    markdown = (report / "report.md").read_text()
    assert not re.search(r"</?[a-z]+[ >]", markdown)
    tables = re.findall(r"^\*\*(.+)\*\*$", markdown, re.MULTILINE)
    csvs, texs = sorted((report / "tables").glob("*.csv")), sorted((report / "tables").glob("*.tex"))
    assert len(csvs) == len(texs) == len(tables)
    with next(f for f in csvs if "rows_accounted_for" in f.name).open(newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["Model", "task", "rows", "evaluated", "dropped", "reasons"] and len(rows) > 2
    assert f"| {rows[1][0]} | {rows[1][1]} | {rows[1][2]} | {rows[1][3]} |" in markdown
    tex = next(f for f in texs if "rows_accounted_for" in f.name).read_text()
    assert "\\toprule" in tex and "\\midrule" in tex and "\\bottomrule" in tex and tex.count("\\\\") == len(rows)
    for name, folder in runs.items():
        relative = Path(os.path.relpath(folder, report)).as_posix()
        assert f"| {name} | {name} | {relative} |" in markdown
    page = (report / "index.html").read_text()
    assert page.index("<h2>VQA") < page.index("<h2>Rows accounted for")


@pytest.mark.slow
def test_vqa_and_pathview_tables_carry_the_runs_intervals(report, demo_control):
    """Beside each Table 2-form table, its 95% intervals as the run's ci95 holds them (per dimension); each PathView
    value with its interval."""
    markdown = (report / "report.md").read_text()
    results = demo_control["results"]["results"]
    by_dimension = results["pathbind_demo_vqa"]["ci95,none"]["by_dimension"]
    dimensions = sorted(by_dimension)

    def shown(interval, scale=1.0):
        return f"[{interval['low'] * scale:.1f}, {interval['high'] * scale:.1f}]"

    assert "**pathbind_demo_vqa (Table 2 form): 95% intervals (resampling images)**" in markdown
    assert ("|  | MG | " + " | ".join(shown(by_dimension[d]["mg"]) for d in dimensions) + " |") in markdown
    dice = results["pathbind_pathview_demo_region_ogd"]["ci95,none"]["dice"]
    value = results["pathbind_pathview_demo_region_ogd"]["dice,none"]
    assert f"| pathbind_pathview_demo_region_ogd | Dice | **{value:.1f} {shown(dice)}** |" in markdown


@pytest.mark.slow
def test_ablation_and_overlap_tables_show_the_stored_intervals_and_say_where_none_is(report, demo_control):
    """Table A.3's and Figure A.1's drops with the run's ci95 intervals; the ablated accuracies and the overlap
    controls' mean IoUs, which have none stored, are named as such rather than given one."""
    markdown = (report / "report.md").read_text()
    task = "pathbind_demo_vqa_ablation"
    results = demo_control["results"]["results"][task]
    intervals = results["ci95,none"]

    def shown(metric):
        interval = intervals[metric]
        return f"{results[f'{metric},none']:.1f} [{interval['low']:.1f}, {interval['high']:.1f}]"

    assert (f"**Table A.3 form: {task}, drop in accuracy (points) when the image is ablated, with 95% intervals "
            "(resampling images)**") in markdown
    assert ("| pathbind_control | " + " | ".join(shown(m) for m in ("acc_image", "drop_blank", "drop_swap_same",
                                                                    "drop_swap_cross")) + " |") in markdown
    blur = sorted((m.removesuffix(",none") for m in results if m.startswith("drop_blur_")),
                  key=lambda m: float(m.removeprefix("drop_blur_")))
    assert len(blur) == 4 and ("| pathbind_control | " + " | ".join(shown(m) for m in ("acc_image", *blur))
                               + " |") in markdown
    assert f"{task}: the accuracies with the image replaced or blurred (Table A.3, Figure A.1) carry no interval" \
        in markdown
    assert "pathbind_demo_grounding: the IoU columns are means over the items with no interval" in markdown


@pytest.mark.slow
def test_the_sweep_figures_intervals_are_the_tasks_own_and_said(report, demo_control):
    """The bands drawn over the threshold sweep come from the sample logs' item records: at the default q they are the
    task's stored attn_ci; the captions say what they resample, and the overlap controls' IoU table that it has none."""
    from pathbind_analysis.report.grounding import item_interval, logged_records
    from pathbind_analysis.report.runs import load_runs
    from pathbind_tasks.common.grounding_records import Q_DEFAULT

    task = "pathbind_demo_grounding"
    records = logged_records(load_runs([demo_control["out"]])[0], task)
    stored = demo_control["results"]["results"][task]["attn_ci,none"]["attn_iou"]
    assert len(records) == stored["items"]
    assert item_interval(records, [r["iou"][str(Q_DEFAULT)] for r in records]) == pytest.approx(
        (100 * stored["low"], 100 * stored["high"]))
    markdown = (report / "report.md").read_text()
    assert "Bands: 95% intervals resampling images, from the item records of the sample logs" in markdown
    assert "Error bars: 95% intervals resampling images, from the item records of the sample logs" in markdown
    assert "Error bars: the 95% interval the run stores for a value of one task or dimension" in markdown


@pytest.mark.slow
def test_overlays_are_grouped(report):
    """The control localises every demo item (IoU 0.8), so all shown items are successes; empty groups get a note."""
    markdown = (report / "report.md").read_text()
    assert "pathbind_demo_grounding, success items" in markdown
    assert "pathbind_demo_grounding: no partial item among the items shown" in markdown
    assert "pathbind_demo_grounding: no failure item among the items shown" in markdown


@pytest.mark.slow
def test_a_run_without_grounding_gives_a_note(runs, tmp_path):
    """Runs of different tasks combine: a VQA-only run is listed in the VQA table and noted under grounding."""
    vqa_only = tmp_path / "vqa_only"
    shutil.copytree(runs["pathbind_blind"], vqa_only)
    for file in vqa_only.rglob("*_results.json"):
        data = json.loads(file.read_text())
        data["results"].pop("pathbind_demo_grounding")
        file.write_text(json.dumps(data))
    build_report([runs["pathbind_control"], vqa_only], tmp_path / "out", overlays=0)
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert f"pathbind_blind: no grounding task in its results ({vqa_only})" in markdown
    assert "| pathbind_blind | VLM | 20.0↑0.0 |" in markdown


@pytest.mark.slow
def test_tasks_compared_on_different_data_are_flagged(runs, tmp_path):
    """A run whose grounding file differs by its sha256 is named in a note with the task and the file; a run whose
    results hold no record of the data (PathBind not installed, or older than the record) is named as unchecked,
    with that cause."""
    changed, older = tmp_path / "changed", tmp_path / "older"
    shutil.copytree(runs["pathbind_blind"], changed)
    shutil.copytree(runs["pathbind_blind"], older)
    for file in changed.rglob("*_results.json"):
        data = json.loads(file.read_text())
        record = data["pathbind"]["data"]["pathbind_demo_grounding"]
        record["files"][0]["sha256"] = "0" * 64
        record["fingerprint"] = fingerprint(record)
        file.write_text(json.dumps(data))
    for file in older.rglob("*_results.json"):
        data = json.loads(file.read_text())
        data["pathbind"].pop("data")
        file.write_text(json.dumps(data))
    build_report([runs["pathbind_control"], changed, older], tmp_path / "out", overlays=0)
    markdown = (tmp_path / "out" / "report.md").read_text()
    sha = next(iter(json.loads(f.read_text()) for f in runs["pathbind_control"].rglob("*_results.json")))[
        "pathbind"]["data"]["pathbind_demo_grounding"]["files"][0]["sha256"]
    assert (f"> **Note.** pathbind_demo_grounding is compared on different data: pathbind_control vs pathbind_blind "
            f"(changed): grounding.parquet sha256: {sha[:12]} vs 000000000000. Its rows below do not compare like "
            "with like.") in markdown
    assert ("> **Note.** No record of the data read, so not checked against the other runs: pathbind_blind (older) "
            "(pathbind_demo_faithfulness: its results file holds no PathBind record of the data: run without PathBind "
            "installed, or from before it recorded data)") in markdown
    assert markdown.count("compared on different data") == 1


def test_a_missing_folder_is_a_clear_error(tmp_path):
    """A run folder that does not exist: exit 1 naming it."""
    done = run([str(BIN / "pathbind"), "report", str(tmp_path / "nope"), "--out", str(tmp_path / "out")],
               cwd=tmp_path)
    assert done.returncode == 1
    assert f"pathbind report: error: {tmp_path / 'nope'}: no such folder" in done.stderr


def test_a_folder_without_results_is_a_clear_error(tmp_path):
    """A folder with no results.json (a failed lmms-eval run) names the folder."""
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReportError, match=r"empty: no lmms-eval \*_results.json"):
        build_report([tmp_path / "empty"], tmp_path / "out")


def test_overlay_items_are_taken_from_every_group():
    """Items alternate success / partial / failure, by the best model's IoU; unscored items are failures."""
    logged = {"a": {0: ItemMap(None, 0.9), 1: ItemMap(None, 0.3), 2: ItemMap(None, 0.05), 3: ItemMap(None, 0.7),
                    4: ItemMap(None, math.nan)},
              "b": {0: ItemMap(None, 0.1), 1: ItemMap(None, 0.2), 2: ItemMap(None, math.nan)}}
    assert choose_items(logged, 4) == {"success": [0, 3], "partial": [1], "failure": [2]}
    assert choose_items(logged, 5)["failure"] == [2, 4]


def write_results(folder, model: str, results: dict) -> None:
    """A results.json in lmms-eval's layout (metric keys with their filter suffix)."""
    folder.mkdir(parents=True)
    body = {task: {f"{name},none": value for name, value in metrics.items()} for task, metrics in results.items()}
    (folder / "20260101_000000_results.json").write_text(json.dumps({"config": {"model": model}, "results": body}))


def test_faithfulness_and_pathview_sections_read_results_by_metric_name(tmp_path):
    """The two-axis plot places a model with finite ρ and causal mass; one without is a note with its verdict;
    PathView metrics appear per task."""
    uses = {"image": "uses the image", "attention": "attention tracks causal importance"}
    ignores = {"image": "does not use the image", "attention": "attention does not track causal importance"}
    write_results(tmp_path / "a", "model_a", {
        "pathbind_faithfulness": {"attn_occlusion_rho": 0.6, "causal_amim": 0.7, "causal_l1": 1.2, "verdict": uses},
        "pathbind_pathview_region_ogd": {"dice": 41.5, "false_refusal_rate": 2.0, "invalid_rate": 0.0}})
    write_results(tmp_path / "b", "model_b", {
        "pathbind_faithfulness": {"attn_occlusion_rho": math.nan, "causal_amim": math.nan, "causal_l1": 0.0,
                                  "verdict": ignores}})
    build_report([tmp_path / "a", tmp_path / "b"], tmp_path / "out", overlays=0)
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "| model_a | pathbind_faithfulness | uses the image; attention tracks causal importance |" in markdown
    assert "not placed on the plot" in markdown
    assert "model_b on pathbind_faithfulness (does not use the image" in markdown
    assert (tmp_path / "out" / "figures" / "faithfulness.png").stat().st_size > 0
    assert "41.5" in markdown and "pathbind_pathview_region_ogd" in markdown


def test_rows_accounted_for_per_run_and_task(tmp_path):
    """A table of rows, evaluated and dropped with reasons per run and task; a ledger that does not add up is marked;
    tasks without accounting and unusable result files are notes."""
    write_results(tmp_path / "a", "model_a", {
        "pathbind_demo_vqa": {"acc_image": 90.0, "accounting": {"rows": 12, "evaluated": 10,
                                                                "dropped": {"repeated id": 1, "no image": 1}}},
        "mmmu_val": {"acc": 0.4}})
    (tmp_path / "a" / "20260102_000000_results.json").write_text("{}")
    write_results(tmp_path / "b", "model_b", {
        "pathbind_demo_vqa": {"acc_image": 20.0, "accounting": {"rows": 12, "evaluated": 12, "dropped": {}}},
        "pathbind_demo_yesno": {"acc_image": 50.0, "accounting": {"rows": 5, "evaluated": 3, "dropped": {}}}})
    build_report([tmp_path / "a", tmp_path / "b"], tmp_path / "out", overlays=0)
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "| Model | task | rows | evaluated | dropped | reasons |" in markdown
    assert "| model_a | pathbind_demo_vqa | 12 | 10 | 2 | no image: 1, repeated id: 1 |" in markdown
    assert "| model_b | pathbind_demo_vqa | 12 | 12 | 0 | – |" in markdown
    assert "| model_b | pathbind_demo_yesno | 5 | 3 | 0 | –; does not add up: +2 rows |" in markdown
    assert "model_a: no row accounting for mmmu_val (not a PathBind task" in markdown
    assert f"model_a: skipped {tmp_path / 'a' / '20260102_000000_results.json'}: not an lmms-eval results" in markdown
    assert "Rows accounted for" in (tmp_path / "out" / "index.html").read_text()


def test_a_missing_audit_path_is_a_clear_error(tmp_path):
    """An --audit file that does not exist is an error, not the note for an audit never given."""
    write_results(tmp_path / "a", "model_a", {"pathbind_demo_vqa": {"acc_image": 90.0}})
    with pytest.raises(ReportError, match=r"--audit .*nope\.json: no such file or folder"):
        build_report([tmp_path / "a"], tmp_path / "out", overlays=0, audits=[tmp_path / "nope.json"])


@pytest.mark.slow
def test_the_pairs_section_shows_the_clustered_paired_changes(report):
    """--pairs blind:control: the paired-change table of `pathbind pairs`, with the clusters resampled and Holm's p."""
    markdown = (report / "report.md").read_text()
    assert "Paired changes, tuned − general" in markdown
    row = next(line for line in markdown.splitlines()
               if line.startswith("| pathbind_blind → pathbind_control | pathbind_demo_vqa | ΔMG"))
    assert "60 (image)" in row


def test_a_reused_out_folder_keeps_no_old_figure(tmp_path):
    """A second report into the same --out: the PNGs of the first are gone, and the count printed is the
    figures this report made (here none)."""
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "a_results.json").write_text(json.dumps(
        {"config": {"model": "m"}, "results": {"vqa": {"acc_image,none": 80.0}}}))
    figures = tmp_path / "out" / "figures"
    figures.mkdir(parents=True)
    for name in ("grounding_iou.png", "pairs.png"):
        (figures / name).write_bytes(b"\x89PNG\r\n\x1a\n")
    done = run([str(BIN / "pathbind"), "report", str(tmp_path / "run"), "--out", str(tmp_path / "out"),
                "--overlays", "0"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    made = sorted(figures.glob("*.png"))
    assert "grounding_iou.png" not in [p.name for p in made]
    assert f", {len(made)} figure file(s) (PNG, SVG, PDF) and " in done.stdout


def test_the_report_says_which_results_it_took_and_what_differs_between_runs(tmp_path):
    """A task in two results files of one folder (the latest shown, named), a task run in another version and on
    another release, a task that failed in its run, and a --predict_only run: each a note, none silent."""
    def results_file(folder, date: str, results: dict, *, version=1, lmms_eval="0.7.3", extra=None) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        body = {"config": {"model": folder.name}, "versions": {task: version for task in results},
                "results": {task: {f"{name},none": value for name, value in metrics.items()}
                            for task, metrics in results.items()},
                "pathbind": {"software": {"lmms-eval": lmms_eval, "pathbind": "0.1.0"}, **(extra or {})}}
        (folder / f"{date}_results.json").write_text(json.dumps(body))

    results_file(tmp_path / "a", "20260101_000000", {"pathbind_demo_vqa": {"acc_image": 10.0}})
    results_file(tmp_path / "a", "20260102_000000", {"pathbind_demo_vqa": {"acc_image": 90.0}})
    results_file(tmp_path / "b", "20260101_000000", {"pathbind_demo_vqa": {"acc_image": 50.0},
                                                     "faulty_key": {"answered": 25.0, "label_accuracy": math.nan}},
                 version=2, lmms_eval="0.7.2", extra={"failed_tasks": {"faulty_key": "metric 'label_accuracy': its "
                                                                       "aggregation raised KeyError: 'label'"}})
    predicted = tmp_path / "c"
    results_file(predicted, "20260101_000000", {"pathbind_demo_vqa": {"bypass": 999}})
    saved = json.loads(next(predicted.glob("*_results.json")).read_text())
    saved["config"]["resolved_cli_args"] = {"predict_only": True}
    next(predicted.glob("*_results.json")).write_text(json.dumps(saved))

    build_report([tmp_path / "a", tmp_path / "b", predicted], tmp_path / "out", overlays=0)
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert (f"> **Note.** a: pathbind_demo_vqa is in 2 results files below {tmp_path / 'a'}; shown from "
            "20260102_000000_results.json, the latest by the date lmms-eval puts in its name (not "
            "20260101_000000_results.json). Give each run its own folder to show another.") in markdown
    assert ("> **Note.** pathbind_demo_vqa is compared across versions of the task (a: 1, b: 2, c: 1): its rows "
            "below may not compare like with like.") in markdown
    assert ("> **Note.** pathbind_demo_vqa is compared across releases (a: lmms-eval 0.7.3, pathbind 0.1.0, b: "
            "lmms-eval 0.7.2, pathbind 0.1.0, c: lmms-eval 0.7.3, pathbind 0.1.0)") in markdown
    assert ("> **Note.** b: faulty_key failed in its run (metric 'label_accuracy': its aggregation raised KeyError: "
            "'label'); the metrics it did compute are shown.") in markdown
    assert ("c: pathbind_demo_vqa come from a --predict_only run: lmms-eval logged the answers and scored none"
            in markdown)
    assert "c: no row accounting" not in markdown


def test_a_pipe_in_a_column_name_or_cell_keeps_the_markdown_table_s_columns(tmp_path):
    """Each line of a table has one cell per column, however many '|' its names and cells hold ("ρ vs |δ|")."""
    from pathbind_analysis.report.document import Cell, Section, Table, write_markdown

    table = Table("t", ["method", "ρ vs |δ|", "ρ vs δ"], [[Cell("a|b"), Cell("|1|"), Cell("2")]])
    write_markdown([Section("s", blocks=[table])], "T", tmp_path / "r.md")
    lines = [line for line in (tmp_path / "r.md").read_text().splitlines() if line.startswith("|")]
    assert len(lines) == 3
    assert all(len(re.split(r"(?<!\\)\|", line)) == 3 + 2 for line in lines), lines
