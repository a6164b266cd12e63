"""Item images: one strict check before any model call, one conversion to the 8-bit RGB every model is shown.

Every task family shows its images through :func:`rgb_image`. The check (:func:`image_problem`, run by
``conditions.with_readable_images``) reads the pixel count from the header before decoding, then decodes the
whole file exactly as ``datasets`` will, with truncation detection on whatever lmms-eval set globally, and
converts it: an image that fails drops its item (a fault of the data, counted in ``accounting``), never
shown half-read, downscaled or white. An image of several frames (an animated GIF, a multi-page TIFF) is refused
the same way: a model is shown one picture, and which frame it would be is not left unsaid.

High bit depths map to 8 bits by their declared range, not by the image's own minimum and maximum: a 16-bit
value ``v`` becomes ``round(v / 257)``, so a dim image stays dim and two images of one scanner stay comparable
(stretching would turn a faint, nearly empty field into a high-contrast one). A TIFF's BitsPerSample declares
the range (e.g. 12 bits: ``v * 255 / 4095``); floating-point pixels have a range only where the TIFF declares
SMinSampleValue and SMaxSampleValue, and are otherwise invalid.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import datasets
import numpy as np
from PIL import Image, ImageFile

from pathbind.faults import Fault
from pathbind.model_inputs import size_fault

MAX_PIXELS_ENV = "PATHBIND_MAX_IMAGE_PIXELS"
# 10,000 x 10,000: far above the few megapixels of any published pathology VQA image, and small enough that
# the decoded RGB copy (300 MB), its conversions and a blur stay near 1 GB, well inside a 4 GB worker.
DEFAULT_MAX_PIXELS = 100_000_000

_BITS_PER_SAMPLE, _SAMPLE_FORMAT, _SMIN, _SMAX = 258, 339, 340, 341  # TIFF tags
NO_IMAGE = "no image"
# A GIF, TIFF, APNG or WebP of several frames: which one a model would be shown is not the data's to leave unsaid.
# (A camera's MPO file is one picture with previews of it: its first frame is the picture.)
SEVERAL_FRAMES = "image has several frames"
_IN_MEMORY = re.compile(r"<_io\.BytesIO object at 0x[0-9a-fA-F]+>")
_SIXTEEN_BIT = ("I;16", "I;16B", "I;16L", "I;16N")


def max_pixels() -> int:
    """The largest image (width x height) accepted: ``$PATHBIND_MAX_IMAGE_PIXELS``, else 100,000,000."""
    value = os.environ.get(MAX_PIXELS_ENV, "").strip()
    if not value:
        return DEFAULT_MAX_PIXELS
    try:
        limit = int(float(value))
    except ValueError:
        limit = 0
    if limit <= 0:
        raise ValueError(f"{MAX_PIXELS_ENV}={value!r} is not a positive number of pixels")
    return limit


def rgb_image(image: Image.Image | dict[str, Any] | bytes | str) -> Image.Image:
    """The image as 8-bit RGB: what ``doc["image"]`` holds (a PIL image, or ``{bytes, path}``, bytes, a path).

    Use it in every ``doc_to_visual`` instead of ``doc["image"].convert("RGB")``, which turns 16-bit pixels
    white. Raises ``ValueError`` for pixels without a declared range or outside it.
    """
    if isinstance(image, Image.Image):
        decoded = image
    else:
        with _pil_limit_at_least(_limit_or_default()):
            decoded = datasets.Image().decode_example(_encoded(image))
    if decoded.mode in (*_SIXTEEN_BIT, "I", "F"):
        return _to_8_bit(decoded).convert("RGB")
    return decoded.convert("RGB")


def image_problem(value: dict[str, Any] | None, limit: int) -> Fault | None:
    """Why the encoded image ``{bytes, path}`` cannot be shown to a model, or None when it can."""
    source = _source(value)
    if source is None:
        return Fault(NO_IMAGE)
    try:
        with _strict_decoding(), Image.open(source) as header:
            width, height = header.size
            frames = getattr(header, "n_frames", 1) if header.format != "MPO" else 1
        if width * height > limit:
            return Fault("image too large", f"{width}x{height} = {width * height:,} pixels; the limit is {limit:,}, "
                                            f"set by {MAX_PIXELS_ENV}")
        if frames > 1:
            return Fault(SEVERAL_FRAMES, f"{header.format}, {frames} frames; save the one to show as its own file")
        if refused := size_fault(width, height, limit):  # the run's model, before it is charged with the image
            return refused
        with _strict_decoding():
            rgb_image(datasets.Image().decode_example(value))
        return None
    except FileNotFoundError as exc:
        return Fault("image file not found", str(exc.filename or source))
    except Exception as exc:  # any decoding failure drops the item (a fault of the data), never fails the run
        truncated = "truncated" in str(exc) and isinstance(exc, OSError)
        detail = _IN_MEMORY.sub("(embedded bytes)", str(exc))  # no memory address: reasons are reproducible
        return Fault("unreadable image", f"{'truncated file; ' if truncated else ''}{type(exc).__name__}: {detail}")


def image_key(value: dict[str, Any] | None) -> str:
    """A digest of the encoded image's bytes (its file's, for a path): items asked about one image share it."""
    source = _source(value)
    if isinstance(source, str):
        with open(source, "rb") as handle:
            return hashlib.blake2b(handle.read(), digest_size=16).hexdigest()
    return hashlib.blake2b(source.getvalue() if source else b"", digest_size=16).hexdigest()


def _source(value: dict[str, Any] | None) -> io.BytesIO | str | None:
    """What ``datasets`` decodes: the bytes where there are any (even empty), else the path."""
    if not value:
        return None
    if value.get("bytes") is not None:
        return io.BytesIO(value["bytes"])
    return value.get("path") or None


def _encoded(value: dict[str, Any] | bytes | str) -> dict[str, Any]:
    if isinstance(value, bytes | bytearray):
        return {"bytes": bytes(value), "path": None}
    if isinstance(value, str):
        return {"bytes": None, "path": value}
    return {"bytes": value.get("bytes"), "path": value.get("path")}


def _limit_or_default() -> int:
    try:
        return max_pixels()
    except ValueError:  # the check (image_problem's caller) reports a bad setting; decoding keeps the default
        return DEFAULT_MAX_PIXELS


@contextmanager
def _pil_limit_at_least(limit: int) -> Iterator[None]:
    """PIL's own decompression-bomb guard (an error above ~179 MP) raised to our limit where that is higher: an
    image the check accepted under a larger $PATHBIND_MAX_IMAGE_PIXELS decodes instead of raising."""
    bomb = Image.MAX_IMAGE_PIXELS
    if bomb is not None and bomb < limit:
        Image.MAX_IMAGE_PIXELS = limit
    try:
        yield
    finally:
        Image.MAX_IMAGE_PIXELS = bomb


@contextmanager
def _strict_decoding() -> Iterator[None]:
    """Truncated files raise (lmms-eval sets LOAD_TRUNCATED_IMAGES for all), and our pixel limit replaces PIL's."""
    truncated, bomb = ImageFile.LOAD_TRUNCATED_IMAGES, Image.MAX_IMAGE_PIXELS
    ImageFile.LOAD_TRUNCATED_IMAGES, Image.MAX_IMAGE_PIXELS = False, None
    try:
        yield
    finally:
        ImageFile.LOAD_TRUNCATED_IMAGES, Image.MAX_IMAGE_PIXELS = truncated, bomb


