"""``--use_cache`` with PathBind models: answers reach lmms-eval's cache as they come, and a killed run resumes."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import time
from contextlib import closing, suppress
from pathlib import Path

import pytest
from conftest import BIN, OFFLINE, lmms_eval
from lmms_eval.api.instance import Instance
from lmms_eval.caching.response_cache import ResponseCache
from PIL import Image

from pathbind.lmms.cache import install_cache_hook
from pathbind.wire import MODEL_FAILED, AttentionRequest, AttentionResponse, OcclusionRequest, Query
from pathbind_models.controls.models import PositiveControlModel
from pathbind_tasks.common.failures import no_answer_reason

TASKS = ("pathbind_demo_vqa", "pathbind_demo_grounding", "pathbind_demo_faithfulness")  # prompts, attention, occlusion
ARGS = ("--limit", "4", "--batch_size", "2")
ATTENTION = AttentionRequest((Query("Look at the image and locate: nuclei", "nuclei"),), ("mid",)).encode()
OCCLUSION = OcclusionRequest("Are there nuclei in this image?", ("Yes", "No"), 0, "nuclei", grid=2).encode()


@pytest.fixture(autouse=True)
def _streaming_cache():
    install_cache_hook()  # what the seam does once lmms-eval defines ResponseCache


def ask(context: str, doc_id: int) -> Instance:
    arguments = (context, {"until": ["\n\n"], "temperature": 0}, lambda doc: [doc["image"]], doc_id, "task", "test")
    return Instance("generate_until", arguments, 0, {"task": "task", "doc_id": doc_id, "repeats": 1})


def control(batch_size: int = 2) -> PositiveControlModel:
    model = PositiveControlModel(batch_size=batch_size)
    model.task_dict = {"task": {"test": [{"image": Image.new("RGB", (64, 48), (190, 90 + 20 * i, 170))}
                                         for i in range(6)]}}
    return model


# prompts and attention requests mixed: units [0, 2) [2, 3) [3, 5) [5, 6) at batch size 2
REQUESTS = [ask("What tissue is this?", 0), ask("Describe the image.", 1), ask(ATTENTION, 2),
            ask("What stain is this?", 3), ask("Is this tissue?", 4), ask(ATTENTION, 5)]


def test_units_are_batches_of_prompts_and_single_encoded_requests():
    contexts = ["q", "q", "q", ATTENTION, "q", ATTENTION, "[pathbind:attention/v1] {broken", "q"]
    requests = [ask(context, i) for i, context in enumerate(contexts)]
    # a request is grouped by its header (its body is decoded once, when answered): the broken attention request
    # shares a unit with the attention request before it and is answered with its own failure
    assert control(2).cache_units("generate_until", requests) == [(0, 2), (2, 3), (3, 4), (4, 5), (5, 7), (7, 8)]
    assert control(3).cache_units("generate_until", requests) == [(0, 3), (3, 4), (4, 5), (5, 7), (7, 8)]
    answers = control(2).generate_until([ask(ATTENTION, 0), ask(contexts[6], 1)])
    assert len(AttentionResponse.decode(answers[0]).maps) == 1
    assert answers[1].startswith(f"{MODEL_FAILED} ValueError: malformed attention request")
    assert control(1).cache_units("loglikelihood", requests[:3]) == [(0, 1), (1, 2), (2, 3)]
    # attention requests in a row share units of batch_size; an occlusion request stands alone
    contexts = [ATTENTION, ATTENTION, ATTENTION, "q", ATTENTION, ATTENTION, OCCLUSION, ATTENTION]
    requests = [ask(context, i) for i, context in enumerate(contexts)]
    assert control(2).cache_units("generate_until", requests) == [(0, 2), (2, 3), (3, 4), (4, 6), (6, 7), (7, 8)]
    assert control(1).cache_units("generate_until", requests) == [(i, i + 1) for i in range(8)]


def test_a_crashed_run_keeps_each_finished_unit_and_the_next_run_answers_only_the_rest(tmp_path, monkeypatch):
    """The third prompt's model call dies (as a SIGKILL would end the run): the two units before it are in the
    cache. A new run over the same cache serves those from it, asks the model only the rest, one unit per call,
    and the answers equal one uncached ``generate_until`` over everything."""
    crashing = control()
    calls = []

    def generate(images, text, **gen_kwargs):
        calls.append(text)
        if len(calls) == 3:
            raise KeyboardInterrupt  # not an Exception: nothing answers it with a blank, the run ends
        return type(crashing.adapter).generate(crashing.adapter, images, text, **gen_kwargs)

    monkeypatch.setattr(crashing.adapter, "generate", generate)
    first = ResponseCache.create(str(tmp_path), model="pathbind_control")
    with pytest.raises(KeyboardInterrupt):
        first.execute(crashing, "generate_until", REQUESTS)
    assert first.get_stats()["total_cached_entries"] == 3  # units [0, 2) and [2, 3)
    first.close()
    first._pathbind_lock.close()  # what the kernel does when the process dies

    resumed, calls_per_unit = control(), []
    answer = resumed.generate_until
    monkeypatch.setattr(resumed, "generate_until", lambda requests: calls_per_unit.append(len(requests)) or
                        answer(requests))
    second = ResponseCache.create(str(tmp_path), model="pathbind_control")
    answers = second.execute(resumed, "generate_until", REQUESTS)
    stats = second.get_stats()
    assert (stats["hits"], stats["misses"]) == (3, 3) and calls_per_unit == [2, 1]
    assert answers == control().generate_until(REQUESTS)
    assert len(AttentionResponse.decode(answers[2]).maps) == 1  # an encoded answer comes back from the cache whole
    assert (tmp_path / "runs" / first._run_id / f".pathbind-resumed.rank_{second._global_rank}").exists()


def test_one_call_or_one_unit_at_a_time_gives_the_same_answers(tmp_path):
    for batch_size in (1, 2, 4):
        cache = ResponseCache.create(str(tmp_path / str(batch_size)), model="pathbind_control")
        assert cache.execute(control(batch_size), "generate_until", REQUESTS) == control(6).generate_until(REQUESTS)
        assert cache.get_stats()["total_cached_entries"] == len(REQUESTS)


def test_a_live_run_is_not_resumed_by_another(tmp_path):
    live = ResponseCache.create(str(tmp_path), model="pathbind_control")
    live.execute(control(), "generate_until", REQUESTS[:2])
    other = ResponseCache.create(str(tmp_path), model="pathbind_control")
    assert other.get_stats()["total_cached_entries"] == 0
    assert not list((tmp_path / "runs" / live._run_id).glob(".pathbind-resumed*"))


def test_a_dead_run_with_an_unreadable_database_is_skipped(tmp_path):
    dead = ResponseCache.create(str(tmp_path), model="pathbind_control")
    dead.close()
    dead._pathbind_lock.close()
    Path(dead.db_path).write_bytes(b"not a database")
    cache = ResponseCache.create(str(tmp_path), model="pathbind_control")
    assert cache.execute(control(), "generate_until", REQUESTS[:2]) == control().generate_until(REQUESTS[:2])
    assert cache.get_stats()["total_cached_entries"] == 2


def test_loglikelihood_requests_are_stored_one_by_one(tmp_path):
    model = control()
    requests = [Instance("loglikelihood", (f"Is this {word}? Answer:", " Yes", lambda doc: [doc["image"]], i, "task",
                                           "test"), 0, {"task": "task", "doc_id": i, "repeats": 1})
                for i, word in enumerate(("tissue", "stained", "blurred"))]
    sizes, score = [], model.loglikelihood
    model.loglikelihood = lambda requests: sizes.append(len(requests)) or score(requests)
    cache = ResponseCache.create(str(tmp_path), model="pathbind_control")
    scores = cache.execute(model, "loglikelihood", requests)
    assert sizes == [1, 1, 1] and cache.get_stats()["total_cached_entries"] == 3
    assert [list(s) for s in cache.execute(model, "loglikelihood", requests)] == [list(s) for s in scores]


def _start(out: Path, *extra: str) -> subprocess.Popen:
    command = [str(BIN / "lmms_eval"), "--model", "pathbind_control", "--tasks", ",".join(TASKS),
               "--output_path", str(out), "--log_samples", *ARGS, *extra]
    out.mkdir(parents=True)
    with open(out / "log.txt", "w") as log:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(command, cwd=out, env={**os.environ, **OFFLINE}, stdout=log, stderr=subprocess.STDOUT)


def _stored(cache: Path) -> list[tuple[str, int]]:
    """(task, doc id) of every answer in the runs' own databases."""
    rows = []
    for db in cache.glob("runs/*/rank_0.db"):
        with closing(sqlite3.connect(db, timeout=5)) as connection, suppress(sqlite3.OperationalError):
            rows += connection.execute("SELECT task_name, doc_id FROM responses").fetchall()  # once it has tables
    return rows


