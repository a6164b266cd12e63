"""PathBind tasks through lmms-eval's served backends: its `openai` model against a loopback chat-completions server."""

from __future__ import annotations

import inspect
import json
import shutil
import textwrap
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
import pytest
from chat_server import ChatServer, Received, Reply, pixel_key, prompt_tokens
from conftest import lmms_eval, metric
from PIL import Image, ImageFilter

import pathbind_tasks
from pathbind.lmms_output import sample_record

TASKS = ("pathbind_demo_vqa", "pathbind_demo_vqa_think", "pathbind_demo_yesno", "pathbind_demo_vqa_ablation")
PROBE = "pathbind_test_attention_probe"  # a task declaring metadata.pathbind_requires: [attention]
GROUP = "pathbind_test_served"  # pathbind_demo_vqa and the probe: a group that loses a task to the skip
MAX_RETRIES = 2  # lmms-eval's attempts per request (its `max_retries` model arg)
CLIENT_TRIES = 3  # the openai client's own per attempt: the request and its DEFAULT_MAX_RETRIES = 2 retries
GUESS = {"mcq": "B", "yesno": "No"}  # the server's answer when it sees no image it knows
# Faults by the item whose original image a request shows: these fail once, then answer...
RECOVERS = {"demo-D1-000": Reply(status=429, headers={"retry-after-ms": "10"}), "demo-D2-000": Reply(status=500),
            "demo-D3-000": Reply(drop=True)}
FAILS = {"demo-D4-000": 500, "demo-D5-000": 400}  # ...these fail every time


@dataclass(frozen=True)
class Item:
    id: str
    answer: str
    kind: str  # "mcq" or "yesno"
    image: Image.Image


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> tuple[Path, dict[str, Item]]:
    """A PATHBIND_DATA root with 12 MCQ items (2 per dimension) and 2 yes/no items for the four demo tasks."""
    from pathbind_tasks.demo.synth import write_demo_data

    root = tmp_path_factory.mktemp("data")
    files = write_demo_data(root, n_per_dimension=2, n_yes_no=2, file_names={
        "vqa": "pathbind_demo_vqa/test.parquet", "yesno": "pathbind_demo_yesno/test.parquet"})
    for task in ("pathbind_demo_vqa_think", "pathbind_demo_vqa_ablation"):
        (root / task).mkdir()
        shutil.copy(files["vqa"], root / task / "test.parquet")
    items = {row["id"]: Item(row["id"], row["answer"], kind, row["image"].convert("RGB"))
             for kind, path in (("mcq", files["vqa"]), ("yesno", files["yesno"]))
             for row in datasets.Dataset.from_parquet(str(path))}
    assert len({pixel_key(item.image) for item in items.values()}) == len(items)  # the server tells items apart
    return root, items


def seer(items: dict[str, Item], *, faults: bool) -> Any:
    """A server policy that sees perfectly: the shown item's answer for its original image, else a fixed guess."""
    by_pixels = {pixel_key(item.image): item for item in items.values()}

    def policy(received: Received) -> Reply:
        shown = by_pixels.get(pixel_key(received.images[0])) if received.images else None
        if faults and shown is not None and shown.id in FAILS:
            return Reply(status=FAILS[shown.id])
        if faults and shown is not None and shown.id in RECOVERS and received.attempt == 0:
            return RECOVERS[shown.id]
        kind = "yesno" if "<answer>Yes</answer>" in received.text else "mcq"
        answer = shown.answer.capitalize() if shown else GUESS[kind]
        seen = shown.id if shown else "unknown"
        thought = f"<think>The image is item {seen}.</think>" if "<think>" in received.text else ""
        return Reply(text=f"{thought}<answer>{answer}</answer>")

    return policy


