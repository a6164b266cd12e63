"""`pathbind audit-leakage` end to end: inventories in every format, matrix, partitions, listings, Table 2."""

from __future__ import annotations

import csv
import json

import pytest
from conftest import BIN, run
from PIL import Image

UUID = "2F0D1F6B-7A31-4C55-8A0E-0123456789AB"
PNG = b"\x89PNG\r\n\x1a\n"


def audit(tmp_path, *args):
    return run([str(BIN / "pathbind"), "audit-leakage", *args], cwd=tmp_path)


def write_inventories(root):
    """Three training corpora (text; CSV; JSON + JSONL under one name), three test sets (TSV; non-TCGA CSV; a log)."""
    (root / "corpus_a.txt").write_text(
        "# corpus A: siblings, lower case, a duplicate, a non-TCGA id, a malformed barcode\n"
        f"/gdc/TCGA-AA-0001-01Z-00-DX1.{UUID}.svs\n/gdc/TCGA-AA-0001-01Z-00-DX2.{UUID}.svs\n"
        "tcga-aa-0002-01z-00-dx1.svs\nTCGA-BB-0003-01Z-00-DX1\nTCGA-BB-0003-01Z-00-DX1\n"
        "CPTAC-C3L-00001\nTCGA-B!-0009\n")
    (root / "corpus_b.csv").write_text('caption,wsi\n"tumour, grade 2",TCGA-CC-0004-01Z\nnormal,TCGA-DD-0006\n')
    (root / "corpus_c.json").write_text(json.dumps([{"id": 1, "file_path": "TCGA-AA-0001.svs"}]))
    (root / "corpus_c.jsonl").write_text('{"slide": "TCGA-EE-0007"}\n{"slide": "TCGA-ZZ-0100-01Z"}\n')
    (root / "bench.tsv").write_text(
        "neighbor\tslide\tlabel\n" + "".join(f"TCGA-QQ-0000\t{slide}\tx\n" for slide in (
            "TCGA-AA-0001-01Z-00-DX2", "TCGA-AA-0005", "TCGA-CC-0004", "TCGA-ZZ-0008", "BCNB-17", "TCGA-ZZ")))
    (root / "bcnb.csv").write_text("slide\nBCNB-1\nBCNB-2\n")
    samples = ([("TCGA-AA-0001-01Z-00-DX1", 1.0, "micro")] * 3 + [("TCGA-AA-0001-01Z-00-DX2", 1.0, "diag")] * 3
               + [("TCGA-AA-0005", 1.0, "micro"), ("TCGA-AA-0005", 0.0, "diag")]
               + [("TCGA-ZZ-0008", 1.0, "micro")] + [("TCGA-ZZ-0008", 0.0, "diag")] * 3 + [("BCNB-17", 1.0, "diag")])
    with (root / "vqa_samples.jsonl").open("w") as handle:
        for doc_id, (slide, correct, category) in enumerate(samples):
            record = {"id": str(doc_id), "condition": "image", "correct": bool(correct), "valid": True}
            handle.write(json.dumps({"doc_id": doc_id, "doc": {"question": "Which grade?", "slide_id": slide,
                                                               "category": category},
                                     "target": "A", "resps": [["A"]], "filtered_resps": ["A"],
                                     "exact_match": correct, "acc_image": record, "mg": record}) + "\n")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """One audit of every format, with the sample log stratified by category."""
    root = tmp_path_factory.mktemp("audit")
    write_inventories(root)
    done = audit(root, "--train", "A=corpus_a.txt", "--train", "B=corpus_b.csv", "--train", "C=corpus_c.json",
                 "--train", "C=corpus_c.jsonl", "--test", "bench=bench.tsv:slide", "--test", "vqa=vqa_samples.jsonl",
                 "--test", "bcnb=bcnb.csv", "--samples", "vqa_samples.jsonl", "--by", "category",
                 "--out", "out", "--json", "report.json")
    assert done.returncode == 0, done.stderr
    return {"root": root, "out": root / "out", "json": json.loads((root / "report.json").read_text()),
            "stdout": done.stdout, "stderr": done.stderr}


