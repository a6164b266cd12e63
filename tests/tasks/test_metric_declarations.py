"""One declaration per metric: the YAMLs, the scorers, the plugin door and results.json all read it."""

from __future__ import annotations

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


def test_every_task_reads_its_metric_list_and_emits_only_declared_metrics(pm):
    """lmms-eval reads exactly the declarations of the list a task names, its scorer emits none other, and every
    declared kind is some task's."""
    lists = first_party_tasks(pm)
    for entry, name in lists.items():
        config = load_task_yaml(entry.yaml_path)
        assert config["metric_list"] == metric_list(*METRIC_LISTS[name]), entry.name
        emitted = config["process_results"]({}, [""])  # no answer to an empty document: an invalid or lost record
        assert set(emitted) <= {m["metric"] for m in config["metric_list"]}, entry.name
    assert {kind for name in lists.values() for kind in METRIC_LISTS[name]} == set(KINDS)


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
