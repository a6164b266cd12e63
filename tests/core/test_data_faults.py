"""Data faults in words: a failed data record said everywhere it is read, the run's and ``data check``'s words the
same, errors naming the task and the cause, and headlines over too few rows flagged."""

from __future__ import annotations

import json
import re
import textwrap

import datasets
import pandas as pd
import pytest
from conftest import BIN, data_check, lmms_eval, run
from source_data import QUILT_RECORDS, jpeg, png, write_path_vqa, write_pathmmu, write_quilt_vqa

from pathbind.cli import main
from pathbind_tasks.quilt_vqa import utils as quilt_vqa

TASK = "pathbind_pathmmu_test"


@pytest.fixture(autouse=True)
def no_data_root(monkeypatch):
    """The check sets PATHBIND_DATA itself; none is inherited from the test environment."""
    monkeypatch.delenv("PATHBIND_DATA", raising=False)


@pytest.mark.slow
def test_a_failed_data_record_is_warned_checked_refused_and_flagged(tmp_path, capsys):
    """A link to a missing file in images/: the run warns naming it and records the failure; data check fails on
    it in the same words; pairs refuses the run in one line; report notes it. The run evaluated 5 of 7 rows, so
    the console table, summary and report flag its headline."""
    folder = tmp_path / "data" / "pathmmu"
    write_pathmmu(folder)  # two of its seven items are faults of the data
    (folder / "images" / "gone.jpg").symlink_to("deleted.jpg")
    cause = f"{folder / 'images' / 'gone.jpg'}: a symbolic link to a missing file (deleted.jpg)"

    result = lmms_eval(tmp_path, "pathbind_blind", TASK, env={"PATHBIND_DATA": str(tmp_path / "data")})
    assert (f"pathbind: task {TASK}: the record of the data it read failed ({cause}); this run cannot be checked "
            "against another run's data") in result["stdout"] + result["stderr"]
    assert result["results"]["pathbind"]["data"][TASK] == {"error": cause}
    assert re.search(rf"^\|{TASK} \[5 of 7 evaluated\] *\|none", result["stdout"], re.M), result["stdout"][-2000:]

    code, out = data_check(capsys, "pathmmu", str(folder))
    assert code == 1 and f"  [FAIL] {cause}: the run's record of the data would fail" in out.splitlines()

    out_dir = result["out"]
    refused = run([str(BIN / "pathbind"), "pairs", f"{out_dir}:{out_dir}", "--vqa-task", TASK], cwd=tmp_path)
    assert refused.returncode == 1 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert f"task {TASK}: the record of the data it read failed ({cause}): cannot check that both runs read the " \
           "same data" in refused.stderr

    summary = run([str(BIN / "pathbind"), "summary", str(out_dir)], cwd=tmp_path)
    assert f"{TASK} [5 of 7 evaluated]" in summary.stdout

    report = run([str(BIN / "pathbind"), "report", str(out_dir), "--out", str(tmp_path / "report")], cwd=tmp_path)
    text = (tmp_path / "report" / "report.md").read_text()
    assert report.returncode == 0 and "The record of the data read failed" in text and cause in text
    assert "pathbind_blind [5 of 7 evaluated]" in text


def test_data_check_names_a_link_loop_and_a_file_given_as_the_folder(tmp_path, capsys):
    """A link that leads back to its folder is a loop, named; DIR that is a file says so."""
    folder = tmp_path / "pathmmu"
    write_pathmmu(folder)
    (folder / "images" / "nested").mkdir()
    (folder / "images" / "nested" / "up").symlink_to("..", target_is_directory=True)
    code, out = data_check(capsys, "pathmmu", str(folder))
    assert code == 1
    assert (f"  [FAIL] {folder / 'images' / 'nested' / 'up'}: a symbolic link loop (to ..): the run's record of the "
            "data would fail") in out.splitlines()

    assert main(["data", "check", "pathmmu", str(folder / "data.json")]) != 0
    assert f"{folder / 'data.json'}: is a file, not a folder" in capsys.readouterr().err