def test_matrix_has_the_known_overlaps(report):
    """rho_case and rho_tss over distinct cases and sites, for every training × test pair."""
    cells = {(r["train"], r["test"]): r for r in report["json"]["matrix"]}
    assert len(cells) == 9
    expected = {("A", "bench"): (1 / 4, 1 / 3, 1, 1, 2), ("B", "bench"): (1 / 4, 1 / 3, 1, 0, 3),
                ("C", "bench"): (1 / 4, 2 / 3, 1, 2, 1), ("A", "vqa"): (1 / 3, 1 / 2, 6, 2, 4)}
    for pair, (rho_case, rho_tss, patient, site, clean) in expected.items():
        cell = cells[pair]
        assert (cell["rho_case"], cell["rho_tss"]) == pytest.approx((rho_case, rho_tss)), pair
        assert (cell["n_patient_leaked"], cell["n_site_leaked"], cell["n_clean"]) == (patient, site, clean), pair
    assert (cells["A", "bench"]["n_test_cases"], cells["A", "bench"]["n_test_tss"]) == (4, 3)
    assert (cells["A", "bench"]["n_items"], cells["A", "bench"]["n_unknown"], cells["A", "bench"]["n_malformed"]) \
        == (6, 1, 1)


def test_a_test_set_without_tcga_cases_has_undefined_overlap(report):
    """A non-TCGA benchmark is not proven clean: rho is null, every item is of unknown provenance."""
    cell = next(r for r in report["json"]["matrix"] if (r["train"], r["test"]) == ("A", "bcnb"))
    assert (cell["rho_case"], cell["rho_tss"], cell["n_test_cases"], cell["n_unknown"]) == (None, None, 0, 2)
    assert "| A | 25.0 | 33.3 | n/a |" in (report["out"] / "overlap.md").read_text()


def test_inventories_are_counted_with_siblings_and_duplicates_once(report):
    """Corpus A: 6 barcodes, 3 cases, 2 sites; C merges its JSON and JSONL files."""
    train = report["json"]["train"]
    assert (train["A"]["n_rows"], train["A"]["n_tcga"], train["A"]["n_cases"], train["A"]["n_tss"]) == (7, 5, 3, 2)
    assert train["C"]["files"] == ["corpus_c.json", "corpus_c.jsonl"] and train["C"]["n_cases"] == 3
    # Slides by barcode whatever the spelling (path, UUID, suffix, case): 4 slides, one of them named twice.
    assert (train["A"]["n_slides"], train["A"]["slides_by_rows"]) == (4, {"1": 3, "2": 1})
    assert train["A"]["repeated_slides_examples"] == {"TCGA-BB-0003-01Z-00-DX1": 2}


def test_nothing_measured_and_unusable_outputs_exit_1(tmp_path):
    """Only a test set without a TCGA case: the report is written, exit 1 naming why; an --out that is a file: one
    line before any reading."""
    write_inventories(tmp_path)
    done = audit(tmp_path, "--train", "A=corpus_a.txt", "--test", "bcnb=bcnb.csv", "--out", "out")
    assert done.returncode == 1 and (tmp_path / "out" / "leakage.json").exists()
    assert done.stderr.splitlines()[-1].startswith("pathbind audit-leakage: error: no test set holds a TCGA case")
    (tmp_path / "file").write_text("")
    done = audit(tmp_path, "--train", "A=corpus_a.txt", "--test", "b=bench.tsv", "--out", "file")
    assert (done.returncode, done.stderr) == (1, "pathbind audit-leakage: error: --out file: a file, not a folder\n")


def test_unknown_and_malformed_entries_are_listed_with_a_lower_bound_note(report):
    """Nothing is dropped silently: examples in the JSON, every entry in a listing file, a note in the report."""
    corpus = report["json"]["train"]["A"]
    assert corpus["unknown_examples"] == [{"kind": "unknown", "file": "corpus_a.txt", "line": 7,
                                           "id": "CPTAC-C3L-00001", "reason": ""}]
    assert corpus["malformed_examples"][0]["id"] == "TCGA-B!-0009"
    assert "TSS 'B!'" in corpus["malformed_examples"][0]["reason"]
    with (report["root"] / corpus["listing"]).open() as handle:
        assert [row["id"] for row in csv.DictReader(handle)] == ["CPTAC-C3L-00001", "TCGA-B!-0009"]
    notes = report["json"]["notes"]
    assert any(note.startswith("train A: 1 of 7 entries without a TCGA barcode (unknown provenance), 1 with a "
                               "malformed one") and "lower bound" in note
               for note in notes)
    assert "lower bound" in (report["out"] / "overlap.md").read_text()
    assert "lower bound" in report["stdout"]


