"""``pathbind make-tiny-model``: write a tiny random model of a real VLM architecture for offline tests."""

from __future__ import annotations

import argparse
from pathlib import Path

from pathbind_models.hf.families import NAMES  # does not import torch: `pathbind --help` stays fast


def add_make_tiny_model_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "make-tiny-model", help="write a tiny random VLM (real architecture, processor, chat template) for tests")
    parser.add_argument("family", choices=NAMES, help="architecture family")
    parser.add_argument("out_dir", type=Path, help="folder to write (loads with from_pretrained, offline)")
    parser.add_argument("--seed", type=int, default=0, help="weight initialisation seed (default 0)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathbind_models.hf.tiny_checkpoints import image_grid, make_tiny_model

    out = make_tiny_model(args.family, args.out_dir, seed=args.seed)
    print(f"wrote a tiny {args.family} model to {out}")
    print(f"a 224×224 image becomes {image_grid(args.family).describe()}")
    print(f"use it with: lmms_eval --model pathbind_hf --model_args pretrained={out} ...")
    return 0
