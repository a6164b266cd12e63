"""Every lmms-eval function the seam wraps or relies on, in one table, and the check that the installed lmms-eval
still has the sources PathBind was written against.

Each entry names the function (``module:qualname``), what PathBind does with it and why, the upstream change that
would make the patch unnecessary, and the sha256 of each source PathBind runs on: 0.7.3's first, then the main
branch's where it differs (commit 75571cf, which reports version 0.7.2). A version string alone cannot tell a
main-branch install from a release, so the sources decide: any other source stops a PathBind run before any model
call (:func:`require_compatible_lmms_eval`), naming what changed; ``pathbind doctor`` fails on it too.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
from dataclasses import dataclass
from importlib.metadata import version as installed_version
from typing import Any

# The lmms-eval releases PathBind's tests run against (`make test`: the release; `make compat`: the main branch).
TESTED_LMMS_EVAL = ("0.7.3", "main 75571cf")


@dataclass(frozen=True)
class Patch:
    """One lmms-eval function: ``wrapped_by`` the seam function that wraps it ("" when PathBind only relies on its
    behaviour), the calls it ``claims`` as PathBind's (every other is lmms-eval's own function, call for call),
    ``why`` no lmms-eval extension point does the job, the ``upstream`` change that would make the patch
    unnecessary, and its accepted sources."""

    target: str
    wrapped_by: str
    claims: str
    why: str
    upstream: str
    sources: tuple[str, ...]


RELIED_ON = "(relied on, not patched)"
PATCHES: tuple[Patch, ...] = (
    Patch("lmms_eval.tasks:TaskManager.initialize_tasks", "tasks._indexing_plugin_dirs",
          "a real TaskManager: the plugins' task folders and variants are added to its index, each entry marked "
          "with its plugin; lmms-eval's and --include_path's entries stay as lmms-eval made them",
          "lmms-eval reads tasks only from its own folder and the caller's include_path: nothing puts the plugins' "
          "folders in a TaskManager built by `lmms-eval tasks list`, `python -m lmms_eval` or a user's script",
          "a task entry-point group TaskManager reads",
          ("a337111dbcf5e705299340f5544b400867a1ab2b558b606f54455ee784181641",)),
    Patch("lmms_eval.tasks:TaskManager._get_config", "tasks._get_config",
          "a plugin's index entry (marked by initialize_tasks), or a config that asks for PathBind (a pathbind_ "
          "metadata key, or PathBind's own process_docs/process_results); any other config is returned as "
          "lmms-eval loaded it",
          "PATHBIND_DATA, task variants without a YAML each, and the task and row ledger handed to process_docs, "
          "doc_to_text, process_results and the aggregations (an error naming the task and document; an "
          "aggregation's fault failing its task alone): lmms-eval hands these functions neither their task nor its "
          "config",
          "a config hook per task, and the task passed to its functions",
          ("edf0c290475595e8a65d34a54594caa4cafb22c424cacfa8713463ad26633cf2",)),
    Patch("lmms_eval.api.task:ConfigurableTask.download", "tasks._no_retry",
          "a task whose config the seam built (its functions are PathBind's InTask)",
          "a deterministic build error leaves at once, not after 5 retries, and a load that fails after them "
          "names the task instead of RetryError[<Future>] (this also replaces the former patch of "
          "TaskManager._load_individual_task_or_group); the retry policy is a decorator with no setting",
          "retries for network errors only, and build errors that name their task",
          ("92e6e3e572f19789bf8c901b64432e9283be483904660cb017c5e4443406fbd9",)),
    Patch("lmms_eval.api.task:ConfigurableTask.process_results", "tasks._no_retry",
          "a task whose config the seam built (its functions are PathBind's InTask)",
          "a task function's error names the task and the document at once, not RetryError[<Future>] after 5 "
          "attempts; the retry policy is a decorator with no setting", "retries for transient errors only",
          ("ad6526ca81b9dfaf4d68db74570ad6c8afd77373cf4b4ebf79b3bb6e82df48c0",
           "0a7b58bb2db075d5668934d84a291a184933135a7d148b78ffbe64c12941b576")),
    Patch("lmms_eval.tasks:TaskManager.__init__", "", RELIED_ON, "builds the index initialize_tasks returns",
          "(relied on)", ("f580db828e8ea2b5ea53285d65d564a6b14a9eb625b5e067ba209ba597844940",)),
    Patch("lmms_eval.tasks:TaskManager._get_task_and_group", "", RELIED_ON,
          "reads one folder's YAMLs into index entries (plugin folders, conflict report)", "(relied on)",
          ("eeac30a395937993712475265a5eb97e79a78e3de6363fa9e54f26a1aefbf990",
           "446735b725a647f323a548fad8f7b84902156216d24689782196e341871a6fee")),
    Patch("lmms_eval.evaluator:evaluate", "evaluate._skipping_unsupported",
          "a run with a PathBind task (its functions are PathBind's InTask) or a PathBind model (the class a "
          "plugin's ModelSpec names)",
          "refuse settings no task can honour (--limit 0, --num_fewshot on zero-shot tasks); skip tasks and "
          "conditions the model cannot run, with the reason; add results['pathbind'] (failed tasks, releases); a "
          "PathBind "
          "task's sample lines hold its record once (lmms-eval logs process_results' dict whole: one record per "
          "metric name) and its results no 'N/A' stderr; pair the run with --baseline. lmms-eval has no hook "
          "before or after a run",
          "task requirements a model can decline, and a results extension hook",
          ("17c70978141ea7a5882ea018d739c1dede908615cd6cc42cc2c7bd49d8fc905f",
           "3bfc63133de12c55914b81766455561a1ff9255174631ea7a6cf13548e3bd67e")),
    Patch("lmms_eval.evaluator:simple_evaluate", "", RELIED_ON, "calls evaluate through the module global the "
          "hook replaces; --baseline pairs the samples' per-sample score by doc_id after it",
          "(relied on)", ("1b3c3feda517631d0efde10febef21c839d6323fe34e87ffbe91a7f885892f94",
                          "eb82b9d222eeb699437b70f053ec39c940285cef51c1ec44656a68ae77208cb3")),
    Patch("lmms_eval.utils:make_table", "table._scalars_only",
          "results that PathBind's evaluate marked with results['pathbind']",
          "the console table shows scalar metrics only (wrapped where lmms_eval.__main__ imported it): "
          "make_table prints every metric value, dicts whole",
          "make_table skipping non-scalar values",
          ("9b57aad72e6d74fbb21b5d3f54f87860af9477100c76f1ecd493e857165379f9",)),
    Patch("lmms_eval.__main__:cli_evaluate", "", RELIED_ON, "saves results.json before printing the table; calls "
          "cli_evaluate_single through its module global and catches what it raises", "(relied on)",
          ("3dc4c52220265285dd9cbfac8192d6ca1cb18082b0d4c7b6bebb824cd2a135db",
           "c2449f720c12938671fb2ffa1a86caa18f602f0d3eacd9e5ef2694acaf875d18")),
    Patch("lmms_eval.__main__:cli_evaluate_single", "outcome._recording_failures",
          "every evaluation of PathBind's `lmms_eval` command, the only process it is installed in; it records the "
          "outcome, redacts the credentials of the model arguments cli_evaluate prints, and otherwise passes the "
          "call through unchanged",
          "records a failed evaluation (raised, no task evaluated, no results file, a task failed) for that "
          "command's exit code, with the close names of an unknown task: cli_evaluate catches what an evaluation "
          "raises and returns",
          "a non-zero exit code when an evaluation fails",
          ("b93ab192598fdf168c64902b3165bb27c9ca4ca9ab25686b3b180b2d68daf352",
           "1e1736ff42c739f7f6c52e1d3af691916d68f82ccfb4b0a350a1dc9d1142857e")),
    Patch("lmms_eval.cli.tasks_cmd:run_tasks", "", RELIED_ON, "`lmms-eval tasks list` builds a TaskManager (plugin "
          "tasks listed)", "(relied on)", ("920bfe137fdbb0699eb0b15f0f7253c9865847a281dfa5092eb82926c4dc6bbc",)),
    Patch("lmms_eval.models.registry_v2:ModelRegistryV2.load_entrypoint_manifests", "", RELIED_ON,
          "loads the lmms_eval.models entry point (PathBind's models): lmms-eval's own extension point",
          "(relied on)", ("ebe48be47f6f1552199bff14d0c8355aa9b2a6e89e48cd1a06d2ed0c161d9a6c",)),
    Patch("lmms_eval.caching.response_cache:ResponseCache.create", "cache.resuming_create",
          "a cache for a run of a PathBind model (a plugin's ModelSpec id or alias) or of a PathBind task",
          "a PathBind task's cache keys hold its data's fingerprint; --use_cache with a PathBind model resumes the "
          "answers of runs whose process died: lmms-eval never reads an unfinished run's database",
          "a resumable run id (answers of unfinished runs read back) and the data in the task fingerprint",
          ("4657055a88cd8258cfc74cb25689437277d6455e840786fc11f7ddc24e6043b9",
           "ab02fed9f20230fc8fbc435e8b275f9a498bf99e21ae72904de5f6bdc3320f21")),
    Patch("lmms_eval.caching.response_cache:ResponseCache.execute", "cache.execute_by_unit",
          "requests for a PathBind model (the class a plugin's ModelSpec names) that offers cache_units",
          "answers are stored unit by unit (a batch, an encoded request), not once when the model returns them all",
          "storing each answer as it comes", ("e552c11a2139e999906b828717318dab7c2fdb7274c4bd08b3166215b575a103",)),
    Patch("lmms_eval.caching.response_cache:ResponseCache._is_valid_response", "cache._not_stored",
          "an answer PathBind's models mark as a failure (it starts with MODEL_FAILED)",
          "a model failure is not stored, so a rerun retries it: lmms-eval stores every non-empty answer, and an "
          "empty one would lose the failure's reason the scorers report",
          "a failure marker models can return",
          ("b3d6ad6783051708fe76d8e297c71023a16f550baca2bb7724ac364b4b0c4937",)),
)
HOOKED_SOURCES: dict[str, tuple[str, ...]] = {patch.target: patch.sources for patch in PATCHES}


def source_hash(qualified: str) -> str:
    """sha256 of the source of ``module:qualname`` (lmms-eval's own, under any wrapper PathBind added)."""
    module, _, qualname = qualified.partition(":")
    target: Any = importlib.import_module(module)
    for part in qualname.split("."):
        target = target.__dict__[part] if isinstance(target, type) else getattr(target, part)
    if isinstance(target, (classmethod, staticmethod)):
        target = target.__func__
    return hashlib.sha256(inspect.getsource(inspect.unwrap(target)).encode()).hexdigest()


class IncompatibleLmmsEval(RuntimeError):
    """This lmms-eval is not one PathBind can run on; the message names what changed and what to install."""


@functools.cache
def compatibility_problem() -> str:
    """Why PathBind cannot run on the installed lmms-eval, or "" when it can: every function in the table has a
    source it runs on, whatever the version says. Checked once per process (about 0.1 s)."""
    changed = hooked_sources_changed()
    if not changed:
        return ""
    installed = installed_version("lmms-eval")
    tested = ", ".join(TESTED_LMMS_EVAL)
    return (f"lmms-eval {installed} is not one PathBind runs on (tested: {tested}): lmms-eval functions PathBind "
            f"hooks changed: {', '.join(changed)}. PathBind stops rather than risk a wrong run: install lmms-eval "
            f"{TESTED_LMMS_EVAL[0]} (pip install 'lmms-eval=={TESTED_LMMS_EVAL[0]}') or a PathBind release that "
            f"supports this one")


def require_compatible_lmms_eval() -> None:
    """Raise :class:`IncompatibleLmmsEval` when :func:`compatibility_problem` finds one."""
    problem = compatibility_problem()
    if problem:
        raise IncompatibleLmmsEval(problem)


def hooked_sources_changed() -> list[str]:
    """The functions of the table whose source is none PathBind runs on (or that no longer exist); empty when all
    match."""
    changed = []
    for qualified, accepted in HOOKED_SOURCES.items():
        try:
            found = source_hash(qualified)
        except Exception:
            found = ""
        if found not in accepted:
            changed.append(qualified)
    return changed
