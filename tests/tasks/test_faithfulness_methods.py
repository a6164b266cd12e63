"""Faithfulness per attribution method on simulated items of known truth: every measure's Δ against the shuffled
mask is ~0 for maps that ignore the box and positive for maps that find it, the tests Holm-adjusted across methods ×
measures, ROI deletion; the box measures of every pair against independent computations (scikit-learn, scipy)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import average_precision_score

from pathbind_conventions import cell_edges
from pathbind_metrics import faithfulness as fm
from pathbind_tasks.common import faithfulness_methods as fmethods
from pathbind_tasks.common import faithfulness_records as fr

SIDE, GRID = 256, 8


def _centre_map(rng: np.random.Generator) -> np.ndarray:
    """A map favouring the image centre, whatever the box (the hardest map for a cell-shuffle null)."""
    y, x = np.mgrid[0:GRID, 0:GRID] - (GRID - 1) / 2
    return np.exp(-(x**2 + y**2) / 8) + rng.random((GRID, GRID)) * 0.5


def records(n_items: int, *, grounded: bool, seed: int) -> list[dict]:
    """Items on their own images: boxes 25–50% of each side placed uniformly; the causal map always finds the box;
    the attention and RISE maps find it only when ``grounded``; hiding the box costs more than a random box only
    when ``grounded``."""
    rng = np.random.default_rng(seed)
    out = []
    for item in range(n_items):
        w, h = rng.uniform(0.25, 0.5, 2) * SIDE
        x, y = rng.uniform(0, SIDE - w), rng.uniform(0, SIDE - h)
        box = [x, y, x + w, y + h]
        inside = fm.box_coverage(box, (SIDE, SIDE), GRID)
        attention, rise = _centre_map(rng), _centre_map(rng) - 0.7  # RISE's map is signed
        if grounded:
            attention, rise = attention + 2 * inside, rise + 2 * inside
        causal = _centre_map(rng) * 0.1 + inside
        patches = np.column_stack([-causal.ravel(), np.zeros(GRID * GRID)])
        hidden = -1.0 - float(grounded) - rng.random()
        rois = {fr.ROI_BOX: np.array([hidden, 0.0]), fr.ROI_RANDOM: np.array([-1.0 - rng.random(), 0.0])}
        record = fr.item_record(np.array([0.0, -1.0]), patches, attention, np.array([0.0, -1.0]), {}, reference=0,
                                box=box, image_size=(SIDE, SIDE), seed=item, attributions={
                                    "rise": rise, "rollout": "NotApplicable: no layers"}, rois=rois)
        out.append({**record, "id": str(item), "cluster": f"image={item}", "group": "all"})
    return out


def test_maps_that_ignore_the_box_have_no_delta_against_the_shuffled_mask():
    """Centre-biased maps, boxes anywhere: Δ of pointing, AMiM and box AP is ~0 (within its interval) and the
    one-sided tests reject in at most 3 of 20 data sets per measure at 5%, for raw attention and signed RISE."""
    rejected: dict[tuple[str, str], int] = {}
    for seed in range(20):
        table = fmethods.method_table(records(30, grounded=False, seed=seed), n_permutations=999)["methods"]
        for method in ("attention", "rise"):
            for measure in fmethods.TABLE2:
                entry = table[method][measure]
                rejected[method, measure] = rejected.get((method, measure), 0) + int(entry["p"] < 0.05)
                if seed == 0:
                    assert entry["delta_ci"]["low"] <= 0 <= entry["delta_ci"]["high"], (method, measure, entry)
                    assert abs(entry["delta"]) < 0.1 * max(abs(entry["mean"]), 0.1), (method, measure, entry)
    assert max(rejected.values()) <= 3, rejected


def test_maps_that_find_the_box_pass_every_measure_and_the_family_is_named():
    result = fmethods.method_table(records(30, grounded=True, seed=1), n_permutations=999)
    table = result["methods"]
    for method in ("attention", "rise"):
        for measure in (*fmethods.TABLE2, "rho"):
            assert table[method][measure]["delta"] > 0 and table[method][measure]["p_holm"] < 0.05, (method, measure)
        assert table[method]["verdict"] == f"{method} tracks causal importance"
        assert table[method]["pointing_hit"]["d"] > 0.5
    assert result["family"].startswith("the one-sided tests of 3 methods × 6 measures")
    assert table["rollout"]["verdict"] == "rollout does not apply: NotApplicable: no layers"
    assert table["rollout"]["n"] == 0 and math.isnan(table["rollout"]["amim"]["mean"])
    assert set(result["best"].values()) <= {"attention", "rise"}
    roi = fmethods.roi_deletion(records(30, grounded=True, seed=1), n_permutations=999)
    assert roi["mean"] > 0 and roi["ci"]["low"] > 0 and roi["p"] < 0.01
    nulls = [fmethods.roi_deletion(records(30, grounded=False, seed=s), n_permutations=999)["p"] for s in range(10)]
    assert sum(p < 0.05 for p in nulls) <= 2, nulls


def test_causal_minus_attention_mass_is_tested_two_sided():
    """The causal map finds the box and the attention does not: causal − attention AMiM is positive, its p small."""
    entry = fmethods.method_table(records(30, grounded=False, seed=2), n_permutations=999)["methods"]["attention"]
    assert entry["causal_minus_amim"]["mean"] > 0 and entry["causal_minus_amim"]["p"] < 0.01


@pytest.mark.parametrize("seed", range(3))
def test_pair_measures_equal_each_pair_computed_alone(seed):
    """Every (map, box) pair's AMiM, pointing hit (ties none) and box AP equal the single-map functions and
    scikit-learn's average precision over the pixels, each pixel scored by its cell on a size not divisible by G."""
    rng = np.random.default_rng(seed)
    size, grid = (50, 37), 4
    maps = rng.integers(0, 3, (5, grid * grid)).astype(float)
    boxes = [[rng.uniform(0, 20), rng.uniform(0, 15), rng.uniform(25, 50), rng.uniform(20, 37)] for _ in range(4)]
    boxes[0] = [0, 0, 25, 18]  # whole pixels
    coverages = np.array([fm.box_coverage(b, size, grid).ravel() for b in boxes])
    areas = fm.cell_areas(size, grid).ravel()
    pairs = fm.pair_measures(maps / maps.sum(axis=1, keepdims=True), coverages, areas)
    for i, values in enumerate(maps):
        grid_map = values.reshape(grid, grid)
        for j, coverage in enumerate(coverages):
            cells = coverage.reshape(grid, grid)
            assert pairs["amim"][i, j] == pytest.approx(fm.mass_in_box(grid_map, cells))
            assert pairs["pointing_hit"][i, j] == fm.pointing(grid_map, cells)[0]
        rows, cols = cell_edges(size[1], grid), cell_edges(size[0], grid)
        pixels = np.repeat(np.repeat(grid_map, np.diff(rows), axis=0), np.diff(cols), axis=1)
        labels = np.zeros((size[1], size[0]))
        labels[0:18, 0:25] = 1
        assert pairs["box_ap"][i, 0] == pytest.approx(average_precision_score(labels.ravel(), pixels.ravel()))


def test_paired_cohens_d_is_the_one_sample_t_over_root_n():
    differences = np.random.default_rng(4).normal(0.3, 1.0, 40)
    t = stats.ttest_1samp(differences, 0.0).statistic
    assert fm.paired_cohens_d(differences) == pytest.approx(t / math.sqrt(40))
    assert math.isnan(fm.paired_cohens_d([1.0])) and math.isnan(fm.paired_cohens_d([2.0, 2.0]))


def test_method_settings_are_summarised_with_integrated_gradients_completeness():
    notes = [{"steps": 32, "token": "last prompt token", "relative_gap": 0.01, "forwards": 3},
             {"steps": 32, "token": "last prompt token", "relative_gap": 0.2, "forwards": 5}]
    summary = fmethods.settings(notes)
    assert summary == {"steps": 32, "token": "last prompt token", "relative_gap": pytest.approx(0.105),
                       "forwards": 4.0, "completeness_within_5pct": 0.5}
