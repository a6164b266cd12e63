"""Attention grounding metrics: heat maps, region overlap with a box, pixel-AP, effective support, query specificity."""

from __future__ import annotations

import doctest
import itertools
import math
import tracemalloc

import numpy as np
import pytest
from PIL import Image
from scipy import ndimage, stats
from sklearn.metrics import average_precision_score

from pathbind_metrics import _grounding_maps, _grounding_ranks, grounding
from pathbind_metrics.grounding import (
    attention_region_metrics,
    correlation_problem,
    cross_query_correlation,
    effective_support_ratio,
    grounding_problem,
    heat_map,
    pixel_average_precision,
    region_sweep,
    support_problem,
)

KEYS = ("iou", "precision", "recall")


def _labels(box: list[int], shape: tuple[int, int]) -> np.ndarray:
    """The box mask of an integer box, built independently of the module (pixel (x, y) in when x_min <= x < x_max)."""
    labels = np.zeros(shape, dtype=bool)
    x_min, y_min, x_max, y_max = box
    labels[max(y_min, 0):y_max, max(x_min, 0):x_max] = True
    return labels


def _random_box(rng: np.random.Generator, width: int, height: int) -> list[int]:
    x_min, y_min = int(rng.integers(0, width - 1)), int(rng.integers(0, height - 1))
    return [x_min, y_min, int(rng.integers(x_min + 1, width + 1)), int(rng.integers(y_min + 1, height + 1))]


def test_a_hot_block_at_native_size_gives_hand_computed_overlap():
    """A 4×5 hot block with q·N = 20 is the mask; a 4×5 box sharing 3 columns gives IoU 12/28, P = R = 12/20."""
    hot = np.zeros((10, 10))
    hot[:4, :5] = 1.0
    scores = attention_region_metrics(hot, [2, 0, 7, 4], (10, 10), q=0.2, sigma=0)
    assert scores == pytest.approx({"iou": 12 / 28, "precision": 0.6, "recall": 0.6}, abs=1e-15)
    inside = attention_region_metrics(hot, [0, 0, 5, 4], (10, 10), q=0.2, sigma=0)
    assert inside == {"iou": 1.0, "precision": 1.0, "recall": 1.0}


def test_an_upsampled_ramp_attends_to_the_right_fifth_of_the_image():
    """A 10-patch column ramp upsampled to 100 px: the top 20% are columns 80-99, so a 50-89 box gives 0.2/0.5/0.25."""
    ramp = np.tile(np.arange(10.0), (6, 1))
    scores = attention_region_metrics(ramp, [50, 0, 90, 60], (100, 60), q=0.2, sigma=0)
    assert scores == pytest.approx({"iou": 10 / 50, "precision": 0.5, "recall": 0.25}, abs=1e-15)


def test_upsampling_uses_half_pixel_centres_as_hand_computed():
    """[[0, 1], [2, 3]] to 4×4 samples 0, 1/4, 3/4, 1 of each axis, clamped at the edges."""
    axis = np.array([0.0, 0.25, 0.75, 1.0])
    assert np.allclose(heat_map([[0.0, 1.0], [2.0, 3.0]], (4, 4), sigma=0), (2 * axis[:, None] + axis[None, :]) / 3)


@pytest.mark.parametrize(("grid", "image_size"), [((7, 9), (50, 37)), ((32, 32), (448, 448)), ((3, 5), (17, 11)),
                                                  ((24, 24), (333, 500))])
def test_upsampling_matches_pil_bilinear(grid, image_size):
    """The heat map equals PIL's Image.resize(BILINEAR) of the normalised float map, for integer and odd scales."""
    patch = np.random.default_rng(0).random(grid)
    normalised = (patch - patch.min()) / (patch.max() - patch.min())
    pil = np.asarray(Image.fromarray(normalised.astype(np.float32)).resize(image_size, Image.Resampling.BILINEAR))
    assert np.abs(heat_map(patch, image_size, sigma=0) - pil).max() < 1e-6


def test_smoothing_is_a_reflect_mode_gaussian_in_patch_units_and_sigma_zero_skips_it():
    """sigma=3 equals scipy's reflect-mode filter applied first; sigma=0 at native size is min-max normalisation."""
    patch = np.random.default_rng(1).random((12, 16))
    smoothed = ndimage.gaussian_filter(patch, 3.0, mode="reflect")
    assert np.allclose(heat_map(patch, (64, 48)), heat_map(smoothed, (64, 48), sigma=0), atol=1e-12)
    assert np.allclose(heat_map(patch, (16, 12), sigma=0), (patch - patch.min()) / (patch.max() - patch.min()))
    assert not np.allclose(heat_map(patch, (64, 48), sigma=0), heat_map(patch, (64, 48)), atol=1e-3)