def write_probe(folder: Path, parquet: Path) -> Path:
    """A test-only task that needs attention maps (its prompt would be recognisable at the server), and GROUP."""
    folder.mkdir(parents=True)
    (folder / f"{GROUP}.yaml").write_text(f"group: {GROUP}\ntask:\n  - pathbind_demo_vqa\n  - {PROBE}\n")
    (folder / f"{PROBE}.yaml").write_text(textwrap.dedent(f"""\
        task: {PROBE}
        dataset_path: parquet
        dataset_kwargs:
          data_files:
            test: {parquet}
        test_split: test
        output_type: generate_until
        doc_to_visual: !function pathbind_tasks.common.vqa.doc_to_visual
        doc_to_text: "Look at the image and locate: {{{{question}}}}"
        doc_to_target: answer
        process_results: !function pathbind_tasks.common.vqa.process_results
        metric_list:
          - metric: acc_image
            aggregation: !function pathbind.plugin_metrics.acc_image
            higher_is_better: true
        metadata:
          version: 1
          pathbind_requires: [attention]
        """))
    return folder


def evaluate(tmp: Path, data: tuple[Path, dict[str, Item]], tasks: tuple[str, ...], *extra: str,
             faults: bool = True, exit_code: int = 0) -> dict[str, Any]:
    """Run lmms-eval's openai model against a fresh server; the run's results, sample logs and the server's log."""
    root, items = data
    probe = write_probe(tmp / "probe", root / "pathbind_demo_vqa" / "test.parquet")
    with ChatServer(seer(items, faults=faults)) as server:
        model_args = (f"model_version=pathbind-test-vlm,base_url={server.base_url},api_key=test-key,"
                      f"max_retries={MAX_RETRIES},retry_backoff_s=0,num_concurrent=4")
        run = lmms_eval(tmp, "openai", ",".join(tasks), "--model_args", model_args, "--include_path", str(probe),
                        *extra, env={"PATHBIND_DATA": str(root)}, exit_code=exit_code)
    samples = {task: [json.loads(line) for path in run["out"].rglob(f"*_samples_{task}.jsonl")
                      for line in path.read_text().splitlines()] for task in TASKS}
    return {**run, "log": server.log, "samples": samples}


@pytest.fixture(scope="module")
def chat(tmp_path_factory, data):
    """Every demo task, pathbind_demo_vqa through GROUP with the attention probe, in chat mode (the openai default),
    with server faults."""
    return evaluate(tmp_path_factory.mktemp("chat"), data, (*TASKS[1:], GROUP))


@pytest.fixture(scope="module")
def simple(tmp_path_factory, data):
    """pathbind_demo_vqa through lmms-eval's simple openai model (--force_simple), no faults."""
    return evaluate(tmp_path_factory.mktemp("simple"), data, ("pathbind_demo_vqa",), "--force_simple", faults=False)


def records(run: dict[str, Any], task: str) -> list[dict[str, Any]]:
    """The PathBind score record of each logged sample, with the prompt lmms-eval built for it."""
    return [{**sample_record(sample), "input": sample["input"], "token_counts": sample["token_counts"]}
            for sample in run["samples"][task]]


def shown_item(record: dict[str, Any]) -> str | None:
    """The item whose original image the record's request showed (None: no image, blank or blurred)."""
    condition = record["condition"]
    return record["image_from"] if condition == "image" or condition.startswith("swap_") else None


def expected_key(record: dict[str, Any], items: dict[str, Item]) -> tuple[str, tuple[str, ...]]:
    """The request the record's condition should have produced: its prompt and the pixels of each image part."""
    condition, own = record["condition"], items[record["id"]].image
    if condition == "text":
        images: tuple[Image.Image, ...] = ()
    elif condition == "blank":
        images = (Image.new("RGB", own.size, (255, 255, 255)),)
    elif condition.startswith("blur_"):
        images = (own.filter(ImageFilter.GaussianBlur(radius=float(condition.removeprefix("blur_")))),)
    else:
        images = (items[record["image_from"]].image,)
    return record["input"], tuple(pixel_key(image) for image in images)


def by_key(log: list[tuple[Received, Reply]]) -> dict[tuple[str, tuple[str, ...]], list[tuple[Received, Reply]]]:
    grouped = defaultdict(list)
    for received, reply in log:
        grouped[received.key].append((received, reply))
    return grouped


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_each_condition_sends_its_own_image_and_text_only_sends_none(chat, data, task):
    """Image, swaps, blank and blur reach the server as one image part of the expected pixels; text-only as no image
    part at all; the text part is the prompt lmms-eval logged."""
    requests = by_key(chat["log"])
    for record in records(chat, task):
        key = expected_key(record, data[1])
        assert key in requests, f"{task} {record['id']} {record['condition']}: no such request reached the server"
        parts = {tuple(received.parts) for received, _ in requests[key]}
        assert parts == {("text",) if record["condition"] == "text" else ("image_url", "text")}, record


