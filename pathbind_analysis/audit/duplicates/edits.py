"""The edits a near-duplicate must survive (re-encoding, resizing, cropping): what the default thresholds are tuned
on, in `benchmarks/duplicates.py` and the tests."""

from __future__ import annotations

import io

from PIL import Image


def jpeg(image: Image.Image, quality: int) -> Image.Image:
    """The image re-encoded as JPEG at ``quality`` and decoded again."""
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=quality)
    return Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")


def resize(image: Image.Image, factor: float) -> Image.Image:
    """The image scaled by ``factor`` (bicubic)."""
    return image.resize((round(factor * image.width), round(factor * image.height)), Image.Resampling.BICUBIC)


def crop(image: Image.Image, share: float, x: float, y: float) -> Image.Image:
    """Keep ``1 - share`` of each side, placed at (x, y) in 0..1 (0, 0: the top-left corner)."""
    dx, dy = round(share * image.width), round(share * image.height)
    left, top = round(x * dx), round(y * dy)
    return image.crop((left, top, left + image.width - dx, top + image.height - dy))
