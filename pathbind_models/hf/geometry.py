"""Which rectangle of the original image a checkpoint's image tokens cover, from its image processor's settings.

Aspect-preserving or stretching resizes (Qwen ``smart_resize``, Gemma3, InternVL and Idefics3/SmolVLM tiles of a
resized image) keep the whole image in view. A centre crop (CLIP, as LLaVA-1.5 uses: the short side is resized to
336, then the middle 336×336 is kept) shows the model only part of it: on a 512×256 image, x = 128…384. The
rectangle is computed with transformers' own resize rules and checked against the processed pixels.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

Box = tuple[float, float, float, float]


def view_box(processor: Any, inputs: dict[str, torch.Tensor], image_size: tuple[int, int]) -> Box:
    """``(x_min, y_min, x_max, y_max)`` in original pixels of the part of the image the model sees."""
    images = processor.image_processor
    width, height = image_size
    if getattr(images, "do_pan_and_scan", False):
        raise ValueError("pan-and-scan crops are not mapped to the image yet; load the processor with "
                         "do_pan_and_scan=False to measure attention")
    if not getattr(images, "do_center_crop", False):
        return 0.0, 0.0, float(width), float(height)
    resized = resized_shape(images, height, width) if getattr(images, "do_resize", True) else (height, width)
    crop = (_get(images.crop_size, "height"), _get(images.crop_size, "width"))
    processed = tuple(inputs["pixel_values"].shape[-2:])
    if processed != crop:
        raise ValueError(f"processed image is {processed[1]}×{processed[0]}, expected the {crop[1]}×{crop[0]} "
                         f"centre crop of {type(images).__name__}")
    top, left = (_crop_offset(size, kept) for size, kept in zip(resized, crop, strict=True))
    scale_y, scale_x = height / resized[0], width / resized[1]
    return left * scale_x, top * scale_y, (left + crop[1]) * scale_x, (top + crop[0]) * scale_y


def resized_shape(images: Any, height: int, width: int) -> tuple[int, int]:
    """(H, W) after the processor's resize, by the rules of transformers' image-processing backends."""
    from transformers.image_transforms import get_resize_output_image_size, get_size_with_aspect_ratio
    from transformers.image_utils import ChannelDimension

    size = images.size
    shortest, longest = _get(size, "shortest_edge"), _get(size, "longest_edge")
    if shortest and longest:
        resized = get_size_with_aspect_ratio((height, width), shortest, longest)
    elif shortest:
        shape_only = np.broadcast_to(np.zeros((), np.uint8), (3, height, width))
        resized = get_resize_output_image_size(shape_only, size=shortest, default_to_square=False,
                                               input_data_format=ChannelDimension.FIRST)
    elif _get(size, "height") and _get(size, "width"):
        resized = (_get(size, "height"), _get(size, "width"))
    else:
        raise ValueError(f"{type(images).__name__}: cannot place a centre crop after resizing to {size}")
    return int(resized[0]), int(resized[1])


def _crop_offset(size: int, kept: int) -> int:
    """Where a centre crop of ``kept`` starts along a side of ``size`` (negative: the side is padded first)."""
    if kept > size:
        return -((kept - size) // 2)
    return int((size - kept) / 2.0)


def _get(size: Any, key: str) -> Any:
    return size.get(key) if isinstance(size, dict) else getattr(size, key, None)