@pytest.mark.slow
def test_nothing_else_reaches_the_server(chat, data):
    """The server saw exactly the requests of the demo tasks' samples; the skipped attention task sent nothing."""
    expected = {expected_key(record, data[1]) for task in TASKS for record in records(chat, task)}
    assert set(by_key(chat["log"])) == expected
    assert not [r for r, _ in chat["log"] if r.text.startswith("Look at the image and locate")]


@pytest.mark.slow
def test_prompts_are_the_rendered_templates(chat, data):
    """The thinking variant asks for <think>, the others do not; every prompt holds its item's question and format."""
    for task in TASKS:
        for record in records(chat, task):
            assert ("<think>" in record["input"]) == (task == "pathbind_demo_vqa_think"), (task, record["id"])
            yes_no = data[1][record["id"]].kind == "yesno"
            assert ("<answer>Yes</answer>" in record["input"]) == yes_no, (task, record["id"])


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_every_answer_is_scored_as_the_server_gave_it(chat, data, task):
    """Each sample's parsed answer is what the server answered for what it was shown; persistent failures are
    invalid with lmms-eval's failure message as the reason; no sample is lost."""
    items = data[1]
    logged = records(chat, task)
    assert len(logged) == chat["results"]["n-samples"][task]["effective"]
    for record in logged:
        shown = shown_item(record)
        if shown in FAILS:
            assert not record["valid"] and not record["correct"], record
            assert record["reason"].startswith(f"request failed after {MAX_RETRIES} retries: "
                                               f"Error code: {FAILS[shown]}"), record
            continue
        expected = items[shown].answer if shown else GUESS[items[record["id"]].kind]
        assert str(record["parsed"]).lower() == expected.lower() and record["valid"], record


@pytest.mark.slow
@pytest.mark.parametrize("task", ["pathbind_demo_vqa", "pathbind_demo_vqa_think", "pathbind_demo_yesno"])
def test_answers_flow_into_acc_image_acc_text_and_mg(chat, data, task):
    """acc_image counts persistently failed items wrong; acc_text is the share of items whose answer is the guess."""
    items = [item for item in data[1].values() if item.kind == ("yesno" if "yesno" in task else "mcq")]
    acc_image = 100 * sum(item.id not in FAILS for item in items) / len(items)
    acc_text = 100 * sum(item.answer.lower() == GUESS[item.kind].lower() for item in items) / len(items)
    assert metric(chat, task, "acc_image") == pytest.approx(acc_image)
    assert metric(chat, task, "acc_text") == pytest.approx(acc_text)
    assert metric(chat, task, "mg") == pytest.approx(acc_image - acc_text)
    failed = sum(item.id in FAILS for item in items)
    assert metric(chat, task, "invalid_rate") == pytest.approx(100 * failed / (2 * len(items)))


@pytest.mark.slow
@pytest.mark.parametrize("condition", ["blank", "swap_same", "swap_cross", "blur_2", "blur_16"])
def test_ablation_accuracies_come_from_the_transformed_images(chat, condition):
    """A perfect seer shown a blank or blurred image guesses; shown another item's image, it answers for that one."""
    logged = [r for r in records(chat, "pathbind_demo_vqa_ablation") if r["condition"] == condition]
    assert metric(chat, "pathbind_demo_vqa_ablation", f"acc_{condition}") == pytest.approx(
        100 * sum(r["correct"] for r in logged) / len(logged))
    if condition.startswith("swap_"):
        assert all(r["image_from"] != r["id"] for r in logged)


