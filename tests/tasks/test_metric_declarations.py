"""One declaration per metric: the YAMLs, the scorers, the plugin door and results.json all read it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pathbind.catalog import TaskEntry, plugin_tasks, read_task_yaml
from pathbind.lmms.queries import load_task_yaml
from pathbind.plugins import PluginManager
from pathbind_tasks.common import metrics
from pathbind_tasks.common.conditions import CONDITION_SETS
from pathbind_tasks.common.metrics import KINDS, METRIC_LISTS, METRICS, VQA, declared, metric_list, names


def first_party_tasks(pm: PluginManager) -> dict[TaskEntry, str]:
    """Each PathBind task and the declared list its YAML names (what follows ``pathbind_tasks.common.metrics.``)."""
    lists = {}
    for entry in plugin_tasks(pm):
        if entry.plugin == "pathbind_tasks" and entry.kind == "task":
            module, _, name = str(read_task_yaml(entry.yaml_path).get("metric_list")).rpartition(".")
            assert module == metrics.__name__ and name in METRIC_LISTS, f"{entry.name} lists its metrics by hand"
            lists[entry] = name
    return lists


def scored_kinds(process_results: Callable[..., dict[str, Any]]) -> set[str]:
    """The kinds a scorer emits records for, read from what it emits (not from any YAML): each emitted set of names
    is exactly one kind's. Its inputs: an empty answer to an empty document and to one of each VQA condition set
    (a VQA document's condition set is its kind; other scorers ignore it)."""
    kinds = set()
    for doc in [{}, *({"condition_set": name} for name in CONDITION_SETS)]:
        emitted = set(process_results(doc, [""]))
        matching = [kind for kind in KINDS if set(names(kind)) == emitted]
        assert len(matching) == 1, f"{process_results}: emits {sorted(emitted)}, the names of no one kind"
        kinds.update(matching)
    return kinds


def test_every_task_reads_the_metric_list_of_what_its_scorer_emits(pm):
    """The metric_list lmms-eval loads for a task is the declarations of the kinds its scorer emits records for: a
    YAML naming another kind's list, or a list of more kinds than its scorer scores, fails; and every declared kind
    is some task's."""
    lists = first_party_tasks(pm)
    scored = set()
    for entry in lists:
        config = load_task_yaml(entry.yaml_path)
        kinds = scored_kinds(config["process_results"])
        assert config["metric_list"] == metric_list(*kinds), f"{entry.name}: its scorer emits {sorted(kinds)}"
        scored |= kinds
    assert scored == set(KINDS)


def test_a_kind_names_each_metric_once_and_no_name_contains_another():
    """Within a kind a name has one aggregation; across kinds no name contains another (lmms-eval aggregates a
    group's metrics by substring); every declared kind is known, and each VQA condition set is one."""
    for kind in KINDS:
        assert len(set(names(kind))) == len(names(kind)), kind
    every = {metric.name for metric in METRICS}
    assert not [(a, b) for a in every for b in every if a != b and a in b]
    assert {kind for metric in METRICS for kind in metric.kinds} == set(KINDS)
    assert {f"vqa_{name}" for name in CONDITION_SETS} == set(VQA)


def test_an_unknown_kind_is_an_error_naming_the_known_ones():
    """A scorer naming a kind that is not declared fails when it is built, not with an empty record."""
    with pytest.raises(ValueError, match=r"unknown metric kind vqa_everything; known: vqa_full, vqa_image_only, "):
        names("vqa_everything")


def test_the_plugin_door_offers_the_declared_vqa_aggregations(pm):
    """Third-party YAMLs reach the VQA aggregations as ``pathbind.plugin_metrics.<name>``, from the declarations."""
    door = pm.metrics()
    for metric in declared(*VQA):
        assert (door[metric.name].value, door[metric.name].plugin) == (metric.aggregate, "pathbind_tasks")


@pytest.mark.slow
def test_results_report_the_declared_direction_of_each_metric(demo_control, pm):
    """results.json's ``higher_is_better`` of every demo task is its declarations'."""
    lists = {entry.name: name for entry, name in first_party_tasks(pm).items()}
    reported = demo_control["results"]["higher_is_better"]
    tasks = [task for task in reported if task in lists]
    assert len(tasks) > 10
    for task in tasks:
        declared_directions = {m.name: m.higher_is_better for m in declared(*METRIC_LISTS[lists[task]])}
        assert reported[task] == declared_directions, task
