"""The ``lmms_eval`` command PathBind installs: lmms-eval's own command line, exiting 1 when an evaluation failed.

lmms-eval's ``cli_evaluate`` catches whatever an evaluation raises, logs "Error during evaluation" and returns, so
its own ``lmms-eval`` and ``python -m lmms_eval`` exit 0 on a run that produced nothing. The seam records each
evaluation's outcome where lmms-eval's CLI runs it (:mod:`pathbind.lmms.outcome`, installed by this command
alone), and :func:`main` turns a recorded failure into exit code 1 with its one-line cause as the last line of
output. Before lmms-eval starts, :func:`main` refuses a ``--tasks`` name lmms-eval would not find, naming the close
ones (:mod:`pathbind.lmms.names`), and writes everything the run prints with the credentials of ``--model_args``
redacted (:mod:`pathbind.lmms.redact`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pathbind.lmms import outcome
from pathbind.lmms.redact import RedactingStream, redact, secret_values
from pathbind.lmms.watch import watch_lmms_eval, when_defined


def main() -> None:
    """Run lmms-eval's command line; exit 1, naming the cause last, when an evaluation it ran failed."""
    secrets = _redact_output(sys.argv[1:])
    watch_lmms_eval()
    when_defined("lmms_eval.__main__", "cli_evaluate_single", outcome.install_outcome_hook)
    unknown = _unknown_tasks(sys.argv[1:])
    if unknown:
        print(f"lmms_eval: error: {unknown}", file=sys.stderr, flush=True)
        sys.exit(1)
    from lmms_eval.cli.dispatch import main as lmms_eval_main

    try:
        lmms_eval_main()
    except SystemExit as done:
        if done.code not in (None, 0):
            raise
    if outcome.FAILED:
        sys.stdout.flush()
        for cause in outcome.FAILED:
            print(f"lmms_eval: error: {redact(cause, secrets)}", file=sys.stderr, flush=True)
        sys.exit(1)


def _evaluation_args(argv: Sequence[str]) -> argparse.Namespace | None:
    """``--tasks``, ``--include_path``, ``--model_args`` and ``--config`` of an evaluation's command line (the flat
    form or ``eval``), or None for another subcommand. Abbreviations are not read: lmms-eval then decides alone."""
    if argv and not argv[0].startswith("-") and argv[0] != "eval":
        return None
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for option in ("--tasks", "--include_path", "--model_args", "--config"):
        parser.add_argument(option)
    return parser.parse_known_args(argv[1:] if argv and argv[0] == "eval" else argv)[0]


def _redact_output(argv: Sequence[str]) -> list[str]:
    """Redact the credentials of ``--model_args`` from everything this process prints; returns them."""
    args = _evaluation_args(argv)
    secrets = secret_values(args.model_args) if args is not None else []
    if secrets:
        sys.stdout = RedactingStream(sys.stdout, secrets)  # type: ignore[assignment]
        sys.stderr = RedactingStream(sys.stderr, secrets)  # type: ignore[assignment]
    return secrets


def _unknown_tasks(argv: Sequence[str]) -> str:
    """Why ``--tasks`` names a task lmms-eval would not find, with the close names, or "" (also when the question
    cannot be answered here: lmms-eval then decides as it would have)."""
    from loguru import logger

    from pathbind.lmms.names import unknown_tasks

    args = _evaluation_args(argv)
    if args is None or not args.tasks or args.config or args.tasks.startswith("list"):
        return ""
    try:
        return unknown_tasks(args.tasks.split(","), [args.include_path] if args.include_path else [])
    except Exception:
        logger.opt(exception=True).debug("pathbind: could not check the task names before the run")
        return ""