def _declared_range(image: Image.Image) -> tuple[float, float]:
    """The pixel range the file declares: its bit depth (16 for a 16-bit mode), or a TIFF's sample range."""
    tags: Any = getattr(image, "tag_v2", {})
    if image.mode == "F":
        if _SMIN in tags and _SMAX in tags:
            low, high = float(np.min(tags[_SMIN])), float(np.max(tags[_SMAX]))
            if high > low:
                return low, high
        raise ValueError("floating-point pixels (mode F) without a declared range (TIFF SMinSampleValue below "
                         "SMaxSampleValue)")
    if _SAMPLE_FORMAT in tags and np.max(tags[_SAMPLE_FORMAT]) == 2:
        raise ValueError(f"signed integer pixels (mode {image.mode}) have no defined black and white")
    if _BITS_PER_SAMPLE in tags:
        return 0.0, float(2 ** int(np.max(tags[_BITS_PER_SAMPLE])) - 1)
    if image.mode in _SIXTEEN_BIT:
        return 0.0, 65535.0
    raise ValueError(f"32-bit integer pixels (mode {image.mode}) without a declared bit depth")


def _to_8_bit(image: Image.Image) -> Image.Image:
    """A greyscale ``L`` image scaled from the declared range (16 bits: ``round(v / 257)``)."""
    low, high = _declared_range(image)
    pixels = np.asarray(image)
    if pixels.size and (pixels.min() < low or pixels.max() > high):
        raise ValueError(f"pixel values {pixels.min()}..{pixels.max()} outside the declared range {low:g}..{high:g} "
                         f"(mode {image.mode})")
    precise = np.float32 if high - low <= 65535 else np.float64  # float32 is exact enough for 16 bits, half the memory
    scaled = (pixels.astype(precise) - np.asarray(low, precise)) * np.asarray(255.0 / (high - low), precise)
    return Image.fromarray(np.rint(scaled).astype(np.uint8))