def test_partitions_file_has_one_row_per_test_item_and_a_column_per_corpus(report):
    """Each test item: its case, site and partition against A, B and C; non-TCGA items say why."""
    with (report["out"] / "partitions_bench.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["id"], r["case"], r["partition_A"], r["partition_B"], r["partition_C"]) for r in rows] == [
        ("TCGA-AA-0001-01Z-00-DX2", "TCGA-AA-0001", "patient-leaked", "clean", "patient-leaked"),
        ("TCGA-AA-0005", "TCGA-AA-0005", "site-leaked", "clean", "site-leaked"),
        ("TCGA-CC-0004", "TCGA-CC-0004", "clean", "patient-leaked", "clean"),
        ("TCGA-ZZ-0008", "TCGA-ZZ-0008", "clean", "clean", "site-leaked"),
        ("BCNB-17", "", "unknown", "unknown", "unknown"),
        ("TCGA-ZZ", "", "malformed", "malformed", "malformed")]
    assert [r["line"] for r in rows] == ["2", "3", "4", "5", "6", "7"]


def test_tables_and_heat_map_are_written(report):
    """overlap.md holds both panels; overlap.png is a real PNG image."""
    table = (report["out"] / "overlap.md").read_text()
    assert "| train \\ test | bench | vqa | bcnb |" in table and "| C | 25.0 | 33.3 | n/a |" in table
    assert "| C | 66.7 | 100.0 | n/a |" in table  # the TSS panel
    png = report["out"] / "overlap.png"
    assert png.read_bytes()[:8] == PNG
    with Image.open(png) as image:
        assert image.width > 300 and image.height > 100


def test_samples_are_stratified_by_leak_status_in_table_2_form(report):
    """Per corpus, metric and subset: means per partition, the leaked − clean gap, CIs; non-TCGA excluded."""
    stratified = report["json"]["stratified"]
    assert stratified["id_field"] == "slide_id" and stratified["ids"] == {"tcga": 12, "unknown": 1, "malformed": 0}
    rows = {(r["train"], r["metric"], r["subset"]): r for r in stratified["rows"]}
    assert {metric for _, metric, _ in rows} == {"exact_match", "correct"}
    row = rows["A", "exact_match", "all"]
    assert [(row[p]["n"], row[p]["mean"]) for p in ("patient-leaked", "site-leaked", "clean")] == [
        (6, 1.0), (2, 0.5), (4, 0.25)]
    assert row["gap"]["mean"] == 0.75 and row["excluded"]["n"] == 1
    # One case per partition: how cases vary is unknown, so the intervals are undefined, not a point.
    assert row["gap"]["ci_low"] is None and row["patient-leaked"]["ci_low"] is None  # null in strict JSON
    micro = rows["A", "correct", "category=micro"]
    assert (micro["patient-leaked"]["n"], micro["clean"]["n"], micro["clean"]["mean"]) == (3, 1, 1.0)
    table = (report["out"] / "stratified.md").read_text()
    assert "## exact_match against training inventory A" in table
    assert "| all | 100.0% [n/a] (n=6, 1 cases) | 50.0%" in table and "+75.0 [n/a] |" in table
    assert [row[p]["clusters"] for p in ("patient-leaked", "site-leaked", "clean")] == [1, 1, 1]
    assert "1 of 13 samples without a TCGA barcode in doc field 'slide_id'" in table


def test_progress_is_reported_per_file(report):
    """Each file's row count goes to stderr, so long runs show where they are."""
    assert "pathbind audit-leakage: train A: 7 rows in corpus_a.txt" in report["stderr"]


def test_a_missing_file_fails_before_reading_anything(tmp_path):
    """The error names the option, the inventory and the path; exit code 1."""
    (tmp_path / "t.txt").write_text("TCGA-AA-0001\n")
    done = audit(tmp_path, "--train", "big=t.txt", "--test", "b=nope.csv", "--out", "out")
    assert done.returncode == 1
    assert done.stderr.strip() == "pathbind audit-leakage: error: --test b: no such file: nope.csv"
    assert not (tmp_path / "out").exists()


