"""Faithfulness statistics against independent references (scipy) and hand-built maps."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image
from scipy import stats

from pathbind.wire import OcclusionRequest
from pathbind_conventions import cell_edges, resample_to_grid
from pathbind_metrics import faithfulness as fm
from pathbind_models.adapter import EntityAttention
from pathbind_models.occlusion import answer, curve_masks, occlude
from pathbind_tasks.common import faithfulness_aggregations as fa
from pathbind_tasks.common import faithfulness_records as fr


@pytest.mark.parametrize("seed", range(5))
def test_spearman_matches_scipy_with_ties(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 5, 64).astype(float), rng.normal(size=64)
    assert fm.spearman(a, b) == pytest.approx(stats.spearmanr(a, b)[0], abs=1e-12)


def test_spearman_of_a_constant_map_is_nan():
    assert math.isnan(fm.spearman(np.zeros(9), np.arange(9)))


def test_resampling_preserves_area_means():
    """8x8 onto 16x16 repeats each value in 2x2 cells; 16x16 onto 8x8 averages 2x2 blocks; 3x3 onto 2x2 by area."""
    small = np.arange(64.0).reshape(8, 8)
    assert np.array_equal(resample_to_grid(small, 16), np.kron(small, np.ones((2, 2))))
    assert np.allclose(resample_to_grid(np.kron(small, np.ones((2, 2))), 8), small)
    three = np.arange(9.0).reshape(3, 3)
    expected_top_left = (three[0, 0] + three[0, 1] / 2 + three[1, 0] / 2 + three[1, 1] / 4) / 2.25
    assert resample_to_grid(three, 2)[0, 0] == pytest.approx(expected_top_left)


def test_occlusion_map_is_the_margin_drop():
    original = np.array([-0.1, -2.0])  # margin 1.9
    occluded = np.array([[-0.1, -2.0], [-1.0, -0.5], [-0.2, -3.0], [-0.1, -2.0]])
    assert np.allclose(fm.occlusion_map(original, occluded, 0, 2), [[0.0, 2.4], [-0.9, 0.0]])


def test_box_coverage_mass_and_pointing_on_a_hand_built_map():
    coverage = fm.box_coverage([0, 0, 8, 4], (16, 16), 4)  # two full cells, top-left
    assert coverage.tolist()[0] == [1.0, 1.0, 0.0, 0.0] and coverage.sum() == 2.0
    heat = np.zeros((4, 4))
    heat[0, 0], heat[3, 3] = 3.0, 1.0
    assert fm.mass_in_box(heat, coverage) == 0.75
    assert fm.pointing(heat, coverage) == (1.0, False)
    heat[3, 3] = 3.0
    assert fm.pointing(heat, coverage) == (0.0, True)  # a tie is never a hit
    assert math.isnan(fm.mass_in_box(-heat, coverage))


def test_control_boxes_are_seeded_and_far_does_not_overlap():
    boxes = fm.control_boxes([0, 0, 128, 128], (256, 256), np.random.default_rng(3))
    assert boxes == fm.control_boxes([0, 0, 128, 128], (256, 256), np.random.default_rng(3))
    assert boxes["shifted"] == [128.0, 128.0, 256.0, 256.0]
    x0, y0, x1, y1 = boxes["far"]
    assert (x0 >= 128 or y0 >= 128) and (x1 - x0, y1 - y0) == (128, 128)


def test_curve_auc():
    assert fm.curve_auc([0.0, 1.0]) == 0.5


def test_a_model_ignoring_the_image_has_zero_causal_l1_and_nan_causal_amim():
    scores = np.array([-0.5, -1.0])
    record = fr.item_record(scores, np.tile(scores, (16, 1)), np.ones((4, 4)), scores, {}, reference=0,
                            box=[0, 0, 8, 8], image_size=(16, 16), seed=0)
    assert record["causal_l1"] == 0.0 and math.isnan(record["causal_amim"])
    assert record["lost"]["causal_amim"] == fr.NO_CAUSAL_SIGNAL and record["text_agreement"] == 1.0
    assert fa.verdict([record] * 5)["image"] == "does not use the image"


def test_occlusion_and_curve_masks():
    image = Image.new("RGB", (8, 8), (255, 255, 255))
    mask = np.zeros((2, 2), bool)
    mask[1, 0] = True
    pixels = np.asarray(occlude(image, mask, (0, 0, 0)))
    assert (pixels[4:, :4] == 0).all() and (pixels[:4] == 255).all()
    deletion = curve_masks(np.array([3, 0, 1, 2]), 2, 2, "deletion")
    assert [m.sum() for m in deletion] == [0, 2, 4] and deletion[1].ravel().tolist() == [True, False, False, True]
    assert [m.sum() for m in curve_masks(np.arange(4), 2, 2, "insertion")] == [4, 2, 0]


UNEVEN, G = (250, 173), 16  # 250/16 and 173/16 are not whole: cells are 15 or 16 px wide, 10 or 11 px high


def test_the_grid_is_the_same_everywhere_on_a_size_not_divisible_by_g():
    """Each occluded cell paints exactly the pixels of its cell_edges rectangle, and that rectangle is the one cell
    box coverage and attention resampling give to it: all of it, and none of any other cell."""
    rows, cols = cell_edges(UNEVEN[1], G), cell_edges(UNEVEN[0], G)
    assert set(np.diff(cols)) == {15, 16} and set(np.diff(rows)) == {10, 11}
    image = Image.new("RGB", UNEVEN, (255, 255, 255))
    for r, c in np.ndindex(G, G):
        mask = np.zeros((G, G), bool)
        mask[r, c] = True
        painted = (np.asarray(occlude(image, mask, (0, 0, 0))) == 0).all(axis=2)
        ys, xs = np.nonzero(painted)
        assert (ys.min(), ys.max() + 1, xs.min(), xs.max() + 1) == (rows[r], rows[r + 1], cols[c], cols[c + 1])
        assert painted.sum() == (rows[r + 1] - rows[r]) * (cols[c + 1] - cols[c])
        box = [xs.min(), ys.min(), xs.max() + 1, ys.max() + 1]
        assert np.array_equal(fm.box_coverage(box, UNEVEN, G), mask.astype(float))
        assert np.allclose(resample_to_grid(painted.astype(float), G, image_size=UNEVEN), mask, atol=1e-12)


class BoxWatcher:
    """A model whose "Yes" log-probability is minus the share of the box's pixels that differ from the original
    image, and whose attention is the box itself at pixel resolution."""

    def __init__(self, image: Image.Image, box: list[int]) -> None:
        self.original = np.asarray(image)
        self.inside = np.zeros(self.original.shape[:2], bool)
        self.inside[box[1]:box[3], box[0]:box[2]] = True

    def image_option_logprobs(self, images, text, options):
        return [[-float((np.asarray(i) != self.original).any(axis=2)[self.inside].mean()), 0.0] for i in images]

    def option_logprobs(self, images, text, options):
        return np.zeros(len(options))

    def entity_attention(self, image, prompt, entity, layers):
        return EntityAttention(self.inside.astype(float), [], [], [], self.inside.shape)


def test_the_metric_measures_the_cells_the_model_saw_occluded():
    """Through the model side of a request on a 250x173 checkerboard: hiding cell (r, c) hides |box ∩ cell| of the
    box's pixels, which is box_coverage(r, c) times the cell's area, cell by cell; the attention resampled onto the
    grid is that coverage too."""
    box = [37, 20, 141, 97]
    checker = (np.indices(UNEVEN[::-1]).sum(axis=0) % 2 * 255).astype(np.uint8)
    image = Image.fromarray(np.repeat(checker[..., None], 3, axis=2))  # no pixel is the grey fill
    request = OcclusionRequest("Is there a box in this image?", ("Yes", "No"), 0, "a box", grid=G, fill="grey",
                               steps=2)
    response = answer(BoxWatcher(image, box), image, request)
    delta = fm.occlusion_map(response.original, response.patches, 0, G)
    coverage = fm.box_coverage(box, UNEVEN, G)
    areas = np.outer(np.diff(cell_edges(UNEVEN[1], G)), np.diff(cell_edges(UNEVEN[0], G)))
    assert np.allclose(delta * (box[2] - box[0]) * (box[3] - box[1]), coverage * areas, atol=1e-9)
    assert np.allclose(response.attention, coverage, atol=1e-12)
    assert 0 < coverage[1, 2] < 1 and coverage[3, 5] == 1.0  # cut cells and whole cells both occur
