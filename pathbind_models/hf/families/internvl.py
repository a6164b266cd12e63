"""InternVL: a row-major canvas of tiles, then a thumbnail; boxes in thousandths; its chat template."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pathbind_models.hf.families.base import ImageGrid, ModelFamily
from pathbind_models.hf.views import View, square_grid

if TYPE_CHECKING:
    import numpy as np
    import torch


def layout(config: Any, processor: Any, inputs: dict[str, torch.Tensor], positions: np.ndarray,
           image_size: tuple[int, int]) -> list[View]:
    """The columns×rows tiles ``crop_to_patches`` cut, row-major, then a thumbnail of the whole image; one view when
    the image fits one tile."""
    from transformers.models.got_ocr2.image_processing_got_ocr2 import get_optimal_tiled_canvas

    tiles = len(inputs["pixel_values"])
    per_tile = len(positions) // tiles
    if tiles == 1:
        return [View(0, square_grid(per_tile), None)]
    images = processor.image_processor
    size = images.size if isinstance(images.size, dict) else vars(images.size)
    width, height = image_size
    columns, rows = get_optimal_tiled_canvas((height, width), (size["height"], size["width"]),
                                             images.min_patches, images.max_patches)
    if columns * rows != tiles - 1:
        raise ValueError(f"InternVL gave {tiles} tiles, expected {columns}×{rows} plus a thumbnail")
    grid = square_grid(per_tile)
    views = [View(i * per_tile, grid, divmod(i, columns)) for i in range(tiles - 1)]
    return [*views, View((tiles - 1) * per_tile, grid, None)]


TEMPLATE = (  # the family's own chat template
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' %}{{ '<IMG_CONTEXT>\n' }}{% elif content['type'] == 'video' %}"
    "{{ '<video>\n' }}{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}{% endfor %}{% endif %}"
    "{{ '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


FAMILY = ModelFamily("internvl", ("internvl",), layout, "per_mille", ImageGrid(8, 8))
