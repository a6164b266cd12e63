"""Box frames: prompts word them one way and are read back; families' native boxes become the prompt's frame."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from PIL import Image
from realtok import REALTOK, available, skip_reason
from transformers import AutoProcessor

from pathbind.box_frames import frame_asked, frame_words
from pathbind_models.hf import frames
from pathbind_models.hf.families import FAMILIES


@pytest.fixture(scope="module")
def qwen2_5_vl():
    """The real Qwen2.5-VL processor: min_pixels 3136, max_pixels 12845056, patch 14, merge 2."""
    if not available():
        pytest.skip(skip_reason())
    return AutoProcessor.from_pretrained(REALTOK / "qwen2_5_vl")  # Qwen2.5-VL-7B-Instruct's own processor files


def test_every_frame_is_worded_and_read_back():
    """frame_asked inverts frame_words, pixels with the size they state; no frame or two frames read as None."""
    for frame in ("pixel", "unit", "per_mille"):
        asked = frame_asked(f"Give each box as [x_min, y_min, x_max, y_max] {frame_words(frame, (512, 256))}.")
        assert asked == (frame, (512, 256) if frame == "pixel" else None)
    assert frame_asked("How many nuclei are there?") is None
    assert frame_asked(frame_words("unit", (1, 1)) + frame_words("per_mille", (1, 1))) is None
    with pytest.raises(ValueError, match="unknown box frame 'normalized'"):
        frame_words("normalized", (1, 1))


def test_qwen2_5_vl_resize_of_a_wide_image(qwen2_5_vl):
    """512x256 through factor 28: round(512/28) = 18, round(256/28) = 9, so 504x252 (127,008 px, within limits);
    the processor's own image_grid_thw (1, 18, 36) patches of 14 px says the same."""
    assert frames.input_size(qwen2_5_vl, (512, 256)) == (504, 252)
    grid = qwen2_5_vl.image_processor(images=[Image.new("RGB", (512, 256))], return_tensors="pt")["image_grid_thw"]
    assert grid[0].tolist() == [1, 18, 36]
    patch = qwen2_5_vl.image_processor.patch_size
    assert (int(grid[0][2]) * patch, int(grid[0][1]) * patch) == (504, 252)


def test_qwen2_5_vl_resize_below_min_pixels(qwen2_5_vl):
    """40x20 rounds to 28x28 = 784 < 3136 px: beta = sqrt(3136 / 800) = 1.980, so ceil(20 * 1.980 / 28) = 2 and
    ceil(40 * 1.980 / 28) = 3 factors, 84x56; the processor's grid agrees."""
    assert frames.input_size(qwen2_5_vl, (40, 20)) == (84, 56)
    grid = qwen2_5_vl.image_processor(images=[Image.new("RGB", (40, 20))], return_tensors="pt")["image_grid_thw"]
    assert (int(grid[0][2]) * 14, int(grid[0][1]) * 14) == (84, 56)


def test_qwen2_5_vl_input_pixels_become_original_pixels(qwen2_5_vl):
    """A box in pixels of the 504x252 input is scaled by 512/504 and 256/252 to the 512x256 original."""
    pixels = frames.native_to_pixels([[100, 50, 300, 200]], "input_pixel", (512, 256), qwen2_5_vl)
    assert pixels[0].tolist() == pytest.approx([100 * 512 / 504, 50 * 256 / 252, 300 * 512 / 504, 200 * 256 / 252])
    assert pixels[0].tolist() == pytest.approx([101.587302, 50.793651, 304.761905, 203.174603])


def test_answers_are_rewritten_into_the_prompts_frame(qwen2_5_vl):
    """Qwen2.5-VL's input pixels asked as original pixels or thousandths; Qwen2-VL's thousandths asked as
    pixels; an answer of a family without a native frame, or to a prompt naming none, is left as it is."""
    size = (512, 256)
    pixel_prompt, per_mille_prompt = (f"Give each box {frame_words(f, size)}." for f in ("pixel", "per_mille"))
    answer = "<answer>[100, 50, 300, 200], [0, 0, 504, 252]</answer>"
    assert frames.answer_in_frame(answer, pixel_prompt, "input_pixel", size, qwen2_5_vl) == \
        "<answer>[101.587302, 50.793651, 304.761905, 203.174603], [0, 0, 512, 256]</answer>"
    # 100 * 512/504 px of 512 is 198.4127 thousandths; 50 * 256/252 px of 256 is 198.4127 too
    assert frames.answer_in_frame("[100, 50, 300, 200]", per_mille_prompt, "input_pixel", size, qwen2_5_vl) == \
        "[198.412698, 198.412698, 595.238095, 793.650794]"
    assert frames.answer_in_frame("[250, 500, 750, 1000]", pixel_prompt, "per_mille", size, None) == \
        "[128, 128, 384, 256]"
    assert frames.answer_in_frame(answer, pixel_prompt, None, size, qwen2_5_vl) == answer
    assert frames.answer_in_frame(answer, "How many?", "input_pixel", size, qwen2_5_vl) == answer


def test_families_declare_only_documented_native_frames():
    """Qwen2-VL, Qwen3-VL and InternVL write 0-1000, Qwen2.5-VL input pixels; the others follow the prompt."""
    native = {family.name: family.native_box_frame for family in FAMILIES}
    assert native == {"qwen2_vl": "per_mille", "qwen2_5_vl": "input_pixel", "qwen3_vl": "per_mille",
                      "internvl": "per_mille", "llava": None, "gemma3": None, "idefics3": None, "smolvlm": None}
    assert {frame for frame in native.values() if frame} <= set(frames.NATIVE_FRAMES)
    with pytest.raises(ValueError, match="unknown native box frame 'pixel'"):
        frames.native_to_pixels([[0, 0, 1, 1]], "pixel", (2, 2), None)


def test_a_processor_without_pixel_limits_is_an_error():
    """The resize is derived from the processor's own limits or not at all."""
    fixed = SimpleNamespace(size={"height": 224, "width": 224}, patch_size=14, merge_size=2)  # a fixed-size processor
    with pytest.raises(ValueError, match="states no pixel limits"):
        frames.input_size(fixed, (512, 256))
