"""What an interval resamples: each item's cluster (its image's bytes, a column, or the TCGA case in a column), kept
by process_docs and carried by records, and the clustered intervals of a source task run end to end."""

from __future__ import annotations

import math
from pathlib import Path

import datasets
import pandas as pd
import pytest
from conftest import lmms_eval, metric
from source_data import png

from pathbind.lmms.running import RunningTask, running
from pathbind_tasks.common.accounting import counting, without_faults
from pathbind_tasks.common.conditions import with_readable_images
from pathbind_tasks.common.vqa_aggregations import ci95, reliance


def documents(**columns) -> datasets.Dataset:
    images = [{"bytes": png(shade), "path": None} for shade in columns.pop("shades")]
    return datasets.Dataset.from_dict({"id": [str(i) for i in range(len(images))], "image": images, **columns})


def kept(docs: datasets.Dataset, cluster: str) -> tuple[list[str], dict]:
    """The cluster keys of the documents kept, and the ledger's drops, with ``cluster`` as the task's setting."""
    with running(RunningTask("t", cluster=cluster)), counting(docs) as ledger:
        checked = without_faults(with_readable_images(docs), "task t")
    return checked["cluster"], dict(ledger.dropped)


def test_questions_on_the_same_image_bytes_share_a_cluster():
    keys, dropped = kept(documents(shades=[10, 10, 20]), "image")
    assert keys[0] == keys[1] != keys[2] and keys[0].startswith("image=") and not dropped


def test_a_column_names_the_cluster_and_an_item_without_a_key_is_dropped_as_data():
    keys, dropped = kept(documents(shades=[10, 20, 30, 40], slide=["s1", "s1", " ", None]), "slide")
    assert keys == ["slide=s1", "slide=s1"]
    assert dropped == {"no cluster key": 2}


def test_tcga_cases_are_read_from_barcodes_paths_and_any_letter_case():
    paths = ["/wsi/TCGA-BH-A0BS-01Z-00-DX1.svs", "tcga-bh-a0bs-01a", "TCGA-A2-A04P-01Z", "slide_17.svs"]
    keys, dropped = kept(documents(shades=[1, 2, 3, 4], path=paths), "case:path")
    assert keys == ["case:path=TCGA-BH-A0BS", "case:path=TCGA-BH-A0BS", "case:path=TCGA-A2-A04P"]
    assert dropped == {"no TCGA case in field 'path', the task's pathbind_cluster": 1}


@pytest.mark.parametrize(("setting", "message"), [
    ("slide", "names the column 'slide', which the documents do not have"),
    ("patient:path", "is not 'image', a column name or 'case:<column>'")])
def test_a_cluster_setting_the_data_cannot_give_is_a_setup_error(setting, message):
    with pytest.raises(ValueError, match=message):
        kept(documents(shades=[1], path=["x"]), setting)


def record(item: str, condition: str, correct: bool, cluster: str | None, parsed: str = "A") -> dict:
    return {"id": item, "cluster": cluster, "condition": condition, "correct": correct, "valid": True,
            "parsed": parsed, "dimension": None}


def test_vqa_intervals_resample_clusters_and_say_so():
    """Thirty items on six images: six clusters, and a design effect above 1 for answers shared by an image."""
    records = [record(str(i), c, (i // 5) % 2 == 0, f"image={i // 5}") for i in range(30) for c in ("image", "text")]
    interval = ci95(records)["acc_image"]
    assert (interval["cluster"], interval["clusters"], interval["items"]) == ("image", 6, 30)
    assert interval["design_effect"] > 3
    unclustered = ci95([{**r, "cluster": None} for r in records])["acc_image"]
    assert (unclustered["cluster"], unclustered["clusters"]) == ("item", 30)
    assert interval["high"] - interval["low"] > unclustered["high"] - unclustered["low"]


def test_reliance_counts_a_lost_answer_as_a_change_and_leaves_out_items_without_an_image_answer():
    records = [record("1", "image", True, "image=a"), record("1", "swap_same", False, "image=a", parsed="B"),
               record("2", "image", True, "image=b"), record("2", "swap_same", True, "image=b"),
               record("3", "image", True, "image=c"), {**record("3", "swap_same", False, "image=c"), "valid": False,
                                                         "parsed": None},
               {**record("4", "image", False, "image=d"), "valid": False, "parsed": None},
               record("4", "swap_same", False, "image=d")]
    measures = reliance(records)
    assert measures["image_sensitivity"]["swap_same"]["value"] == pytest.approx(200 / 3)
    assert measures["image_sensitivity"]["swap_same"]["invalid_left_out"] == 1
    assert measures["vrs"]["swap_same"]["value"] == 50.0  # 3/4 right with the image, 1/4 with a swapped one
    assert measures["invariant"]["value"] == pytest.approx(100 / 3)
    assert reliance([record("1", "image", True, "image=a")]) == {}


def write_path_vqa_with_pandas(folder: Path, n_images: int = 20, per_image: int = 6) -> None:
    """Path-VQA's test.parquet as pandas writes it: every image asked the same yes/no question ``per_image`` times,
    with one answer per image, so the blind control's correctness (one answer per question text) is shared within
    an image; non-square images."""
    rows = [{"image": {"bytes": png(7 * i, (31, 17)), "path": f"img_{i}.png"}, "question": "is there necrosis?",
             "answer": "yes" if i % 2 else "no"} for i in range(n_images) for _ in range(per_image)]
    folder.mkdir(parents=True)
    pd.DataFrame(rows).to_parquet(folder / "test.parquet")


@pytest.mark.slow
def test_a_source_with_several_questions_per_image_gets_image_clustered_intervals(tmp_path):
    """pathbind_path_vqa through lmms_eval on 20 images x 6 questions: every interval names 20 image clusters of 120
    items, with a design effect near 6 for accuracy, where the answers are shared within an image."""
    write_path_vqa_with_pandas(tmp_path / "data" / "path_vqa")
    result = lmms_eval(tmp_path, "pathbind_blind", "pathbind_path_vqa", env={"PATHBIND_DATA": str(tmp_path / "data")})
    interval = metric(result, "pathbind_path_vqa", "ci95")["acc_image"]
    assert (interval["cluster"], interval["clusters"], interval["items"]) == ("image", 20, 120)
    assert 4 < interval["design_effect"] < 8
    assert interval["low"] <= metric(result, "pathbind_path_vqa", "acc_image") <= interval["high"]
    mg = metric(result, "pathbind_path_vqa", "ci95")["mg"]
    # Blind: no item's answer changes with the image. That bounds the shares gaining and losing by what 20 images
    # allow (Clopper–Pearson's 0 of 20, on the df of 20 clusters), not to a point: another model may change some.
    assert mg["low"] == -mg["high"] and 15 < mg["high"] < 25 and math.isnan(mg["design_effect"])