def test_heat_map_is_image_sized_and_within_unit_range():
    """(W, H) in, an H×W array in [0, 1] out; a non-square image keeps its orientation."""
    heat = heat_map(np.random.default_rng(2).random((14, 10)), (70, 120))
    assert heat.shape == (120, 70)
    assert heat.min() >= 0.0 and heat.max() <= 1.0


def test_recall_and_attended_area_grow_with_q():
    """On a random map recall never falls as q grows; the attended fraction (recall of a whole-image box) tracks q."""
    patch = np.random.default_rng(3).random((16, 16))
    box, size = [30, 40, 90, 100], (128, 128)
    qs = [0.05, 0.1, 0.2, 0.3, 0.4, 0.6, 1.0]
    curve = [attention_region_metrics(patch, box, size, q=q) for q in qs]
    recalls = [scores["recall"] for scores in curve]
    assert recalls == sorted(recalls) and recalls[0] < recalls[-1] == 1.0
    fractions = [attention_region_metrics(patch, [0, 0, 128, 128], size, q=q)["recall"] for q in qs]
    assert np.allclose(fractions, qs, atol=0.005)


def test_precision_has_no_fixed_direction_in_q():
    """Precision falls with q when the box holds the peak, and rises when the peak lies outside the box."""
    ramp = np.tile(np.arange(10.0), (10, 1))  # native size: column x scores x
    hot_box, warm_box = [8, 0, 10, 10], [6, 0, 8, 10]
    falls = [attention_region_metrics(ramp, hot_box, (10, 10), q=q, sigma=0)["precision"] for q in (0.2, 0.4)]
    rises = [attention_region_metrics(ramp, warm_box, (10, 10), q=q, sigma=0)["precision"] for q in (0.2, 0.4)]
    assert falls == [1.0, 0.5] and rises == [0.0, 0.5]


@pytest.mark.parametrize(("hot", "warm", "fraction"), [
    (30, 0, 0.30),   # a tie group larger than q·N cannot be split: all of it
    (15, 10, 0.25),  # 15 or 25 pixels are equally close to 20: the larger, as ">=" keeps ties
    (12, 10, 0.22),  # 22 is closer to 20 than 12
    (18, 10, 0.18),  # 18 is closer to 20 than 28: the boundary tie group stays out
])
def test_tied_pixels_enter_together_and_the_mask_size_is_closest_to_q(hot, warm, fraction):
    """With a whole-image box, recall is the mask fraction: the tie-respecting superlevel set nearest q·N."""
    values = np.zeros(100)
    values[:hot], values[hot:hot + warm] = 2.0, 1.0
    patch = np.random.default_rng(4).permutation(values).reshape(10, 10)
    assert attention_region_metrics(patch, [0, 0, 10, 10], (10, 10), q=0.2, sigma=0)["recall"] == fraction


@pytest.mark.parametrize(("q", "pixels"), [(0.253, 25), (0.257, 26), (0.001, 1), (0.996, 100)])
def test_without_ties_the_mask_holds_the_nearest_whole_number_of_pixels(q, pixels):
    """q·N = 25.3 gives 25 pixels, 25.7 gives 26; the mask is never empty."""
    patch = np.random.default_rng(11).random((10, 10))
    assert attention_region_metrics(patch, [0, 0, 10, 10], (10, 10), q=q, sigma=0)["recall"] == pixels / 100


@pytest.mark.parametrize("sigma", [0.0, 3.0])
def test_without_ties_the_mask_is_the_papers_quantile_threshold(sigma):
    """On a tie-free native-size map with integer q·N, the metrics equal those of heat >= np.quantile(heat, 1 - q)."""
    patch = np.random.default_rng(5).random((20, 25))
    box = [3, 4, 17, 15]
    labels = _labels(box, (20, 25))
    heat = heat_map(patch, (25, 20), sigma=sigma)
    for q in (0.05, 0.1, 0.2, 0.3, 0.4):
        mask = heat >= np.quantile(heat, 1 - q)
        hit = np.count_nonzero(mask & labels)
        union = np.count_nonzero(mask | labels)
        expected = {"iou": hit / union, "precision": hit / mask.sum(), "recall": hit / labels.sum()}
        assert attention_region_metrics(patch, box, (25, 20), q=q, sigma=sigma) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize(("box", "pixels"), [
    ([0, 0, 10, 10], 100), ([2, 3, 7, 8], 25),
    ([-10, -10, 5.5, 3.4], 15),  # clipped; centres 0.5-4.5 < 5.5 and 0.5-2.5 < 3.4
    ([3.5, 2.5, 4.5, 3.5], 1),   # exactly one pixel centre, (4.0, 3.0), lies in it
    ([8.2, 0, 30, 1], 2),        # centres 8.5 and 9.5, one row
])
def test_box_mask_holds_the_pixels_whose_centres_fall_in_the_box(box, pixels):
    """With q = 1 the mask is the whole image, so precision is the box mask's share of the pixels."""
    scores = attention_region_metrics(np.random.default_rng(6).random((5, 5)), box, (10, 10), q=1.0)
    assert scores["precision"] == pixels / 100 and scores["recall"] == 1.0


