"""Registers PathBind's models with the plugin system."""

from __future__ import annotations

from pathbind import ModelSpec, hookimpl


@hookimpl
def pathbind_models() -> list[ModelSpec]:
    return [
        ModelSpec("pathbind_control", simple_class_path="pathbind_models.controls.models.PositiveControlModel",
                  description="positive control: answers demo items from the pixels (colour deconvolution, nuclei)"),
        ModelSpec("pathbind_blind", simple_class_path="pathbind_models.controls.models.BlindControlModel",
                  description="negative control: never looks at the image; seeded guess from the text"),
    ]
