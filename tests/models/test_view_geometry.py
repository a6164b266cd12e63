"""The part of the image a checkpoint sees (``view_box``): from real and tiny processors to heat maps and scores."""

from __future__ import annotations

import json
import math

import datasets
import numpy as np
import pytest
from conftest import lmms_eval, metric
from PIL import Image
from sklearn.metrics import average_precision_score

from pathbind_conventions import resample_to_grid
from pathbind_metrics import grounding
from pathbind_models.hf.adapter import HFAdapter
from pathbind_models.hf.families import NAMES
from pathbind_tasks.common import grounding_aggregations as ga
from pathbind_tasks.common import grounding_records as gr

PROMPT = "Look at the image and locate: nuclei with prominent nucleoli"
ENTITY = "nuclei with prominent nucleoli"
CHECKPOINTS = [("tiny", family) for family in NAMES] + [("real", name) for name in ("qwen2_5_vl", "llava")]


def noise(width: int, height: int, seed: int = 1) -> Image.Image:
    return Image.fromarray((np.random.default_rng(seed).random((height, width, 3)) * 255).astype("uint8"))


@pytest.fixture(scope="module", params=CHECKPOINTS, ids=lambda c: f"{c[0]}-{c[1]}")
def adapter(request, tiny_model, realtok_model) -> HFAdapter:
    kind, name = request.param
    return HFAdapter(str(tiny_model(name) if kind == "tiny" else realtok_model(name)))


def _expected_view(adapter: HFAdapter, size: tuple[int, int]) -> tuple[float, ...]:
    """LLaVA's CLIP processors (tiny: 224, real: 336) keep the middle square of the short-side resize."""
    width, height = size
    if adapter.family.name != "llava" or width == height:
        return 0.0, 0.0, float(width), float(height)
    short = min(width, height)
    return ((width - short) / 2, 0.0, (width + short) / 2, float(height)) if width > height else \
        (0.0, (height - short) / 2, float(width), (height + short) / 2)


@pytest.mark.parametrize("size", [(224, 224), (512, 256), (256, 512), (300, 200)])
def test_view_box_is_the_processors_crop(adapter, size):
    """A centre-cropping processor shows the middle of a non-square image; every other family shows all of it."""
    attention = adapter.entity_attention(noise(*size), PROMPT, ENTITY, layers=[0])
    assert attention.view_box == pytest.approx(_expected_view(adapter, size), abs=1e-9)


@pytest.mark.parametrize("block", [(0.7, 0.2, 0.9, 0.5), (0.1, 0.55, 0.3, 0.85)])
def test_a_painted_region_moves_the_map_where_the_view_box_places_it(adapter, block):
    """On a 512×256 image, painting a block (placed in fractions of the view) changes layer-0 attention most in
    a map cell whose rectangle, laid over ``view_box``, overlaps the block."""
    image = noise(512, 256)
    before = adapter.entity_attention(image, PROMPT, ENTITY, layers=[0])
    x0, y0, x1, y1 = before.view_box
    painted = (x0 + block[0] * (x1 - x0), y0 + block[1] * (y1 - y0), x0 + block[2] * (x1 - x0),
               y0 + block[3] * (y1 - y0))
    changed = image.copy()
    changed.paste((255, 255, 255), tuple(round(v) for v in painted))
    after = adapter.entity_attention(changed, PROMPT, ENTITY, layers=[0])
    change = np.abs(np.log(after.map) - np.log(before.map))
    change -= np.median(change)  # softmax renormalisation shifts every cell alike
    row, col = np.unravel_index(np.argmax(change), change.shape)
    rows, cols = change.shape
    cell = (x0 + col * (x1 - x0) / cols, y0 + row * (y1 - y0) / rows, x0 + (col + 1) * (x1 - x0) / cols,
            y0 + (row + 1) * (y1 - y0) / rows)
    overlaps = cell[0] < painted[2] and cell[2] > painted[0] and cell[1] < painted[3] and cell[3] > painted[1]
    assert overlaps, (cell, painted, change.shape)


def test_pixels_outside_the_view_never_reach_the_model(realtok_model):
    """Repainting LLaVA-1.5's cropped-off sides of a 512×256 image (beyond the 2-pixel reach of the bicubic resize)
    changes neither its input nor its map."""
    adapter = HFAdapter(str(realtok_model("llava")))
    image = noise(512, 256)
    changed = image.copy()
    changed.paste((255, 255, 255), (0, 0, 124, 256))
    changed.paste((0, 0, 0), (388, 0, 512, 256))
    before, after = (adapter.entity_attention(i, PROMPT, ENTITY, layers=[0]) for i in (image, changed))
    assert before.view_box == (128.0, 0.0, 384.0, 256.0)
    assert np.array_equal(before.inputs["pixel_values"], after.inputs["pixel_values"])
    assert np.array_equal(before.map, after.map)


# ------------------------------------------------------------------------------------------- metrics


