"""The PathVG specificity judge: strict parsing, the task through lmms-eval against served judges, and the consensus
of `pathbind filter --specificity`."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatServer, Received, Reply
from conftest import BIN, lmms_eval, metric, run

from pathbind_metrics.parsing import CONFLICTING, NO_ANSWER_TAG, NOT_A_LABEL, Judgement, parse_specificity
from pathbind_tasks.common import specificity as task
from pathbind_tasks.common import specificity_aggregations as aggregations
from pathbind_tasks.common.accounting import NOT_EVALUATED
from pathbind_tasks.common.metrics import names

GROUP = "pathbind_pathvg_specificity"
TESTA, TESTB = f"{GROUP}_testa", f"{GROUP}_testb"
EMPTY_EXPRESSION = "field 'expression' is empty"  # a fault of the data: the item is dropped, never judged

# --------------------------------------------------------------------------------------------------- parsing

PARSED = [
    ("<answer>Specific</answer>\n<reason>A nest in the upper left.</reason>", Judgement("Specific")),
    ("<answer>vague</answer><reason>Many regions match.</reason>", Judgement("Vague")),
    ("<ANSWER> SPECIFIC. </ANSWER>", Judgement("Specific")),  # the prompt writes SPECIFIC itself
    ("**<answer>**Vague**</answer>**", Judgement("Vague")),
    ("<answer>'Specific'</answer>", Judgement("Specific")),
    ("<answer>Specific</answer><reason>Not vague at all.</reason>", Judgement("Specific")),  # the reason is unread
    ("<think>Vague? <answer>Vague</answer></think><answer>Specific</answer>", Judgement("Specific")),
    ("<answer>Specific</answer> so <answer>specific</answer>", Judgement("Specific")),
    ("<answer>Specific", Judgement("Specific")),  # cut by the token limit after the label
    ("<answer>Specific</answer><answer>Vague</answer>", Judgement(None, CONFLICTING)),
    ("<answer>Vague</answer> on reflection <answer>SPECIFIC</answer>", Judgement(None, CONFLICTING)),
    ("Specific", Judgement(None, NO_ANSWER_TAG)),
    ("The phrase is specific.<reason>It names one nest.</reason>", Judgement(None, NO_ANSWER_TAG)),
    ("<think><answer>Vague</answer></think>", Judgement(None, NO_ANSWER_TAG)),
    ("", Judgement(None, NO_ANSWER_TAG)),
    ("<answer>Specific enough</answer>", Judgement(None, NOT_A_LABEL)),
    ("<answer>Not specific</answer>", Judgement(None, NOT_A_LABEL)),
    ("<answer>Specific/Vague</answer>", Judgement(None, NOT_A_LABEL)),
    ("<answer></answer>", Judgement(None, NOT_A_LABEL)),
    ("<answer>具体</answer>", Judgement(None, NOT_A_LABEL)),
    ("<answer>Specific</answer><answer>maybe</answer>", Judgement(None, NOT_A_LABEL)),
    ("<answer>Specific<reason>one nest</reason>", Judgement(None, NOT_A_LABEL)),  # unclosed: runs into the reason
]


@pytest.mark.parametrize(("text", "expected"), PARSED)
def test_parse_specificity(text: str, expected: Judgement) -> None:
    assert parse_specificity(text) == expected


# --------------------------------------------------------------------------------------------------- the task

def judge_doc(expression: Any, item: str = "testA-0") -> dict[str, Any]:
    return {"id": item, "split": item.split("-")[0], "expression": expression}


def test_prompt_is_figure_d7_with_the_expression_on_one_line_and_no_image() -> None:
    doc = judge_doc("nest of atypical cells\nin the upper left")
    prompt = task.doc_to_text(doc)
    assert prompt.startswith("You are an expert pathologist judging whether a natural-language phrase is specific")
    assert "<answer>Specific</answer> or <answer>Vague</answer>\n<reason>one-sentence brief reason</reason>" in prompt
    assert prompt.endswith("Expression: nest of atypical cells in the upper left\n"
                           "Output your <answer>...</answer> first, then <reason>...</reason>.")
    assert task.doc_to_visual(doc) == []
    assert task.doc_to_messages(doc) == [{"role": "user", "content": [{"type": "text", "text": prompt}]}]


@pytest.mark.parametrize(("doc", "reply", "judgement", "reason"), [
    (judge_doc("tumor cells"), "<answer>Vague</answer>", "Vague", ""),
    (judge_doc("tumor cells"), "tumor cells are vague", None, NO_ANSWER_TAG),
    (judge_doc("gland"), "[LMMS_EVAL_REQUEST_FAILED after 2 retries] Error code: 400 - <answer>Specific</answer>",
     None, "request failed after 2 retries: Error code: 400 - <answer>Specific</answer>"),
])
def test_process_results_records_the_judgement_or_why_there_is_none(doc, reply, judgement, reason) -> None:
    out = task.process_results(doc, [reply])
    assert tuple(out) == names("specificity") and len({id(record) for record in out.values()}) == 1
    record = out["judgements"]
    assert (record["judgement"], record["valid"], record["reason"]) == (judgement, judgement is not None, reason)
    assert (record["id"], record["split"]) == ("testA-0", "testA") and "accounting" not in record


def test_aggregations_count_every_item_and_every_invalid_reason() -> None:
    replies = ["<answer>Specific</answer>", "<answer>Specific</answer>", "<answer>Vague</answer>", "Specific",
               "<answer>Specific</answer><answer>Vague</answer>"]
    records = [task.process_results(judge_doc("gland", f"testA-{i}"), [r])["judgements"] for i, r in enumerate(replies)]
    assert aggregations.judgements(records) == {"items": 5, "Specific": 2, "Vague": 1,
                                                "invalid": {CONFLICTING: 1, NO_ANSWER_TAG: 1}}
    assert aggregations.specific_rate(records) == pytest.approx(100 * 2 / 5)
    assert aggregations.invalid_rate(records) == pytest.approx(40.0)


# --------------------------------------------------------------------------------------------------- end to end

CONFLICT, GARBAGE, FAIL = "<answer>Specific</answer><answer>Vague</answer>", "The phrase is specific.", "400"
# Each PathVG record's expression and what the two served judges answer for it.
TESTA_ITEMS = [
    ("nest of atypical cells in the upper left corner", "Specific", "Specific"),  # kept
    ("tumor cells", "Vague", "Vague"),
    ("cribriform gland in the centre", "Specific", "Vague"),  # one judge says Vague: not kept
    ("", "Specific", "Specific"),  # no expression: a fault of the data, dropped, never judged
    ("lymphocyte cluster along the lower border", "Specific", GARBAGE),
    ("necrotic focus at the right edge", CONFLICT, "Specific"),
    ("tumor cells", "Vague", "Vague"),  # the same words in another record: an item of its own
]
TESTB_ITEMS = [
    ("inflammation", "Vague", "Vague"),
    ("mitotic figure at the top right", "Specific", "Specific"),  # kept
    ("keratin pearl in the lower left", FAIL, "Specific"),  # gpt's request fails for good
]
JUDGES = ("gpt", "gemini")
ANSWERS = {judge: {item[0]: item[1 + j] for item in [*TESTA_ITEMS, *TESTB_ITEMS]} for j, judge in enumerate(JUDGES)}
EXPRESSION = re.compile(r"^Expression: (.*)$", re.M)


def reply(judge: str, answer: str) -> Reply:
    """The judge's answer: its label in tags (gemini shouting it), with a reason that names the other label."""
    if answer == FAIL:
        return Reply(status=400)
    if answer not in ("Specific", "Vague"):
        return Reply(text=answer)
    label = answer.upper() if judge == "gemini" else answer
    other = "vague" if answer == "Specific" else "specific"
    return Reply(text=f"<answer>{label}</answer>\n<reason>Not {other}: it is judged {answer}.</reason>")


