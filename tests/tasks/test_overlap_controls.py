"""Seed 004's controlled overlap as tests: the true box against a shifted, a random far and a random-size box, per
layer set, from item records built as the grounding task builds them."""

from __future__ import annotations

import numpy as np
import pytest

from pathbind.wire import LAYER_GROUPS
from pathbind_models.adapter import layer_indices
from pathbind_tasks.common import grounding_aggregations as ga
from pathbind_tasks.common import grounding_records as gr

SIZE = 64  # pixels; maps on an 8 × 8 patch grid


def records(n_items: int, on_box: bool, seed: int = 0) -> list[dict]:
    """One item per image, its box a random 24 × 24 square; the map hot on the box (``on_box``) or on a square placed
    independently of it, the same map in every layer set."""
    rng = np.random.default_rng(seed)
    made = []
    for i in range(n_items):
        x, y = rng.integers(0, 5, size=2) * 8
        hot_x, hot_y = (x, y) if on_box else rng.integers(0, 5, size=2) * 8
        attention = np.full((8, 8), 0.01)
        attention[hot_y // 8:hot_y // 8 + 3, hot_x // 8:hot_x // 8 + 3] = 1.0
        maps = {name: attention for name in ("mid", *LAYER_GROUPS)}
        record = gr.item_record([maps], [x, y, x + 24, y + 24], (SIZE, SIZE), sigma=0,
                                layers={"mid": [2, 3]}, seed=i)
        made.append({**record, "id": f"item{i}", "cluster": f"image=img{i}"})
    return made


def test_attention_on_the_box_beats_every_control_in_every_layer_set():
    """The positive control: every Δ true − control is positive and Holm-significant, in all ten layer sets."""
    found = ga.overlap_controls(records(30, on_box=True), n_permutations=2000)
    assert list(found["groups"]) == ["mid", *LAYER_GROUPS] and found["q"] == gr.CONTROL_Q
    assert found["groups"]["mid"]["layers"] == [2, 3] and found["groups"]["ninth_1"]["layers"] == []
    assert found["holm_family"] == "the 30 tests of 10 layer sets × 3 control boxes"
    for group in found["groups"].values():
        assert group["true"] > max(group["shifted"], group["far"], group["random_size"])
        for test in group["tests"].values():
            assert test["delta"] > 0 and test["p_holm"] <= 0.05 and test["ci95"]["low"] > 0
            assert test["ci95"]["clusters"] == 30 and test["ci95"]["cluster"] == "image"


def test_attention_placed_without_regard_to_the_box_beats_no_control():
    """The negative control: maps placed independently of the boxes are not above the controls anywhere."""
    found = ga.overlap_controls(records(30, on_box=False), n_permutations=2000)
    tests = [test for group in found["groups"].values() for test in group["tests"].values()]
    assert not any(test["delta"] > 0 and test["p_holm"] <= 0.05 for test in tests)


def test_items_without_maps_have_no_controls_and_the_tests_say_so():
    """A lost item has no control entry; with no scorable item every test is NaN over zero items."""
    lost = [{**gr.lost_record("no attention"), "id": "a", "cluster": "image=a"}]
    assert lost[0]["overlap_controls"] == {}
    assert ga.overlap_controls(lost)["groups"] == {}


def test_control_boxes_are_drawn_in_the_part_of_the_image_the_model_saw():
    """A centre crop: the controls lie within the view, the true box is clipped to it, a box outside it has none."""
    view = [16.0, 0.0, 48.0, 64.0]
    boxes = gr.control_boxes_in_view([0, 10, 30, 30], view, np.random.default_rng(0))
    assert boxes["true"] == [16.0, 10.0, 30.0, 30.0]
    for box in boxes.values():
        assert view[0] <= box[0] <= box[2] <= view[2] and view[1] <= box[1] <= box[3] <= view[3]
    assert all(np.isnan(b).all() for b in gr.control_boxes_in_view([0, 0, 10, 10], view, np.random.default_rng(0))
               .values())


@pytest.mark.parametrize("count, ninths", [
    (34, [[0, 1, 2], [3, 4, 5, 6], [7, 8, 9, 10], [11, 12, 13, 14], [15, 16, 17], [18, 19, 20, 21],
          [22, 23, 24, 25], [26, 27, 28, 29], [30, 31, 32, 33]]),
    (6, [[0], [0], [1], [2], [2], [3], [4], [4], [5]]),
])
def test_the_nine_layer_groups_are_the_decoders_ninths(count, ninths):
    """Ninth k holds layers ⌊(k−1)L/9⌋ … ⌊kL/9⌋−1; with fewer than nine layers neighbours share one."""
    assert [layer_indices(name, count) for name in LAYER_GROUPS] == ninths
    assert sorted({i for group in ninths for i in group}) == list(range(count))