def test_heat_lies_on_the_view_and_nothing_outside():
    hot = np.zeros((4, 4))
    hot[1:3, 1:3] = 1.0
    heat = grounding.heat_map(hot, (40, 20), sigma=0, view_box=[10, 0, 30, 20])
    assert heat.shape == (20, 40) and not heat[:, :10].any() and not heat[:, 30:].any()
    assert np.array_equal(heat[:, 10:30], grounding.heat_map(hot, (20, 20), sigma=0))


def test_scores_in_a_view_equal_scores_on_the_cropped_image():
    """With an integer view and a box inside it, IoU/precision/recall equal those of the crop as the image; pixel-AP
    equals scikit-learn's with the unseen pixels ranked last."""
    rng = np.random.default_rng(0)
    attn = rng.random((6, 6))
    view, box = [16, 8, 64, 56], [30, 20, 50, 40]
    cropped = grounding.attention_region_metrics(attn, [14, 12, 34, 32], (48, 48))
    assert grounding.attention_region_metrics(attn, box, (80, 64), view_box=view) == pytest.approx(cropped)
    heat = np.full((64, 80), -1.0)
    heat[8:56, 16:64] = grounding.heat_map(attn, (48, 48))
    labels = np.zeros((64, 80), bool)
    labels[20:40, 30:50] = True
    expected = average_precision_score(labels.ravel(), heat.ravel())
    assert grounding.pixel_average_precision(attn, box, (80, 64), view_box=view) == pytest.approx(expected)
    sweep = grounding.region_sweep(attn, box, (80, 64), qs=(0.1, 0.2), view_box=view)
    assert sweep["pixel_ap"] == pytest.approx(expected) and sweep["by_q"][0.2] == pytest.approx(cropped)


def test_box_partly_outside_the_view_counts_its_unseen_pixels_as_missed():
    attn = np.random.default_rng(1).random((6, 6))
    inside = grounding.attention_region_metrics(attn, [16, 8, 40, 56], (80, 64), view_box=[16, 8, 64, 56])
    partly = grounding.attention_region_metrics(attn, [0, 8, 40, 56], (80, 64), view_box=[16, 8, 64, 56])
    assert partly["precision"] == pytest.approx(inside["precision"])
    assert partly["recall"] == pytest.approx(inside["recall"] * 24 / 40)
    assert grounding.box_view_fraction([0, 8, 40, 56], (80, 64), [16, 8, 64, 56]) == pytest.approx(24 / 40)


def test_items_say_when_their_box_is_outside_the_view():
    """A box wholly outside the view is lost with its reason; one partly outside is scored with a diagnostic."""
    maps = [{"mid": np.random.default_rng(s).random((4, 4))} for s in range(3)]
    view = [128, 0, 384, 256]
    outside = gr.item_record(maps, [0, 0, 100, 100], (512, 256), view_box=view)
    partly = gr.item_record(maps, [100, 0, 200, 100], (512, 256), view_box=view)
    inside = gr.item_record(maps, [200, 0, 300, 100], (512, 256), view_box=view)
    assert math.isnan(outside["iou"]["0.2"]) and outside["lost"]["iou"] == grounding.BOX_OUTSIDE_VIEW
    assert partly["diagnostics"] == [gr.BOX_PARTLY_OUTSIDE_VIEW] and partly["box_in_view"] == pytest.approx(0.72)
    assert inside["diagnostics"] == [] and inside["view_box"] == view
    lost = ga.lost_items([outside, partly, inside])
    assert lost["scored"] == 2 and lost[f"iou: {grounding.BOX_OUTSIDE_VIEW}"] == 1
    assert lost[f"diagnostic: {gr.BOX_PARTLY_OUTSIDE_VIEW}"] == 1


def test_an_item_lost_before_any_map_reports_no_view():
    """A response that is not a response says why; it claims no view_box, not the placeholder's 1×1 image."""
    record = gr.lost_record("not an attention response")
    assert record["view_box"] is None and record["lost"]["item"] == "not an attention response"
    assert math.isnan(record["iou"]["0.2"]) and ga.lost_items([record])["scored"] == 0


@pytest.mark.parametrize("view_box", [[0, 0, 0, 10], [1, 2, 3], [600, 0, 700, 256], [float("nan"), 0, 1, 1]])
def test_a_bad_view_box_is_named(view_box):
    assert grounding.grounding_problem(np.eye(4), [0, 0, 10, 10], (512, 256), view_box=view_box) == grounding.BAD_VIEW


def test_cross_query_correlation_uses_the_seen_pixels_only():
    """Zero heat outside the view would make any two maps look alike; correlation is taken over the view."""
    a, b = np.random.default_rng(2).random((2, 5, 5))
    in_view = grounding.cross_query_correlation([a, b], image_size=(30, 30))
    assert grounding.cross_query_correlation([a, b], image_size=(90, 30), view_box=[30, 0, 60, 30]) == \
        pytest.approx(in_view)