def judge_policy(received: Received) -> Reply:
    judge, match = received.body["model"], EXPRESSION.search(received.text)
    return reply(judge, ANSWERS[judge][match[1]]) if match else Reply(status=500)


def write_pathvg(root: Path) -> Path:
    """The PathVG release's testA.jsonl and testB.jsonl (one record per box, its expressions a list), without
    the images (the judge never reads them). Record i has bbox_id i and one expression: ids <split>-<i>-0."""
    folder = root / "pathvg"
    folder.mkdir(parents=True)
    for split, items in (("testA", TESTA_ITEMS), ("testB", TESTB_ITEMS)):
        records = [{"image_id": f"{split}_{i}", "image": f"refpath_image/{split}_{i}.jpg", "height": 64, "width": 64,
                    "bbox": [0, 0, 32, 32], "bbox_id": i, "expression": [expression]}
                   for i, (expression, *_) in enumerate(items)]
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    return root


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> dict[str, Any]:
    """lmms-eval's openai_compatible model as each judge against one loopback server; the runs and the server's log."""
    root = write_pathvg(tmp_path_factory.mktemp("data"))
    runs = {}
    with ChatServer(judge_policy) as server:
        for judge in JUDGES:
            model_args = (f"model_version={judge},base_url={server.base_url},api_key=test-key,max_retries=1,"
                          "retry_backoff_s=0,num_concurrent=2")
            runs[judge] = lmms_eval(tmp_path_factory.mktemp(judge), "openai_compatible", GROUP, "--model_args",
                                    model_args, env={"PATHBIND_DATA": str(root)})
    return {"runs": runs, "log": server.log}


