"""Tests that must not see what is not there, on a few seeded simulated data sets (benchmarks/null_rates.py runs
the same simulations at scale): centre-biased attention that ignores the box is not read as grounded, sibling
slides without site signal are not read as a site signal, and the positive controls still fire."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pathbind_metrics import faithfulness as fm
from pathbind_tasks.common import faithfulness_aggregations as fa

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "null_rates.py"
spec = importlib.util.spec_from_file_location("null_rates", SCRIPT)
assert spec is not None and spec.loader is not None
null_rates = importlib.util.module_from_spec(spec)
spec.loader.exec_module(null_rates)


def test_centre_biased_attention_that_ignores_the_box_is_not_grounded():
    """20 data sets of 30 items, maps favouring the centre, boxes placed uniformly: the box-placement null rejects
    at most 3 times at 5% (the cell-shuffle null it replaces rejected in 99% of such data sets)."""
    rejected = sum(null_rates.faithfulness_rejects(30, grounded=False, seed=seed) for seed in range(20))
    assert rejected <= 3, rejected


def test_maps_concentrated_in_the_box_are_grounded():
    """The positive control: attention and causal maps with a bump in the box reject in every data set, and the
    overall p-values are Holm-adjusted across the tests, the family named."""
    assert all(null_rates.faithfulness_rejects(30, grounded=True, seed=seed) for seed in range(5))
    records = null_rates.faithfulness_records(30, grounded=True, rng=np.random.default_rng(0))
    tests = fa.permutation_tests(records, n_permutations=999)
    amim = tests["attn_amim>attn_amim_null"]
    assert amim["p"] <= amim["p_holm"] <= 5 * amim["p"] and amim["family"].startswith("the overall p of the 5")
    causal = tests["causal_amim>causal_amim_null"]
    assert causal["p_holm"] < 0.05


def test_the_placement_null_is_the_map_in_other_boxes_corrected_for_box_centrality():
    """Two items of one image and one of another: each null uses only the items of the other image; an item
    whose image size no other image shares has none, with the reason counted."""
    records = null_rates.faithfulness_records(3, grounded=False, rng=np.random.default_rng(1))
    records[1]["cluster"] = records[0]["cluster"]
    odd = {**records[2], "id": "odd", "cluster": "image=odd", "image_size": [128, 256]}
    nulls = fa.with_placement_nulls([*records, odd])
    shares = [np.ravel(r["maps"]["attention"]) for r in records]
    boxes = [fm.box_coverage(r["box"], (256, 256), 8).ravel() for r in records]
    mass = np.array([[shares[i] @ boxes[j] for j in range(3)] for i in range(3)])
    other = np.array([[0, 0, 1], [0, 0, 1], [1, 1, 0]], dtype=bool)
    grand = mass[other].mean()
    expected = [mass[i][other[i]].mean() + mass[:, i][other[:, i]].mean() - grand for i in range(3)]
    assert [r["attn_amim_null"] for r in nulls[:3]] == pytest.approx(expected)
    assert np.isnan(nulls[3]["attn_amim_null"]) and nulls[3]["lost"]["attn_amim_null"] == fa.NO_OTHER_BOX
    assert fa.lost_counts([*records, odd])[f"attn_amim_null: {fa.NO_OTHER_BOX}"] == 1


def test_sibling_slides_without_site_signal_raise_no_site_alarm():
    """4 sites × 15 patients × 3 alike slides, no site signal, 8 seeds: the TSS AUROC interval (split by patient
    within site) covers 0.5 and the site similarity test (patients permuted) does not reject, but for at most one
    seed each; split by slide and tested over pairs, most such seeds raised a false alarm."""
    runs = [null_rates.audit_run(3, 0.0, seed) for seed in range(8)]
    assert all(r["defined"] for r in runs)
    assert sum(not r["covers_half"] for r in runs) <= 1 and sum(r["rejects"] for r in runs) <= 1, runs


def test_a_planted_site_signal_is_still_found():
    runs = [null_rates.audit_run(2, 0.5, seed) for seed in range(3)]
    assert all(r["above_half"] and r["rejects"] and r["probe_rejects"] for r in runs), runs


def test_the_benchmark_prints_one_json_line():
    done = subprocess.run([sys.executable, str(SCRIPT), "--reps", "1"], capture_output=True, text=True, check=True)
    (line,) = done.stdout.splitlines()
    result = json.loads(line)
    assert result["swap_own_image"] == {"20x6": 0.0, "10x10": 0.0}
    assert set(result["audit_features"]) == {"no_signal_1_slides_per_patient", "no_signal_2_slides_per_patient",
                                             "no_signal_3_slides_per_patient", "planted_signal_2_slides_per_patient",
                                             "weak_signal_2_slides_per_patient"}
