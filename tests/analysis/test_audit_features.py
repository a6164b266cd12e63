"""`pathbind audit-features`: planted site/patient signal found, permuted control at chance, scikit-learn
references, every input format read alike, every dropped row counted, clear errors."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from conftest import BIN, run
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from pathbind.cli import main
from pathbind_analysis.audit.features.probes import class_holdout
from pathbind_analysis.audit.features.read import read_table
from pathbind_analysis.audit.features.slides import choose_slides

DIM = 16
RESAMPLES = "50"


def planted(seed: int = 0, sites: int = 8, patients: int = 14) -> tuple[list[str], np.ndarray]:
    """Slide embeddings = site centroid + patient offset + noise; patients with 2 or 3 slides, TCGA barcodes."""
    rng = np.random.default_rng(seed)
    ids, vectors = [], []
    for s in range(sites):
        centroid = rng.normal(0, 1, DIM)
        for p in range(patients):
            patient = centroid + rng.normal(0, 1, DIM)
            for k in range(2 + p % 2):
                ids.append(f"TCGA-{chr(65 + s)}{s}-{s}{p:03d}-01Z-00-DX{k + 1}")
                vectors.append(patient + rng.normal(0, 1, DIM))
    return ids, np.array(vectors)


def with_bad_rows(ids: list[str], vectors: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Plus a non-TCGA slide and a slide whose embedding holds NaN: rows every format can carry."""
    bad = np.full((2, DIM), 0.5)
    bad[1, 3] = np.nan
    return [*ids, "CPTAC-C3L-00001", "TCGA-Z9-9999-01Z-00-DX1"], np.vstack([vectors, bad])


def write_every_format(root, ids, vectors) -> dict[str, list[str]]:
    """The same embeddings as users' pipelines write them; name -> the command-line arguments that read them."""
    pd.DataFrame({"slide_id": ids, "embedding": list(vectors)}).to_parquet(root / "list.parquet")
    wide = {"slide": pa.array(ids), **{f"dim_{d}": pa.array(vectors[:, d]) for d in range(DIM)}}
    pq.write_table(pa.table(wide), root / "wide.parquet")
    np.save(root / "emb.npy", vectors)
    (root / "ids.txt").write_text("\n".join(ids) + "\n")
    np.savez(root / "emb.npz", ids=np.array(ids), embeddings=vectors)
    torch.save({"ids": ids, "embeddings": torch.from_numpy(vectors)}, root / "columns.pt")
    torch.save({i: torch.from_numpy(v) for i, v in zip(ids, vectors, strict=True)}, root / "by_slide.pt")
    with h5py.File(root / "columns.h5", "w") as handle:
        handle["slide_ids"] = np.array(ids, dtype="S")
        handle["features"] = vectors
    with h5py.File(root / "by_slide.h5", "w") as handle:
        for slide, vector in zip(ids, vectors, strict=True):
            handle[slide] = vector
    for folder, suffix in (("h5_files", ".h5"), ("pt_files", ".pt")):  # Trident/CLAM: one file per slide
        (root / folder).mkdir()
        for slide, vector in zip(ids, vectors, strict=True):
            if suffix == ".h5":
                with h5py.File(root / folder / f"{slide}.h5", "w") as handle:
                    handle["features"] = vector[None]  # a slide encoder's 1×D
                    handle["coords"] = np.zeros((1, 2))
            else:
                torch.save(torch.from_numpy(vector[None]), root / folder / f"{slide}.pt")
    names = ["list.parquet", "wide.parquet", "emb.npz", "columns.pt", "by_slide.pt", "columns.h5", "by_slide.h5",
             "h5_files", "pt_files"]
    return {"emb.npy": ["emb.npy", "--ids", "ids.txt"], **{name: [name] for name in names}}


def audit_in_process(tmp_path, capsys, *args: str) -> tuple[int, dict | None, str, str]:
    """(exit status, JSON report or None, stdout, stderr) of ``pathbind audit-features`` run in this process."""
    out = tmp_path / f"report-{len(list(tmp_path.iterdir()))}.json"
    status = main(["audit-features", *args, "--json", str(out), "--n-resamples", RESAMPLES])
    captured = capsys.readouterr()
    return status, json.loads(out.read_text()) if status == 0 else None, captured.out, captured.err


