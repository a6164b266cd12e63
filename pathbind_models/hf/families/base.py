"""What each model family module declares: its image-token layout, native box frame and tiny image grid."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import torch

    from pathbind_models.hf.views import View

    # (model config, processor, processed inputs of one image, image-token positions, image (W, H)) -> views
    Layout = Callable[[Any, Any, dict[str, torch.Tensor], np.ndarray, tuple[int, int]], list[View]]


@dataclass(frozen=True)
class ImageGrid:
    """How one 224×224 image reaches a tiny model's decoder: grids of ``rows``×``cols`` image tokens, one per crop.

    ``tiles`` is the arrangement of local crops (row-major), ``global_view`` a downscaled whole image after them.
    """

    rows: int
    cols: int
    tiles: tuple[int, int] = (1, 1)
    global_view: bool = False

    @property
    def num_grids(self) -> int:
        return self.tiles[0] * self.tiles[1] + int(self.global_view)

    @property
    def num_tokens(self) -> int:
        return self.rows * self.cols * self.num_grids

    def describe(self) -> str:
        grid = f"{self.rows}×{self.cols} image tokens"
        if self.num_grids == 1:
            return f"{grid} ({self.num_tokens})"
        crops = f"{self.tiles[0]}×{self.tiles[1]} tiles" + (" + a global image" if self.global_view else "")
        return f"{crops}, each {grid} ({self.num_tokens} in all)"


@dataclass(frozen=True)
class ModelFamily:
    """A model family: how its image tokens form views, the frame it writes boxes in, and the image-token grid of
    its tiny checkpoint (built by ``pathbind_models.hf.tiny_checkpoints``)."""

    name: str
    model_types: tuple[str, ...]  # the config.model_type values it serves
    layout: Layout
    # The frame the model writes boxes in, whatever the prompt asks (pathbind_models.hf.frames): "per_mille"
    # (0–1000), "input_pixel" (pixels of the resized input), None when undocumented (taken to follow the prompt).
    native_box_frame: str | None
    tiny_grid: ImageGrid  # what its tiny checkpoint's processor makes of a 224×224 image
    # Where the vision blocks hold the merged patch groups in another order than the processor's (Qwen2.5-VL's
    # windows): (config, processed inputs) -> the processor's group index of each group the blocks hold.
    vision_order: Callable[[Any, dict[str, torch.Tensor]], np.ndarray] | None = None
