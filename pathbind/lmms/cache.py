"""lmms-eval's ``--use_cache`` for PathBind models: answers stored as they come, unfinished runs resumed.

lmms-eval 0.7.3 (``lmms_eval.caching.response_cache``) hands a model every uncached request in one call and stores
the answers only when that call returns; a crashed run also leaves its answers in ``runs/<run id>/rank_<r>.db``,
which a new run (new run id) never reads. Two wrappers fix both for PathBind's models (a plugin's, which offer
``cache_units``); other models' runs are lmms-eval's own, call for call:

- ``ResponseCache.execute`` runs lmms-eval's own lookup-answer-store step once per unit the model names (a batch,
  an encoded request), so every key, lookup and stored value is lmms-eval's and each answer is on disk (SQLite
  commit, fsync'd JSONL) before the next unit starts;
- ``ResponseCache.create`` first copies the stored answers of runs whose process died into the new run's database,
  and marks this run alive with a lock each rank holds until its process ends (the kernel drops it on a crash).

A third, on ``_is_valid_response``, keeps an answer PathBind's models mark as a failure (``MODEL_FAILED``) out of
the cache, so a rerun retries it.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import uuid
from collections.abc import Callable
from glob import glob
from typing import IO, TYPE_CHECKING, Any

from loguru import logger
from tqdm import tqdm

from pathbind.lmms.marks import leaf_tasks, marked, patch, pathbind_task, plugin_model, running_tasks
from pathbind.provenance import record_error, task_provenance
from pathbind.wire import MODEL_FAILED

if TYPE_CHECKING:
    from lmms_eval.caching.response_cache import ResponseCache

RESUMED = ".pathbind-resumed.rank_{}"  # in a dead run's folder: that rank of a later run copied its answers


def install_cache_hook() -> None:
    """Wrap ``ResponseCache.create``, ``execute`` and ``_is_valid_response``; idempotent."""
    from lmms_eval.caching.response_cache import ResponseCache

    if marked(ResponseCache.execute):
        return
    create = ResponseCache.__dict__["create"].__func__
    valid = ResponseCache.__dict__["_is_valid_response"].__func__
    ResponseCache.create = classmethod(patch(create, resuming_create, for_pathbind))
    ResponseCache.execute = patch(ResponseCache.execute, execute_by_unit, run_by_a_pathbind_model)
    ResponseCache._is_valid_response = staticmethod(patch(valid, _not_stored, a_model_failure))


def for_pathbind(cls: type, *args: Any, model: Any = None, task_dict: Any = None, **kwargs: Any) -> bool:
    """A cache for a run of a PathBind model (``--model``) or of a PathBind task (keywords of ``create``)."""
    tasks = leaf_tasks(task_dict) if isinstance(task_dict, dict) else ()
    return plugin_model(model) or any(pathbind_task(task) for _, task in tasks)


def run_by_a_pathbind_model(cache: Any, lm: Any = None, reqtype: Any = None, requests: Any = None) -> bool:
    """Requests for a PathBind model (the class a plugin's ModelSpec names), which says how to split them."""
    return plugin_model(lm) and isinstance(requests, list) and bool(requests) and callable(
        getattr(type(lm), "cache_units", None))


def a_model_failure(response: Any = None, request_type: Any = None) -> bool:
    """An answer a PathBind model marked as its failure to answer (it is not stored: a rerun retries it)."""
    return isinstance(response, str) and response.startswith(MODEL_FAILED)


def resuming_create(create: Callable[..., ResponseCache], cls: type, *args: Any, **kwargs: Any) -> ResponseCache:
    """lmms-eval's cache keyed on each PathBind task's data; for a PathBind model, locked as alive, with the answers
    of dead runs copied in."""
    cache = create(cls, *args, **kwargs)
    key_on_data(cache, kwargs.get("task_dict") or {})
    if plugin_model(kwargs.get("model")):
        cache._pathbind_lock = hold_lock(cache._run_dir, cache._global_rank)
        resume_dead_runs(cache)
    return cache


def _not_stored(valid: Callable[..., bool], response: Any, request_type: str) -> bool:
    return False


def key_on_data(cache: ResponseCache, task_dict: dict) -> None:
    """Each PathBind task's cache keys also hold the fingerprint of the data it read (``pathbind.provenance``), so
    answers stored for other data (an image changed behind the same ids and prompts) are never served; a task
    whose data cannot be fingerprinted is answered afresh, with a warning."""
    for name, task in leaf_tasks(task_dict):
        if not running_tasks(task):
            continue
        try:
            data = task_provenance(name, task)["fingerprint"]
        except Exception as exc:
            data = uuid.uuid4().hex
            logger.warning(f"ResponseCache: task {name}: no answer is read from the cache, since the data it read "
                           f"cannot be fingerprinted ({record_error(exc)})")
        cache._task_fingerprints[name] = f"{cache._task_fingerprints.get(name, '')}+data:{data[:16]}"


def execute_by_unit(execute: Callable[..., list[Any]], cache: ResponseCache, lm: Any, reqtype: str,
                    requests: list[Any]) -> list[Any]:
    """lmms-eval's ``execute`` on each of the model's units in turn, behind one progress bar and one summary line."""
    units = lm.cache_units(reqtype, requests)
    if [i for unit in units for i in range(*unit)] != list(range(len(requests))):
        raise ValueError(f"{type(lm).__name__}.cache_units does not split the {len(requests)} requests in order")
    before = cache.get_stats()
    results: list[Any] = []
    lm.show_progress = False
    logger.disable(type(cache).__module__)  # its hit counts would print once per unit
    try:
        with tqdm(total=len(requests), desc=f"{type(lm).__name__} {reqtype}", disable=lm.rank != 0) as bar:
            for start, stop in units:
                results.extend(execute(cache, lm, reqtype, requests[start:stop]))
                bar.update(stop - start)
    finally:
        logger.enable(type(cache).__module__)
        lm.show_progress = True
    after = cache.get_stats()
    logger.info(f"ResponseCache: {reqtype}: {after['hits'] - before['hits']} of {len(requests)} from the cache, "
                f"{after['misses'] - before['misses']} answered and stored one unit at a time ({len(units)} units), "
                f"{after['skipped_non_deterministic'] - before['skipped_non_deterministic']} sampled (never cached)")
    return results


def hold_lock(run_dir: str, rank: int) -> IO[str] | None:
    """An exclusive lock on ``rank_<rank>.lock``, held while the returned file stays open (the process lives).

    The file is locked before it takes its name, so nobody ever finds it unlocked while this run lives.
    """
    path = os.path.join(run_dir, f"rank_{rank}.lock")
    try:
        handle = open(f"{path}.{os.getpid()}", "w")  # noqa: SIM115 - open for the life of the process
        fcntl.flock(handle, fcntl.LOCK_EX)
        os.replace(handle.name, path)
    except OSError as exc:  # a file system without locks: this run cannot be resumed after a crash
        logger.warning(f"ResponseCache: no liveness lock in {run_dir} ({exc}); a crash of this run is not resumed")
        return None
    return handle


def resume_dead_runs(cache: ResponseCache) -> None:
    """Copy into this run's database the answers of every earlier run that never finished and whose process died.

    A run counts as dead when each of its ranks left a lock (PathBind wrote it) that nobody holds any more. Runs
    that finished were merged into ``cache.db`` by lmms-eval; live ones merge themselves when they finish.
    """
    runs = os.path.join(cache._cache_root, "runs")
    for run in sorted(glob(os.path.join(runs, "*", ""))):
        run = run.rstrip(os.sep)
        marker = os.path.join(run, RESUMED.format(cache._global_rank))
        if run == cache._run_dir or os.path.exists(marker) or os.path.exists(os.path.join(run, ".merged")):
            continue
        locks = glob(os.path.join(run, "rank_*.lock"))
        if not locks or not all(map(_released, locks)):
            continue
        shards = [path for path in (lock.removesuffix(".lock") + ".db" for lock in locks) if os.path.exists(path)]
        before = cache.get_stats()["total_cached_entries"]
        for shard in shards:
            try:
                type(cache).merge_shards([shard], cache.db_path)
            except sqlite3.Error as exc:  # killed before it had tables, or damaged: nothing more will come of it
                logger.warning(f"ResponseCache: {shard} of an unfinished run is unreadable ({exc}); skipped")
        with open(marker, "w") as handle:
            handle.write(f"{cache._run_id}\n")
        copied = cache.get_stats()["total_cached_entries"] - before
        logger.info(f"ResponseCache: resumed {copied} answers of unfinished run {os.path.basename(run)}")


def _released(lock: str) -> bool:
    """Whether nobody holds ``lock``: its run's process ended (a shared probe, so probes never block each other)."""
    try:
        with open(lock) as handle:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:  # held (BlockingIOError), or gone or unlockable: not known to be dead
        return False
    return True
