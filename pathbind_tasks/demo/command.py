"""``pathbind demo-data``: regenerate the synthetic demo set, larger or with another seed."""

from __future__ import annotations

import argparse
from pathlib import Path

from pathbind.data import DATA_ENV

TASK_FILES = {"pathbind_demo_vqa": "vqa.parquet", "pathbind_demo_yesno": "yesno.parquet"}


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
    staging = args.out / ".staging"
    written = write_demo_data(staging, n_per_dimension=args.n, n_yes_no=args.n_yes_no, seed=args.seed)
    by_name = {path.name: path for path in written.values()}
    for task, filename in TASK_FILES.items():
        (args.out / task).mkdir(parents=True, exist_ok=True)
        by_name[filename].replace(args.out / task / "test.parquet")
        print(f"wrote {args.out / task / 'test.parquet'}")
    staging.rmdir()
    print(f"use it with: {DATA_ENV}={args.out} lmms_eval --model pathbind_control --tasks pathbind_demo ...")
    return 0