def test_data_check_warnings_name_the_users_folder_not_its_link(tmp_path, capsys, logged_warnings):
    """A folder not named after its source is read through a temporary link; the warnings name the folder."""
    write_pathmmu(tmp_path / "mine")
    data_check(capsys, "pathmmu", str(tmp_path / "mine"))
    dropped = [line for line in logged_warnings if "image file not found" in line]
    assert dropped and all(str(tmp_path / "mine" / "images" / "absent.jpg") in line for line in dropped)
    assert not any("pathbind-data-check-" in line for line in logged_warnings)


def test_an_invalid_yes_no_answer_is_named_with_its_value(tmp_path, monkeypatch, capsys, running_task):
    """yes_no_answer "maybe" is an invalid value of that field, shown; an empty one is a missing label."""
    folder = tmp_path / "quilt_vqa"
    write_quilt_vqa(folder)
    records = json.loads((folder / "quiltvqa_test_w_ans.json").read_text())
    records[2]["yes_no_answer"] = "maybe"
    (folder / "quiltvqa_test_w_ans.json").write_text(json.dumps(records))
    code, out = data_check(capsys, "quilt_vqa", str(folder))
    assert code == 1
    assert ("  [FAIL] pathbind_quilt_vqa_image: 1 row dropped: field 'yes_no_answer' is not yes or no "
            "(first 'quilt_vqa-102': 'maybe')") in out.splitlines()
    assert f"  [FAIL] pathbind_quilt_vqa_image: 1 row dropped: {quilt_vqa.UNLABELLED} (first 'quilt_vqa-103')" \
        in out.splitlines()


@pytest.mark.slow
def test_a_hub_layout_split_is_named_and_a_single_split_copy_is_read(tmp_path, capsys):
    """Quilt-VQA's hub export (train.parquet) for a task that evaluates 'test': the run and data check say which
    split is expected and which files there are. A save_to_disk copy of one split is read as the evaluated one."""
    quilt = tmp_path / "data" / "quilt_vqa"
    quilt.mkdir(parents=True)
    pd.DataFrame([{"image": {"bytes": jpeg(9 * i), "path": r["image"]}, "question": r["question"],
                   "answer": r["answer"], "answer_type": r["answer_type"]} for i, r in enumerate(QUILT_RECORDS)]
                 ).to_parquet(quilt / "train.parquet")
    words = (f"PATHBIND_DATA: {quilt} has no file for split 'test', which task 'pathbind_quilt_vqa_image' "
             "evaluates (it holds train.parquet); a file named test.parquet is read as that split")
    failed = run([str(BIN / "lmms_eval"), "--model", "pathbind_blind", "--tasks", "pathbind_quilt_vqa_image",
                  "--output_path", str(tmp_path / "out")], cwd=tmp_path, env={"PATHBIND_DATA": str(tmp_path / "data")})
    assert f"Error during evaluation: task pathbind_quilt_vqa_image: {words}" in failed.stdout + failed.stderr
    code, out = data_check(capsys, "quilt_vqa", str(quilt))
    assert code == 1 and f"pathbind_quilt_vqa_image: the task would fail: DataOverrideError: {words}" in out

    write_path_vqa(tmp_path / "release")
    rows = datasets.load_dataset("parquet", data_files={"test": str(tmp_path / "release" / "test.parquet")})["test"]
    rows.save_to_disk(tmp_path / "data" / "path_vqa")
    result = lmms_eval(tmp_path, "pathbind_blind", "pathbind_path_vqa_image",
                       env={"PATHBIND_DATA": str(tmp_path / "data")})
    accounting = result["results"]["results"]["pathbind_path_vqa_image"]["accounting,none"]
    assert accounting == {"rows": 4, "evaluated": 3, "dropped": {"open-ended (answer is not yes or no)": 1}}
    code, out = data_check(capsys, "path_vqa", str(tmp_path / "data" / "path_vqa"))
    assert code == 0 and "pathbind_path_vqa_image: 3 of 4 rows kept" in out


