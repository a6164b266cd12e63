"""The outcome of each evaluation lmms-eval's CLI runs, for the ``lmms_eval`` command's exit code
(:mod:`pathbind.lmms.cli`), and the check, before each, that its ``--baseline`` can be read.

lmms-eval's ``cli_evaluate`` catches whatever an evaluation raises, logs "Error during evaluation" and returns, so
its own ``lmms-eval`` and ``python -m lmms_eval`` exit 0 on a run that produced nothing. PathBind's ``lmms_eval``
command records each evaluation's failure where lmms-eval's CLI runs it (:func:`install_outcome_hook`, on
``cli_evaluate_single``, in that command's process only); the evaluation itself is lmms-eval's, call for call.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Any

from loguru import logger

from pathbind.lmms.marks import mark, marked
from pathbind.lmms.names import unknown_tasks
from pathbind.lmms.redact import redact_model_args

FAILED: list[str] = []  # the causes of this process's failed evaluations, in order


def install_outcome_hook() -> bool:
    """Record the outcome of each evaluation lmms-eval's CLI runs (``cli_evaluate_single``, looked up as a module
    global by ``cli_evaluate``); idempotent."""
    module = sys.modules.get("lmms_eval.__main__")
    original = getattr(module, "cli_evaluate_single", None)
    if original is None or marked(original):
        return original is not None
    module.cli_evaluate_single = _recording_failures(original)  # type: ignore[union-attr]
    return True


def _recording_failures(original: Any) -> Any:
    @functools.wraps(original)
    def cli_evaluate_single(args: Any = None) -> Any:
        from pathbind.lmms.baseline import require_readable_baseline

        before = _results_files(args)
        try:
            require_readable_baseline(getattr(args, "baseline", None))  # before the model loads
            outcome = original(args)
        except Exception as exc:  # lmms-eval's cli_evaluate logs it, prints the traceback and goes on
            FAILED.append(_unknown_tasks(args) or _one_line(f"{type(exc).__name__}: {exc}"))
            raise
        finally:  # lmms-eval's cli_evaluate prints the model arguments in its header
            if args is not None and hasattr(args, "model_args"):
                args.model_args = redact_model_args(args.model_args)
        cause = _failure(outcome[0] if isinstance(outcome, tuple) else None, args, before)
        if cause:
            FAILED.append(cause)
        return outcome

    mark(cli_evaluate_single)
    return cli_evaluate_single


def _failure(results: dict | None, args: Any, before: dict[Path, int]) -> str:
    """Why an evaluation that returned is a failure, or "": rank 0 got no results, no task was evaluated (each
    skipped, with its reason), no results file was written under ``--output_path``, or a task failed (the others
    are in the results)."""
    if results is None:  # every rank but 0 gets None: rank 0 holds the results
        return "" if int(os.environ.get("RANK", 0)) else "lmms-eval returned no results"
    report = results.get("pathbind") or {}
    if not results.get("results"):
        skipped = (report.get("skipped_tasks") or {}).values()
        return _one_line("no task was evaluated" + "".join(f"; {reason}" for reason in skipped))
    output = getattr(args, "output_path", None)
    if output and _results_files(args).items() <= before.items():
        return f"no results file was written under {output} (lmms-eval's log says why)"
    failed = report.get("failed_tasks") or {}
    return _one_line("; ".join(f"task {task} failed: {cause}" for task, cause in failed.items()))


def _unknown_tasks(args: Any) -> str:
    """The ``--tasks`` names lmms-eval did not find, with close ones (:mod:`pathbind.lmms.names`), logged; "" when
    every name exists (the evaluation failed for another reason)."""
    tasks, include = getattr(args, "tasks", None), getattr(args, "include_path", None)
    if not isinstance(tasks, str) or tasks.startswith("list"):
        return ""
    try:
        cause = unknown_tasks(tasks.split(","), [include] if isinstance(include, str) else include or [])
    except Exception:  # lmms-eval's own message stands
        return ""
    if cause:
        logger.error(f"pathbind: {cause}")
    return cause


def _results_files(args: Any) -> dict[Path, int]:
    """The ``*_results.json`` files under ``--output_path`` and their modification times (nothing without one)."""
    output = getattr(args, "output_path", None)
    if not isinstance(output, str) or not Path(output).is_dir():  # reads nothing else of the arguments
        return {}
    return {path: path.stat().st_mtime_ns for path in Path(output).rglob("*_results.json")}


def _one_line(text: str) -> str:
    return " ".join(text.split())