@pytest.mark.slow
def test_server_errors_are_retried_and_persistent_failures_cost_a_bounded_number_of_requests(chat, data):
    """429 (with retry-after-ms), 500 and a dropped connection once: retried by the openai client, then answered.
    Always 500: lmms-eval's max_retries attempts of the client's 3 tries each. Always 400: not retried by the client.
    (Tasks sharing a request, such as the image condition of pathbind_demo_vqa and its ablation, each send it.)"""
    senders = Counter(expected_key(record, data[1]) for task in TASKS for record in records(chat, task))
    owner = {pixel_key(item.image): item.id for item in data[1].values()}
    for key, exchanges in by_key(chat["log"]).items():
        replies = [(reply.status, reply.drop) for _, reply in exchanges]
        shown = owner.get(key[1][0]) if key[1] else None
        if shown in FAILS:
            tries = MAX_RETRIES * (CLIENT_TRIES if FAILS[shown] >= 500 else 1)
            assert replies == [(FAILS[shown], False)] * tries * senders[key], shown
        elif shown in RECOVERS:
            assert replies == [(RECOVERS[shown].status, RECOVERS[shown].drop)] + [(200, False)] * senders[key], shown
        else:
            assert replies == [(200, False)] * senders[key], key[0][:60]


@pytest.mark.slow
def test_token_usage_is_reported_by_lmms_eval_and_split_by_condition(chat, data):
    """results.json holds lmms-eval's usage totals and PathBind's per task and condition (images cost tokens)."""
    answered = [received for received, reply in chat["log"] if reply.status == 200 and not reply.drop]
    total = chat["results"]["usage"]["total"]
    assert total["n_api_calls"] == len(answered)
    assert total["input_tokens"] == sum(prompt_tokens(r.text, len(r.images)) for r in answered)
    succeeded = {r.key for r in answered}
    usage = chat["results"]["pathbind"]["usage_by_condition"]
    for task in TASKS:
        per_condition: dict[str, int] = defaultdict(int)
        for record in records(chat, task):
            text, pixels = expected_key(record, data[1])
            per_condition[record["condition"]] += prompt_tokens(text, len(pixels)) if (text, pixels) in succeeded else 0
        assert {c: row["input_tokens"] for c, row in usage[task].items()} == per_condition, task
    assert set(chat["results"]["efficiency"]["by_task"]) == set(TASKS)


@pytest.mark.slow
def test_a_task_needing_attention_is_skipped_with_a_reason_and_the_rest_completes(chat):
    """The probe is absent from the results; its reason names task, model and what to use instead; everything else
    ran, its group with the remaining task. (Asked alone: test_a_run_of_only_unsupported_tasks...)"""
    reason = chat["results"]["pathbind"]["skipped_tasks"][PROBE]
    assert f"task {PROBE!r}" in reason and "'openai'" in reason and "attention" in reason
    assert "--model pathbind_hf" in reason
    assert reason in chat["stdout"] + chat["stderr"]  # loguru writes where lmms-eval logs
    assert set(chat["results"]["results"]) == {*TASKS, GROUP}
    assert chat["results"]["group_subtasks"][GROUP] == ["pathbind_demo_vqa"]


@pytest.mark.slow
def test_simple_and_chat_backends_send_the_same_content(simple, chat, data):
    """lmms-eval's simple openai path (doc_to_visual + context) sends the prompts and images its chat path sends
    (doc_to_messages); only the part order differs (text first)."""
    chat_keys = {expected_key(record, data[1]) for record in records(chat, "pathbind_demo_vqa")}
    assert set(by_key(simple["log"])) == chat_keys
    assert {tuple(r.parts) for r, _ in simple["log"]} == {("text",), ("text", "image_url")}
    assert metric(simple, "pathbind_demo_vqa", "acc_image") == 100
    assert metric(simple, "pathbind_demo_vqa", "acc_text") == metric(chat, "pathbind_demo_vqa", "acc_text")


@pytest.mark.slow
def test_a_run_of_only_unsupported_tasks_completes_with_nothing_sent(tmp_path, data):
    """Every task skipped: lmms-eval still writes results.json, with no results and the reason; no request is sent;
    ``lmms_eval`` exits 1, naming the reason last."""
    run = evaluate(tmp_path, data, (PROBE,), exit_code=1)
    assert run["results"]["results"] == {} and not run["log"]
    reason = run["results"]["pathbind"]["skipped_tasks"][PROBE]
    assert run["stderr"].splitlines()[-1] == f"lmms_eval: error: no task was evaluated; {reason}"


