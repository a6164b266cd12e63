"""``pathbind data check``: a data folder read as a run reads it, before the run; and ``pathbind doctor``'s use."""

from __future__ import annotations

import io
import json
from fnmatch import fnmatch
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from source_data import (
    png,
    write_grounding,
    write_medxpert,
    write_omnimed,
    write_parquet,
    write_path_vqa,
    write_pathbind,
    write_pathmmu,
)

from pathbind import make_plugin_manager
from pathbind.cli import main
from pathbind.data_check import shared_sources, source_tasks
from pathbind.doctor import _data_folders
from pathbind.layout import Layout


@pytest.fixture(autouse=True)
def no_data_root(monkeypatch):
    """The check sets PATHBIND_DATA itself; none is inherited from the test environment."""
    monkeypatch.delenv("PATHBIND_DATA", raising=False)


def data_check(capsys, *args: str) -> tuple[int, str, str]:
    """``pathbind data check ARGS`` through the command's entry point: exit status, stdout, stderr."""
    code = main(["data", "check", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write_good_pathmmu(folder: Path) -> None:
    write_pathmmu(folder)
    (folder / "images" / "absent.jpg").write_bytes(png(1))  # the writer leaves one image out; here it is there
    data = json.loads((folder / "data.json").read_text())
    data["PubMed"]["test"][1]["answer"] = "D) Mast cells"  # and gives one answer no option; here it has one
    (folder / "data.json").write_text(json.dumps(data))


def test_a_good_folder_passes_with_one_line_per_finding_and_an_ok_summary(tmp_path, capsys):
    """A folder not named after its source is linked under that name; the open-ended questions are the task's
    selection, not a fault."""
    write_path_vqa(tmp_path / "mine")
    code, out, _ = data_check(capsys, "path_vqa", str(tmp_path / "mine"))
    assert code == 0, out
    task = "pathbind_path_vqa_image"
    assert out.splitlines() == [
        f"path_vqa: {tmp_path / 'mine'}",
        "  [  OK] files found: test.parquet",
        f"  [  OK] {task}: rows loaded per split: test 4 (evaluated)",
        f"  [  OK] {task}: 3 of 4 rows kept",
        f"  [  OK] {task}: 1 row dropped: open-ended (answer is not yes or no) (the task's selection)",
        "OK path_vqa: rows kept: pathbind_path_vqa_image 3/4; no problems",
        "OK: 1 data folder(s) checked, no problems"]


def test_a_root_checks_each_source_folder_in_it(tmp_path, capsys):
    """Without SOURCE, DIR is a PATHBIND_DATA root: each source folder is read by each distinct conversion of its
    tasks (PathMMU's test-all and test-tiny, Grounding's two splits and the faithfulness task)."""
    root = tmp_path / "data"
    write_path_vqa(root / "path_vqa")
    write_good_pathmmu(root / "pathmmu")
    write_medxpert(root / "medxpert_path")
    write_omnimed(root / "omnimed_bright")
    write_pathbind(root / "pathbind_vqa")
    write_grounding(root / "pathbind_grounding")
    code, out, _ = data_check(capsys, "--json", str(root))
    assert code == 1, out  # three fixtures hold one answer that names no option each
    reports = {report["source"]: report for report in json.loads(out)}
    counts = {(task["task"], task["rows"], task["kept"]) for report in reports.values() for task in report["tasks"]}
    assert counts == {("pathbind_path_vqa_image", 4, 3), ("pathbind_pathmmu_test_image", 7, 7),
                      ("pathbind_pathmmu_test_tiny_image", 3, 3), ("pathbind_medxpert_path_image", 4, 2),
                      ("pathbind_omnimed_bright_image", 5, 3), ("pathbind_vqa_image", 3, 2),
                      ("pathbind_faithfulness", 3, 3), ("pathbind_grounding_testa", 3, 2),
                      ("pathbind_grounding_testb", 3, 1)}
    testa = next(t for t in reports["pathbind_grounding"]["tasks"] if t["task"] == "pathbind_grounding_testa")
    assert testa["dropped"] == {"split is testB (this task evaluates testA)": 1}
    assert testa["selection"] == list(testa["dropped"])
    bad = {"medxpert_path": "MM-4", "omnimed_bright": "q5", "pathbind_vqa": "pb-2"}
    for source, report in reports.items():
        assert report["ok"] == (source not in bad) and len(report["problems"]) == (source in bad)
    assert reports["medxpert_path"]["problems"] == [
        "pathbind_medxpert_path_image: 1 row dropped: field 'answer' is not one of the option letters (first "
        "'MM-4': 'F'; letters A, B, C, D, E)"]


def test_a_missing_data_file_is_named_with_the_failure_it_causes(tmp_path, capsys):
    write_good_pathmmu(tmp_path / "pathmmu")
    (tmp_path / "pathmmu" / "data.json").unlink()
    code, out, _ = data_check(capsys, "pathmmu", str(tmp_path))  # the root holding the folder will do
    assert code == 1
    assert (f"  [FAIL] missing: data.json (expected in {tmp_path / 'pathmmu'}; see pathbind_tasks/pathmmu/README.md)"
            in out.splitlines())
    assert "  [FAIL] pathbind_pathmmu_test_image: the task would fail: DataOverrideError: PATHBIND_DATA: tried " in out
    assert out.splitlines()[-1] == "FAIL: 3 problem(s) in 1 of 1 data folder(s)"


def test_a_missing_image_folder_is_named_and_each_item_without_its_image(tmp_path, capsys):
    """Messages name the folder given, though the check reads it through a link named after the source."""
    folder = tmp_path / "MedXpertQA"
    write_medxpert(folder)
    for image in (folder / "images").iterdir():
        image.unlink()
    (folder / "images").rmdir()
    code, out, _ = data_check(capsys, "medxpert_path", str(folder))
    assert code == 1
    assert (f"  [FAIL] missing: images/ or images.zip (expected in {folder}; see "
            "pathbind_tasks/medxpert_path/README.md)") in out
    failure = next(line for line in out.splitlines() if "the task would fail" in line)
    assert failure.startswith("  [FAIL] pathbind_medxpert_path_image: the task would fail: ValueError: ")
    assert f"image file not found: 2 (first 'MM-1': {folder}/images/MM-1-a.jpeg)" in failure


def test_a_truncated_image_is_a_problem_naming_the_item(tmp_path, capsys):
    write_good_pathmmu(tmp_path / "pathmmu")
    noise = Image.fromarray(np.random.default_rng(0).integers(0, 255, (48, 64, 3), dtype=np.uint8))
    buffer = io.BytesIO()
    noise.save(buffer, format="PNG")
    (tmp_path / "pathmmu" / "images" / "img_2.jpg").write_bytes(buffer.getvalue()[:len(buffer.getvalue()) // 2])
    code, out, _ = data_check(capsys, "pathmmu", str(tmp_path / "pathmmu"))
    assert code == 1
    failed = [line for line in out.splitlines() if "[FAIL]" in line]
    assert len(failed) == 1 and failed[0].startswith(
        "  [FAIL] pathbind_pathmmu_test_image: 1 row dropped: unreadable image (first 'PubMed-test-2': truncated "
        "file; ")


def test_a_missing_column_fails_with_the_tasks_own_message(tmp_path, capsys):
    write_parquet(tmp_path / "pathbind_vqa" / "test.parquet", {
        "id": ["a"], "image": [{"bytes": png(3), "path": None}], "question": ["Which?"], "options": [["x", "y"]],
        "answer": ["A"], "source": ["PathMMU"]})
    code, out, _ = data_check(capsys, "pathbind_vqa", str(tmp_path / "pathbind_vqa"))
    assert code == 1
    assert ("  [FAIL] pathbind_vqa_image: the task would fail: ValueError: PathBind-VQA: the raw data has no column "
            "'dimension'") in out


def test_bad_fields_are_problems_and_other_splits_are_the_tasks_selection(tmp_path, capsys):
    """A split that is neither testA nor testB is a fault; testA rows left out of the testB task are not; a task
    whose every item is at fault would stop, and says why."""
    write_grounding(tmp_path / "pathbind_grounding", ("testA", "val", "testB"),
                    bboxes=[None, [0.0, 0.0, 8.0, 6.0], [0.0, 0.0, 8.0, 6.0]])
    code, out, _ = data_check(capsys, "pathbind_grounding", str(tmp_path / "pathbind_grounding"))
    assert code == 1
    lines = out.splitlines()
    assert "  [FAIL] pathbind_faithfulness: 1 row dropped: split is 'val', not testA or testB" in lines
    assert ("  [  OK] pathbind_grounding_testb: 1 row dropped: split is testA (this task evaluates testB) "
            "(the task's selection)") in lines
    assert ("  [FAIL] pathbind_faithfulness: 1 row dropped: field 'bbox' is not [x_min, y_min, x_max, y_max] "
            "(first 'g0': got None)") in lines
    assert any(line.startswith("  [FAIL] pathbind_grounding_testa: the task would fail: ValueError: grounding: every "
                               "one of the 1 items has a fault of the data") for line in lines)


def test_an_unknown_source_is_a_usage_error_naming_the_close_ones(tmp_path, capsys):
    code, _, err = data_check(capsys, "pathvqa", str(tmp_path))
    assert code == 1
    assert err.startswith("pathbind data: error: unknown data source 'pathvqa'. Did you mean path_vqa")


def test_every_source_declares_the_layout_its_yamls_read():
    """Each source's process_docs module has a LAYOUT whose data patterns cover the files its YAMLs name."""
    sources = source_tasks(make_plugin_manager())
    for source in shared_sources(sources):
        for task, config in sources[source]:
            module = __import__(config["process_docs"].rpartition(".")[0], fromlist=["LAYOUT"])
            layout = getattr(module, "LAYOUT", None)
            assert isinstance(layout, Layout), task
            files = ((config.get("dataset_kwargs") or {}).get("data_files") or {}).values()
            assert all(any(fnmatch(Path(f).name, p) for p in layout.data) for f in files), (task, files)


def test_a_pathview_demo_task_is_checked_with_the_config_lmms_eval_runs():
    """The demo's task variants are read as derived from the real tasks: each its own source (no release metadata),
    its file the packaged one; the pathview source keeps the 24 real tasks (and their old names, the aliases)."""
    sources = source_tasks(make_plugin_manager())
    [(task, config)] = sources["pathbind_pathview_demo_region_ocl_unit"]
    assert task == "pathbind_pathview_demo_region_ocl_unit" and config["metadata"] == {"version": 1}
    assert config["process_docs"] == "pathbind_tasks.pathview.schema.boxed_choice_docs_unit"
    assert Path(config["dataset_kwargs"]["data_files"]["test"]).parts[-4:] == ("demo", "data", "pathview",
                                                                               "region_ocl.parquet")
    real = sorted(task.replace("pathbind_pathview_demo_", "pathbind_pathview_", 1) for task in sources
                  if task.startswith("pathbind_pathview_demo_"))
    aliases = [task.removeprefix("pathbind_") for task in real]
    assert sorted(task for task, _ in sources["pathview"]) == sorted([*real, *aliases])


def test_doctor_turns_each_problem_into_a_failed_check(tmp_path, monkeypatch, capsys):
    """The doctor's data-folder checks: one FAIL per problem, OK with the summary, WARN for a folder no task reads
    (`pathbind doctor` itself runs them in tests/core/test_cli.py)."""
    root = tmp_path / "data"
    write_path_vqa(root / "path_vqa")
    write_parquet(root / "pathbind_vqa" / "test.parquet", {
        "id": ["a"], "image": [{"bytes": png(3), "path": None}], "question": ["Which?"], "answer": ["A"]})
    (root / "pathvqa").mkdir()
    monkeypatch.setenv("PATHBIND_DATA", str(root))
    checks = [c.__dict__ for c in _data_folders(make_plugin_manager())]
    assert {"name": "data check path_vqa", "status": "OK",
            "detail": "rows kept: pathbind_path_vqa_image 3/4; no problems"} in checks
    failed = [c["detail"] for c in checks if c["name"] == "data check pathbind_vqa" and c["status"] == "FAIL"]
    assert len(failed) == 1 and "the raw data has no column 'options', 'dimension', 'source'" in failed[0]
    assert {"name": "data check pathvqa", "status": "WARN",
            "detail": f"{root / 'pathvqa'} is named after no data source or task: no task reads it"} in checks
