"""Registers PathBind's models, image encoder and model commands with the plugin system."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from pathbind import ModelSpec, hookimpl


@hookimpl
def pathbind_models() -> list[ModelSpec]:
    return [
        ModelSpec("pathbind_control", simple_class_path="pathbind_models.controls.models.PositiveControlModel",
                  description="positive control: answers demo items from the pixels (colour deconvolution, nuclei)"),
        ModelSpec("pathbind_blind", simple_class_path="pathbind_models.controls.models.BlindControlModel",
                  description="negative control: never looks at the image; seeded guess from the text"),
        ModelSpec("pathbind_hf", simple_class_path="pathbind_models.hf.model.HFModel",
                  description="Hugging Face VLM checkpoint (Qwen2/2.5/3-VL, LLaVA-1.5, InternVL, Gemma3, "
                              "Idefics3, SmolVLM) with the row-only attention probe"),
        ModelSpec("pathbind_baseline", simple_class_path="pathbind_models.baseline_model.BaselineModel",
                  description="PathView random-choice (strategy=random) or most-frequent-choice (strategy=frequent) "
                              "baseline, computed from the task's own data"),
        ModelSpec("pathbind_tiny", simple_class_path="pathbind_models.tiny_control.model.TinyControlModel",
                  description="positive control through pathbind_hf: a tiny Qwen2-VL trained on synthetic demo images"),
        ModelSpec("pathbind_tiny_untrained",
                  simple_class_path="pathbind_models.tiny_control.model.UntrainedTinyControlModel",
                  description="negative twin of pathbind_tiny: the same architecture at its seed-0 initialisation"),
    ]


@hookimpl
def pathbind_image_encoders() -> dict[str, Callable[..., object]]:
    from pathbind_models.hf.encoder import ImageEncoder  # imports torch only when an encoder is built

    return {"pathbind_hf": ImageEncoder}


@hookimpl
def pathbind_add_commands(subparsers: argparse._SubParsersAction) -> None:
    from pathbind_models.hf.command import add_make_tiny_model_command  # lazily: no torch for `pathbind --help`
    from pathbind_models.tiny_control.command import add_train_control_command

    add_make_tiny_model_command(subparsers)
    add_train_control_command(subparsers)
