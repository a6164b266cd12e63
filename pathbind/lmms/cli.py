"""The ``lmms_eval`` command PathBind installs: lmms-eval's own command line, exiting 1 when an evaluation failed.

lmms-eval's ``cli_evaluate`` catches whatever an evaluation raises, logs "Error during evaluation" and returns, so
its own ``lmms-eval`` and ``python -m lmms_eval`` exit 0 on a run that produced nothing. The seam records each
evaluation's outcome where lmms-eval's CLI runs it (:mod:`pathbind.lmms.outcome`, installed by this command
alone), and :func:`main` turns a recorded failure into exit code 1 with its one-line cause as the last line of
output.
"""

from __future__ import annotations

import sys

from pathbind.lmms import outcome
from pathbind.lmms.watch import watch_lmms_eval, when_defined


def main() -> None:
    """Run lmms-eval's command line; exit 1, naming the cause last, when an evaluation it ran failed."""
    watch_lmms_eval()
    when_defined("lmms_eval.__main__", "cli_evaluate_single", outcome.install_outcome_hook)
    from lmms_eval.cli.dispatch import main as lmms_eval_main

    try:
        lmms_eval_main()
    except SystemExit as done:
        if done.code not in (None, 0):
            raise
    if outcome.FAILED:
        sys.stdout.flush()
        for cause in outcome.FAILED:
            print(f"lmms_eval: error: {cause}", file=sys.stderr, flush=True)
        sys.exit(1)
