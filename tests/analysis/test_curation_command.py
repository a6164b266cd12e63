"""`pathbind filter` and `pathbind agreement` end to end, on sample logs in lmms-eval's --log_samples format."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import BIN, run
from sklearn.metrics import cohen_kappa_score

# Text-only correctness per item, hand-worked: stage 1 = gpt, gemini; stage 2 = m1, m2, m3 with --k 2.
STAGE1 = {"gpt":    {"p0": 1, "p1": 1, "p2": 0, "p3": 0, "p4": 1, "p5": 0, "q0": 1, "q1": 0, "q2": 1, "q3": 0},
          "gemini": {"p0": 1, "p1": 0, "p2": 0, "p3": 1, "p4": 1, "p5": 0, "q0": 1, "q1": 0, "q2": 0, "q3": 0}}
# Stage-2 models were only asked the items stage 1 keeps (p0, p4 and q0 are solved by both stage-1 models).
STAGE2 = {"m1": {"p1": 1, "p2": 0, "p3": 1, "p5": 1, "q1": 0, "q2": 0, "q3": 1},
          "m2": {"p1": 1, "p2": 0, "p3": 0, "p5": 1, "q1": 0, "q2": 1, "q3": 1},
          "m3": {"p1": 0, "p2": 0, "p3": 0, "p5": 1, "q1": 0, "q2": 0, "q3": 0}}
TASK_OF = {"p": "pathmmu", "q": "quilt", "x": "extra"}  # one lmms-eval task per source benchmark


def write_log(path: Path, answers: dict[str, int], *, conditions: tuple[str, ...] = ("image", "text"),
              invalid: frozenset[str] = frozenset()) -> Path:
    """A sample log as lmms-eval 0.7.3 writes it for a PathBind VQA task (every item, image then text condition)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for condition in conditions:
        for item, correct in answers.items():
            valid = item not in invalid
            parsed = ("A" if correct else "B") if valid else None
            # The image condition is always right here, so reading it by mistake would show.
            record = {"id": item, "condition": condition, "reference": "A", "parsed": parsed, "valid": valid,
                      "correct": valid and (bool(correct) or condition == "image"),
                      "reason": "" if valid else "unparseable answer"}
            lines.append({"doc_id": len(lines), "target": "A", "filtered_resps": f"<answer>{parsed}</answer>",
                          "token_counts": [None], "doc_hash": "0" * 64,
                          **dict.fromkeys(("acc_image", "acc_text", "mg", "invalid_rate"), record),
                          "input": "Which tissue type predominates in this field?\nA. adipose\nB. stroma"})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def write_model(root: Path, model: str, answers: dict[str, int], **kwargs) -> Path:
    """The model's output folder: one <date>_samples_<task>.jsonl per source task."""
    for prefix, task in TASK_OF.items():
        part = {item: value for item, value in answers.items() if item.startswith(prefix)}
        if part:
            write_log(root / model / f"20260101_120000_samples_{task}.jsonl", part, **kwargs)
    return root / model


def pathbind(tmp_path: Path, *args: str):
    return run([str(BIN / "pathbind"), *args], cwd=tmp_path, timeout=120)


def filter_args(logs: Path, out: Path) -> list[str]:
    # Folders, explicit files repeated under one name, and a bare folder (named after itself) are all accepted.
    m1 = sorted((logs / "m1").glob("*.jsonl"))
    return ["filter", "--stage1", f"gpt={logs / 'gpt'}", f"gemini={logs / 'gemini'}",
            "--stage2", *(f"m1={file}" for file in m1), f"m2={logs / 'm2'}", str(logs / "m3"),
            "--k", "2", "--out", str(out)]


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    for model, answers in {**STAGE1, **STAGE2}.items():
        write_model(root, model, answers)
    return root


