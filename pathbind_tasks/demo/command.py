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
    parser.add_argument("--n-pathview", type=int, default=8, help="items per PathView demo task (default 8; 0: none)")
    parser.add_argument("--n-grounding", type=int, default=24, help="grounding items (default 24; 0: none)")
    parser.add_argument("--seed", type=int, default=0, help="generator seed (default 0, the packaged set)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathbind_tasks.demo.synth import write_demo_data

    if args.n < 1 or min(args.n_yes_no, args.n_pathview, args.n_grounding) < 0:
        raise SystemExit("pathbind demo-data: --n must be >= 1, --n-yes-no, --n-pathview and --n-grounding >= 0")
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