@pytest.mark.slow
def test_a_third_party_tasks_error_names_the_task_and_the_document(tmp_path):
    """An --include_path task on PathBind's process_docs whose own process_results fails: the final error names
    the task, the document and the cause at once, not RetryError[<Future ...>] after five attempts."""
    mine = tmp_path / "mine"
    mine.mkdir()
    pd.DataFrame({"id": ["a", "b"], "image": [{"bytes": png(1), "path": None}, {"bytes": png(2), "path": None}],
                  "question": ["Is it benign?", "Is it necrotic?"], "answer": ["yes", "no"]}
                 ).to_parquet(mine / "rows.parquet")
    (mine / "utils.py").write_text("def process_results(doc, results):\n"
                                   "    return {'exact': float(results[0].strip().lower() == doc['label'])}\n")
    (mine / "task.yaml").write_text(textwrap.dedent(f"""
        task: my_yes_no
        dataset_path: parquet
        dataset_kwargs:
          data_files:
            test: {mine / 'rows.parquet'}
        test_split: test
        output_type: generate_until
        process_docs: !function pathbind_tasks.common.vqa.image_only
        doc_to_visual: !function pathbind_tasks.common.vqa.doc_to_visual
        doc_to_text: !function pathbind_tasks.common.vqa.doc_to_text
        doc_to_target: answer
        process_results: !function utils.process_results
        metric_list:
          - metric: exact
            aggregation: mean
            higher_is_better: true
    """))
    done = run([str(BIN / "lmms_eval"), "--model", "dummy", "--tasks", "my_yes_no", "--include_path", str(mine),
                "--output_path", str(tmp_path / "out")], cwd=tmp_path)
    output = done.stdout + done.stderr
    assert ("Error during evaluation: task my_yes_no: process_results failed on document a: KeyError: 'label'"
            in output), output[-3000:]
    assert "RetryError" not in output


def test_a_whole_failed_record_is_each_tasks_and_none_is_no_record(tmp_path):
    """A run whose whole pathbind.data failed refuses every task's comparison; a run without one has no record."""
    from pathbind.lmms_output import ResultsError, task_data

    results = {"results": {"t": {"acc,none": 1.0}}, "pathbind": {"data": {"error": "OSError: disk gone"}}}
    (tmp_path / "failed").mkdir()
    (tmp_path / "failed" / "x_results.json").write_text(json.dumps(results))
    with pytest.raises(ResultsError, match=r"task t: the record of the data it read failed \(OSError: disk gone\)"):
        task_data(tmp_path / "failed", "t")
    (tmp_path / "older").mkdir()
    (tmp_path / "older" / "x_results.json").write_text(json.dumps({"results": results["results"]}))
    assert task_data(tmp_path / "older", "t") is None


@pytest.mark.parametrize(("rows", "evaluated", "flag"), [
    (10, 9, ""), (10, 8, "8 of 10 evaluated"), (12, 2, "2 of 12 evaluated"), (0, 0, ""), (100, 90, ""),
])
def test_a_headline_is_flagged_under_nine_tenths_of_its_rows(rows, evaluated, flag):
    """Evaluated under 90% of the rows read is flagged with both counts; a ledger of another form is not read."""
    from pathbind.summary import coverage_flag

    dropped = {"image file not found": rows - evaluated} if rows > evaluated else {}
    assert coverage_flag({"rows": rows, "evaluated": evaluated, "dropped": dropped}) == flag
    assert coverage_flag({"rows": "12"}) == coverage_flag(None) == ""


def test_doctests():
    """The docstring examples of the fault phrasing and the coverage flag run and hold."""
    import doctest

    from pathbind import faults, summary

    for module in (faults, summary):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__