def test_a_missing_column_names_the_available_ones(tmp_path):
    """NAME=FILE:column with a wrong column lists the file's columns."""
    write_inventories(tmp_path)
    done = audit(tmp_path, "--train", "A=corpus_a.txt", "--test", "bench=bench.tsv:wsi", "--out", "out")
    assert done.returncode == 1
    assert "bench.tsv: no column 'wsi'; columns: neighbor, slide, label" in done.stderr


def test_an_unknown_metric_lists_the_log_s_metrics(tmp_path):
    """--metric must name a per-sample metric of the log; the error lists those there are."""
    write_inventories(tmp_path)
    done = audit(tmp_path, "--train", "A=corpus_a.txt", "--test", "bench=bench.tsv:slide", "--out", "out",
                 "--samples", "vqa_samples.jsonl", "--metric", "acc")
    assert done.returncode == 1
    assert "no per-sample metric 'acc'; metrics in the log: exact_match, correct" in done.stderr


def test_a_stratum_too_small_for_its_interval_is_flagged_in_the_table():
    """Two clean cases at 50% each: the table prints a wide interval, not [50.0, 50.0], marks it (!) and says
    why under the table."""
    from pathbind_analysis.audit.leakage.report import stratified_markdown
    from pathbind_metrics.leakage import stratified_metric

    cases = ["TCGA-AA-0001"] * 2 + ["TCGA-AA-0002"] * 2 + [f"TCGA-BB-{k:04d}" for k in range(40)]
    values = [1.0, 0.0, 1.0, 0.0] + [1.0, 0.0] * 20
    table = stratified_metric(values, ["clean"] * 4 + ["patient-leaked"] * 40, clusters=cases, proportion=1.0)
    text = stratified_markdown([{"train": "A", "metric": "correct", "subset": "all", **table}], {"correct"}, [])
    row = next(line for line in text.splitlines() if line.startswith("| all |"))
    assert "[50.0, 50.0]" not in row and "(n=4, 2 cases) (!)" in row and "(n=40, 40 cases) |" in row
    assert "- (!) all, clean: only 2 case clusters (< 20); so its t has 1.0 degrees of freedom" in text