@pytest.mark.parametrize("seed", range(6))
def test_pixel_ap_equals_sklearn_on_random_maps_and_boxes(seed):
    """Pixel-AP equals sklearn's average_precision_score on the same heat map and box labels."""
    rng = np.random.default_rng(seed)
    grid = (int(rng.integers(2, 20)), int(rng.integers(2, 20)))
    width, height = int(rng.integers(20, 120)), int(rng.integers(20, 120))
    sigma = float(rng.choice([0.0, 1.5, 3.0]))
    patch, box = rng.random(grid), _random_box(rng, width, height)
    expected = average_precision_score(_labels(box, (height, width)).ravel(), heat_map(patch, (width, height),
                                                                                       sigma=sigma).ravel())
    assert math.isclose(pixel_average_precision(patch, box, (width, height), sigma=sigma), expected, rel_tol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_pixel_ap_equals_sklearn_when_many_scores_tie(seed):
    """Integer-valued maps at native size and at integer upscales tie heavily; tied scores are one threshold."""
    rng = np.random.default_rng(100 + seed)
    patch = rng.integers(0, 4, size=(8, 8)).astype(float)
    for size in ((8, 8), (24, 16)):
        box = _random_box(rng, *size)
        scores = heat_map(patch, size, sigma=0).ravel()
        assert len(np.unique(scores)) < scores.size / 2
        expected = average_precision_score(_labels(box, size[::-1]).ravel(), scores)
        assert math.isclose(pixel_average_precision(patch, box, size, sigma=0), expected, rel_tol=1e-12)


def test_overlap_and_ap_ignore_a_positive_affine_rescaling_of_the_map():
    """a·M + b with a > 0 gives the same IoU, precision, recall and pixel-AP."""
    patch = np.random.default_rng(7).random((16, 12))
    box, size = [10, 20, 60, 70], (96, 128)
    region, average_precision = attention_region_metrics(patch, box, size), pixel_average_precision(patch, box, size)
    for scale, shift in ((3.7, 11.0), (1e-4, -2.0), (250.0, 0.0)):
        rescaled = scale * patch + shift
        assert attention_region_metrics(rescaled, box, size) == pytest.approx(region, abs=1e-12)
        assert pixel_average_precision(rescaled, box, size) == pytest.approx(average_precision, abs=1e-12)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_cross_query_correlation_is_the_mean_pairwise_pearson(k):
    """The K maps' correlation equals the mean of scipy's pearsonr over all pairs, in any map order."""
    maps = [np.random.default_rng(8 + i).random((12, 12)) + 0.5 * np.eye(12) for i in range(k)]
    expected = np.mean([stats.pearsonr(a.ravel(), b.ravel())[0] for a, b in itertools.combinations(maps, 2)])
    assert cross_query_correlation(maps) == pytest.approx(expected, abs=1e-12)
    assert cross_query_correlation(maps[::-1]) == pytest.approx(expected, abs=1e-12)


def test_cross_query_correlation_with_an_image_size_correlates_the_heat_maps():
    """With image_size the raw maps go through heat_map first, as Appendix C.4 correlates heat maps."""
    maps = [np.random.default_rng(20 + i).random((8, 8)) for i in range(3)]
    heats = [heat_map(m, (40, 30)).ravel() for m in maps]
    expected = np.mean([stats.pearsonr(a, b)[0] for a, b in itertools.combinations(heats, 2)])
    assert cross_query_correlation(maps, image_size=(40, 30)) == pytest.approx(expected, abs=1e-12)
    assert cross_query_correlation(np.stack(maps)) != pytest.approx(expected, abs=1e-3)  # raw maps differ


def test_cross_query_correlation_at_grid_37_in_a_view_equals_the_upsampled_heat_maps():
    """At a real grid (37×37) and an off-grid view, the patch-sized computation equals Pearson over the seen pixels."""
    maps = [np.random.default_rng(30 + i).random((37, 37)) + (i == 1) * np.eye(37) for i in range(3)]
    size, view_box = (1036, 740), [10.5, 3.0, 1000.25, 700.0]
    seen = grounding.view_pixels(size, view_box)
    heats = [heat_map(m, size, view_box=view_box)[seen].ravel() for m in maps]
    expected = np.mean([stats.pearsonr(a, b)[0] for a, b in itertools.combinations(heats, 2)])
    assert cross_query_correlation(maps, image_size=size, view_box=view_box) == pytest.approx(expected, abs=1e-12)


def test_cross_query_correlation_memory_grows_with_the_image_side_not_side_times_grid():
    """On a 40,000-pixel-side image the computation holds ~3 MB, no (pixels × grid) interpolation matrix (12 MB each).

    Such a matrix is the operand of a large thin BLAS product that OpenBLAS splits over all its threads: 400 ms per
    item on a busy 2-core machine instead of 3 ms. Memory, unlike time, is deterministic.
    """
    maps = [np.random.default_rng(40 + i).random((37, 37)) for i in range(3)]
    tracemalloc.start()
    try:
        value = cross_query_correlation(maps, image_size=(40_000, 30_000), view_box=[1000, 2000, 39_000, 29_000])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert -1 < value < 1
    assert peak < 8 * 2**20, f"peak {peak / 2**20:.1f} MiB"


def test_effective_support_is_one_for_uniform_and_one_over_n_for_one_hot():
    """Uniform: N_eff = N; one patch: N_eff = 1; two equal patches: N_eff = 2; the map's scale is irrelevant."""
    one_hot, two = np.zeros((6, 8)), np.zeros((6, 8))
    one_hot[2, 3] = 0.7
    two[0, 0] = two[5, 7] = 3.0
    assert effective_support_ratio(np.full((6, 8), 0.02)) == pytest.approx(1.0, abs=1e-12)
    assert effective_support_ratio(one_hot) == pytest.approx(1 / 48, abs=1e-15)
    assert effective_support_ratio(two) == pytest.approx(2 / 48, abs=1e-15)
    patch = np.random.default_rng(9).random((6, 8))
    assert effective_support_ratio(patch) == pytest.approx(effective_support_ratio(40 * patch), abs=1e-12)
    assert 1 / 48 < effective_support_ratio(patch) < 1


GOOD_MAP = np.random.default_rng(10).random((8, 8))
GOOD_BOX = [20, 30, 60, 70]


@pytest.mark.parametrize(("attn_map", "box", "image_size", "reason"), [
    (np.ones(5), GOOD_BOX, (100, 100), grounding.MAP_NOT_2D),
    (np.ones((2, 3, 4)), GOOD_BOX, (100, 100), grounding.MAP_NOT_2D),
    ([[1.0, 2.0], [3.0]], GOOD_BOX, (100, 100), grounding.MAP_NOT_2D),
    (None, GOOD_BOX, (100, 100), grounding.MAP_NOT_2D),
    (np.ones((0, 4)), GOOD_BOX, (100, 100), grounding.MAP_EMPTY),
    (np.where(np.eye(8, dtype=bool), np.nan, GOOD_MAP), GOOD_BOX, (100, 100), grounding.MAP_NOT_FINITE),
    (np.where(np.eye(8, dtype=bool), np.inf, GOOD_MAP), GOOD_BOX, (100, 100), grounding.MAP_NOT_FINITE),
    (np.full((8, 8), 0.3), GOOD_BOX, (100, 100), grounding.MAP_CONSTANT),
    (np.zeros((8, 8)), GOOD_BOX, (100, 100), grounding.MAP_CONSTANT),
    (GOOD_MAP, GOOD_BOX, (0, 100), grounding.BAD_IMAGE_SIZE),
    (GOOD_MAP, GOOD_BOX, (100.5, 100), grounding.BAD_IMAGE_SIZE),
    (GOOD_MAP, GOOD_BOX, (100,), grounding.BAD_IMAGE_SIZE),
    (GOOD_MAP, GOOD_BOX, None, grounding.BAD_IMAGE_SIZE),
    (GOOD_MAP, [], (100, 100), grounding.BOX_MALFORMED),
    (GOOD_MAP, [1, 2, 3], (100, 100), grounding.BOX_MALFORMED),
    (GOOD_MAP, None, (100, 100), grounding.BOX_MALFORMED),
    (GOOD_MAP, [0, 0, float("nan"), 5], (100, 100), grounding.BOX_MALFORMED),
    (GOOD_MAP, [60, 30, 20, 70], (100, 100), grounding.BOX_INVERTED),
    (GOOD_MAP, [20, 70, 60, 30], (100, 100), grounding.BOX_INVERTED),
    (GOOD_MAP, [20, 30, 20, 70], (100, 100), grounding.BOX_ZERO_AREA),
    (GOOD_MAP, [120, 0, 150, 10], (100, 100), grounding.BOX_OUTSIDE),
    (GOOD_MAP, [-20, -20, 0, 0], (100, 100), grounding.BOX_OUTSIDE),
    (GOOD_MAP, [10.6, 10, 11.4, 20], (100, 100), grounding.BOX_NO_PIXEL),
    (GOOD_MAP, GOOD_BOX, (100, 100), None),
    (GOOD_MAP.tolist(), [-5, -5, 300, 300], np.array([100, 100]), None),
])
def test_degenerate_input_gives_nan_with_its_reason_and_nan_only_then(attn_map, box, image_size, reason):
    """grounding_problem names the reason; both metrics are NaN exactly when it does, and never raise."""
    assert grounding_problem(attn_map, box, image_size) == reason
    region = attention_region_metrics(attn_map, box, image_size)
    average_precision = pixel_average_precision(attn_map, box, image_size)
    assert set(region) == set(KEYS)
    assert all(math.isnan(region[key]) == (reason is not None) for key in KEYS)
    assert math.isnan(average_precision) == (reason is not None)


@pytest.mark.parametrize(("attn_map", "image_size"), [(np.full((4, 4), 2.0), (10, 10)), (GOOD_MAP, (0, 10))])
def test_heat_map_refuses_degenerate_input_naming_the_reason(attn_map, image_size):
    """heat_map is a helper, not a metric: it raises ValueError with the reason grounding_problem would give."""
    with pytest.raises(ValueError, match=r"cannot build a heat map: (attention map is constant|image size)"):
        heat_map(attn_map, image_size)


@pytest.mark.parametrize(("attn_map", "reason"), [
    (np.ones(4), grounding.MAP_NOT_2D), (np.ones((0, 3)), grounding.MAP_EMPTY),
    (np.array([[0.5, np.nan]]), grounding.MAP_NOT_FINITE), (np.array([[0.5, -0.1]]), grounding.MAP_NEGATIVE),
    (np.zeros((3, 3)), grounding.MAP_ZERO), (np.full((3, 3), 7.0), None),
])
def test_effective_support_is_nan_exactly_when_support_problem_gives_a_reason(attn_map, reason):
    """Negative or all-zero maps are not distributions; a constant positive map is fine (ratio 1)."""
    assert support_problem(attn_map) == reason
    assert math.isnan(effective_support_ratio(attn_map)) == (reason is not None)


@pytest.mark.parametrize(("maps", "image_size", "reason"), [
    ([GOOD_MAP], None, grounding.TOO_FEW_MAPS),
    ([], None, grounding.TOO_FEW_MAPS),
    ([GOOD_MAP, GOOD_MAP[:4]], None, grounding.SHAPE_MISMATCH),
    ([GOOD_MAP, np.ones((8, 8))], None, grounding.CONSTANT_MAP),
    ([GOOD_MAP, np.where(np.eye(8, dtype=bool), np.nan, GOOD_MAP)], None, grounding.MAP_NOT_FINITE),
    ([GOOD_MAP, ["a", "b"]], None, grounding.NOT_NUMERIC),
    ([GOOD_MAP, np.ones((8, 8))], (40, 40), grounding.MAP_CONSTANT),
    ([GOOD_MAP, GOOD_MAP.T], (0, 40), grounding.BAD_IMAGE_SIZE),
    ([GOOD_MAP, np.ones(64)], (40, 40), grounding.MAP_NOT_2D),
    ([GOOD_MAP, GOOD_MAP[:4]], (40, 40), None),  # different grids, same heat-map size
    ([GOOD_MAP.ravel(), GOOD_MAP.T.ravel()], None, None),
])
def test_cross_query_correlation_is_nan_exactly_when_correlation_problem_gives_a_reason(maps, image_size, reason):
    """Pearson is undefined for fewer than two maps, a constant map or mismatched shapes."""
    assert correlation_problem(maps, image_size=image_size) == reason
    assert math.isnan(cross_query_correlation(maps, image_size=image_size)) == (reason is not None)


@pytest.mark.parametrize(("options", "message"), [
    ({"q": 0.0}, "q is the attended fraction"), ({"q": 1.5}, "q is the attended fraction"),
    ({"sigma": -1.0}, "sigma is the smoothing width"), ({"sigma": float("nan")}, "sigma is the smoothing width"),
])
def test_out_of_range_options_are_programmer_errors(options, message):
    """q outside (0, 1] or a negative or NaN sigma raises ValueError, even for a degenerate item."""
    with pytest.raises(ValueError, match=message):
        attention_region_metrics(GOOD_MAP, GOOD_BOX, (100, 100), **options)
    with pytest.raises(ValueError, match=message):
        attention_region_metrics(np.zeros((2, 2)), [], None, **options)


def test_doctests():
    """The docstring examples run and hold."""
    result = doctest.testmod(grounding)
    assert result.attempted > 0
    assert result.failed == 0


def test_region_sweep_equals_the_separate_metrics():
    """One set of blocks gives exactly what attention_region_metrics and pixel-AP give one call each, ties and
    clipped boxes included."""
    rng = np.random.default_rng(7)
    for trial in range(40):
        attn = rng.random((int(rng.integers(3, 30)), int(rng.integers(3, 30))))
        if trial % 3 == 0:
            attn = np.round(attn * 3)  # plateaus: many tied pixels
        size = (int(rng.integers(10, 200)), int(rng.integers(10, 200)))
        x0, y0 = rng.uniform(-5, size[0] / 2), rng.uniform(-5, size[1] / 2)
        box = [x0, y0, x0 + rng.uniform(1, size[0]), y0 + rng.uniform(1, size[1])]
        sigma = float(rng.choice([0.0, 1.0, 3.0]))
        sweep = region_sweep(attn, box, size, qs=(0.05, 0.1, 0.2, 0.3, 0.4), sigma=sigma)
        for q, values in sweep["by_q"].items():
            expected = attention_region_metrics(attn, box, size, q=q, sigma=sigma)
            assert values == expected or all(math.isnan(v) for v in [*values.values(), *expected.values()])
        ap = pixel_average_precision(attn, box, size, sigma=sigma)
        assert sweep["pixel_ap"] == ap or (math.isnan(ap) and math.isnan(sweep["pixel_ap"]))


def _reference_heat(attn: np.ndarray, image_size: tuple[int, int], view: list[float], sigma: float) -> np.ndarray:
    """Bilinear upsampling pixel-row by pixel-row, straight from the half-pixel-centre definition."""
    smooth = ndimage.gaussian_filter(attn, sigma, mode="reflect") if sigma else attn
    patch = (smooth - smooth.min()) / (smooth.max() - smooth.min())

    def taps(n_out: int, n_in: int, low: float, high: float) -> list[tuple[int, int, float, float]]:
        out = []
        for j in range(n_out):
            source = min(max((j + 0.5 - low) * (n_in / (high - low)) - 0.5, 0), n_in - 1)
            inside = float(low <= j + 0.5 < high)
            lower = math.floor(source)
            out.append((lower, min(lower + 1, n_in - 1), (1 - (source - lower)) * inside, (source - lower) * inside))
        return out

    col = taps(image_size[0], patch.shape[1], view[0], view[2])
    columns = np.stack([patch[:, lo] * w_lo + patch[:, hi] * w_hi for lo, hi, w_lo, w_hi in col], axis=1)
    return np.stack([columns[lo] * w_lo + columns[hi] * w_hi for lo, hi, w_lo, w_hi in
                     taps(image_size[1], patch.shape[0], view[1], view[3])])


def _reference_scores(heat: np.ndarray, box: list[float], seen: np.ndarray, q: float) -> tuple[dict[str, float], float]:
    """Brute force: every superlevel set of the seen pixels, the one nearest q·N (ties: the larger); sklearn AP."""
    ys, xs = np.mgrid[:heat.shape[0], :heat.shape[1]] + 0.5
    labels = (xs >= box[0]) & (xs < box[2]) & (ys >= box[1]) & (ys < box[3])
    values = heat[seen]
    sizes = {float(t): int((values >= t).sum()) for t in np.unique(values)}
    best = min(sizes, key=lambda t: (abs(sizes[t] - q * values.size), -sizes[t]))
    mask = seen & (heat >= best)
    hit, attended, area = int((mask & labels).sum()), int(mask.sum()), int(labels.sum())
    scores = np.where(seen, heat, -1.0)
    ap = average_precision_score(labels.ravel(), scores.ravel())
    return {"iou": hit / (attended + area - hit), "precision": hit / attended, "recall": hit / area}, ap


@pytest.mark.parametrize("seed", range(6))
def test_fast_sweep_equals_a_brute_force_reference(seed):
    """Non-square maps and images, plateaus, constant maps, boxes at the edges and partly or wholly outside the view:
    overlap equals the brute-force superlevel sets exactly, pixel-AP sklearn's to 1e-12 (summation order)."""
    rng = np.random.default_rng(100 + seed)
    for trial in range(8):
        attn = rng.random((int(rng.integers(1, 9)), int(rng.integers(1, 9))))
        attn = np.round(attn * 2) if trial % 2 else attn  # plateaus: many tied pixels
        size = (int(rng.integers(5, 90)), int(rng.integers(5, 90)))
        view = [float(rng.uniform(-3, size[0] / 2)), float(rng.uniform(-3, size[1] / 2)),
                float(rng.uniform(size[0] / 2 + 1, size[0] + 3)), float(rng.uniform(size[1] / 2 + 1, size[1] + 3))]
        x0, y0 = [0.0, 0.0] if trial == 3 else [rng.uniform(-5, size[0] - 1), rng.uniform(-5, size[1] - 1)]
        box = [float(x0), float(y0), float(x0 + rng.uniform(1, size[0])), float(y0 + rng.uniform(1, size[1]))]
        sigma = float(rng.choice([0.0, 0.7, 3.0]))
        sweep = region_sweep(attn, box, size, qs=(0.05, 0.2, 0.4, 1.0), sigma=sigma, view_box=view)
        problem = grounding_problem(attn, box, size, sigma=sigma, view_box=view)
        if problem is not None:  # constant after smoothing, or the box outside the view
            assert math.isnan(sweep["pixel_ap"]) and problem in (grounding.MAP_CONSTANT, grounding.BOX_OUTSIDE_VIEW)
            continue
        heat = _reference_heat(attn, size, view, sigma)
        assert np.array_equal(heat_map(attn, size, sigma=sigma, view_box=view), heat)
        seen = np.zeros(heat.shape, bool)
        seen[grounding.view_pixels(size, view)] = True
        for q, values in sweep["by_q"].items():
            expected, ap = _reference_scores(heat, box, seen, q)
            assert values == expected == attention_region_metrics(attn, box, size, q=q, sigma=sigma, view_box=view)
            assert sweep["pixel_ap"] == pytest.approx(ap, abs=1e-12, rel=0)


def test_a_constant_map_scores_nan_in_every_measure():
    """A constant map has no attended region: the sweep and the separate metrics agree that it is NaN."""
    sweep = region_sweep(np.full((3, 5), 0.4), [0, 0, 4, 4], (20, 12), qs=(0.2,))
    assert math.isnan(sweep["pixel_ap"]) and all(math.isnan(v) for v in sweep["by_q"][0.2].values())


@pytest.mark.parametrize("seed", range(4))
def test_kth_largest_by_buckets_equals_a_full_sort(seed):
    """The bucketed selection gives the k-th largest of a full sort, with ties, equal values and huge spreads."""
    rng = np.random.default_rng(200 + seed)
    for trial in range(30):
        size = int(rng.integers(1, 3000))
        values = rng.random(size) * 10.0 ** rng.integers(-12, 3)
        if trial % 3 == 0:
            values = np.round(values * 5) / 5  # ties
        if trial % 10 == 1:
            values = np.full(size, 0.25)
        ranked = np.sort(values)
        for k in {1, size, int(rng.integers(1, size + 1))}:
            assert _grounding_ranks._kth_largest(values, k) == ranked[size - k]


@pytest.mark.parametrize("seed", range(4))
def test_count_at_least_by_buckets_equals_brute_force(seed):
    """For each threshold, the number of values >= it, as a comparison of every pair counts it; thresholds drawn
    from the values themselves (the pixel-AP case: ties between box and other pixels) and between them."""
    rng = np.random.default_rng(300 + seed)
    for trial in range(20):
        values = rng.random(int(rng.integers(1, 2000)))
        if trial % 2:
            values = np.round(values * 7) / 7
        thresholds = np.unique(np.r_[rng.choice(values, int(rng.integers(1, 50))), rng.random(5)])
        low, high = float(thresholds.min()), float(thresholds.max())
        values = values[(values >= low) & (values <= high)]
        expected = (values[None, :] >= thresholds[:, None]).sum(axis=1)
        assert np.array_equal(_grounding_ranks._count_at_least(values, thresholds, low, high), expected)


@pytest.mark.parametrize(("grid", "image_size", "view"), [
    ((8, 8), (256, 256), None), ((24, 24), (300, 220), None), ((37, 37), (400, 400), [20.0, 0.0, 380.0, 400.0]),
    ((37, 24), (333, 512), [-3.5, 10.25, 300.0, 515.0]), ((5, 3), (64, 97), None), ((1, 6), (40, 30), None),
])
def test_blocks_bound_their_pixels_and_compute_them_bit_identically(grid, image_size, view):
    """Every block's pixels lie within its [low, high] bounds, and the blocks' values are the heat map's seen
    pixels, bit for bit (the reference upsampling pixel-row by pixel-row)."""
    rng = np.random.default_rng(sum(grid) + image_size[0])
    for attn in (rng.random(grid), np.round(rng.random(grid) * 2), rng.random(grid).astype(np.float32)):
        prepared = _grounding_maps._prepare(attn, [1, 2, 30, 25], image_size, 3.0, view)
        if isinstance(prepared, str):
            continue
        blocks = _grounding_ranks._Blocks(prepared)
        heat = _reference_heat(attn.astype(float), image_size, view or [0, 0, *image_size], 3.0)[prepared.seen]
        rows, cols = np.diff(blocks.row_edges), np.diff(blocks.col_edges)
        low, high = (np.repeat(np.repeat(b, rows, axis=0), cols, axis=1) for b in (blocks.low, blocks.high))
        assert ((low <= heat) & (heat <= high)).all()
        values, _ = blocks.values(np.ones(blocks.low.shape, bool))
        assert np.array_equal(np.sort(values), np.sort(heat.ravel()))


def _reference_by_sort(heat: np.ndarray, box: list[float], seen: np.ndarray,
                       q: float) -> tuple[dict[str, float], float]:
    """Like _reference_scores for larger maps: superlevel-set sizes from a sort instead of one pass per value."""
    ys, xs = np.mgrid[:heat.shape[0], :heat.shape[1]] + 0.5
    labels = (xs >= box[0]) & (xs < box[2]) & (ys >= box[1]) & (ys < box[3])
    ranked = np.sort(heat[seen])
    distinct = np.unique(ranked)
    sizes = ranked.size - np.searchsorted(ranked, distinct, side="left")
    best = distinct[np.lexsort((-sizes, np.abs(sizes - q * ranked.size)))[0]]
    mask = seen & (heat >= best)
    hit, attended, area = int((mask & labels).sum()), int(mask.sum()), int(labels.sum())
    ap = average_precision_score(labels.ravel(), np.where(seen, heat, -1.0).ravel())
    return {"iou": hit / (attended + area - hit), "precision": hit / attended, "recall": hit / area}, ap


@pytest.mark.parametrize(("grid", "image_size"), [((8, 8), (320, 320)), ((24, 24), (300, 260)), ((37, 37), (370, 300)),
                                                  ((37, 24), (240, 410))])
def test_fast_sweep_at_real_grids_equals_a_sorted_reference_and_sklearn(grid, image_size):
    """The real grids (8, 24, 37) at a few hundred pixels, square and not, with and without a view: overlap equals
    the superlevel sets of a full sort exactly, pixel-AP sklearn's to 1e-12."""
    rng = np.random.default_rng(grid[0] * 7 + image_size[1])
    width, height = image_size
    for trial in range(3):
        attn = rng.random(grid) if trial != 1 else np.round(rng.random(grid) * 3)
        view = None if trial == 0 else [float(rng.uniform(-4, width / 3)), float(rng.uniform(-4, height / 3)),
                                        float(rng.uniform(2 * width / 3, width + 4)),
                                        float(rng.uniform(2 * height / 3, height + 4))]
        x0, y0 = rng.uniform(-10, width * 0.8), rng.uniform(-10, height * 0.8)
        box = [float(x0), float(y0), float(x0 + rng.uniform(5, width / 2)), float(y0 + rng.uniform(5, height / 2))]
        sigma = float(rng.choice([0.0, 3.0]))
        problem = grounding_problem(attn, box, image_size, sigma=sigma, view_box=view)
        if problem is not None:
            continue
        sweep = region_sweep(attn, box, image_size, qs=(0.05, 0.2, 0.4), sigma=sigma, view_box=view)
        heat = heat_map(attn, image_size, sigma=sigma, view_box=view)
        seen = np.zeros(heat.shape, bool)
        seen[grounding.view_pixels(image_size, view)] = True
        for q, values in sweep["by_q"].items():
            expected, ap = _reference_by_sort(heat, box, seen, q)
            assert values == expected
            assert sweep["pixel_ap"] == pytest.approx(ap, abs=1e-12, rel=0)