@pytest.fixture(scope="module")
def cohort(tmp_path_factory):
    root = tmp_path_factory.mktemp("cohort")
    ids, vectors = planted()
    pd.DataFrame({"slide_id": ids, "embedding": list(vectors)}).to_parquet(root / "planted.parquet")
    return {"root": root, "ids": ids, "vectors": vectors}


@pytest.fixture(scope="module")
def installed_report(cohort):
    """One run of the installed command, with the Markdown table and the similarity plot."""
    done = run([str(BIN / "pathbind"), "audit-features", "planted.parquet", "--json", "report.json", "--out", "out",
                "--encoder", "planted-encoder", "--n-resamples", RESAMPLES], cwd=cohort["root"])
    assert done.returncode == 0, done.stderr
    return {"json": json.loads((cohort["root"] / "report.json").read_text()), "stdout": done.stdout,
            "out": cohort["root"] / "out"}


def test_planted_site_and_patient_signal_is_found(installed_report):
    report = installed_report["json"]
    assert report["encoder"] == "planted-encoder" and report["seed"] == 0 and not report["permuted_labels"]
    assert report["tss_auroc_macro"] > 0.95
    assert report["tss"]["n_sites"] == 8 and report["reid"]["n_patients"] == 112
    assert report["reid_chance"] == pytest.approx(1 / 112)
    assert report["reid_multiple_of_chance"] == pytest.approx(report["reid_top1"] * 112)
    assert report["reid_multiple_of_chance"] > 20
    low, high = report["tss_auroc_macro_ci95"]
    assert low <= report["tss_auroc_macro"] <= high
    low, high = report["reid_top1_ci95"]
    assert low < report["reid_top1"] < high
    groups = report["similarity"]["groups"]
    assert groups["same_case"]["mean"] > groups["same_tss"]["mean"] > groups["cross_tss"]["mean"]
    assert groups["same_tss"]["excess_over_cross_tss"] > 0.2
    # No permutation of the 50 reaches the observed contrasts: the smallest p-value 50 permutations can give.
    assert report["similarity"]["permutation_p"] == {"cross_tss<same_tss": 1 / 51, "same_tss<same_case": 1 / 51}
    assert (groups["same_case"]["pairs_total"], groups["same_tss"]["pairs_total"]) == (8 * (7 * 1 + 7 * 3),
                                                                                     8 * (35 * 35 - 91) // 2)


def test_outputs_table_and_plot(installed_report):
    assert "TSS detection, macro AUROC" in installed_report["stdout"]
    assert "patient re-id, top-1" in installed_report["stdout"]
    markdown = (installed_report["out"] / "features_audit.md").read_text()
    assert "# Feature-space leakage audit: planted-encoder" in markdown and "| TSS detection" in markdown
    assert (installed_report["out"] / "similarity.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.filterwarnings("ignore:The number of unique classes:UserWarning")  # re-identification: by design
def test_probe_figures_equal_scikit_learn_on_the_same_split(installed_report, cohort):
    """An independent recomputation: labels from the barcodes, the same 70/30 splits (TSS: by patient within
    site), a fresh scikit-learn probe."""
    ids, x = cohort["ids"], cohort["vectors"]
    sites, cases = np.array([i[5:7] for i in ids]), np.array([i[:12] for i in ids])
    train, test = class_holdout(sites, seed=0, units=cases)
    assert not set(cases[train]) & set(cases[test])  # no patient on both sides
    held_out, held_patients = len(test), len(set(cases[test]))
    probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(x[train], sites[train])
    auroc = roc_auc_score(sites[test], probe.predict_proba(x[test]), multi_class="ovr", average="macro")
    train, test = class_holdout(cases, seed=0)
    probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(x[train], cases[train])
    top1 = accuracy_score(cases[test], probe.predict(x[test]))
    report = installed_report["json"]
    assert report["tss_auroc_macro"] == pytest.approx(auroc, abs=1e-9)
    assert report["reid_top1"] == pytest.approx(top1, abs=1e-9)
    assert (report["tss"]["n_test"], report["reid"]["n_test"]) == (held_out, 112)
    assert held_patients == 8 * round(0.3 * 14)  # 4 of each site's 14 patients held out


def test_split_is_stratified_within_every_class():
    labels = np.array(["a"] * 2 + ["b"] * 3 + ["c"] * 10 + ["d"] * 7)
    train, test = class_holdout(labels, seed=3)
    assert sorted([*train, *test]) == list(range(len(labels)))
    held = {label: int((labels[test] == label).sum()) for label in "abcd"}
    assert held == {"a": 1, "b": 1, "c": 3, "d": 2}  # round(30%), at least one, never the whole class
    assert set(labels[train]) == set("abcd")
    again = class_holdout(labels, seed=3)
    assert np.array_equal(again[1], test) and not np.array_equal(class_holdout(labels, seed=4)[1], test)


def test_permuted_labels_give_chance(cohort, tmp_path, capsys):
    status, report, out, _ = audit_in_process(tmp_path, capsys, str(cohort["root"] / "planted.parquet"),
                                              "--permute-labels")
    assert status == 0 and report["permuted_labels"] and "labels permuted" in out
    assert abs(report["tss_auroc_macro"] - 0.5) < 0.15
    assert report["reid_multiple_of_chance"] < 4  # 1/64 is one correct slide of 64
    groups = report["similarity"]["groups"]
    assert abs(groups["same_tss"]["excess_over_cross_tss"]) < 0.05
    assert abs(groups["same_case"]["excess_over_cross_tss"]) < 0.15


def test_same_seed_same_report_other_seed_other_split(cohort, installed_report, tmp_path, capsys):
    path = str(cohort["root"] / "planted.parquet")
    first, again = (audit_in_process(tmp_path, capsys, path, "--seed", "7")[1] for _ in range(2))
    assert first == again and first["seed"] == 7
    assert first["reid_top1_ci95"] != installed_report["json"]["reid_top1_ci95"]  # seed 0


def test_every_format_reads_the_same_slides(tmp_path):
    ids, vectors = with_bad_rows(*planted(patients=3))
    formats = write_every_format(tmp_path, ids, vectors)
    reference = None
    for name, args in formats.items():
        ids_file = tmp_path / args[2] if len(args) > 1 else None
        slides = choose_slides(read_table(tmp_path / args[0], ids_file))
        found = (slides.ids, dict(slides.dropped), slides.rows_read)
        assert np.array_equal(slides.vectors, vectors[:-2][np.argsort(ids[:-2])]), name
        assert slides.sites.tolist() == [i[5:7] for i in sorted(ids[:-2])], name
        assert found == (reference or found), name
        reference = found
    assert reference[1] == {"not_tcga_barcode": 1, "non_finite_vector": 1} and reference[2] == len(ids)


def test_two_formats_give_the_same_report(tmp_path, capsys):
    ids, vectors = with_bad_rows(*planted(patients=4))
    write_every_format(tmp_path, ids, vectors)
    (tmp_path / "shuffled").mkdir()
    shuffled = np.random.default_rng(1).permutation(len(ids))  # the row order must not matter either
    write_every_format(tmp_path / "shuffled", [ids[i] for i in shuffled], vectors[shuffled])
    reports = [audit_in_process(tmp_path, capsys, *args, "--encoder", "same")[1] for args in (
        [str(tmp_path / "emb.npy"), "--ids", str(tmp_path / "ids.txt")], [str(tmp_path / "shuffled" / "h5_files")])]
    for report in reports:
        report.pop("input")
    assert reports[0] == reports[1]
    assert reports[0]["rows"]["dropped"] == {"not_tcga_barcode": 1, "non_finite_vector": 1}


def test_patch_features_are_normalised_then_mean_pooled(tmp_path):
    (tmp_path / "slides").mkdir()
    patches = np.random.default_rng(0).normal(size=(5, DIM)) * np.arange(1, 6)[:, None]
    with h5py.File(tmp_path / "slides" / "TCGA-AA-0001-01Z-00-DX1.h5", "w") as handle:
        handle["features"] = patches
        handle["coords"] = np.zeros((5, 2))
    table = read_table(tmp_path / "slides")
    expected = (patches / np.linalg.norm(patches, axis=1, keepdims=True)).mean(axis=0)
    assert table.pooled == 1 and np.allclose(table.vectors["features"][0], expected)


def test_every_dropped_row_is_counted_with_its_reason(tmp_path, capsys):
    ids, vectors = planted(sites=3, patients=4)
    rows = [(i, list(v)) for i, v in zip(ids, vectors, strict=True)]
    rows += [(None, [0.0] * DIM), (ids[0], [0.0] * DIM), ("CPTAC-C3L-00001", [0.0] * DIM),
             ("TCGA-B!-0009-01Z", [0.0] * DIM), ("TCGA-XX-0001-01Z", [np.nan] * DIM), ("TCGA-XX-0002-01Z", None),
             ("TCGA-XX-0003-01Z", [1.0] * (DIM + 1)), ("TCGA-XX-0004-01Z", [0.0] * DIM),
             ("TCGA-QQ-0001-01Z-00-DX1", [0.1] * DIM)]  # a site with a single slide: used, but not by the TSS probe
    pd.DataFrame({"slide_id": [r[0] for r in rows], "embedding": [r[1] for r in rows]}).to_parquet(
        tmp_path / "dirty.parquet")
    status, report, out, _ = audit_in_process(tmp_path, capsys, str(tmp_path / "dirty.parquet"))
    assert status == 0
    counts = report["rows"]
    assert counts["dropped"] == {"missing_id": 1, "repeated_slide": 1, "not_tcga_barcode": 1,
                                 "malformed_tcga_barcode": 1, "non_finite_vector": 1, "missing_vector": 1,
                                 "wrong_dimension": 1, "zero_vector": 1}
    assert counts["read"] == len(rows) and counts["used"] == len(ids) + 1
    assert counts["dropped_examples"]["repeated_slide"] == [ids[0]]
    assert counts["dropped_examples"]["missing_id"] == [f"row {len(ids)}"]
    assert (report["tss"]["dropped_sites"], report["tss"]["dropped_slides"]) == (1, 1)
    assert report["reid"]["dropped_single_slide_patients"] == 1 and report["reid"]["n_patients"] == 12
    assert f"{len(rows)} rows read, {len(ids) + 1} used; dropped: 1 missing_id, 1 repeated_slide" in out


def test_labels_from_columns_for_non_tcga_ids(cohort, tmp_path, capsys):
    """Any ids with --site-column/--case-column (in the barcodes' order): the same figures as the barcodes give."""
    ids = cohort["ids"]
    frame = pd.DataFrame({"slide": [f"slide-{n:03d}" for n in range(len(ids))], "hospital": [i[5:7] for i in ids],
                          "patient": [i[:12].lower() for i in ids], "embedding": list(cohort["vectors"])})
    frame.to_parquet(tmp_path / "own_ids.parquet")
    _, by_columns, _, _ = audit_in_process(tmp_path, capsys, str(tmp_path / "own_ids.parquet"), "--site-column",
                                           "hospital", "--case-column", "patient")
    _, by_barcode, _, _ = audit_in_process(tmp_path, capsys, str(cohort["root"] / "planted.parquet"))
    assert by_columns["input"]["id_column"] == "slide"
    for key in ("tss_auroc_macro", "reid_top1", "reid_chance"):
        assert by_columns[key] == by_barcode[key], key


@pytest.mark.parametrize(("write", "args", "message"), [
    (lambda p: pd.DataFrame({"slide_id": ["TCGA-AA-0001-01Z"], "case_id": ["TCGA-AA-0001"], "v": [[0.0, 1.0]]})
     .to_parquet(p / "x.parquet"), ["x.parquet"], "several columns hold TCGA barcodes ('slide_id', 'case_id')"),
    (lambda p: pd.DataFrame({"slide_id": ["TCGA-AA-0001-01Z"], "uni": [[0.0, 1.0]], "titan": [[1.0, 0.0]]})
     .to_parquet(p / "x.parquet"), ["x.parquet"], "several embedding columns ('uni', 'titan')"),
    (lambda p: pd.DataFrame({"name": ["s1"], "v": [[0.0, 1.0]]}).to_parquet(p / "x.parquet"), ["x.parquet"],
     "no column holds TCGA barcodes (label columns: 'name')"),
    (lambda p: np.save(p / "x.npy", np.zeros((3, 2))), ["x.npy"], "give --ids FILE"),
    (lambda p: (np.save(p / "x.npy", np.zeros((3, 2))), (p / "ids.txt").write_text("a\nb\n")),
     ["x.npy", "--ids", "ids.txt"], "has 2 lines for the 3 rows"),
    (lambda p: (p / "x.csv").write_text("id\n"), ["x.csv"], "unknown embeddings format '.csv'"),
    (lambda p: pd.DataFrame({"slide_id": ["TCGA-AA-0001-01Z"], "v": [[0.0, 1.0]]}).to_parquet(p / "x.parquet"),
     ["x.parquet", "--id-column", "slide"], "--id-column 'slide': x.parquet has no such column"),
    (lambda p: pd.DataFrame({"slide_id": ["CPTAC-1"], "v": [[0.0, 1.0]]}).to_parquet(p / "x.parquet"),
     ["x.parquet", "--id-column", "slide_id"], "none of its 1 rows is usable (1 not_tcga_barcode)"),
    (lambda p: None, ["missing.parquet"], "no such file or folder"),
    (lambda p: (p / "x.parquet").write_text("slide,vector\n"), ["x.parquet"], "x.parquet: not a readable .parquet"),
    (lambda p: np.savez(p / "x.npz", ids=np.array(["TCGA-AA-0001"], dtype=object), embeddings=np.zeros((1, 2))),
     ["x.npz"], "array 'ids' cannot be read without pickle"),
])
def test_bad_input_is_one_named_error(tmp_path, capsys, write, args, message):
    write(tmp_path)
    args = [str(tmp_path / a) if "." in a else a for a in args]
    status, _, _, err = audit_in_process(tmp_path, capsys, *args)
    assert status == 1
    assert err.startswith("pathbind audit-features: error: ") and message in err and err.count("\n") == 1, err


def noise_cohort(seed: int = 0, sites: int = 4, patients: int = 4) -> tuple[list[str], np.ndarray]:
    """Pure-noise embeddings of one slide per patient: nothing to find."""
    ids = [f"TCGA-{chr(65 + s)}{s}-{s}{p:03d}-01Z-00-DX1" for s in range(sites) for p in range(patients)]
    return ids, np.random.default_rng(seed).normal(size=(len(ids), DIM))


def test_one_slide_under_two_spellings_counts_once(tmp_path, capsys):
    """Each noise slide listed twice, once as a barcode and once lower-cased inside a path with a UUID and a suffix
    (with other noise): 16 slides, not 32; no patient to re-identify, no sibling pair; the report says which rows
    mapped to each slide."""
    ids, vectors = noise_cohort()
    again = [f"/data/scans/{i.lower()}.2F0D1F6B-7A31-4C55.svs" for i in ids]
    more = np.random.default_rng(1).normal(size=vectors.shape)
    pd.DataFrame({"slide_id": ids + again, "embedding": list(vectors) + list(more)}).to_parquet(tmp_path / "x.parquet")
    status, report, out, _ = audit_in_process(tmp_path, capsys, str(tmp_path / "x.parquet"))
    assert status == 0
    rows = report["rows"]
    assert (rows["read"], rows["used"], rows["dropped"]) == (32, 16, {"repeated_slide": 16})
    assert rows["slides_by_rows"] == {"2": 16}
    assert rows["repeated_slides"][ids[0]] == {"rows": 2, "ids": sorted([ids[0], again[0]])}
    assert report["reid"]["n_patients"] == 0 and report["similarity"]["groups"]["same_case"]["pairs_total"] == 0
    assert "16 slide(s) read in several rows, each counted once (rows per slide: 16 × 2)" in out
    single = pd.DataFrame({"slide_id": ids, "embedding": list(vectors)})
    single.to_parquet(tmp_path / "once.parquet")
    _, alone, _, _ = audit_in_process(tmp_path, capsys, str(tmp_path / "once.parquet"))
    assert alone["tss_auroc_macro_ci95"] == report["tss_auroc_macro_ci95"]  # the first row of each slide, as alone


def test_a_shortened_barcode_beside_its_slide_is_dropped_as_ambiguous(tmp_path, capsys):
    """"TCGA-A0-0000" beside "TCGA-A0-0000-01Z-00-DX1" may be the same slide: the short one is not counted."""
    ids, vectors = noise_cohort()
    pd.DataFrame({"slide_id": [*ids, ids[0][:12]], "embedding": [*vectors, vectors[1]]}).to_parquet(
        tmp_path / "x.parquet")
    status, report, _, _ = audit_in_process(tmp_path, capsys, str(tmp_path / "x.parquet"))
    assert status == 0 and report["rows"]["dropped"] == {"ambiguous_slide": 1}
    assert report["rows"]["dropped_examples"]["ambiguous_slide"] == [ids[0][:12]]


@pytest.mark.parametrize("scale", [1e200, 1e-200])
def test_extreme_but_finite_values_give_the_figures_of_ordinary_ones(cohort, tmp_path, capsys, scale):
    """Embeddings stored ×1e200 or ×1e-200 (overflow or underflow when squared) give the unscaled figures."""
    ids, vectors = cohort["ids"], cohort["vectors"]
    pd.DataFrame({"slide_id": ids, "embedding": list(vectors * scale)}).to_parquet(tmp_path / "scaled.parquet")
    status, scaled, _, err = audit_in_process(tmp_path, capsys, str(tmp_path / "scaled.parquet"))
    assert status == 0, err
    _, plain, _, _ = audit_in_process(tmp_path, capsys, str(cohort["root"] / "planted.parquet"))
    for key in ("tss_auroc_macro", "tss_auroc_macro_ci95", "reid_top1", "reid_top1_ci95"):
        assert scaled[key] == pytest.approx(plain[key], abs=1e-9), key


def test_an_hdf5_header_declaring_more_than_the_file_holds_is_refused_before_reading(tmp_path, capsys):
    """A 2 KB file declaring 2·10^8 float64 values: one line naming the dataset and both sizes, nothing allocated."""
    with h5py.File(tmp_path / "x.h5", "w") as handle:
        handle["ids"] = np.array(["TCGA-AA-0001-01Z"], dtype="S")
        handle.create_dataset("features", shape=(20_000, 10_000), dtype="f8", chunks=(1000, 1000),
                              compression="gzip")
    assert (tmp_path / "x.h5").stat().st_size < 10_000
    status, _, _, err = audit_in_process(tmp_path, capsys, str(tmp_path / "x.h5"))
    assert status == 1 and err.count("\n") == 1
    assert err.startswith("pathbind audit-features: error: x.h5:features: its header declares 1.49 GiB of data "
                          "((20000, 10000) float64) but the file stores 0.0 MiB: a damaged or unfinished file")


def sited_noise(seed: int, sizes: list[int]) -> pd.DataFrame:
    """Noise embeddings of patients with two slides each, ``sizes[s]`` slides at site s (TCGA barcodes)."""
    rng = np.random.default_rng(seed)
    ids = [f"TCGA-{chr(65 + s)}{s}-{k // 2:04d}-01Z-00-DX{k % 2 + 1}" for s, n in enumerate(sizes) for k in range(n)]
    return pd.DataFrame({"slide_id": ids, "embedding": list(rng.normal(size=(len(ids), DIM)))})


def test_the_auroc_interval_on_noise_covers_chance_at_the_nominal_rate(tmp_path, capsys):
    """Noise, labels permuted (the control), 40 seeds: the 95% interval holds 0.5 in at least 90% of the seeds
    that have one (it resamples patients within sites), and says it is wide on 4 held-out patients; a seed whose
    small site holds out too few patients refuses its interval rather than give a narrow one; the permutation test
    of the same AUROC beside it rejects at most at its level."""
    covered = defined = rejected = 0
    for seed in range(40):
        sited_noise(seed, [60, 28]).to_parquet(tmp_path / "noise.parquet")
        status = main(["audit-features", str(tmp_path / "noise.parquet"), "--json", str(tmp_path / "r.json"),
                       "--seed", str(seed), "--permute-labels", "--n-resamples", "300"])
        capsys.readouterr()
        report = json.loads((tmp_path / "r.json").read_text())
        assert status == 0
        low, high = report["tss_auroc_macro_ci95"]
        rejected += report["tss"]["auroc_permutation_p"] <= 0.05
        if low is None:
            assert "held-out patients" in report["tss"]["interval_undefined"]
            continue
        defined += 1
        covered += low <= 0.5 <= high
        assert report["tss"]["interval_note"].startswith("wide: its t has 3 degrees of freedom (4 held-out patients")
    assert defined >= 30 and covered >= 0.9 * defined, (covered, defined)
    assert rejected <= 5  # the permutation test beside it: at most its 5% (binomial SE at 40 seeds: 0.034)


def test_a_site_with_too_few_held_out_patients_refuses_the_interval(tmp_path, capsys):
    """One large site and one of 3 slides (one held out): on noise such an interval left out 0.5 in 3 of 6
    seeds; now it is refused, with the reason in the JSON and on the terminal, and the AUROC still reported."""
    for seed in range(6):
        sited_noise(seed, [60, 3]).to_parquet(tmp_path / "noise.parquet")
        status, report, out, _ = audit_in_process(tmp_path, capsys, str(tmp_path / "noise.parquet"), "--seed",
                                                  str(seed))
        assert status == 0 and report["tss_auroc_macro_ci95"] == [None, None]
        assert report["tss_auroc_macro"] is not None
        assert report["tss"]["interval_undefined"].startswith("1 site(s) with fewer than 4 held-out patients (e.g. "
                                                              "B1: 1)")
        assert "TSS AUROC interval refused: 1 site(s)" in out
        assert 0 < report["tss"]["auroc_permutation_p"] <= 1 and "refused (see below); permutation p = " in out


def test_one_crowded_site_is_sampled_without_listing_its_pairs(tmp_path, capsys):
    """6,000 single-slide patients at one site and 4 at another (18 million same-site pairs): the pairs are
    counted and 20,000 drawn, in a few megabytes instead of the gigabytes that listing them took."""
    import tracemalloc

    rng = np.random.default_rng(0)
    ids = [f"TCGA-AA-{k:04d}-01Z-00-DX1" for k in range(6000)] + [f"TCGA-BB-{k:04d}-01Z-00-DX1" for k in range(4)]
    pd.DataFrame({"slide_id": ids, "embedding": list(rng.normal(size=(len(ids), 4)))}).to_parquet(
        tmp_path / "crowded.parquet")
    tracemalloc.start()
    status, report, _, _ = audit_in_process(tmp_path, capsys, str(tmp_path / "crowded.parquet"), "--min-slides", "4")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert status == 0
    same_site = report["similarity"]["groups"]["same_tss"]
    assert (same_site["pairs_total"], same_site["pairs_used"]) == (6000 * 5999 // 2 + 6, 20_000)
    assert peak < 200 * 2**20, peak / 2**20


def test_nothing_measured_is_exit_1_and_bad_outputs_fail_before_reading(tmp_path, capsys):
    """One slide: no probe, no pair: exit 1 naming why, the report still written; a --json that is a folder or an
    --out below a file: one line, before any reading."""
    pd.DataFrame({"slide_id": ["TCGA-AA-0001-01Z"], "embedding": [[1.0, 2.0]]}).to_parquet(tmp_path / "one.parquet")
    status = main(["audit-features", str(tmp_path / "one.parquet"), "--json", str(tmp_path / "one.json")])
    err = capsys.readouterr().err
    assert status == 1 and err.splitlines()[-1].startswith("pathbind audit-features: error: nothing measured: TSS")
    assert json.loads((tmp_path / "one.json").read_text())["tss_auroc_macro"] is None
    (tmp_path / "file").write_text("")
    for extra, message in (([ "--json", str(tmp_path)], f"--json {tmp_path}: a folder, not a file"),
                           (["--json", "x.json", "--out", str(tmp_path / "file" / "o")],
                            f"--out {tmp_path / 'file' / 'o'}: {tmp_path / 'file'} is a file, not a folder")):
        status = main(["audit-features", str(tmp_path / "missing.parquet"), *extra])
        assert (status, capsys.readouterr().err) == (1, f"pathbind audit-features: error: {message}\n")


def test_the_auroc_permutation_p_counts_scikit_learns_auroc_over_permuted_patients():
    """The permutation test's ranks-once AUROCs are scikit-learn's macro AUROC of each permutation of the held-out
    patients' sites (ties in the scores included), and p counts those at least the observed one."""
    from pathbind_analysis.audit.features.probes import PERMUTATION_STREAM, auroc_permutation_p

    rng = np.random.default_rng(3)
    patients = np.repeat(np.arange(24), 2).astype(str)  # two slides a patient
    sites = np.repeat(rng.permutation(np.repeat(["A", "B", "C"], 8)), 2)
    scores = rng.dirichlet(np.ones(3), 48) + 0.2 * (sites[:, None] == np.array(["A", "B", "C"]))
    scores /= scores.sum(axis=1, keepdims=True)  # probabilities, as the probe gives
    scores[:6] = scores[0]  # tied scores
    classes = np.array(["A", "B", "C"])
    draws = np.random.default_rng((5, PERMUTATION_STREAM))
    names, slide_patient = np.unique(patients, return_inverse=True)
    patient_site = np.empty(len(names), dtype=sites.dtype)
    patient_site[slide_patient] = sites

    def auroc(labels: np.ndarray) -> float:
        return roc_auc_score(labels, scores, multi_class="ovr", average="macro", labels=classes)

    observed = auroc(sites)
    permuted = [auroc(draws.permutation(patient_site)[slide_patient]) for _ in range(200)]
    expected = (sum(value >= observed - 1e-12 for value in permuted) + 1) / 201
    assert auroc_permutation_p(sites, scores, classes, patients, 5, 200) == pytest.approx(expected)
