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


def test_a_subset_without_partners_keeps_its_own_image():
    """A single-item subset has nobody to swap with within it; image_from shows that."""
    assert swap_partners(["a", "b", "b"], same=True) == [0, 2, 1]


def test_ablation_docs_carry_the_swapped_image_and_its_origin():
    """The swap_cross copy of an item shows the pixels of the item named in image_from."""
    docs = with_conditions(ABLATIONS)(tiles())
    assert len(docs) == len(ABLATIONS) * 6
    by_id = {d["id"]: d["image"].getpixel((0, 0)) for d in docs if d["condition"] == "image"}
    for doc in (d for d in docs if d["condition"] in ("swap_same", "swap_cross")):
        assert doc["image"].getpixel((0, 0)) == by_id[doc["image_from"]]
        assert (doc["image_from"][:2] == doc["dimension"]) == (doc["condition"] == "swap_same")


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