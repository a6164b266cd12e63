"""Evaluation conditions: text-only, blank, seeded swaps within / across subsets, blur."""

from __future__ import annotations

import datasets
import numpy as np
import pytest
from PIL import Image

from pathbind_tasks.common.conditions import (
    ABLATIONS,
    SWAP_SEED,
    WITH_AND_WITHOUT_IMAGE,
    subset_keys,
    swap_partners,
    visual_for,
    with_conditions,
)


def tiles(n_per_key: int = 3, keys: tuple[str, ...] = ("D1", "D2")) -> datasets.Dataset:
    rows = [{"id": f"{key}-{i}", "dimension": key, "image": Image.new("RGB", (8, 8), (10 * n, 0, 0))}
            for n, (key, i) in enumerate((k, i) for k in keys for i in range(n_per_key))]
    return datasets.Dataset.from_list(rows, features=datasets.Features(
        {"id": datasets.Value("string"), "dimension": datasets.Value("string"), "image": datasets.Image()}))


def test_swap_partners_respect_subsets_and_never_pick_the_item_itself():
    """swap_same stays within the key, swap_cross leaves it; neither returns the item's own index."""
    keys = ["a"] * 5 + ["b"] * 5
    same, cross = swap_partners(keys, same=True), swap_partners(keys, same=False)
    assert all(keys[p] == keys[i] and p != i for i, p in enumerate(same))
    assert all(keys[p] != keys[i] for i, p in enumerate(cross))


def test_swap_partners_are_fixed_by_the_seed():
    """The published ablation figures rest on these draws: SWAP_SEED gives exactly these partners (a change of
    seed, generator or drawing order fails here), and another seed draws others."""
    keys = ["a"] * 4 + ["b"] * 4
    assert SWAP_SEED == 20260101
    assert swap_partners(keys, same=True) == [2, 0, 1, 2, 5, 6, 5, 6]
    assert swap_partners(keys, same=False) == [5, 4, 6, 7, 0, 2, 1, 3]
    assert swap_partners(keys, same=True, seed=1) != swap_partners(keys, same=True)


def test_a_subset_without_partners_on_another_image_has_no_partner():
    """A single-item subset has nobody to swap with within it, nor has a subset whose items share one image."""
    assert swap_partners(["a", "b", "b"], same=True) == [None, 2, 1]
    assert swap_partners(["a", "b", "b"], ["i", "j", "j"], same=True) == [None, None, None]
    cross = swap_partners(["a", "b", "b"], ["i", "j", "j"], same=False)
    assert cross[0] in (1, 2) and cross[1:] == [0, 0]


@pytest.mark.parametrize(("images", "per_image"), [(20, 6), (10, 10)])
def test_no_swap_shows_an_item_its_own_image(images, per_image):
    """Questions sharing an image are one cluster: no swap, within or across subsets, draws any of them (with
    only the item itself excluded, 5.8% and 8% of these items received their own image)."""
    clusters = [f"image={i}" for i in range(images) for _ in range(per_image)]
    keys = [f"D{(i * 7 + q) % 3}" for i in range(images) for q in range(per_image)]
    for same in (True, False):
        partners = swap_partners(keys, clusters, same=same)
        assert all(p is not None and clusters[p] != clusters[i] and (keys[p] == keys[i]) == same
                   for i, p in enumerate(partners))


def test_ablation_docs_carry_the_swapped_image_and_its_origin():
    """The swap_cross copy of an item shows the pixels of the item named in image_from, whose cluster is
    cluster_from."""
    docs = with_conditions(ABLATIONS)(tiles())
    assert len(docs) == len(ABLATIONS) * 6
    by_id = {d["id"]: d["image"].getpixel((0, 0)) for d in docs if d["condition"] == "image"}
    cluster = {d["id"]: d["cluster"] for d in docs}
    for doc in (d for d in docs if d["condition"] in ("swap_same", "swap_cross")):
        assert doc["image"].getpixel((0, 0)) == by_id[doc["image_from"]]
        assert (doc["image_from"][:2] == doc["dimension"]) == (doc["condition"] == "swap_same")
        assert doc["cluster_from"] == cluster[doc["image_from"]] != doc["cluster"]


def test_questions_on_one_image_are_never_swapped_onto_it():
    """Three questions on each of two images in one subset: every swap_same shows the other image; a subset
    held by one image has no swap_same document (left out with a warning), while its other conditions run."""
    one = tiles(n_per_key=2, keys=("D1",))
    rows = [{"id": f"{image}-{q}", "dimension": "D1", "image": one[image]["image"]}
            for image in (0, 1) for q in range(3)]
    features = one.features
    docs = with_conditions(("image", "swap_same"))(datasets.Dataset.from_list(rows, features=features))
    swapped = [d for d in docs if d["condition"] == "swap_same"]
    assert len(swapped) == 6 and all(d["image_from"][0] != d["id"][0] for d in swapped)
    assert all(d["cluster_from"] != d["cluster"] for d in swapped)
    alone = with_conditions(("image", "swap_same", "blank"))(datasets.Dataset.from_list(rows[:3], features=features))
    assert [(d["id"], d["condition"]) for d in alone] == [(f"0-{q}", c) for q in range(3) for c in ("image", "blank")]