def test_attention_on_the_occlusion_grid_leaves_unseen_cells_empty():
    grid = resample_to_grid(np.arange(4.0).reshape(2, 2), 4, view=(0.25, 0, 0.75, 1))
    assert not grid[:, [0, 3]].any() and np.array_equal(grid[:, 1:3], resample_to_grid(np.arange(4.0).reshape(2, 2),
                                                                                        2).repeat(2, axis=0))


def test_occlusion_cells_outside_the_view_are_not_counted_as_ignored():
    """Unseen cells (no attention, no effect) would inflate the attention–occlusion rank correlation; it is taken
    over the seen cells and equals scipy's there, and the unseen cells are counted."""
    from scipy.stats import spearmanr

    from pathbind_tasks.common import faithfulness_records as fr

    rng = np.random.default_rng(3)
    seen = np.zeros((4, 4), bool)
    seen[:, 1:3] = True
    attention = np.where(seen, rng.random((4, 4)), 0.0)
    original = np.array([0.0, -2.0])
    patches = np.tile(original, (16, 1))
    patches[seen.ravel(), 0] -= rng.random(8)  # only seen cells move the margin
    record = fr.item_record(original, patches, attention, original, {}, reference=0, box=[128, 0, 256, 128],
                            image_size=(512, 256), seed=0, view_box=[128, 0, 384, 256])
    delta = (2.0 - (patches[:, 0] - patches[:, 1])).reshape(4, 4)
    assert record["cells_outside_view"] == 8 and record["view_box"] == [128, 0, 384, 256]
    assert record["attn_occlusion_rho"] == pytest.approx(spearmanr(attention[seen], delta[seen]).statistic)
    everything = fr.item_record(original, patches, attention, original, {}, reference=0, box=[128, 0, 256, 128],
                                image_size=(512, 256), seed=0)
    assert everything["attn_occlusion_rho"] > record["attn_occlusion_rho"]  # the zeros' agreement, now left out


# ------------------------------------------------------------------------------------------- end to end


def write_grounding(root, size: tuple[int, int], boxes: list[list[int]]) -> None:
    folder = root / "pathbind_grounding"
    folder.mkdir(parents=True)
    rows = [{"id": f"g{i}", "image": noise(*size, seed=i), "expression": expression, "bbox": box,
             "width": size[0], "height": size[1], "split": "testA"}
            for i, (box, expression) in enumerate(zip(boxes, ("adipocytes with clear vacuoles", "a dense lymphocytic "
                                                               "infiltrate", "enlarged atypical nuclei"), strict=True))]
    datasets.Dataset.from_list(rows).cast_column("image", datasets.Image()).to_parquet(folder / "test.parquet")


@pytest.mark.slow
def test_llava_grounding_and_faithfulness_records_carry_the_view(tmp_path, realtok_model):
    """Through lmms_eval on 512×256 images: every record says the model saw x = 128…384; the box left of the view is
    lost with that reason, the one straddling its edge is scored with a diagnostic; occlusion cells outside the
    view are counted as such (one faithfulness item: 325 forwards)."""
    write_grounding(tmp_path / "data", (512, 256), [[200, 50, 300, 150], [10, 10, 100, 100], [100, 50, 200, 150]])
    args = ("--model_args", f"pretrained={realtok_model('llava')},max_new_tokens=4")
    env = {"PATHBIND_DATA": str(tmp_path / "data")}
    grounding_run = lmms_eval(tmp_path, "pathbind_hf", "pathbind_grounding_testa", *args, env=env)
    lost = metric(grounding_run, "pathbind_grounding_testa", "lost_items")
    assert lost["items"] == 3 and lost["scored"] == 2
    assert lost[f"iou: {grounding.BOX_OUTSIDE_VIEW}"] == 1 and lost[f"diagnostic: {gr.BOX_PARTLY_OUTSIDE_VIEW}"] == 1
    assert [r["view_box"] for r in records(grounding_run, "pathbind_grounding_testa")] == \
        [[128.0, 0.0, 384.0, 256.0]] * 3
    faithfulness_run = lmms_eval(tmp_path, "pathbind_hf", "pathbind_faithfulness", *args, "--limit", "1", env=env)
    (record,) = records(faithfulness_run, "pathbind_faithfulness")
    # The 16×16 occlusion grid has cells 32 px wide: columns 0–3 and 12–15 lie outside x = 128…384.
    assert record["view_box"] == [128.0, 0.0, 384.0, 256.0] and record["cells_outside_view"] == 128


def records(result: dict, task: str) -> list[dict]:
    log = next(result["out"].rglob(f"*_samples_{task}.jsonl"))
    return [json.loads(line)["pathbind"] for line in log.read_text().splitlines()]


def test_pan_and_scan_crops_are_refused_by_name(tiny_model):
    """Gemma 3's pan-and-scan adds crops PathBind cannot place yet: the item fails with that reason, not a guess."""
    from transformers import AutoProcessor

    from pathbind_models.hf.geometry import view_box

    processor = AutoProcessor.from_pretrained(tiny_model("gemma3"))
    processor.image_processor.do_pan_and_scan = True
    with pytest.raises(ValueError, match="pan-and-scan"):
        view_box(processor, {}, (512, 256))
