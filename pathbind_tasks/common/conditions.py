"""Evaluation conditions: each item asked with its image and again without it."""

from __future__ import annotations

import datasets

CONDITIONS = ("image", "text")


def with_and_without_image(dataset: datasets.Dataset) -> datasets.Dataset:
    """Every document twice, tagged ``condition`` "image" then "text"; only the image is withheld."""
    return datasets.concatenate_datasets(
        [dataset.add_column("condition", [condition] * len(dataset)) for condition in CONDITIONS]
    )


def image_only(dataset: datasets.Dataset) -> datasets.Dataset:
    """Every document once, with its image (the quick variant: no Multimodal Gain)."""
    return dataset.add_column("condition", ["image"] * len(dataset))
