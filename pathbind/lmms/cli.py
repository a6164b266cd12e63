"""The ``lmms_eval`` command PathBind installs: lmms-eval's own command line, exiting 1 when an evaluation failed.

lmms-eval's ``cli_evaluate`` catches whatever an evaluation raises, logs "Error during evaluation" and returns, so
its own ``lmms-eval`` and ``python -m lmms_eval`` exit 0 on a run that produced nothing. The seam records each
evaluation's outcome where lmms-eval's CLI runs it (:func:`install_outcome_hook`, on ``cli_evaluate_single``), and
:func:`main` turns a recorded failure into exit code 1 with its one-line cause as the last line of output.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Any

from pathbind.lmms.tasks import HOOK_MARK
from pathbind.lmms.watch import watch_lmms_eval

_FAILED: list[str] = []  # the causes of this process's failed evaluations, in order


def main() -> None:
    """Run lmms-eval's command line; exit 1, naming the cause last, when an evaluation it ran failed."""
    watch_lmms_eval()
    from lmms_eval.cli.dispatch import main as lmms_eval_main

    try:
        lmms_eval_main()
    except SystemExit as done:
        if done.code not in (None, 0):
            raise
    if _FAILED:
        sys.stdout.flush()
        for cause in _FAILED:
            print(f"lmms_eval: error: {cause}", file=sys.stderr, flush=True)
        sys.exit(1)


def install_outcome_hook() -> bool:
    """Record the outcome of each evaluation lmms-eval's CLI runs (``cli_evaluate_single``, looked up as a module
    global by ``cli_evaluate``); idempotent."""
    module = sys.modules.get("lmms_eval.__main__")
    original = getattr(module, "cli_evaluate_single", None)
    if original is None or getattr(original, HOOK_MARK, False):
        return original is not None
    module.cli_evaluate_single = _recording_failures(original)  # type: ignore[union-attr]
    return True


def _recording_failures(original: Any) -> Any:
    @functools.wraps(original)
    def cli_evaluate_single(args: Any = None) -> Any:
        before = _results_files(args)
        try:
            outcome = original(args)
        except Exception as exc:  # lmms-eval's cli_evaluate logs it, prints the traceback and goes on
            _FAILED.append(_one_line(f"{type(exc).__name__}: {exc}"))
            raise
        cause = _failure(outcome[0] if isinstance(outcome, tuple) else None, args, before)
        if cause:
            _FAILED.append(cause)
        return outcome

    setattr(cli_evaluate_single, HOOK_MARK, True)
    return cli_evaluate_single


def _failure(results: dict | None, args: Any, before: dict[Path, int]) -> str:
    """Why an evaluation that returned is a failure, or "": rank 0 got no results, no task was evaluated (each
    skipped, with its reason), or no results file was written under ``--output_path``."""
    if results is None:  # every rank but 0 gets None: rank 0 holds the results
        return "" if int(os.environ.get("RANK", 0)) else "lmms-eval returned no results"
    if not results.get("results"):
        skipped = ((results.get("pathbind") or {}).get("skipped_tasks") or {}).values()
        return _one_line("no task was evaluated" + "".join(f"; {reason}" for reason in skipped))
    output = getattr(args, "output_path", None)
    if output and _results_files(args).items() <= before.items():
        return f"no results file was written under {output} (lmms-eval's log says why)"
    return ""


def _results_files(args: Any) -> dict[Path, int]:
    """The ``*_results.json`` files under ``--output_path`` and their modification times (nothing without one)."""
    output = getattr(args, "output_path", None)
    if not output or not Path(output).is_dir():
        return {}
    return {path: path.stat().st_mtime_ns for path in Path(output).rglob("*_results.json")}


def _one_line(text: str) -> str:
    return " ".join(text.split())