def test_a_site_split_keeps_every_site_in_one_fold_and_places_no_unknown_id(tmp_path):
    """--site-split alone: every TCGA entry of the inventory gets the fold of its site, siblings and re-spellings
    of one slide together; ids without a barcode are in no fold, each with the reason; folds balance by slides."""
    write_inventories(tmp_path)
    done = audit(tmp_path, "--site-split", "A=corpus_a.txt", "--site-folds", "2", "--out", "split")
    assert done.returncode == 0, done.stderr
    with (tmp_path / "split" / "site_split_A.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 7
    folds = {}
    for row in rows:
        if row["tss"]:
            assert folds.setdefault(row["tss"], row["fold"]) == row["fold"]  # one fold per site
        else:
            assert row["fold"] == "" and row["reason"].startswith("no TCGA barcode")
    assert folds == {"AA": "0", "BB": "1"}
    summary = json.loads((tmp_path / "split" / "leakage.json").read_text())["site_split"]
    assert [(f["sites"], f["cases"], f["slides"]) for f in summary["per_fold"]] == [(["AA"], 2, 3), (["BB"], 1, 1)]
    assert summary["no_site"] == 2 and "site split of A: 2 site-disjoint folds" in done.stdout


def test_a_site_split_asks_for_no_more_folds_than_sites(tmp_path):
    """Three folds of two sites cannot be site-disjoint: one line naming the sites; neither task given is one too."""
    write_inventories(tmp_path)
    done = audit(tmp_path, "--site-split", "A=corpus_a.txt", "--site-folds", "3", "--out", "split")
    assert done.returncode == 1 and "3 folds of 2 sites: each fold needs a site of its own" in done.stderr
    done = audit(tmp_path, "--out", "nothing")
    assert done.returncode == 1 and "give --train and --test inventories" in done.stderr


def test_the_report_flags_strata_too_small_for_their_interval(report, tmp_path):
    """The stratified table in the report: the audit's table (a one-case stratum n/a), and a stratum of two cases
    marked (!) with a power note naming it and its reason."""
    from pathbind_analysis.report import build_report
    from pathbind_analysis.report.leakage import stratified_blocks
    from pathbind_metrics.leakage import stratified_metric

    run_dir = write_run(tmp_path / "run")
    build_report([run_dir], tmp_path / "out", overlays=0, audits=[report["root"] / "report.json"])
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "**exact_match by leak status against A (report.json; 95% intervals resample cases)**" in markdown
    assert "[n/a]" in markdown
    cases = ["TCGA-AA-0001"] * 2 + ["TCGA-AA-0002"] * 2 + [f"TCGA-BB-{k:04d}" for k in range(40)]
    values = [1.0, 0.0, 1.0, 0.0] + [1.0, 0.0] * 20
    table = stratified_metric(values, ["clean"] * 4 + ["patient-leaked"] * 40, clusters=cases, proportion=1.0)
    blocks = stratified_blocks({"rows": [{"train": "A", "metric": "correct", "subset": "all", **table}],
                                "binary_metrics": ["correct"]}, tmp_path / "leakage.json")
    row = blocks[0].rows[0]
    assert row[3].text.endswith("(n=4, 2 cases) (!)") and "[50.0, 50.0]" not in row[3].text
    assert blocks[1].text.startswith("Power: correct against A: all, clean: only 2 case clusters")


def test_published_accuracy_sits_beside_the_audited_overlap_in_the_papers_colours(tmp_path):
    """Table 1 of the leakage audit: ρ above 80% red, 20-80% orange, 0 white; an accuracy's footnote mark kept; a
    training corpus the audit has not seen gives – and a note naming it."""
    from pathbind_analysis.report import build_report

    (tmp_path / "train.txt").write_text("TCGA-AA-0001\nTCGA-BB-0002\n")
    (tmp_path / "seen.txt").write_text("TCGA-AA-0001\nTCGA-BB-0002\n")
    (tmp_path / "unseen.txt").write_text("TCGA-CC-0003\n")
    (tmp_path / "sites.txt").write_text("TCGA-AA-0009\nTCGA-DD-0004\n")
    done = audit(tmp_path, "--train", "corpus=train.txt", "--test", "seen=seen.txt", "--test", "unseen=unseen.txt",
                 "--test", "sites=sites.txt", "--out", "audit")
    assert done.returncode == 0, done.stderr
    published = tmp_path / "published.csv"
    published.write_text("model,venue,training,benchmark,accuracy,note\n"
                         "WSI-LLaVA,arXiv '24,corpus,seen,82.5,⋄\nWSI-LLaVA,arXiv '24,corpus,sites,54.6,\n"
                         "WSI-LLaVA,arXiv '24,corpus,unseen,40.0,\nQuilt-LLaVA,CVPR '24,Quilt-1M,seen,40.2,\n")
    run_dir = write_run(tmp_path / "run")
    build_report([run_dir], tmp_path / "out", overlays=0, audits=[tmp_path / "audit"], published=[published])
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert ("| Model | Venue | Training data | Acc. seen | Acc. sites | Acc. unseen | ρ_case seen | ρ_case sites | "
            "ρ_case unseen | ρ_TSS seen | ρ_TSS sites | ρ_TSS unseen |") in markdown
    assert ("| WSI-LLaVA | arXiv '24 | corpus | 82.5 ⋄ | 54.6 | 40.0 | 🟥 100.0 | ⬜ 0.0 | ⬜ 0.0 | 🟥 100.0 | "
            "🟧 50.0 | ⬜ 0.0 |") in markdown
    assert "| Quilt-LLaVA | CVPR '24 | Quilt-1M | 40.2 | – | – | – | – | – | – | – | – |" in markdown
    assert "no audited overlap for Quilt-1M × seen" in markdown
    assert "td class='leak_high'" in (tmp_path / "out" / "index.html").read_text()


def write_run(folder):
    """A run folder with one VQA result (the report needs a run)."""
    folder.mkdir(parents=True)
    (folder / "20260101_000000_results.json").write_text(json.dumps(
        {"config": {"model": "m"}, "results": {"vqa": {"acc_image,none": 80.0}}}))
    return folder
