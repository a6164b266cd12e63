"""The report's Tables 1 and 2 and Figure 4 in the paper's layout, from results and sample logs written the way
lmms-eval writes them: one column per benchmark or dimension, the average of the columns, chance per option count."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pathbind_analysis.report import build_report


def write_run(folder: Path, model: str, results: dict[str, dict[str, Any]],
              samples: dict[str, list[dict[str, Any]]] | None = None) -> Path:
    """A run folder: results.json (metric keys with their filter suffix) and a sample log per task of ``samples``
    (each line's PathBind record under "pathbind", as PathBind's tasks log it)."""
    folder.mkdir(parents=True)
    body = {task: {f"{name},none": value for name, value in metrics.items()} for task, metrics in results.items()}
    (folder / "20260101_000000_results.json").write_text(json.dumps({"config": {"model": model}, "results": body}))
    for task, records in (samples or {}).items():
        lines = [json.dumps({"doc_id": i, "pathbind": record}) for i, record in enumerate(records)]
        (folder / f"20260101_000000_samples_{task}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def items(counts: list[int], dimension: str | None = None) -> list[dict[str, Any]]:
    """Image-condition records of items with these option counts."""
    return [{"id": f"i{k}", "condition": "image", "reference": "A", "n_options": n, "dimension": dimension}
            for k, n in enumerate(counts)]


def vqa(acc_image: float, acc_text: float, **extra: Any) -> dict[str, Any]:
    return {"acc_image": acc_image, "acc_text": acc_text, "mg": acc_image - acc_text, **extra}


def rows_of(markdown: str, title: str) -> list[str]:
    """The table rows below the bold title."""
    block = markdown.split(f"**{title}**", 1)[1].split("\n\n", 2)[1]
    return block.splitlines()[2:]


def test_table_1_has_a_column_per_benchmark_the_average_and_chance_per_option_count(tmp_path):
    """Path-VQA (yes/no: 50), MedXpert-Path (five options: 20, not 25) and OmniMed-Bright (four and two options
    mixed: 37.5), in the paper's column order; Avg. is the mean of the columns; a model missing a column has no
    Avg., said in a note."""
    samples = {"pathbind_path_vqa": items([2, 2]), "pathbind_medxpert_path": items([5, 5, 5]),
               "pathbind_omnimed_bright": items([4, 2])}
    write_run(tmp_path / "a", "model_a", {"pathbind_medxpert_path": vqa(30.0, 20.0),
                                          "pathbind_path_vqa": vqa(60.0, 50.0),
                                          "pathbind_omnimed_bright": vqa(69.0, 60.0)}, samples)
    write_run(tmp_path / "b", "model_b", {"pathbind_path_vqa": vqa(55.0, 52.0)})
    build_report([tmp_path / "a", tmp_path / "b"], tmp_path / "out", overlays=0)
    markdown = (tmp_path / "out" / "report.md").read_text()
    title = "Table 1: the public pathology VQA benchmarks"
    header = markdown.split(f"**{title}**", 1)[1].split("\n\n", 2)[1].splitlines()[0]
    assert header == "| Model | Strategy | Path-VQA | MedXpert Path | OmniMed Bright | Avg. |"
    assert rows_of(markdown, title) == [
        "| Random Choice | - | 50.0 | 20.0 | 37.5 | 35.8 |",
        "| model_a | VLM | **60.0↑10.0** | **30.0↑10.0** | **69.0↑9.0** | **53.0↑9.7** |",
        "|  | VLM-text | 50.0 | _20.0_ | _60.0_ | _43.3_ |",
        "| model_b | VLM | 55.0↑3.0 | – | – | – |",
        "|  | VLM-text | _52.0_ | – | – | – |"]
    assert f"{title}: no Avg. for model_b: the run lacks a column of the table" in markdown


def test_table_2_puts_pathbind_vqa_and_pta_dimensions_side_by_side(tmp_path):
    """PathBind-VQA's dimensions, then PathBind-PTA's, in one table; a task whose log has no option counts (a run
    before they were recorded) has no chance value, said in a note."""
    dimensions = {"D1": vqa(40.0, 20.0), "D2": vqa(60.0, 40.0)}
    legacy = [{k: v for k, v in record.items() if k != "n_options"} for record in items([4], "D1")]
    write_run(tmp_path / "a", "model_a", {
        "pathbind_vqa": vqa(50.0, 30.0, by_dimension=dimensions),
        "pathbind_pta": vqa(80.0, 50.0, by_dimension={"D1": vqa(80.0, 50.0)})},
        {"pathbind_vqa": items([4, 4], "D1") + items([4], "D2"), "pathbind_pta": legacy})
    build_report([tmp_path / "a"], tmp_path / "out", overlays=0)
    markdown = (tmp_path / "out" / "report.md").read_text()
    title = "Table 2: PathBind-VQA and PathBind-PTA by diagnostic dimension"
    assert "| Model | Strategy | PathBind-VQA D1 | PathBind-VQA D2 | PathBind-PTA D1 | Avg. |" in markdown
    assert rows_of(markdown, title)[:2] == ["| Random Choice | - | 25.0 | 25.0 | – | – |",
                                            "| model_a | VLM | **40.0↑20.0** | **60.0↑20.0** | **80.0↑30.0** | "
                                            "**60.0↑23.3** |"]
    assert f"{title}: no Random Choice for PathBind-PTA D1" in markdown


def test_figure_4_has_a_panel_per_measure_naming_its_tasks_and_omits_empty_ones(tmp_path):
    """(a) MG over the public benchmarks both models report, (b) over PathBind's dimensions, (c)/(d) IoU and recall
    over PathBind-Grounding's two splits pooled by scored items; a pair whose tuned model lacks a measure has no
    line there, and a panel that no pair has is left out with a note."""
    grounding = {"pathbind_grounding_testa": {"attn_iou": 0.20, "attn_recall": 0.60, "lost_items": {"scored": 3}},
                 "pathbind_grounding_testb": {"attn_iou": 0.10, "attn_recall": 0.40, "lost_items": {"scored": 1}}}
    write_run(tmp_path / "g", "general", {
        "pathbind_path_vqa": vqa(60.0, 50.0), "pathbind_quilt_vqa": vqa(50.0, 30.0),
        "pathbind_vqa": vqa(50.0, 30.0, by_dimension={"D1": vqa(40.0, 20.0), "D2": vqa(60.0, 20.0)}), **grounding})
    write_run(tmp_path / "t", "tuned", {
        "pathbind_path_vqa": vqa(70.0, 65.0), "pathbind_quilt_vqa": vqa(60.0, 45.0),
        "pathbind_vqa": vqa(55.0, 30.0, by_dimension={"D1": vqa(50.0, 20.0), "D2": vqa(60.0, 30.0)}),
        "pathbind_grounding_testa": {"attn_iou": 0.16, "attn_recall": 0.50, "lost_items": {"scored": 3}},
        "pathbind_grounding_testb": {"attn_iou": 0.12, "attn_recall": 0.45, "lost_items": {"scored": 1}}})
    write_run(tmp_path / "u", "untuned", {"pathbind_path_vqa": vqa(61.0, 50.0)})
    build_report([tmp_path / "g", tmp_path / "t", tmp_path / "u"], tmp_path / "out", overlays=0,
                 pairs="general:tuned,general:untuned")
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert ("| pair | (a) ΔMG, public benchmarks | (b) ΔMG, PathBind VQA + PTA | (c) ΔIoU, PathBind-Grounding | "
            "(d) ΔRecall, PathBind-Grounding |") in markdown
    # (a) general (10 + 20) / 2 = 15, tuned (5 + 15) / 2 = 10; (c) general (3·20 + 10) / 4 = 17.5, tuned 15.0
    assert "| general → tuned | 15.0 → 10.0 (-5.0) | 30.0 → 30.0 (+0.0) | 17.5 → 15.0 (-2.5) | 55.0 → 48.8 (-6.2) |" \
           in markdown
    assert "| general → untuned | 10.0 → 11.0 (+1.0) | – | – | – |" in markdown  # (a) on Path-VQA alone
    assert ("(c) IoU, PathBind-Grounding: general → tuned: pathbind_grounding_testa, pathbind_grounding_testb"
            in markdown)
    assert "(a) MG, public benchmarks: general → tuned: pathbind_quilt_vqa, pathbind_path_vqa; general → untuned: " \
           "pathbind_path_vqa" in markdown
    assert not re.search(r"Figure 4 \(\w\) .* omitted", markdown)  # every panel has a pair
    assert (tmp_path / "out" / "figures" / "pairs.png").stat().st_size > 1000

    build_report([tmp_path / "g", tmp_path / "u"], tmp_path / "out2", overlays=0, pairs="general:untuned")
    markdown = (tmp_path / "out2" / "report.md").read_text()
    assert "Figure 4 (c) IoU, PathBind-Grounding omitted: no pair has a grounding task with a finite attn_iou " \
           "under both models" in markdown
    assert "Figure 4 (a)" not in markdown
