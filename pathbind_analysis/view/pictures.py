"""The site's pictures, each written once: a bounded WebP thumbnail per distinct image, a small PNG heat-map overlay
per model, item and layer set (the browser scales it over the thumbnail)."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path
from typing import Any

import numpy as np

# A thumbnail's longest side and WebP quality: nuclei stay distinct while 5,000 thumbnails of demo tiles take ~14 MiB
# (2.9 KiB each; 4.1 KiB on a real IHC field, where 192-pixel JPEG at quality 70 took 6.5 and 8.2 KiB).
THUMB = 176
WEBP_QUALITY = 50
WEBP_METHOD = 6  # libwebp's slowest, smallest encoding: ~10 ms a thumbnail, 5% below its default
OVERLAY = 64  # the longest side of an overlay: heat maps are smooth (a 16×16 to 32×32 grid), scaled up in the page


class Pictures:
    """Writes thumbnails and overlays below ``out``, naming each by its content: an image seen again (another task,
    model or condition) is written once."""

    def __init__(self, out: Path) -> None:
        self.out = out
        (out / "thumbs").mkdir(parents=True, exist_ok=True)
        (out / "overlays").mkdir(parents=True, exist_ok=True)

    def thumbnail(self, image: Any) -> str:
        """The thumbnail's path relative to the site, for a PIL image or the bytes of one."""
        from pathbind_tasks.common.images import rgb_image

        picture = rgb_image(image).copy()
        picture.thumbnail((THUMB, THUMB))
        buffer = io.BytesIO()
        picture.save(buffer, format="WEBP", quality=WEBP_QUALITY, method=WEBP_METHOD)
        return self._write("thumbs", buffer.getvalue(), "webp")

    def overlay(self, heat: np.ndarray) -> str:
        """A heat map in [0, 1] (image-sized) as a translucent jet-coloured PNG of at most ``OVERLAY`` pixels a side;
        more attention is more opaque, so the tissue stays visible under a cold map."""
        from matplotlib import colormaps
        from PIL import Image

        scale = OVERLAY / max(heat.shape)
        size = (max(1, round(heat.shape[1] * scale)), max(1, round(heat.shape[0] * scale)))
        small = np.asarray(Image.fromarray(heat.astype(np.float32), mode="F").resize(size, Image.Resampling.BOX))
        rgba = colormaps["jet"](np.clip(small, 0.0, 1.0))
        rgba[..., 3] = 0.25 + 0.45 * np.clip(small, 0.0, 1.0)
        buffer = io.BytesIO()
        Image.fromarray((255 * rgba).round().astype(np.uint8), mode="RGBA").save(buffer, format="PNG", optimize=True)
        return self._write("overlays", buffer.getvalue(), "png")

    def _write(self, folder: str, data: bytes, suffix: str) -> str:
        name = f"{folder}/{hashlib.sha1(data).hexdigest()[:20]}.{suffix}"
        if not (self.out / name).exists():
            (self.out / name).write_bytes(data)
        return name