def _samples(out: Path) -> dict[str, list[tuple[int, object]]]:
    logs = {task: next(out.rglob(f"*_samples_{task}.jsonl")).read_text().splitlines() for task in TASKS}
    return {task: [(s["doc_id"], s["filtered_resps"]) for s in map(json.loads, lines)] for task, lines in logs.items()}


@pytest.mark.slow
def test_a_killed_run_resumes_from_its_cached_answers_and_scores_as_an_uninterrupted_run(tmp_path):
    """SIGKILL a ``--use_cache`` run once each task (plain prompts, attention and occlusion requests) has answers in
    the cache; rerun it: lmms-eval serves exactly those from the cache, the model answers only the rest, and every
    answer and metric equals an uninterrupted run without the cache (the model answering everything in one call)."""
    cache, reference = tmp_path / "cache", _start(tmp_path / "reference")
    killed = _start(tmp_path / "killed", "--use_cache", str(cache))
    deadline = time.monotonic() + 300
    while {task for task, _ in _stored(cache)} != set(TASKS):
        assert killed.poll() is None, (tmp_path / "killed" / "log.txt").read_text()[-3000:]
        assert time.monotonic() < deadline, "no answer reached the cache"
        time.sleep(0.02)
    killed.kill()
    killed.wait()
    before = set(_stored(cache))
    assert len(before) < 4 * len(TASKS), "the run finished before it was killed"

    resumed = lmms_eval(tmp_path, "pathbind_control", ",".join(TASKS), *ARGS, "--use_cache", str(cache))
    log = re.sub(r"\x1b\[[0-9;]*m", "", resumed["stderr"] + resumed["stdout"])
    assert f"resumed {len(before)} answers of unfinished run" in log
    assert f"ResponseCache stats: {len(before)} hits, {4 * len(TASKS) - len(before)} misses" in log
    audit = next(cache.glob("runs/*/.merged")).parent / "rank_0.audit.jsonl"  # what the model answered this time
    asked = {(r["task_name"], r["doc_id"]) for r in map(json.loads, audit.read_text().splitlines())}
    assert asked.isdisjoint(before) and len(asked | before) == 4 * len(TASKS)

    assert reference.wait(timeout=300) == 0
    expected = json.loads(next((tmp_path / "reference").rglob("*_results.json")).read_text())
    for task in TASKS:
        assert resumed["results"]["results"][task] == expected["results"][task], task
    assert _samples(resumed["out"]) == _samples(tmp_path / "reference")


