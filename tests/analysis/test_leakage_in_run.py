"""The in-run `leakage_split` aggregation: a task's accuracy by leak status against PATHBIND_LEAKAGE_TRAIN."""

from __future__ import annotations

import math

import pytest

from pathbind_analysis.audit.leakage.in_run import KEYS, TRAIN_ENV, leakage_split

RECORDS = ([{"slide_id": "TCGA-AA-0001-01Z-00-DX2", "correct": True}] * 4
           + [{"slide_id": "TCGA-AA-0009", "correct": True}, {"slide_id": "TCGA-AA-0009", "correct": False}]
           + [{"slide_id": "tcga-zz-0002", "correct": c} for c in (True, False, False, False)]
           + [{"slide_id": "BCNB-3", "correct": True}, {"correct": True}, "not a record"])


def test_split_against_the_configured_inventory(tmp_path, monkeypatch):
    """Accuracy in percent per partition, the gap in points (its CI undefined with one case per partition), rho
    over the records' cases."""
    (tmp_path / "train.txt").write_text("TCGA-AA-0001-01Z-00-DX1\n")
    monkeypatch.setenv(TRAIN_ENV, f"corpus={tmp_path / 'train.txt'}")
    result = leakage_split(RECORDS)
    assert (result["leaked"], result["site"], result["clean"], result["gap"]) == (100.0, 50.0, 25.0, 75.0)
    assert (result["n_leaked"], result["n_site"], result["n_clean"], result["n_excluded"]) == (4, 2, 4, 3)
    # One case in each partition: the interval resamples cases, so with one it is undefined, not a point.
    assert math.isnan(result["gap_ci_low"]) and math.isnan(result["gap_design_effect"])
    assert (result["rho_case"], result["rho_tss"]) == pytest.approx((1 / 3, 1 / 2))
    again = leakage_split(RECORDS)  # seeded: the same in every run and on every rank count
    assert again.keys() == result.keys() and all(
        again[k] == result[k] or (math.isnan(again[k]) and math.isnan(result[k])) for k in result)


def test_several_inventories_are_joined_as_one_union(tmp_path, monkeypatch):
    """NAME=FILE[:column] entries joined by ';' count as everything the model was trained on."""
    (tmp_path / "a.txt").write_text("TCGA-AA-0001\n")
    (tmp_path / "b.csv").write_text("caption,slide\nx,TCGA-ZZ-0002-01Z\n")
    monkeypatch.setenv(TRAIN_ENV, f"a={tmp_path / 'a.txt'}; b={tmp_path / 'b.csv'}:slide")
    result = leakage_split(RECORDS)
    assert (result["n_leaked"], result["n_site"], result["n_clean"]) == (8, 2, 0)
    assert math.isnan(result["gap"])


@pytest.mark.parametrize(("value", "reason"), [
    ("", f"no training inventory: set {TRAIN_ENV}=NAME=FILE[:column]"),
    ("x=/no/such/file.txt", f"{TRAIN_ENV} x: no such file: /no/such/file.txt"),
])
def test_without_a_usable_inventory_every_figure_is_nan_with_a_reason(monkeypatch, value, reason):
    """The aggregation never raises at the end of a run: NaN figures and the reason to fix it."""
    monkeypatch.setenv(TRAIN_ENV, value)
    result = leakage_split(RECORDS)
    assert all(math.isnan(result[key]) for key in KEYS)
    assert str(result["reason"]).startswith(reason)


def test_the_aggregation_is_registered_for_task_yamls(pm):
    """A task YAML reaches it as `!function pathbind.plugin_metrics.leakage_split`."""
    assert pm.metrics()["leakage_split"].value is leakage_split