@pytest.mark.parametrize("conditions", [WITH_AND_WITHOUT_IMAGE, ABLATIONS, ("image",)])
def test_documents_run_item_by_item_so_any_prefix_holds_whole_items(conditions):
    """Every condition of item 1 (in the given order), then of item 2...: the first k * len(conditions)
    documents, what ``--limit`` keeps, are k whole items."""
    raw = tiles()
    docs = with_conditions(conditions)(raw)
    assert docs["id"] == [item for item in raw["id"] for _ in conditions]
    assert docs["condition"] == list(conditions) * len(raw)


def test_swaps_are_drawn_over_the_whole_dataset_whatever_the_order():
    """Each swap copy shows the partner that swap_partners draws over all items (as before the reordering),
    so the first item of a limited run sees the same replacement image as in a full run."""
    raw = tiles(n_per_key=4, keys=("D1", "D2", "D3"))
    docs = with_conditions(ABLATIONS)(raw)
    ids, keys = raw["id"], subset_keys(raw)
    for condition in ("swap_same", "swap_cross"):
        expected = [ids[p] for p in swap_partners(keys, same=condition == "swap_same")]
        swapped = [d for d in docs if d["condition"] == condition]
        assert [d["image_from"] for d in swapped] == expected
        pixels = {i: image.getpixel((0, 0)) for i, image in zip(ids, raw["image"], strict=True)}
        assert [d["image"].getpixel((0, 0)) for d in swapped] == [pixels[i] for i in expected]
    # The first item's documents, as the condition-by-condition order of earlier releases drew them.
    assert docs["image_from"][: len(ABLATIONS)] == ["D1-0", "D1-0", "D1-2", "D2-3", "D1-0", "D1-0", "D1-0", "D1-0"]


def test_blank_and_blur_are_applied_when_the_model_asks_for_the_visual():
    """blank is white at the original size; blur_8 smooths an edge; text has no visual."""
    image = Image.new("RGB", (40, 20), (0, 0, 0))
    image.paste((255, 255, 255), (20, 0, 40, 20))
    assert visual_for({"condition": "text"}, image) == []
    blank = visual_for({"condition": "blank"}, image)[0]
    assert blank.size == (40, 20) and np.asarray(blank).min() == 255
    blurred = np.asarray(visual_for({"condition": "blur_8"}, image)[0])[10, :, 0]
    assert 0 < blurred[19] < 255 and blurred[0] < blurred[19] < blurred[39]


def test_unknown_conditions_are_rejected_with_the_known_ones():
    """A typo in a condition list fails when the task is defined, listing valid names."""
    with pytest.raises(ValueError, match="unknown condition"):
        with_conditions(("image", "blurr_4"))


def test_an_unreadable_image_drops_its_item_from_every_condition_not_the_run(running_task):
    """Corrupt image bytes: a fault of the data, so the item is in no condition (not an invalid answer under the
    image condition only, which would lower acc_image and MG) and counted in the ledger by reason."""
    from pathbind_tasks.common.vqa import process_results

    good = tiles(n_per_key=1, keys=("D1",)).cast_column("image", datasets.Image(decode=False))
    rows = [{"id": "ok", "dimension": "D1", "image": good[0]["image"]},
            {"id": "bad", "dimension": "D1", "image": {"bytes": b"not an image", "path": None}}]
    features = datasets.Features({"id": datasets.Value("string"), "dimension": datasets.Value("string"),
                                  "image": datasets.Image()})
    docs = list(with_conditions(("image", "text"))(datasets.Dataset.from_list(rows, features=features)))
    assert [(d["id"], d["condition"]) for d in docs] == [("ok", "image"), ("ok", "text")]
    assert "image_error" not in docs[0]
    ledger = running_task.ledger
    assert (ledger.rows, ledger.kept, ledger.dropped) == (2, 1, {"unreadable image": 1})
    assert ledger.examples["unreadable image"].startswith("'bad': UnidentifiedImageError")
    mcq = {"options": ["x", "y"], "answer": "A", "question": "?"}
    scored = process_results({**docs[0], **mcq}, ["<answer>A</answer>"])["acc_image"]
    assert scored["valid"] and scored["task"] == "test_task"  # the task the seam runs it for
    everything = r"every one of the 1 items has a fault of the data, nothing to evaluate \(unreadable image: 1 \(first"
    with pytest.raises(ValueError, match=everything):
        with_conditions(("image", "text"))(datasets.Dataset.from_list(rows[1:], features=features))