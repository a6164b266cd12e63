"""The one reader of lmms-eval output: results files and sample logs in lmms-eval's layouts, errors naming the file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from pathbind.lmms_output import (
    SampleLogError,
    by_date,
    find_results,
    find_sample_logs,
    load_results,
    read_sample_log,
    task_results,
    task_samples,
)


def write_json(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def write_lines(path: Path, lines: list[object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def results(task: str, acc: float) -> dict:
    return {"config": {"model": "pathbind_control"}, "results": {task: {"acc,none": acc, "acc_stderr,none": 0.1}}}


def test_results_are_found_below_nested_model_folders_and_the_latest_with_the_task_wins(tmp_path):
    """<output_path>/<model>/<date>_results.json at any depth; a newer run without the task leaves the older one's."""
    old = write_json(tmp_path / "out" / "b_model" / "20260101_000000_results.json", results("vqa", 10.0))
    new = write_json(tmp_path / "out" / "a_model" / "20260102_000000_results.json", results("vqa", 20.0))
    other = write_json(tmp_path / "out" / "a_model" / "20260103_000000_results.json", results("grounding", 0.5))
    assert find_results([tmp_path / "out"]) == [new, other, old]  # by path
    assert by_date(find_results([tmp_path / "out"])) == [old, new, other]
    assert find_results([old]) == [old]
    assert task_results(tmp_path / "out", "vqa") == {"acc,none": 20.0, "acc_stderr,none": 0.1}
    assert load_results(new).metrics("vqa") == {"acc": 20.0}
    with pytest.raises(ValueError, match=r"out: no run of task 'pathview' \(its runs evaluated grounding, vqa\)"):
        task_results(tmp_path / "out", "pathview")


def test_a_truncated_results_file_is_named(tmp_path):
    (tmp_path / "20260101_000000_results.json").write_text('{"results": {"vqa": {"acc,none": 1')
    with pytest.raises(ValueError, match=r"20260101_000000_results\.json: not valid JSON, perhaps truncated"):
        task_results(tmp_path, "vqa")


def test_the_latest_sample_log_of_a_task_is_read(tmp_path):
    """Several timestamps and tasks side by side: the log beside the task's newest results file; none is an error
    naming the fix."""
    model = tmp_path / "out" / "pathbind_control"
    write_json(model / "20260101_000000_results.json", results("vqa", 0.0))
    write_lines(model / "20260101_000000_samples_vqa.jsonl", [{"doc_id": 0, "acc": 0}])
    write_json(model / "20260102_000000_results.json", {"results": {**results("vqa", 0.5)["results"],
                                                                    **results("grounding", 0.5)["results"]}})
    write_lines(model / "20260102_000000_samples_vqa.jsonl", [{"doc_id": 0, "acc": 1}, {"doc_id": 1, "acc": 0}])
    write_lines(model / "20260103_000000_samples_vqa_ablation.jsonl", [{"doc_id": 0, "acc": 1}])
    assert task_samples(tmp_path / "out", "vqa") == [{"doc_id": 0, "acc": 1}, {"doc_id": 1, "acc": 0}]
    assert len(find_sample_logs(tmp_path / "out")) == 3
    beside = r"_results\.json: no sample log of task 'grounding' beside it \(run lmms_eval with --log_samples"
    with pytest.raises(ValueError, match=beside):
        task_samples(tmp_path / "out", "grounding")


def test_a_sample_log_is_streamed_and_its_faults_name_the_file(tmp_path):
    """Blank lines are skipped, a gzipped log reads the same, a damaged line and a binary file are named."""
    log = tmp_path / "20260101_000000_samples_vqa.jsonl"
    log.write_text('{"doc_id": 0}\n\n{"doc_id": 1}\n')
    assert list(read_sample_log(log)) == [(1, {"doc_id": 0}), (3, {"doc_id": 1})]
    packed = tmp_path / "packed.jsonl.gz"
    packed.write_bytes(gzip.compress(log.read_bytes()))
    assert list(read_sample_log(packed)) == list(read_sample_log(log))
    log.write_text('{"doc_id": 0}\nnot json\n')
    with pytest.raises(SampleLogError, match=r"samples_vqa\.jsonl:2: not valid JSON"):
        list(read_sample_log(log))
    log.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(SampleLogError, match=r"samples_vqa\.jsonl: not a text file"):
        list(read_sample_log(log))
    with pytest.raises(SampleLogError, match=r"gone\.jsonl: cannot be read"):
        list(read_sample_log(tmp_path / "gone.jsonl"))
