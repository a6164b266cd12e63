"""``pathbind_tiny``: trained, a real transformer on the ``pathbind_hf`` path sees and grounds; untrained, not."""

from __future__ import annotations

import json

import pytest
from conftest import BIN, metric, run

from pathbind_models.tiny_control.settings import Settings

TASKS = "pathbind_demo_yesno,pathbind_demo_grounding,pathbind_demo_faithfulness"
FEW = Settings(steps=3, batch=6, n_tiles=4, n_mosaics=4, n_mcq=1, n_text=2)


def test_training_is_deterministic_and_writes_loadable_checkpoints(tmp_path):
    from pathbind_models.hf.adapter import HFAdapter
    from pathbind_models.tiny_control.train import train

    first = train(FEW, out=tmp_path / "trained", untrained_out=tmp_path / "untrained", log=lambda _: None)
    assert train(FEW, log=lambda _: None) == first
    assert len(first) == 3 and len(set(first)) == 3  # three real steps, not one loss repeated
    for name in ("trained", "untrained"):
        assert (tmp_path / name / "model.safetensors").is_file()
        assert HFAdapter(str(tmp_path / name), device="cpu").family.name == "qwen2_vl"


def test_the_demo_items_are_never_training_data():
    from pathbind_models.tiny_control.data import examples

    with pytest.raises(ValueError, match="demo's own items"):
        examples(2, 2, 1, 2, seed=0)


