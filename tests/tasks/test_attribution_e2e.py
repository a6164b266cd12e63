"""``--model_args attribution=all`` through lmms-eval on the demo faithfulness items: every measure per method, each
method that applies separating the positive controls from the blind and untrained ones, NaN with the reason where a
method cannot apply, and ``pathbind report`` writing the two tables and the per-method overlays.

The program controls run ``pathbind_demo_faithfulness`` itself; the tiny checkpoints run its first 8 items at a
coarser resolution (the same data, process_docs and metrics on a 4×4 grid, 2 curve steps, 16 RISE masks, 4
Integrated Gradients points), so that their runs stay cheap."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest
from conftest import BIN, metric, run

import pathbind_tasks
from pathbind_models.attribution import METHODS, MODEL_METHODS
from pathbind_models.hf.attribution import NO_LAYER_WEIGHT

pytestmark = pytest.mark.slow
DEMO, QUICK = "pathbind_demo_faithfulness", "quick_faithfulness"
CONTROLS = ("pathbind_control", "pathbind_blind")
TINY_ITEMS = 8  # two mosaics of each pattern
TASKS = Path(pathbind_tasks.__file__).parent
MEASURES = ("pointing_hit", "amim", "box_ap", "rho", "insertion_auc", "deletion_auc")


@pytest.fixture(scope="module")
def quick_task(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("quick")
    (folder / "quick_faithfulness.yaml").write_text(textwrap.dedent(f"""
        include: {TASKS / 'common' / '_faithfulness.yaml'}
        task: {QUICK}
        dataset_path: parquet
        dataset_kwargs:
          data_files:
            test: {TASKS / 'demo' / 'data' / 'grounding.parquet'}
        process_docs: !function pathbind_tasks.common.faithfulness.by_pattern
        lmms_eval_specific_kwargs:
          default: {{grid: 4, fill: mean, steps: 2, rise_masks: 16, rise_cells: 4, ig_steps: 4}}
        metadata:
          version: 1
          pathbind_requires: [attention, option_scores]
    """))
    return folder


@pytest.fixture(scope="module")
def runs(shared_lmms_eval, quick_task):
    """Each model's run on every demo item with every method (one shared run each): the results and the task."""
    def get(model: str) -> tuple[dict, str]:
        if model in CONTROLS:
            return shared_lmms_eval(model, DEMO, "--model_args", "attribution=all"), DEMO
        return shared_lmms_eval(model, QUICK, "--include_path", str(quick_task), "--model_args", "attribution=all",
                                "--limit", str(TINY_ITEMS)), QUICK
    return get


def methods(found: tuple[dict, str]) -> dict:
    return metric(found[0], found[1], "attribution")["methods"]


def roi(found: tuple[dict, str]) -> dict:
    return metric(found[0], found[1], "roi_deletion")


@pytest.mark.parametrize("model", ["pathbind_control", "pathbind_tiny"])
def test_every_measure_is_reported_per_method(runs, model):
    table = methods(runs(model))
    assert list(table) == list(METHODS)
    for name, entry in table.items():
        for measure in MEASURES:
            assert {"mean", "ci", "delta", "delta_ci", "p", "p_holm", "d"} <= set(entry[measure]), (name, measure)
        assert {"mean", "ci"} <= set(entry["abs_rho"]) and "p_holm" in entry["causal_minus_amim"]
        assert entry["verdict"].startswith(name)
    assert {"mean", "ci", "p", "d", "verdict"} <= set(roi(runs(model)))


def test_program_controls_get_reasons_for_the_methods_that_need_layers(runs):
    """No layers or gradients in the program controls: those methods are NaN with the reason, never a number."""
    for model in ("pathbind_control", "pathbind_blind"):
        table = methods(runs(model))
        for name in MODEL_METHODS:
            assert table[name]["n"] == 0 and math.isnan(table[name]["rho"]["mean"]), (model, name)
            control = "PositiveControl" if model == "pathbind_control" else "BlindControl"
            assert table[name]["verdict"] == f"{name} does not apply: NotApplicable: {control} exposes no layers or " \
                                             "gradients"


def test_the_control_passes_and_the_blind_control_fails_every_method_that_applies(runs):
    control, blind = methods(runs("pathbind_control")), methods(runs("pathbind_blind"))
    for name in ("attention", "rise"):
        assert control[name]["verdict"] == f"{name} tracks causal importance"
        assert blind[name]["verdict"] != f"{name} tracks causal importance"
        for measure in ("pointing_hit", "amim", "box_ap"):
            assert control[name][measure]["delta"] > 0 and control[name][measure]["p_holm"] < 0.05, (name, measure)
            assert not blind[name][measure]["p"] < 0.05, (name, measure)
    assert roi(runs("pathbind_control"))["ci"]["low"] > 0 and roi(runs("pathbind_blind"))["mean"] == 0


def test_the_trained_tiny_model_separates_from_its_untrained_twin(runs):
    """The same architecture, trained to ground and not. Raw attention and gradient×attention track causal
    importance and point into the box in the trained model only; Integrated Gradients and RISE track it in the
    trained one; hiding the box costs the trained model nats and the untrained one next to nothing. Winsor-CAM
    applies to neither: their Qwen2-VL tower is read through LayerNorms, so its layer weights vanish. (Rollout
    separates neither way, and IG and RISE, path and perturbation methods, also track the untrained twin's small
    causal effect on the whole demo: docs/audits.md.)"""
    trained, untrained = methods(runs("pathbind_tiny")), methods(runs("pathbind_tiny_untrained"))
    for name in ("attention", "gradient_attention"):
        assert trained[name]["verdict"] == f"{name} tracks causal importance"
        assert untrained[name]["verdict"] == f"{name} does not track causal importance"
        assert trained[name]["rho"]["mean"] > untrained[name]["rho"]["mean"], name
        assert trained[name]["amim"]["delta"] > untrained[name]["amim"]["delta"], name
    for name in ("integrated_gradients", "rise"):
        assert trained[name]["verdict"] == f"{name} tracks causal importance"
    for table in (trained, untrained):
        assert table["winsor_cam"]["n"] == 0
        assert table["winsor_cam"]["verdict"] == f"winsor_cam does not apply: NotApplicable: {NO_LAYER_WEIGHT}"
    assert roi(runs("pathbind_tiny"))["ci"]["low"] > 10 * abs(roi(runs("pathbind_tiny_untrained"))["mean"])
    notes = trained["integrated_gradients"]["settings"]
    assert notes["steps"] == 4 and notes["baseline"] and "relative_gap" in notes


def test_the_report_writes_tables_2_and_3_and_an_overlay_column_per_method(runs, tmp_path):
    folders = [str(runs(model)[0]["out"]) for model in CONTROLS]
    done = run([str(BIN / "pathbind"), "report", *folders, "--out", str(tmp_path / "report"), "--overlays", "2"],
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "the seed's Table 2" in markdown and "the seed's Table 3" in markdown and "ROI deletion" in markdown
    for name in METHODS:
        assert f"| pathbind_control | {name} |" in markdown
    assert "rollout does not apply" in markdown
    figures = {path.name for path in (tmp_path / "report" / "figures").glob("attribution_*.png")}
    assert figures == {f"attribution_{model}_{DEMO}.png" for model in CONTROLS}
