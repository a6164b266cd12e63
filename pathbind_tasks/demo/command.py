"""``pathbind demo-data``: regenerate the synthetic demo set, larger or with another seed."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

from pathbind.cli import CommandError
from pathbind.data import DATA_ENV


def add_demo_data_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("demo-data", help="write a synthetic demo dataset for PATHBIND_DATA")
    parser.add_argument("--out", type=Path, required=True, help="root folder (use it as PATHBIND_DATA)")
    parser.add_argument("--n", type=_count(1), default=10,
                        help="multiple-choice items per dimension D1-D6 (default 10)")
    parser.add_argument("--n-yes-no", type=_count(0), default=24, help="yes/no items (default 24)")
    parser.add_argument("--n-pathview", type=_count(0), default=8,
                        help="items per PathView demo task (default 8; 0: none)")
    parser.add_argument("--n-grounding", type=_count(0), default=24, help="grounding items (default 24; 0: none)")
    parser.add_argument("--seed", type=int, default=0, help="generator seed (default 0, the packaged set)")
    parser.set_defaults(func=run)


def _count(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer of at least ``minimum`` (anything else is a usage error, exit 2)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def _check_out(out: Path) -> None:
    """Fail before generating anything when ``--out`` cannot hold the data set."""
    existing = next((p for p in (out, *out.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise CommandError(f"--out {out}: {existing} is a file, not a folder")
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise CommandError(f"--out {out}: {existing} is not writable")


def run(args: argparse.Namespace) -> int:
    from pathbind_tasks.demo.synth import write_demo_data

    _check_out(args.out)
    written = write_demo_data(args.out, n_per_dimension=args.n, n_yes_no=args.n_yes_no, seed=args.seed,
                              file_names={"vqa": "pathbind_demo_vqa/test.parquet",
                                          "yesno": "pathbind_demo_yesno/test.parquet"})
    if args.n_pathview:
        from pathbind_tasks.demo.pathview_synth import DATA_DIR_LAYOUT, write_pathview_data

        written.update(write_pathview_data(args.out, args.n_pathview, args.seed, layout=DATA_DIR_LAYOUT))
    if args.n_grounding:
        from pathbind_tasks.demo.grounding_synth import write_grounding_data

        path = args.out / "pathbind_demo_grounding" / "test.parquet"
        written["grounding"] = write_grounding_data(path, args.n_grounding, args.seed)
    for path in written.values():
        print(f"wrote {path}")
    print(f"use it with: {DATA_ENV}={args.out} lmms_eval --model pathbind_control --tasks pathbind_demo ...")
    return 0