def test_filter_reproduces_the_hand_worked_example(tmp_path: Path, logs: Path) -> None:
    """Kept ids, the 10 → 7 → 4 flow, Table B.6 percentages per source and each item's decision."""
    done = pathbind(tmp_path, *filter_args(logs, tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    assert (out / "kept_ids.txt").read_text().split() == ["p2", "p3", "q1", "q2"]
    report = json.loads((out / "filter_report.json").read_text())
    assert report["flow"] == "10 → 7 → 4"
    assert report["counts"] == {"items": 10, "excluded_stage1": 0, "dropped_stage1": 3, "after_stage1": 7,
                                "excluded_stage2": 0, "dropped_stage2": 3, "kept": 4}
    assert report["stages"]["stage1"] == {"models": ["gpt", "gemini"], "drop_if_correct_by_at_least": 2}
    assert report["stages"]["stage2"] == {"models": ["m1", "m2", "m3"], "drop_if_correct_by_at_least": 2}
    stage1, stage2 = report["distribution"]["stage1"], report["distribution"]["stage2"]
    assert stage1["by_source"]["pathmmu"]["counts"] == [2, 2, 2]
    assert stage1["by_source"]["quilt"] == {"items": 4, "counts": [2, 1, 1], "percent": [50.0, 25.0, 25.0]}
    assert stage1["Avg."] == [41.67, 29.17, 29.17]  # unweighted over sources, as in the paper
    assert stage2["by_source"]["pathmmu"] == {"items": 4, "counts": [1, 1, 1, 1], "percent": [25.0] * 4}
    assert stage2["by_source"]["quilt"]["counts"] == [1, 1, 1, 0]
    assert stage2["All"]["counts"] == [2, 2, 2, 1]
    assert report["accuracy"]["stage1"]["gemini"] == {"pathmmu": 50.0, "quilt": 25.0, "Avg.": 37.5, "All": 40.0}
    assert report["accuracy"]["stage2"]["m3"]["pathmmu"] == 25.0  # over the 4 pathmmu items left after stage 1
    assert report["models"][0]["other_conditions"] == {"image": 10}
    markdown = (out / "filter_report.md").read_text()
    assert "| 0/2 correct | 33.3 | 50.0 | 41.7 |" in markdown
    assert "| 3/3 correct | 25.0 | 0.0 | 12.5 |" in markdown
    assert markdown in done.stdout
    with (out / "item_decisions.csv").open() as handle:
        rows = {row["id"]: row for row in csv.DictReader(handle)}
    assert rows["p0"]["decision"] == "dropped_stage1" and rows["p0"]["reason"] == "2 of 2 stage-1 models correct"
    assert rows["p5"]["decision"] == "dropped_stage2" and rows["p5"]["stage2_correct"] == "3"
    assert rows["q2"]["decision"] == "kept" and rows["q2"]["source"] == "quilt"


@pytest.mark.parametrize(("options", "kept"), [
    (["--stage1-k", "1"], ["p2", "q1"]),                  # any stage-1 model solving an item drops it
    (["--stage2-k", "3"], ["p1", "p2", "p3", "q1", "q2", "q3"]),  # only items all three stage-2 models solve go
])
def test_filter_thresholds_are_options(tmp_path: Path, logs: Path, options: list[str], kept: list[str]) -> None:
    """--stage1-k and --k (alias --stage2-k) move the thresholds as worked out by hand."""
    done = pathbind(tmp_path, *filter_args(logs, tmp_path / "out"), *options)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "kept_ids.txt").read_text().split() == kept


def test_invalid_answers_count_as_wrong_and_are_reported(tmp_path: Path) -> None:
    """An unparseable text-only answer is not a correct one, and the model's invalid count shows it."""
    write_model(tmp_path / "logs", "gpt", STAGE1["gpt"], invalid=frozenset({"p0"}))
    for model in ("gemini", *STAGE2):
        write_model(tmp_path / "logs", model, {**STAGE1, **STAGE2}[model])
    done = pathbind(tmp_path, *filter_args(tmp_path / "logs", tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "filter_report.json").read_text())
    assert report["models"][0]["invalid"] == 1
    assert report["counts"]["excluded_stage2"] == 1  # p0 now survives stage 1, but no stage-2 model answered it


def test_items_missing_from_a_log_are_excluded_and_listed(tmp_path: Path) -> None:
    """Items some model has no answer for are never kept: counted, listed with the model, warned about."""
    root = tmp_path / "logs"
    write_model(root, "gpt", STAGE1["gpt"])
    write_model(root, "gemini", {i: v for i, v in STAGE1["gemini"].items() if i != "p3"})
    write_model(root, "m1", STAGE2["m1"])
    write_model(root, "m2", {i: v for i, v in STAGE2["m2"].items() if i != "q2"} | {"x9": 1})
    write_model(root, "m3", STAGE2["m3"])
    done = pathbind(tmp_path, *filter_args(root, tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert "warning: 2 item(s) excluded because a model has no answer for them" in done.stderr
    assert (tmp_path / "out" / "kept_ids.txt").read_text().split() == ["p2", "q1"]
    report = json.loads((tmp_path / "out" / "filter_report.json").read_text())
    assert report["excluded"] == [
        {"id": "p3", "source": "pathmmu", "stage": 1, "reason": "no stage-1 answer from gemini"},
        {"id": "q2", "source": "quilt", "stage": 2, "reason": "no stage-2 answer from m2"}]
    assert report["ignored"] == {"count": 1, "ids": ["x9"], "reason": "answered in a stage-2 log but held by no "
                                                                       "stage-1 log"}
    assert "Excluded for missing answers: 2" in (tmp_path / "out" / "filter_report.md").read_text()


def test_filter_missing_file(tmp_path: Path, logs: Path) -> None:
    """A log path that does not exist is an error naming it."""
    missing = tmp_path / "nowhere" / "20260101_samples_pathmmu.jsonl"
    done = pathbind(tmp_path, "filter", "--stage1", f"gpt={missing}", "--stage2", f"m1={logs / 'm1'}",
                    "--k", "1", "--out", str(tmp_path / "out"))
    assert done.returncode == 1
    assert f"pathbind filter: error: {missing}: no such file or folder" in done.stderr
    assert not (tmp_path / "out").exists()


def test_filter_log_without_text_condition(tmp_path: Path, logs: Path) -> None:
    """An image-only run has no text-only answers: the error names the file and what it holds."""
    image_only = write_log(tmp_path / "img" / "20260101_120000_samples_pathmmu.jsonl", {"p0": 1, "p1": 0},
                           conditions=("image",))
    args = ["filter", "--stage1", f"gpt={image_only}", "--stage2", f"m1={image_only}", "--k", "1",
            "--out", str(tmp_path / "out")]
    done = pathbind(tmp_path, *args)
    assert done.returncode == 1
    assert f"{image_only}: no 'text'-condition answers (found 2 'image')" in done.stderr
    assert "--condition" in done.stderr
    assert pathbind(tmp_path, *args, "--condition", "image").returncode == 0


@pytest.mark.parametrize(("content", "expected"), [
    ('{"doc_id": 0, "target": "A", "filtered_resps": "A"}\n', "bad.jsonl: holds no PathBind score records"),
    ("\nnot json\n", "bad.jsonl:2: not valid JSON"),
    ('{"acc_text": {"id": "None", "condition": "text", "correct": true}}\n',
     "bad.jsonl:1: field 'id' of the score record is 'None'; give the task's documents an 'id' column"),
])
def test_filter_unreadable_logs(tmp_path: Path, logs: Path, content: str, expected: str) -> None:
    """A line that is not JSON, a log not from a PathBind task, or an item without id is an error naming where."""
    (tmp_path / "bad.jsonl").write_text(content)
    done = pathbind(tmp_path, "filter", "--stage1", f"gpt={tmp_path / 'bad.jsonl'}", "--stage2",
                    f"m1={logs / 'm1'}", "--k", "1", "--out", str(tmp_path / "out"))
    assert done.returncode == 1 and expected in done.stderr


def test_folder_logs_without_answers_in_the_condition_are_skipped_and_listed(tmp_path: Path, logs: Path) -> None:
    """An image-only run and a non-PathBind task beside a model's logs are skipped, named in a warning and the report;
    a damaged line in a PathBind log is still an error."""
    image_only = write_log(logs / "gpt" / "20260101_120000_samples_pathmmu_image.jsonl", {"p0": 1},
                           conditions=("image",))
    other = logs / "gpt" / "20260101_120000_samples_mmmu_val.jsonl"
    other.write_text('{"doc_id": 0, "target": "A", "filtered_resps": "A", "mmmu_acc": {"id": 0, "answer": "A"}}\n')
    done = pathbind(tmp_path, *filter_args(logs, tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert f"warning: skipped {image_only}: no 'text'-condition answers (found 1 'image')" in done.stderr
    assert f"warning: skipped {other}: holds no PathBind score records" in done.stderr
    assert (tmp_path / "out" / "kept_ids.txt").read_text().split() == ["p2", "p3", "q1", "q2"]
    report = json.loads((tmp_path / "out" / "filter_report.json").read_text())
    assert len(report["models"][0]["skipped_files"]) == 2 and len(report["models"][0]["files"]) == 2
    assert "Skipped log files found in folders: 2" in (tmp_path / "out" / "filter_report.md").read_text()

    damaged = sorted((logs / "gemini").glob("*quilt.jsonl"))[0]
    damaged.write_text(damaged.read_text() + '{"doc_id": 99, "target": "A"}\n')
    done = pathbind(tmp_path, *filter_args(logs, tmp_path / "out"))
    assert done.returncode == 1
    assert f"{damaged}:9: no PathBind score record, unlike the file's other lines" in done.stderr


def test_filter_same_item_twice(tmp_path: Path, logs: Path) -> None:
    """One log given twice for a model answers every item twice: an error naming both places and the fix."""
    log = sorted((logs / "gpt").glob("*pathmmu.jsonl"))[0]
    done = pathbind(tmp_path, "filter", "--stage1", f"gpt={log}", f"gpt={log}", "--stage2", f"m1={logs / 'm1'}",
                    "--k", "1", "--out", str(tmp_path / "out"))
    assert done.returncode == 1
    assert f"{log}:7: item 'p0' is answered twice by model 'gpt' (also at {log}:7)" in done.stderr
    assert "NAME=PATH" in done.stderr


def test_filter_threshold_out_of_range(tmp_path: Path, logs: Path) -> None:
    """--k above the number of stage-2 models is an error naming the range and the models."""
    done = pathbind(tmp_path, *filter_args(logs, tmp_path / "out"), "--k", "4")
    assert done.returncode == 1
    assert "pathbind filter: error: --k 4: choose 1 to 3, the number of models in that stage (m1, m2, m3)" \
        in done.stderr


def test_filter_out_that_is_a_file_fails_before_reading_the_logs(tmp_path: Path, logs: Path) -> None:
    """--out naming a file: one line, exit 1, before any log is read."""
    (tmp_path / "taken").write_text("")
    done = pathbind(tmp_path, *filter_args(logs, tmp_path / "taken"))
    assert (done.returncode, done.stderr) == (1, f"pathbind filter: error: --out {tmp_path / 'taken'}: a file, not a "
                                                 "folder\n")


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows([header, *rows])
    return path


DECISIONS = [["a1", "Retain", "keep"], ["a2", "exclude", "DROP"], ["a3", " yes ", "no"], ["a4", "0", "1"],
             ["a5", "KEEP", "retain"], ["a6", "no", "exclude"], ["a7", "retain", "retain"]]


def test_agreement_one_file_matches_sklearn(tmp_path: Path) -> None:
    """Mixed spellings normalise; counts, agreement and kappa equal hand counts and sklearn."""
    path = write_csv(tmp_path / "review.csv", ["item", "r1", "r2"], DECISIONS)
    done = pathbind(tmp_path, "agreement", str(path), "--a", "r1", "--b", "r2", "--id", "item", "--json")
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)
    r1 = [True, False, True, False, True, False, True]
    r2 = [True, False, False, True, True, False, True]
    assert (row["reviewed"], row["both_retain"], row["both_exclude"]) == (7, 3, 2)
    assert (row["r1_retain_r2_exclude"], row["r1_exclude_r2_retain"]) == (1, 1)
    assert row["agreement_percent"] == round(100 * 5 / 7, 2)
    assert row["kappa"] == pytest.approx(cohen_kappa_score(r1, r2), abs=1e-4)
    assert row["r1"] == f"column 'r1' of {path}"


def test_agreement_table_b8_row(tmp_path: Path) -> None:
    """The PathBind-VQA counts of Table B.8 print as its row: 94.18 and 0.851."""
    rows = ([["retain", "retain"]] * 1510 + [["exclude", "exclude"]] * 4476 + [["retain", "exclude"]] * 185
            + [["exclude", "retain"]] * 185)
    path = write_csv(tmp_path / "vqa.csv", ["R1", "R2"], rows)
    done = pathbind(tmp_path, "agreement", str(path), "--a", "R1", "--b", "R2", "--label", "PathBind-VQA")
    assert done.returncode == 0, done.stderr
    assert "| PathBind-VQA | 6,356 | 1,510 | 4,476 | 185 | 185 | 94.18 | 0.851 |" in done.stdout


def test_agreement_two_files_pair_by_id(tmp_path: Path) -> None:
    """One file per reviewer, rows in different orders, gives the one-file result."""
    first = write_csv(tmp_path / "r1.csv", ["item", "decision"], [[i, a] for i, a, _ in DECISIONS])
    second = write_csv(tmp_path / "r2.csv", ["item", "decision"], [[i, b] for i, _, b in reversed(DECISIONS)])
    done = pathbind(tmp_path, "agreement", str(first), str(second), "--a", "decision", "--b", "decision",
                    "--id", "item", "--json")
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)
    assert (row["both_retain"], row["both_exclude"], row["agreement_percent"]) == (3, 2, 71.43)
    assert row["r2"] == f"column 'decision' of {second}"


def test_agreement_constant_decisions_have_undefined_kappa(tmp_path: Path) -> None:
    """Both reviewers retaining everything: 100% agreement, kappa n/a with the reason."""
    path = write_csv(tmp_path / "all.csv", ["r1", "r2"], [["retain", "keep"]] * 4)
    done = pathbind(tmp_path, "agreement", str(path), "--a", "r1", "--b", "r2")
    assert done.returncode == 0, done.stderr
    assert "| 100.00 | n/a |" in done.stdout
    assert "undefined: both reviewers gave every item the same decision" in done.stdout


@pytest.mark.parametrize(("rows", "args", "expected"), [
    ([["a1", "retain", "maybe"]], ["--a", "r1", "--b", "r2"],
     "review.csv:2: column 'r2' is 'maybe', not a decision; write retain/keep/yes/1 to retain or "
     "exclude/drop/no/0 to exclude (any case)"),
    ([["a1", "retain", ""]], ["--a", "r1", "--b", "r2"], "review.csv:2: column 'r2' is '', not a decision"),
    ([["a1", "retain", "keep"]], ["--a", "r1", "--b", "reviewer2"],
     "review.csv: no column 'reviewer2' (columns: item, r1, r2)"),
    ([["a1", "retain", "keep"], ["a1", "no", "no"]], ["--a", "r1", "--b", "r2", "--id", "item"],
     "review.csv:3: id 'a1' repeats line 2"),
])
def test_agreement_bad_decisions(tmp_path: Path, rows, args, expected: str) -> None:
    """An unrecognised or empty decision, a missing column or a repeated id is an error naming where."""
    path = write_csv(tmp_path / "review.csv", ["item", "r1", "r2"], rows)
    done = pathbind(tmp_path, "agreement", str(path), *args)
    assert done.returncode == 1
    assert expected in done.stderr


def test_agreement_two_files_with_different_items(tmp_path: Path) -> None:
    """Reviewers who decided different items cannot be compared: the error lists the unmatched ids."""
    first = write_csv(tmp_path / "r1.csv", ["item", "d"], [["a1", "retain"], ["a2", "exclude"]])
    second = write_csv(tmp_path / "r2.csv", ["item", "d"], [["a1", "retain"], ["a3", "exclude"]])
    done = pathbind(tmp_path, "agreement", str(first), str(second), "--a", "d", "--b", "d", "--id", "item")
    assert done.returncode == 1
    assert f"1 (a2) only in {first}, 1 (a3) only in {second}" in done.stderr
    assert pathbind(tmp_path, "agreement", str(first), str(second), "--a", "d", "--b", "d").returncode == 1


def test_agreement_missing_file(tmp_path: Path) -> None:
    """A decisions file that does not exist is an error naming it."""
    done = pathbind(tmp_path, "agreement", str(tmp_path / "none.csv"), "--a", "r1", "--b", "r2")
    assert done.returncode == 1
    assert f"pathbind agreement: error: {tmp_path / 'none.csv'}: cannot read" in done.stderr


def test_kappa_of_the_cli_equals_sklearn_on_random_reviews(tmp_path: Path) -> None:
    """A 500-item random review: the printed kappa equals sklearn's to 4 decimals."""
    rng = np.random.default_rng(3)
    r1 = rng.random(500) < 0.3
    r2 = np.where(rng.random(500) < 0.8, r1, rng.random(500) < 0.5)
    path = write_csv(tmp_path / "rand.csv", ["r1", "r2"], [["retain" if a else "exclude", "1" if b else "0"]
                                                           for a, b in zip(r1, r2, strict=True)])
    done = pathbind(tmp_path, "agreement", str(path), "--a", "r1", "--b", "r2", "--json")
    assert json.loads(done.stdout)["kappa"] == round(cohen_kappa_score(r1, r2), 4)