def logged(run: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(line)["pathbind"] for path in sorted(run["out"].rglob(f"*_samples_{GROUP}_test*.jsonl"))
            for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_the_judge_sees_each_expression_once_as_text_only(judged) -> None:
    """Every request is one text part, the Figure D.7 prompt of one item's expression; one request per item and
    judge (the failing one is not retried: 400), and no image at all."""
    for judge in JUDGES:
        requests = [received for received, _ in judged["log"] if received.body["model"] == judge]
        assert len(requests) == len(TESTA_ITEMS) + len(TESTB_ITEMS) - 1  # the empty expression is dropped
        assert all(received.parts == ["text"] and not received.images for received in requests)
        expressions = sorted(" ".join(e.split()) for e, *_ in [*TESTA_ITEMS, *TESTB_ITEMS] if e)
        assert sorted(received.text for received in requests) == sorted(
            task.doc_to_text({"expression": expression}) for expression in expressions)


@pytest.mark.slow
def test_each_judgement_and_its_reason_reaches_the_log_and_the_metrics(judged) -> None:
    gpt = {record["id"]: record for record in logged(judged["runs"]["gpt"])}
    testa = [0, 1, 2, 4, 5, 6]  # record 3's expression is empty: dropped
    assert list(gpt) == [f"testA-{i}-0" for i in testa] + [f"testB-{i}-0" for i in range(3)]
    assert [gpt[f"testA-{i}-0"]["judgement"] for i in testa] == ["Specific", "Vague", "Specific", "Specific", None,
                                                                 "Vague"]
    assert gpt["testA-5-0"]["reason"] == CONFLICTING
    assert gpt["testB-2-0"]["reason"].startswith("request failed after 1 retries: Error code: 400")
    results = judged["runs"]["gpt"]
    assert metric(results, TESTA, "judgements") == {"items": 6, "Specific": 3, "Vague": 2,
                                                    "invalid": {CONFLICTING: 1}}
    assert metric(results, TESTA, "specific_rate") == pytest.approx(100 * 3 / 6)
    assert metric(results, TESTB, "invalid_rate") == pytest.approx(100 / 3)
    assert metric(results, TESTA, "accounting") == {"rows": 7, "evaluated": 6, "dropped": {EMPTY_EXPRESSION: 1}}
    gemini = judged["runs"]["gemini"]
    assert metric(gemini, TESTA, "judgements") == {"items": 6, "Specific": 2, "Vague": 3,
                                                   "invalid": {NO_ANSWER_TAG: 1}}


def pathbind(cwd: Path, *args: str):
    return run([str(BIN / "pathbind"), *args], cwd=cwd, timeout=120)


@pytest.mark.slow
def test_filter_keeps_what_every_judge_calls_specific(judged, tmp_path) -> None:
    """The hand-worked consensus: per split candidates, Specific by each judge, kept, Vague, excluded, retention."""
    logs = [f"{judge}={judged['runs'][judge]['out']}" for judge in JUDGES]
    done = pathbind(tmp_path, "filter", "--specificity", *logs, "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    assert (out / "kept_ids.txt").read_text().split() == ["testA-0-0", "testB-1-0"]
    report = json.loads((out / "filter_report.json").read_text())
    assert report["flow"] == {
        "testA": {"candidates": 6, "specific_by": {"gpt": 3, "gemini": 2}, "kept": 1, "vague": 3, "excluded": 2,
                  "retention_percent": 16.7},
        "testB": {"candidates": 3, "specific_by": {"gpt": 1, "gemini": 2}, "kept": 1, "vague": 1, "excluded": 1,
                  "retention_percent": 33.3},
        "Total": {"candidates": 9, "specific_by": {"gpt": 4, "gemini": 4}, "kept": 2, "vague": 4, "excluded": 3,
                  "retention_percent": 22.2}}
    assert report["not_in_any_log"] == {}
    rows = {row["id"]: row for row in csv.DictReader((out / "item_decisions.csv").open(encoding="utf-8"))}
    assert rows["testA-2-0"]["decision"] == "vague" and rows["testA-2-0"]["reason"] == "Vague by gemini"
    assert "testA-3-0" not in rows  # dropped from the data: no judge saw it
    assert rows["testA-4-0"]["reason"] == f"gemini: invalid ({NO_ANSWER_TAG})"
    assert (rows["testA-5-0"]["gpt_judgement"], rows["testA-5-0"]["gemini_judgement"]) == ("invalid", "Specific")
    assert rows["testB-2-0"]["reason"].startswith("gpt: invalid (request failed after 1 retries: Error code: 400")
    assert (rows["testA-0-0"]["expression"], rows["testA-0-0"]["reason"]) == (TESTA_ITEMS[0][0],
                                                                              "Specific by all 2 judges")
    assert "| testA | 6 | 3 | 2 | 1 | 3 | 2 | 16.7 |" in done.stdout
    assert "| **Total** | 9 | 4 | 4 | 2 | 4 | 3 | 22.2 |" in done.stdout
    assert "warning: 3 item(s) excluded because a judge has no valid answer for them" in done.stderr


# --------------------------------------------------------------------------------------------------- filter inputs

def write_judge_log(path: Path, replies: dict[str, str], rows: int | None = None) -> Path:
    """A sample log as the task writes it (each item's records from process_results) and, with ``rows``, the run's
    results file beside it: the data gave ``rows`` items, those beyond the log not evaluated (--limit)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [{"doc_id": n, **task.process_results(judge_doc(f"expression {item}", item), [answer])}
             for n, (item, answer) in enumerate(replies.items())]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    if rows is not None:
        beyond = {NOT_EVALUATED: rows - len(replies)} if rows > len(replies) else {}
        accounting = {"rows": rows + 1, "evaluated": len(replies), "dropped": {**beyond, EMPTY_EXPRESSION: 1}}
        results = path.parent / f"{path.name.partition('_samples_')[0]}_results.json"
        results.write_text(json.dumps({"results": {TESTA: {"accounting,none": accounting}}}))
    return path


SPECIFIC, VAGUE = "<answer>Specific</answer>", "<answer>Vague</answer>"


def test_an_item_a_judge_lacks_is_excluded_and_rows_in_no_log_are_counted(tmp_path: Path) -> None:
    """j2 was run with --limit 2: item 2 lacks its answer; rows 3 and 4 of the data are in no log at all."""
    j1 = write_judge_log(tmp_path / "j1" / f"x_samples_{TESTA}.jsonl",
                         {"testA-0": SPECIFIC, "testA-1": VAGUE, "testA-2": SPECIFIC}, rows=5)
    j2 = write_judge_log(tmp_path / "j2" / f"x_samples_{TESTA}.jsonl", {"testA-0": SPECIFIC, "testA-1": SPECIFIC},
                         rows=5)
    done = pathbind(tmp_path, "filter", "--specificity", f"j1={j1}", f"j2={j2}", "--out", "out")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "filter_report.json").read_text())
    assert report["excluded"] == [{"id": "testA-2", "split": "testA", "reason": "j2: no answer in its logs"}]
    assert report["not_in_any_log"] == {"testA": 2}
    assert [(j["name"], j["answers"], j["missing"]) for j in report["judges"]] == [("j1", 3, 0), ("j2", 2, 1)]
    assert "Rows of the data in no judge's log (run without --limit to judge them): testA 2." in done.stdout
    assert (tmp_path / "out" / "kept_ids.txt").read_text() == "testA-0\n"


def test_a_folder_s_other_logs_are_skipped_and_named(tmp_path: Path) -> None:
    write_judge_log(tmp_path / "j1" / f"x_samples_{TESTA}.jsonl", {"testA-0": SPECIFIC})
    other = tmp_path / "j1" / "x_samples_pathbind_demo_vqa.jsonl"
    other.write_text(json.dumps({"doc_id": 0, "acc_text": {"id": "d1", "condition": "text", "correct": True}}) + "\n")
    done = pathbind(tmp_path, "filter", "--specificity", str(tmp_path / "j1"), "--out", "out")
    assert done.returncode == 0, done.stderr
    assert f"warning: skipped {other}: holds no specificity judgements" in done.stderr
    assert (tmp_path / "out" / "kept_ids.txt").read_text() == "testA-0\n"


@pytest.mark.parametrize(("args", "expected"), [
    (["--stage1", "a=x"], "--specificity is a filter of its own: give it without --stage1/--stage2"),
    ([], None),
])
def test_filter_modes(tmp_path: Path, args: list[str], expected: str | None) -> None:
    """--specificity alone runs; with a stage option it is an error; stage options need both stages."""
    log = write_judge_log(tmp_path / f"x_samples_{TESTA}.jsonl", {"testA-0": SPECIFIC})
    done = pathbind(tmp_path, "filter", "--specificity", f"j={log}", *args, "--out", "out")
    assert (done.returncode == 0) == (expected is None)
    assert expected is None or f"pathbind filter: error: {expected}" in done.stderr
    neither = pathbind(tmp_path, "filter", "--stage1", f"j={log}", "--out", "out")
    assert neither.returncode != 0
    assert ("pathbind filter: error: give --stage1 and --stage2 (the text-only filter) or --specificity (the PathVG "
            "expression filter)") in neither.stderr


def test_an_item_judged_twice_or_on_other_data_is_an_error(tmp_path: Path) -> None:
    log = write_judge_log(tmp_path / f"x_samples_{TESTA}.jsonl", {"testA-0": SPECIFIC})
    twice = pathbind(tmp_path, "filter", "--specificity", f"j={log}", f"j={log}", "--out", "out")
    assert f"{log}:1: item 'testA-0' is judged twice by 'j' (also at {log}:1)" in twice.stderr
    other = tmp_path / "other" / f"x_samples_{TESTA}.jsonl"
    other.parent.mkdir()
    other.write_text(log.read_text().replace("expression testA-0", "another expression"))
    mixed = pathbind(tmp_path, "filter", "--specificity", f"a={log}", f"b={other}", "--out", "out")
    assert "item 'testA-0' is {'split': 'testA', 'expression': 'expression testA-0'} in the logs of 'a' but" in (
        mixed.stderr)
    assert twice.returncode != 0 and mixed.returncode != 0


def test_without_the_runs_results_the_rows_in_no_log_are_unknown_not_zero(tmp_path: Path) -> None:
    """A log copied away from its run's results.json: how many items the data gave is unknown, and said so."""
    log = write_judge_log(tmp_path / "j1" / f"x_samples_{TESTA}.jsonl", {"testA-0": SPECIFIC, "testA-1": VAGUE})
    done = pathbind(tmp_path, "filter", "--specificity", f"j1={log}", "--out", "out")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "filter_report.json").read_text())
    assert report["not_in_any_log"] == {} and report["data_items_unknown"] == ["testA"]
    assert "Rows of the data in no judge's log: unknown for testA" in done.stdout
