"""``--limit N`` keeps lmms-eval's first N documents: every task lists an item's documents together."""

from __future__ import annotations

import importlib
import itertools
import json
import math
import re
from pathlib import Path

import datasets
import pytest
from conftest import metric

import pathbind_tasks.demo
from pathbind import make_plugin_manager
from pathbind.catalog import plugin_tasks, task_config
from pathbind_tasks.common.conditions import ABLATION_CONDITIONS, ABLATIONS, subset_keys, swap_partners

ENTRIES = [e for e in plugin_tasks(make_plugin_manager()) if e.kind == "task" and e.name != "example_stain_check"]
LOCAL = sorted(e.name for e in ENTRIES if e.data is not None and e.data.local_files)
# process_docs that emit one document per item (no conditions): grounding, faithfulness, PathVG.
ONE_PER_ITEM = {"pathbind_tasks.common.grounding.process_docs", "pathbind_tasks.common.grounding.split_filter",
                "pathbind_tasks.common.faithfulness.subgroups_by", "pathbind_tasks.pathvg.utils.pathvg_docs"}
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _origin(process_docs) -> str:
    """``module.function`` of a process_docs, or of the factory that built it (``with_conditions``, ...); for a
    callable object, of the function it wraps."""
    functions = [process_docs] if hasattr(process_docs, "__qualname__") else\
        [value for value in vars(process_docs).values() if callable(value) and hasattr(value, "__qualname__")]
    assert len(functions) == 1, f"cannot tell what {process_docs!r} runs"
    return f"{functions[0].__module__}.{functions[0].__qualname__.split('.<locals>')[0]}"


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_every_task_builds_its_documents_item_by_item(entry):
    """Each PathBind task's process_docs (data or not) is with_conditions, which orders item by item, or one
    of the one-document-per-item builders; a new kind of process_docs must be checked against --limit."""
    target = task_config(entry)["process_docs"]
    module, name = target.removeprefix("!function ").strip().rsplit(".", 1)
    origin = _origin(getattr(importlib.import_module(module), name))
    assert origin in {"pathbind_tasks.common.conditions.with_conditions", *ONE_PER_ITEM}, (entry.name, origin)


@pytest.mark.parametrize("name", LOCAL)
def test_every_shipped_task_lists_an_item_s_documents_together(task_manager, name):
    """Through lmms-eval: each item's documents are consecutive, with its conditions in the task's order, image
    first (a paraphrase set leaves out the rewordings a question has not); so the first N documents are whole items
    but for the last one."""
    docs = task_manager.load_task_or_group([name])[name].eval_docs
    ids = list(docs["id"])
    items = [item for item, _ in itertools.groupby(ids)]
    assert len(items) == len(set(ids)), f"{name}: an item's documents are not consecutive"
    if "condition" in docs.column_names:
        pairs = zip(ids, docs["condition"], strict=True)
        per_item = [[condition for _, condition in group] for _, group in itertools.groupby(pairs, lambda p: p[0])]
        order = max(per_item, key=len)
        assert all(conditions[0] == "image" and conditions == [c for c in order if c in conditions]
                   for conditions in per_item), name
        assert name.endswith("_paraphrase") or all(conditions == order for conditions in per_item), name


def records(result: dict, task: str) -> list[dict]:
    log = next(result["out"].rglob(f"*_samples_{task}.jsonl"))
    return [json.loads(line)["pathbind"] for line in log.read_text().splitlines()]


def pathbind_warnings(result: dict) -> list[str]:
    lines = ANSI.sub("", result["stdout"] + result["stderr"]).splitlines()
    return [line.split(" - ", 1)[1] for line in lines if "pathbind_tasks.common.vqa_aggregations" in line]


@pytest.mark.slow
@pytest.mark.parametrize("task", ["pathbind_demo_vqa", "pathbind_demo_yesno"])
def test_limit_4_keeps_two_whole_items_with_and_without_the_image(limited_control, task):
    """4 documents are 2 items under both conditions: acc_text and MG are numbers, not NaN."""
    logged = records(limited_control, task)
    assert [(r["id"], r["condition"]) for r in logged] == [(r["id"], c) for r in logged[::2] for c in ("image", "text")]
    assert len({r["id"] for r in logged}) == 2 and {r["task"] for r in logged} == {task}
    for name in ("acc_image", "acc_text", "mg"):
        assert math.isfinite(metric(limited_control, task, name)), name
    assert metric(limited_control, task, "mg") == 100.0  # the control reads every tile; without it, it refuses


@pytest.mark.slow
def test_limit_4_on_the_ablation_task_names_each_condition_it_cut(limited_control):
    """4 of the first item's 8 documents: image, blank and the swaps are scored; each blur condition is NaN
    with one warning line naming the task and the condition, and nothing else is warned about."""
    task = "pathbind_demo_vqa_ablation"
    logged = records(limited_control, task)
    assert [r["condition"] for r in logged] == list(ABLATIONS[:4]) and len({r["id"] for r in logged}) == 1
    for condition in ("blank", "swap_same", "swap_cross"):
        assert math.isfinite(metric(limited_control, task, f"drop_{condition}")), condition
    cut = [c for c in ABLATION_CONDITIONS if c.startswith("blur_")]
    assert all(math.isnan(metric(limited_control, task, f"acc_{c}")) for c in cut)
    expected = [f"task {task}, condition {c}: no answer under {c} for any of the 1 items answered with the image, "
                f"so acc_{c} and drop_{c} are NaN" for c in cut]
    assert [w.split(" (")[0] for w in pathbind_warnings(limited_control)] == expected


@pytest.mark.slow
def test_a_limited_run_swaps_in_the_images_drawn_over_the_whole_dataset(limited_control):
    """The first item's swap partners are those drawn over the full 60-item set (a 1-item set has none)."""
    raw = datasets.Dataset.from_parquet(str(Path(pathbind_tasks.demo.__file__).parent / "data" / "vqa.parquet"))
    logged = {r["condition"]: r["image_from"] for r in records(limited_control, "pathbind_demo_vqa_ablation")}
    for condition in ("swap_same", "swap_cross"):
        partner = swap_partners(subset_keys(raw), same=condition == "swap_same")[0]
        assert logged[condition] == raw["id"][partner] != raw["id"][0], condition


@pytest.mark.slow
def test_limit_of_one_whole_ablation_item_scores_every_condition(limited_blind):
    """--limit 8 is the first item under all 8 conditions: every acc_/drop_ is a number and nothing is warned."""
    task = "pathbind_demo_vqa_ablation"
    assert len(ABLATIONS) == 8
    result = limited_blind
    assert [r["condition"] for r in records(result, task)] == list(ABLATIONS)
    for condition in ABLATION_CONDITIONS:
        for kind in ("acc", "drop"):
            assert math.isfinite(metric(result, task, f"{kind}_{condition}")), (kind, condition)
    assert pathbind_warnings(result) == []
