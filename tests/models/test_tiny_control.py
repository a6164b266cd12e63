"""``pathbind_tiny``: trained, a real transformer on the ``pathbind_hf`` path sees and grounds; untrained, not."""

from __future__ import annotations

import json

import pytest
from conftest import BIN, lmms_eval, metric, run

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


def test_occluded_presence_questions_teach_a_margin_that_falls_with_each_hidden_cell_of_the_quadrant():
    import numpy as np

    from pathbind_models.tiny_control.data import GRID, MARGIN, _hidden_cells

    rng = np.random.default_rng(3)
    for _ in range(50):
        quadrant = int(rng.integers(4))
        mask, share = _hidden_cells(quadrant, rng)
        row, col = divmod(quadrant, 2)
        inside = mask[row * GRID // 2:(row + 1) * GRID // 2, col * GRID // 2:(col + 1) * GRID // 2].sum()
        assert np.log(share / (1 - share)) == pytest.approx(MARGIN * (1 - inside / 8))  # only the quadrant counts


def test_the_command_is_registered_and_refuses_the_demo_seed(tmp_path):
    done = run([str(BIN / "pathbind"), "train-control", "--out", str(tmp_path), "--seed", "0"], cwd=tmp_path)
    assert done.returncode != 0 and "demo's own items" in done.stderr
    assert not any(tmp_path.iterdir())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny_control")
    return {model: lmms_eval(root, model, TASKS) for model in ("pathbind_tiny", "pathbind_tiny_untrained")}


@pytest.mark.slow
def test_trained_control_grounds_and_its_attention_tracks_occlusion(runs):
    run = runs["pathbind_tiny"]
    assert run["results"]["pathbind"]["model"]["pretrained"].endswith("checkpoints/pathbind_tiny")
    assert metric(run, "pathbind_demo_yesno", "invalid_rate") == 0
    assert metric(run, "pathbind_demo_yesno", "mg") >= 20
    assert metric(run, "pathbind_demo_grounding", "attn_iou") >= 0.4
    assert metric(run, "pathbind_demo_grounding", "cross_query_r") <= 0.5
    assert metric(run, "pathbind_demo_faithfulness", "attn_occlusion_rho") > 0.3
    verdict = metric(run, "pathbind_demo_faithfulness", "verdict")
    assert (verdict["image"], verdict["attention"]) == ("uses the image", "attention tracks causal importance")


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="the shipped checkpoint answers the DAB question at chance: MG 25")
def test_trained_control_gains_30_points_from_the_image(runs):
    assert metric(runs["pathbind_tiny"], "pathbind_demo_yesno", "mg") >= 30


@pytest.mark.slow
def test_untrained_twin_neither_gains_nor_grounds(runs):
    run = runs["pathbind_tiny_untrained"]
    assert abs(metric(run, "pathbind_demo_yesno", "mg")) <= 10
    assert metric(run, "pathbind_demo_grounding", "attn_iou") < 0.25
    verdict = metric(run, "pathbind_demo_faithfulness", "verdict")
    assert verdict["attention"] == "attention does not track causal importance"


@pytest.mark.slow
def test_both_checkpoints_are_the_packaged_ones_with_their_model_cards(runs):
    from pathbind_models.tiny_control.card import FIGURES
    from pathbind_models.tiny_control.model import CHECKPOINTS

    for name in ("pathbind_tiny", "pathbind_tiny_untrained"):
        assert (CHECKPOINTS / name / "README.md").is_file()
        assert (CHECKPOINTS / name / "model.safetensors").stat().st_size < 10 * 2**20
        config = json.loads((CHECKPOINTS / name / "config.json").read_text())
        assert config["model_type"] == "qwen2_vl"
        stated = FIGURES[name]
        assert metric(runs[name], "pathbind_demo_yesno", "mg") == pytest.approx(stated["mg"], abs=0.05)
        assert metric(runs[name], "pathbind_demo_grounding", "attn_iou") == pytest.approx(stated["attn_iou"], abs=5e-4)
