"""``pathbind train-control``: retrain the tiny control checkpoint (and write its untrained twin)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_train_control_command(subparsers: argparse._SubParsersAction) -> None:
    from pathbind_models.tiny_control.settings import Settings  # torch-free: `pathbind --help` stays fast

    default = Settings()
    parser = subparsers.add_parser(
        "train-control", help="train the tiny Qwen2-VL control (pathbind_tiny) on synthetic demo images")
    parser.add_argument("--out", type=Path, required=True,
                        help="folder to write: OUT/pathbind_tiny and OUT/pathbind_tiny_untrained")
    parser.add_argument("--seed", type=int, default=default.seed, help=f"training data seed (default {default.seed}; "
                        "the weights always start from the seed-0 initialisation)")
    parser.add_argument("--steps", type=int, default=default.steps, help=f"optimiser steps (default {default.steps})")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (default 1, as the shipped weights were trained: weights depend on it)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import time

    import torch

    from pathbind_models.tiny_control.card import write_card, write_untrained_card
    from pathbind_models.tiny_control.settings import Settings
    from pathbind_models.tiny_control.train import build, train

    torch.set_num_threads(args.threads)
    settings = Settings(seed=args.seed, steps=args.steps)
    trained, untrained = args.out / "pathbind_tiny", args.out / "pathbind_tiny_untrained"
    started = time.time()
    history = train(settings, out=trained, untrained_out=untrained)
    parameters = sum(p.numel() for p in build()[0].parameters())
    write_card(trained, settings, history, parameters, (time.time() - started) / 60)
    write_untrained_card(untrained)
    print(f"wrote {trained} and {untrained}")
    print(f"evaluate with: lmms_eval --model pathbind_hf --model_args pretrained={trained} --tasks pathbind_demo_yesno")
    return 0
