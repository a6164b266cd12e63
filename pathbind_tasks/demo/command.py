"""``pathbind demo-data``: regenerate the synthetic demo set, larger or with another seed."""

from __future__ import annotations

import argparse
from pathlib import Path

from pathbind.data import DATA_ENV


def add_demo_data_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("demo-data", help="write a synthetic demo dataset for PATHBIND_DATA")
    parser.add_argument("--out", type=Path, required=True, help="root folder (use it as PATHBIND_DATA)")
    parser.add_argument("--n", type=int, default=10, help="multiple-choice items per dimension D1-D6 (default 10)")
    parser.add_argument("--n-yes-no", type=int, default=24, help="yes/no items (default 24)")
    parser.add_argument("--seed", type=int, default=0, help="generator seed (default 0, the packaged set)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathbind_tasks.demo.synth import write_demo_data

    if args.n < 1 or args.n_yes_no < 0:
        raise SystemExit("pathbind demo-data: --n must be >= 1 and --n-yes-no >= 0")
    written = write_demo_data(args.out, n_per_dimension=args.n, n_yes_no=args.n_yes_no, seed=args.seed,
                              file_names={"vqa": "pathbind_demo_vqa/test.parquet",
                                          "yesno": "pathbind_demo_yesno/test.parquet"})
    for path in written.values():
        print(f"wrote {path}")
    print(f"use it with: {DATA_ENV}={args.out} lmms_eval --model pathbind_control --tasks pathbind_demo ...")
    return 0
