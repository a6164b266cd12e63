"""TCGA barcode parsing, case/site overlap, leak partitions and the metrics by leak partition with their cluster
intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import confint_proportions_2indep

from pathbind_metrics.leakage import (
    CLEAN,
    PATIENT,
    SITE,
    cases_and_sites,
    leak_partition,
    overlap,
    stratified_metric,
)
from pathbind_metrics.tcga import Barcode, classify, parse_barcode

UUID = "2F0D1F6B-7A31-4C55-8A0E-0123456789AB"


@pytest.mark.parametrize(("text", "case", "raw"), [
    (f"/gdc/brca/TCGA-BH-A0BS-01Z-00-DX1.{UUID}.svs", "TCGA-BH-A0BS", "TCGA-BH-A0BS-01Z-00-DX1"),
    ("tcga-bh-a0bs-01z-00-dx2", "TCGA-BH-A0BS", "tcga-bh-a0bs-01z-00-dx2"),
    ("patches/TCGA-BH-A0BS_x20_y40.png", "TCGA-BH-A0BS", "TCGA-BH-A0BS"),
    ("TCGA-A2-A0CM", "TCGA-A2-A0CM", "TCGA-A2-A0CM"),
    ("s3://bucket/TCGA-BRCA/TCGA-E2-A14N-01Z-00-DX1.svs", "TCGA-E2-A14N", "TCGA-E2-A14N-01Z-00-DX1"),
    ("TCGA-E2-A14N/TCGA-E2-A14N-01Z-00-DX1.svs", "TCGA-E2-A14N", "TCGA-E2-A14N-01Z-00-DX1"),
])
def test_barcodes_are_found_in_paths_file_names_and_any_case(text, case, raw):
    """Case = first three fields, upper-cased; TSS = the second field; raw = the barcode as written."""
    assert parse_barcode(text) == Barcode(case, case[5:7], raw)


@pytest.mark.parametrize(("text", "reason"), [
    ("TCGA-BH", "'TCGA-BH' has no participant field (expected TCGA-<TSS>-<participant>)"),
    ("TCGA-B!-A0BS", "TSS 'B!' in 'TCGA-B!-A0BS' is not 2 letters/digits"),
    ("TCGA-BH-A0BSX-01Z", "participant 'A0BSX' in 'TCGA-BH-A0BSX-01Z' is not 4 letters/digits"),
    ("data/TCGA-BRCA/slide_17.svs", "TSS 'BRCA' in 'TCGA-BRCA' is not 2 letters/digits"),
    ("TCGA-AA-0001/TCGA-BB-0002.svs", "holds several TCGA cases (TCGA-AA-0001, TCGA-BB-0002)"),
])
def test_malformed_barcodes_are_classified_with_the_field_that_fails(text, reason):
    """An id that starts like a barcode but does not parse is malformed, never silently unknown."""
    assert classify(text) == ("malformed", None, reason)
    assert parse_barcode(text) is None


@pytest.mark.parametrize("text", ["CPTAC-C3L-00001", "BCNB_0042.jpg", "", "xTCGA-BH-A0BS", "TCGA"])
def test_ids_without_a_tcga_barcode_are_unknown(text):
    """Non-TCGA ids (and TCGA run into another word) are of unknown provenance."""
    assert classify(text) == ("unknown", None, "")


def test_hand_built_inventories_give_the_known_overlap():
    """3 of 6 test cases and 3 of 4 test sites were trained on; siblings, duplicates and non-TCGA ids add nothing."""
    train = ["TCGA-AA-0001-01Z-00-DX1", "TCGA-AA-0001-01Z-00-DX2", "TCGA-AA-0002", "tcga-bb-0003-01z",
             "TCGA-CC-0009", "CPTAC-XYZ", "TCGA-BH"]
    test = ["TCGA-AA-0001-01Z-00-DX2", "TCGA-AA-0001-01Z-00-DX2", "TCGA-AA-0002-01Z", "TCGA-BB-0003",
            "TCGA-BB-0004", "TCGA-DD-0005", "TCGA-CC-0010", "BCNB-1"]
    train_cases, train_tss = cases_and_sites(train)
    result = overlap(train_cases, train_tss, *cases_and_sites(test))
    assert result == {"rho_case": 3 / 6, "rho_tss": 3 / 4, "n_test_cases": 6, "n_test_tss": 4,
                      "n_shared_cases": 3, "n_shared_tss": 3}


def test_dx_siblings_of_a_case_count_once_and_share_its_leak():
    """DX1 in training leaks its DX2 sibling; the case counts once in rho_case."""
    train_cases, train_tss = cases_and_sites(["TCGA-BH-A0BS-01Z-00-DX1"])
    test = ["TCGA-BH-A0BS-01Z-00-DX1", "TCGA-BH-A0BS-01Z-00-DX2"]
    barcodes = [parse_barcode(text) for text in test]
    assert [leak_partition(b.case, b.tss, train_cases, train_tss) for b in barcodes if b] == [PATIENT, PATIENT]
    assert overlap(train_cases, train_tss, *cases_and_sites(test))["n_test_cases"] == 1


def test_leak_partitions_are_patient_then_site_then_clean():
    """A trained case is patient-leaked even though its site is trained too; a new case at a trained site is site."""
    cases, sites = {"TCGA-AA-0001"}, {"AA"}
    assert leak_partition("TCGA-AA-0001", "AA", cases, sites) == PATIENT
    assert leak_partition("TCGA-AA-0002", "AA", cases, sites) == SITE
    assert leak_partition("TCGA-BB-0002", "BB", cases, sites) == CLEAN


def test_overlap_of_a_test_set_without_tcga_cases_is_nan():
    """No test case: rho is undefined (NaN), not 0 — a non-TCGA benchmark is not proven clean."""
    result = overlap({"TCGA-AA-0001"}, {"AA"}, set(), set())
    assert math.isnan(result["rho_case"]) and math.isnan(result["rho_tss"])


def test_stratified_means_gap_and_exclusions():
    """Means per partition, gap = leaked − clean, unknown ids and NaN values excluded and counted."""
    values = [1, 1, 1, 0, 1, 0, 0, 1, 0.0, 1, math.nan]
    partitions = [PATIENT] * 4 + [SITE] * 2 + [CLEAN] * 3 + ["unknown", PATIENT]
    table = stratified_metric(values, partitions, proportion=1.0)
    assert (table[PATIENT]["n"], table[SITE]["n"], table[CLEAN]["n"], table["excluded"]["n"]) == (4, 2, 3, 2)
    assert table[PATIENT]["mean"] == 0.75 and table[CLEAN]["mean"] == pytest.approx(1 / 3)
    assert table["gap"]["mean"] == pytest.approx(0.75 - 1 / 3)
    for name in (PATIENT, SITE, CLEAN, "gap"):
        assert table[name]["ci_low"] < table[name]["mean"] < table[name]["ci_high"]


def test_intervals_ignore_item_order():
    """Shuffled items (another rank count gathers them in another order) give the very same table."""
    rng = np.random.default_rng(5)
    values, partitions = rng.random(200), rng.choice([PATIENT, SITE, CLEAN, "unknown"], 200)
    cases = rng.choice([f"TCGA-AA-{k:04d}" for k in range(30)], 200)
    order = rng.permutation(200)
    assert stratified_metric(values[order], list(partitions[order])) == stratified_metric(values, list(partitions))
    assert (stratified_metric(values[order], list(partitions[order]), clusters=list(cases[order]))
            == stratified_metric(values, list(partitions), clusters=list(cases)))


def test_a_proportion_with_every_item_its_own_case_is_near_clopper_pearson_and_the_gap_is_newcombes():
    """One item per case: each partition's interval is Clopper–Pearson's on n − 1 items (the jackknife's
    variance is p(1 − p)/(n − 1)), scipy's exact binomial interval at large n; the gap's is Newcombe's MOVER of the
    two (statsmodels' ``newcomb`` method, the same square-and-add of the Wilson intervals)."""
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.random(400) < 0.8, rng.random(300) < 0.6]).astype(float)
    table = stratified_metric(values, [PATIENT] * 400 + [CLEAN] * 300, proportion=1.0)
    for name, stratum in ((PATIENT, values[:400]), (CLEAN, values[400:])):
        reference = stats.binomtest(int(stratum.sum()), stratum.size).proportion_ci(method="exact")
        assert (table[name]["ci_low"], table[name]["ci_high"]) == pytest.approx((reference.low, reference.high),
                                                                                abs=0.003)
    counts = (int(values[:400].sum()), 400, int(values[400:].sum()), 300)
    low, high = confint_proportions_2indep(*counts, method="newcomb", compare="diff")
    assert (table["gap"]["ci_low"], table["gap"]["ci_high"]) == pytest.approx((low, high), abs=0.004)


