"""The faster occlusion path scores exactly what the straightforward one does: per family, images, bad input."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from PIL import Image

from pathbind_models.hf.adapter import HFAdapter, _append_continuations
from pathbind_models.hf.families import NAMES
from pathbind_models.occlusion import fill_colour, occlude, rgb_pixels
from pathbind_tasks.common.images import rgb_image

TEXT = "Is there a nucleus in this image? Answer Yes or No."
OPTIONS = ["Yes", "No", "maybe not"]  # a multi-token option: several continuations per image


def sixteen_bit_source(height: int = 90, width: int = 150) -> Image.Image:
    """A non-square 16-bit greyscale PNG, decoded and converted to 8-bit RGB as the tasks do."""
    ramp = np.random.default_rng(0).integers(0, 65536, (height, width), dtype=np.uint16)
    buffer = io.BytesIO()
    Image.fromarray(ramp).save(buffer, format="PNG")
    return rgb_image(buffer.getvalue())


@pytest.mark.parametrize("family", NAMES)
def test_batched_occlusion_scores_equal_one_forward_per_image(tiny_model, family):
    """Five images (the base and four occluded copies) over forwards of 1, 2 and 2 images match
    ``option_logprobs`` image by image; batching only reorders float sums, hence 1e-5."""
    adapter = HFAdapter(str(tiny_model(family)), occlusion_batch=2)
    base = sixteen_bit_source()
    assert base.mode == "RGB" and base.size == (150, 90)
    pixels, colour = rgb_pixels(base), fill_colour(base, "mean")
    masks = np.eye(16, dtype=bool).reshape(-1, 4, 4)[[0, 5, 10, 15]]
    images = [base, *(occlude(pixels, mask, colour) for mask in masks)]
    batched = adapter.image_option_logprobs(iter(images), TEXT, OPTIONS)
    single = np.stack([adapter.option_logprobs([image], TEXT, OPTIONS) for image in images])
    assert batched.shape == (5, 3) and np.isfinite(batched).all()
    np.testing.assert_allclose(batched, single, rtol=0, atol=1e-5)
    assert np.ptp(single[:, 0]) > 0  # the occlusions change the scores, so the comparison can fail


def test_images_of_different_sizes_are_refused(tiny_model):
    adapter = HFAdapter(str(tiny_model("qwen2_vl")), occlusion_batch=2)
    base = sixteen_bit_source()
    with pytest.raises(ValueError, match="one size"):
        adapter.image_option_logprobs([base, base, base.resize((90, 90))], TEXT, OPTIONS)


def test_continuations_are_appended_in_blocks_and_a_single_one_copies_no_image_tensor():
    prompt = {"input_ids": torch.tensor([[1, 2], [3, 4]]), "attention_mask": torch.ones(2, 2, dtype=torch.long),
              "token_type_ids": torch.tensor([[0, 1], [0, 1]]), "pixel_values": torch.arange(6.0).reshape(2, 3)}
    batch = _append_continuations(prompt, [[], [7, 8]], pad_id=9)
    assert batch["input_ids"].tolist() == [[1, 2, 9, 9], [3, 4, 9, 9], [1, 2, 7, 8], [3, 4, 7, 8]]
    assert batch["attention_mask"].tolist() == [[1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1]]
    assert batch["token_type_ids"].tolist() == [[0, 1, 0, 0]] * 4
    assert torch.equal(batch["pixel_values"], torch.cat([prompt["pixel_values"]] * 2))
    single = _append_continuations(prompt, [[]], pad_id=9)
    assert torch.equal(single["input_ids"], prompt["input_ids"])
    assert single["pixel_values"] is prompt["pixel_values"]


@pytest.mark.parametrize("mode", ["RGB", "L", "RGBA"])
def test_occluding_the_converted_pixels_equals_occluding_the_image(mode):
    image = Image.fromarray(np.random.default_rng(1).integers(0, 256, (30, 50, 3), dtype=np.uint8)).convert(mode)
    mask = np.zeros((4, 4), bool)
    mask[1, 2] = mask[3, 0] = True
    colour = fill_colour(image, "mean")
    pixels = rgb_pixels(image)
    from_pixels = occlude(pixels, mask, colour)
    assert np.array_equal(np.asarray(from_pixels), np.asarray(occlude(image, mask, colour)))
    assert np.array_equal(pixels, np.asarray(image.convert("RGB")))  # the shared base is left unpainted
    assert from_pixels.mode == "RGB" and from_pixels.size == image.size