def test_a_request_the_model_cannot_answer_names_its_cause_and_is_not_cached(tmp_path):
    """A document whose image cannot be read is answered with MODEL_FAILED and the error (the scorer's reason);
    the failure is kept out of the cache, so a rerun asks the model again."""
    model = control()
    model.task_dict["task"]["test"][1] = {"image": "no-such-image.png"}
    cache = ResponseCache.create(str(tmp_path), model="pathbind_control")
    answers = cache.execute(model, "generate_until", REQUESTS[:3])
    assert answers[1].startswith(f"{MODEL_FAILED} FileNotFoundError: ") and "no-such-image.png" in answers[1]
    assert no_answer_reason(answers[1]).startswith("the model could not answer: FileNotFoundError")
    assert not answers[0].startswith(MODEL_FAILED) and cache.get_stats()["total_cached_entries"] == 2
    cache.close()


def test_the_repeats_of_a_request_share_a_unit(tmp_path):
    """--repeats sends one request N times in a row: the copies stay in one unit (they are numbered there for their
    seeds), whatever the batch size."""
    repeated = ask("What tissue is this?", 0)
    requests = [repeated, repeated, repeated, ask("Describe the image.", 1), ask("Is this tissue?", 2)]
    assert control(2).cache_units("generate_until", requests) == [(0, 3), (3, 5)]
    assert control(1).cache_units("generate_until", requests) == [(0, 3), (3, 4), (4, 5)]


@pytest.mark.slow
def test_cached_answers_are_never_served_for_other_data(tmp_path):
    """One image of the data changes behind the same ids and prompts: the rerun with the same --use_cache folder
    reads no answer from it (the keys hold the data's fingerprint) and records the new data; an unchanged rerun
    reads every answer."""
    import datasets

    data = tmp_path / "data"
    made = subprocess.run([str(BIN / "pathbind"), "demo-data", "--out", str(data), "--n", "1", "--n-yes-no", "0",
                           "--n-pathview", "0", "--n-grounding", "0"], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    env, cache = {"PATHBIND_DATA": str(data)}, str(tmp_path / "cache")

    def cached_run(name: str) -> tuple[dict, str]:
        done = lmms_eval(tmp_path / name, "pathbind_control", "pathbind_demo_vqa", "--use_cache", cache, env=env)
        return done, re.sub(r"\x1b\[[0-9;]*m", "", done["stdout"] + done["stderr"])

    (tmp_path / "first").mkdir(), (tmp_path / "again").mkdir(), (tmp_path / "changed").mkdir()
    first, _ = cached_run("first")
    documents = first["results"]["n-samples"]["pathbind_demo_vqa"]["effective"]
    _, log = cached_run("again")
    assert f"ResponseCache: generate_until: {documents} of {documents} from the cache" in log
    parquet = data / "pathbind_demo_vqa" / "test.parquet"
    rows = datasets.load_dataset("parquet", data_files=str(parquet), split="train")
    rows = rows.map(lambda row, i: {"image": row["image"].rotate(90) if i == 0 else row["image"]}, with_indices=True)
    rows.to_parquet(str(parquet.with_suffix(".new")))
    parquet.with_suffix(".new").replace(parquet)
    changed, log = cached_run("changed")
    assert f"ResponseCache: generate_until: 0 of {documents} from the cache, {documents} answered" in log
    fingerprints = {run["results"]["pathbind"]["data"]["pathbind_demo_vqa"]["fingerprint"] for run in (first, changed)}
    assert len(fingerprints) == 2