def test_a_stratum_of_two_cases_is_no_point_and_is_flagged():
    """Two clean cases, each right once and wrong once: 50% of 4 answers is not [50, 50] (a percentile bootstrap's
    interval of two equal cluster means); the interval spans what two cases allow and says why it is wide."""
    values = [1.0, 0.0, 1.0, 0.0] + [1.0, 0.0] * 10
    partitions = [CLEAN] * 4 + [PATIENT] * 20
    cases = ["TCGA-AA-0001", "TCGA-AA-0001", "TCGA-AA-0002", "TCGA-AA-0002", *[f"TCGA-BB-{k:04d}" for k in range(20)]]
    table = stratified_metric(values, partitions, clusters=cases, proportion=1.0)
    clean = table[CLEAN]
    assert clean["mean"] == 0.5 and clean["clusters"] == 2 and clean["ci_low"] < 0.1 and clean["ci_high"] > 0.9
    assert "only 2 case clusters (< 20)" in clean["warning"] and "degrees of freedom" in clean["warning"]
    assert table["gap"]["warning"].startswith("clean: only 2 case clusters") and table[PATIENT]["warning"] == ""


def test_an_empty_partition_has_nan_mean_and_interval_and_so_does_the_gap():
    """Nothing clean: the clean mean, its CI and the gap are NaN; nothing raises."""
    table = stratified_metric([1.0, 0.0], [PATIENT, SITE])
    assert table[CLEAN]["n"] == 0
    assert all(math.isnan(table[CLEAN][k]) for k in ("mean", "ci_low", "ci_high"))
    assert math.isnan(table["gap"]["mean"]) and math.isnan(table["gap"]["ci_low"])