def test_presence_questions_teach_a_margin_that_falls_with_each_hidden_cell_of_the_quadrant():
    import numpy as np

    from pathbind_models.tiny_control.data import GRID, MARGIN, OCCLUDED_PER_MOSAIC, _mosaic_examples, quadrant_cells
    from pathbind_tasks.demo.grounding_synth import TILE, grounding_items
    from pathbind_tasks.demo.tissue import QUADRANTS

    rng, cell, hidden_inside = np.random.default_rng(4), 2 * TILE // GRID, []
    for item in grounding_items(12, seed=3):
        x0, y0 = item["bbox"][:2]
        truth = int(y0 // TILE) * 2 + int(x0 // TILE)
        original = np.asarray(item["image"], int)
        presence = [e for e in _mosaic_examples(item, rng) if e.yes_share is not None]
        assert len(presence) == 1 + OCCLUDED_PER_MOSAIC
        for example in presence:
            assert f"the {QUADRANTS[truth]} quadrant" in example.text and example.cells == quadrant_cells(truth)
            painted = (np.asarray(example.image, int) != original).any(-1)  # read from the pixels
            cells = painted.reshape(GRID, cell, GRID, cell).any((1, 3)).ravel()
            k = int(cells[list(quadrant_cells(truth))].sum())
            hidden_inside.append(k)
            assert np.log(example.yes_share / (1 - example.yes_share)) == pytest.approx(MARGIN * (1 - k / 8))
    assert hidden_inside[0] == 0 and max(hidden_inside) > 8  # full view, and copies with most of the quadrant hidden


def test_yes_no_tiles_point_the_answer_at_their_evidence():
    import numpy as np

    from pathbind_models.tiny_control.data import GRID, _evidence, quadrant_cells
    from pathbind_tasks.demo.synth import demo_items

    cell = 256 // GRID  # pixels of a 256-pixel tile per image token
    _, tiles = demo_items(n_per_dimension=1, n_yes_no=24, seed=5)
    for row in tiles:
        evidence = _evidence(row)
        if row["answer"] == "no":
            assert evidence is None  # nothing to look at: the answer's attention is taught onto the text
        elif row["dimension"] == "D2":
            x0, y0, x1, y1 = row["boxes"][0]
            assert evidence == quadrant_cells(int((y0 + y1) / 2 >= 128) * 2 + int((x0 + x1) / 2 >= 128))
        else:
            rgb = np.asarray(row["image"], float)
            assert all(rgb[int(y), int(x), 0] - rgb[int(y), int(x), 2] > 30 for x, y in row["dab_centres"])  # brown
            boxes = [(c % GRID * cell, c // GRID * cell) for c in evidence]
            assert all(any(bx <= x < bx + cell and by <= y < by + cell for bx, by in boxes)
                       for x, y in row["dab_centres"])
            assert all(any(bx <= x < bx + cell and by <= y < by + cell for x, y in row["dab_centres"])
                       for bx, by in boxes)  # every cell holds one of them


def test_the_command_is_registered_and_refuses_the_demo_seed(tmp_path):
    done = run([str(BIN / "pathbind"), "train-control", "--out", str(tmp_path), "--seed", "0"], cwd=tmp_path)
    assert done.returncode != 0 and "demo's own items" in done.stderr
    assert not any(tmp_path.iterdir())


@pytest.fixture
def tiny_run(shared_lmms_eval):
    """``tiny_run(model)``: that control's run on TASKS; one run each, so that two pytest-xdist workers make both
    at once."""
    return lambda model: shared_lmms_eval(model, TASKS)


@pytest.mark.slow
def test_trained_control_grounds_and_its_attention_tracks_occlusion(tiny_run):
    run = tiny_run("pathbind_tiny")
    assert run["results"]["pathbind"]["model"]["pretrained"].endswith("checkpoints/pathbind_tiny")
    assert metric(run, "pathbind_demo_yesno", "invalid_rate") == 0
    assert metric(run, "pathbind_demo_yesno", "mg") >= 30
    assert metric(run, "pathbind_demo_grounding", "attn_iou") >= 0.4
    assert metric(run, "pathbind_demo_grounding", "cross_query_r") <= 0.5
    assert metric(run, "pathbind_demo_faithfulness", "attn_occlusion_rho") > 0.3
    verdict = metric(run, "pathbind_demo_faithfulness", "verdict")
    assert (verdict["image"], verdict["attention"]) == ("uses the image", "attention tracks causal importance")
    mid = metric(run, "pathbind_demo_grounding", "overlap_controls")["groups"]["mid"]
    assert all(test["delta"] > 0 and test["p_holm"] < 0.05 for test in mid["tests"].values())


@pytest.mark.slow
def test_untrained_twin_neither_gains_nor_grounds(tiny_run):
    run = tiny_run("pathbind_tiny_untrained")
    assert abs(metric(run, "pathbind_demo_yesno", "mg")) <= 10
    assert metric(run, "pathbind_demo_grounding", "attn_iou") < 0.25
    groups = metric(run, "pathbind_demo_grounding", "overlap_controls")["groups"]
    assert not any(all(test["delta"] > 0 and test["p_holm"] < 0.05 for test in group["tests"].values())
                   for group in groups.values())  # in no layer set does the true box beat every control
    verdict = metric(run, "pathbind_demo_faithfulness", "verdict")
    assert verdict["attention"] == "attention does not track causal importance"


@pytest.mark.slow
def test_both_checkpoints_are_the_packaged_ones_with_their_model_cards(tiny_run):
    from pathbind_models.tiny_control.card import FIGURES
    from pathbind_models.tiny_control.model import CHECKPOINTS

    for name in ("pathbind_tiny", "pathbind_tiny_untrained"):
        assert (CHECKPOINTS / name / "README.md").is_file()
        assert (CHECKPOINTS / name / "model.safetensors").stat().st_size < 10 * 2**20
        config = json.loads((CHECKPOINTS / name / "config.json").read_text())
        assert config["model_type"] == "qwen2_vl"
        stated = FIGURES[name]
        run = tiny_run(name)
        assert metric(run, "pathbind_demo_yesno", "mg") == pytest.approx(stated["mg"], abs=0.05)
        assert metric(run, "pathbind_demo_grounding", "attn_iou") == pytest.approx(stated["attn_iou"], abs=5e-4)