def test_user_turn_carries_the_condition_images_through_lmms_eval_chat_protocol():
    """doc_to_messages, converted as the openai/vllm (to_openai_messages) and sglang (to_hf_messages, extract_media)
    backends convert it: one image part except text-only (none), then the prompt doc_to_text renders."""
    from lmms_eval.protocol import ChatMessages

    from pathbind_tasks.common.vqa import ablation, doc_to_messages, doc_to_text, full

    raw = datasets.Dataset.from_parquet(str(Path(pathbind_tasks.__file__).parent / "demo/data/vqa.parquet"))
    docs = [*full(raw.select(range(2))), *ablation(raw.select(range(2)))]
    kwargs = {"thinking": True}
    for doc in docs:
        messages = ChatMessages(messages=doc_to_messages(doc, kwargs))
        images = 0 if doc["condition"] == "text" else 1
        parts = [part["type"] for part in messages.to_openai_messages()[0]["content"]]
        assert parts == ["image_url"] * images + ["text"], doc["condition"]
        assert messages.messages[0].content[-1].text == doc_to_text(doc, kwargs)
        assert len(messages.extract_media()[0]) == images
        assert [p["type"] for p in messages.to_hf_messages()[0]["content"]] == ["image"] * images + ["text"]


def test_every_plugin_task_pairs_doc_to_messages_with_its_own_prompt_and_images(task_manager, pm):
    """A task whose doc_to_messages is a UserTurn builds it from the doc_to_visual and doc_to_text it names itself
    (a YAML including _vqa.yaml and overriding one of them must override doc_to_messages too)."""
    from pathbind.catalog import plugin_tasks
    from pathbind_tasks.common.messages import UserTurn

    checked = 0
    for entry in (e for e in plugin_tasks(pm) if e.kind == "task"):
        config = task_manager._get_config.__wrapped__(task_manager, entry.name)  # without the PATHBIND_DATA step
        messages = config.get("doc_to_messages")
        if isinstance(messages, UserTurn):
            pair = (messages.doc_to_visual, messages.doc_to_text)
            assert pair == (config["doc_to_visual"], config["doc_to_text"]), f"{entry.name}: {entry.yaml_path}"
            checked += 1
    assert checked >= 4


@pytest.mark.parametrize(("text", "reason"), [
    ("[LMMS_EVAL_REQUEST_FAILED after 5 retries] Error code: 500 - (A)",
     "request failed after 5 retries: Error code: 500 - (A)"),
    ("[LMMS_EVAL_BUDGET_EXCEEDED]", "not sent: the run's token budget (--max_tokens) was spent"),
    ("", "empty answer (the model or its backend returned no text; see the run log)"),
])
def test_backend_failures_are_invalid_with_the_backend_reason(text, reason):
    """lmms-eval's failure markers are never parsed (the "(A)" in the error is no answer), and keep the reference."""
    from pathbind_tasks.common.vqa import process_results

    doc = {"id": "x", "question": "q", "options": ["a", "b", "c", "d"], "answer": "A", "condition": "image"}
    record = process_results(doc, [text])["acc_image"]
    assert (record["valid"], record["correct"], record["parsed"], record["reference"]) == (False, False, None, "A")
    assert record["reason"] == reason


def test_the_evaluate_hook_is_installed_where_lmms_eval_looks_it_up():
    """The skip relies on simple_evaluate finding `evaluate` as a module global at call time (lmms-eval 0.7.3)."""
    import lmms_eval.evaluator as evaluator

    from pathbind.lmms.evaluate import install_evaluate_hook
    from pathbind.lmms.marks import marked

    assert install_evaluate_hook() and install_evaluate_hook()
    assert marked(evaluator.evaluate)
    assert "evaluate" in inspect.unwrap(evaluator.simple_evaluate).__code__.co_names


def test_lmms_eval_openai_model_ignores_its_timeout_argument():
    """lmms-eval 0.7.3 stores `timeout` but builds its OpenAI client without it: requests wait the client's default
    600 s read timeout (docs/models.md says so; when this fails, upstream fixed it)."""
    from lmms_eval.models.chat.openai import OpenAICompatible

    model = OpenAICompatible(model_version="m", base_url="http://127.0.0.1:9/v1", api_key="k", timeout=1)
    assert model.timeout == 1 and model.client.timeout.read == 600
    assert model.client.max_retries == CLIENT_TRIES - 1