def test_mismatched_lengths_are_an_error():
    """Values and partitions must pair up."""
    with pytest.raises(ValueError, match="differ in length: 2 vs 1"):
        stratified_metric([1.0, 0.0], [PATIENT])


def test_the_gap_resamples_cases_not_items():
    """Ten items per case, answered alike within a case: the partitions count their cases, and the gap's interval
    is wider than with every item its own case, by a design effect near 10."""
    rng = np.random.default_rng(4)
    per_case = np.repeat((rng.random(60) < 0.5).astype(float), 10)
    partitions = ["patient-leaked"] * 300 + ["clean"] * 300
    cases = [f"TCGA-AA-{i // 10:04d}" for i in range(600)]
    clustered = stratified_metric(per_case, partitions, clusters=cases, proportion=1.0)
    items = stratified_metric(per_case, partitions, proportion=1.0)
    assert clustered["clean"]["clusters"] == 30 and items["clean"]["clusters"] == 300
    assert 8 < clustered["gap"]["design_effect"] < 12 and items["gap"]["design_effect"] == pytest.approx(1.0)
    width = clustered["gap"]["ci_high"] - clustered["gap"]["ci_low"]
    assert width > 2.5 * (items["gap"]["ci_high"] - items["gap"]["ci_low"])


def test_site_folds_are_site_disjoint_and_balanced_by_slides():
    """Random site sizes: every site in exactly one fold, no fold empty, the folds' sizes within the largest site's
    of each other; the same sizes give the same folds; 0 folds gives one per site."""
    from pathbind_metrics.leakage import site_folds

    rng = np.random.default_rng(0)
    for _ in range(50):
        sizes = {f"S{i}": int(n) for i, n in enumerate(rng.integers(1, 40, rng.integers(5, 30)))}
        k = int(rng.integers(2, 6))
        folds = site_folds(sizes, k)
        assert set(folds) == set(sizes) and set(folds.values()) == set(range(k))
        totals = [sum(n for site, n in sizes.items() if folds[site] == f) for f in range(k)]
        assert max(totals) - min(totals) <= max(sizes.values())
        assert folds == site_folds(dict(reversed(list(sizes.items()))), k)
        assert sorted(site_folds(sizes).values()) == list(range(len(sizes)))
