"""The public source benchmarks and the PathBind sets: raw published layouts to the task schema, end to end."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import datasets
import pandas as pd
import pytest
from conftest import lmms_eval, metric
from loguru import logger
from source_data import (
    QUILT_RECORDS,
    pathmmu_item,
    png,
    write_all,
    write_parquet,
    write_path_vqa,
    write_pathmmu,
    write_quilt_vqa,
)

from pathbind import make_plugin_manager
from pathbind.catalog import plugin_tasks, read_task_yaml
from pathbind.data import apply_data_root
from pathbind_tasks.common.raw import letter_answer, strip_letter_prefixes, text_answer, yes_no
from pathbind_tasks.medxpert_path import utils as medxpert
from pathbind_tasks.omnimed_bright import utils as omnimed
from pathbind_tasks.path_vqa import utils as path_vqa
from pathbind_tasks.pathbind_vqa import utils as pathbind_vqa
from pathbind_tasks.pathmmu import utils as pathmmu
from pathbind_tasks.quilt_vqa import utils as quilt_vqa

TASKS = Path(pathmmu.__file__).parent.parent
SOURCE_TASKS = ("pathbind_pathmmu_test", "pathbind_quilt_vqa", "pathbind_path_vqa", "pathbind_medxpert_path",
                "pathbind_omnimed_bright")
BASE_TASKS = (*SOURCE_TASKS, "pathbind_pathmmu_test_tiny", "pathbind_vqa", "pathbind_pta")
# lmms-eval's own download keys: they never reach datasets.load_dataset.
LMMS_EVAL_KWARGS = ("video", "cache_dir", "token", "force_download", "force_unzip", "create_link")


# ---------------------------------------------------------------------------------------------------
# Fixtures: each source in its raw published layout (writers in tests/source_data.py)
# ---------------------------------------------------------------------------------------------------

@pytest.fixture
def data_root(tmp_path, monkeypatch) -> Path:
    """All fixtures under one PATHBIND_DATA root, which the converters read their image files from."""
    monkeypatch.setenv("PATHBIND_DATA", str(tmp_path / "data"))
    return write_all(tmp_path / "data")


def load(builder: str, path: Path, split: str = "test", **kwargs: Any) -> datasets.Dataset:
    """Through the real datasets loader, as lmms-eval calls it."""
    return datasets.load_dataset(builder, data_files={split: str(path)}, split=split, **kwargs)


def pathmmu_load_kwargs() -> dict[str, Any]:
    """The builder kwargs the PathMMU YAML hands datasets (lmms-eval's download keys removed)."""
    kwargs = read_task_yaml(TASKS / "pathmmu" / "pathbind_pathmmu_test.yaml")["dataset_kwargs"]
    return {k: v for k, v in kwargs.items() if k not in (*LMMS_EVAL_KWARGS, "data_files")}


# ---------------------------------------------------------------------------------------------------
# Answer mapping
# ---------------------------------------------------------------------------------------------------

def test_answers_map_to_letters_only_when_unambiguous():
    """Letters alone or with a delimiter, option texts exactly; "A cell" is text; a letter past the options is None."""
    assert letter_answer("B) Eosinophils", 4) == "B" and letter_answer("(C)", 4) == "C" and letter_answer("D", 4) == "D"
    assert letter_answer("A cell", 4) is None and letter_answer("E", 4) is None
    assert text_answer("adenocarcinoma ", ["Normal", "Adenocarcinoma"]) == "B"
    assert text_answer("Benign", ["Normal", "Adenocarcinoma"]) is None
    assert strip_letter_prefixes(["A) x", "B) y"]) == ["x", "y"]
    assert strip_letter_prefixes(["A) x", "y"]) == ["A) x", "y"]
    assert [yes_no(a) for a in ("Yes", "no.", "left", None)] == ["yes", "no", None, None]


# ---------------------------------------------------------------------------------------------------
# One converter per source, on its raw layout loaded through datasets
# ---------------------------------------------------------------------------------------------------

def test_path_vqa_keeps_its_yes_no_questions(tmp_path):
    """Open-ended rows are dropped; ids carry the split and the raw row; answers are lower-case yes/no."""
    docs = path_vqa.convert(load("parquet", write_path_vqa(tmp_path)))
    assert docs["id"] == ["path_vqa-test-0", "path_vqa-test-2", "path_vqa-test-3"]
    assert docs["answer"] == ["yes", "no", "yes"] and set(docs["source"]) == {"Path-VQA"}
    assert docs[0]["image"].size == (12, 10) and docs["dimension"] == [None] * 3


@pytest.mark.parametrize("zipped", [False, True])
def test_quilt_vqa_reads_the_release_json_and_its_label_field(tmp_path, monkeypatch, zipped, running_task):
    """OPEN rows are dropped; the label is yes_no_answer (a sentence that opens with neither is still labelled);
    a CLOSED item without a label is dropped and counted, never scored invalid; images resolve from the data
    folder or its quilt_vqa.zip."""
    monkeypatch.setenv("PATHBIND_DATA", str(tmp_path))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "cache"))
    docs = quilt_vqa.full(load("json", write_quilt_vqa(tmp_path / "quilt_vqa", zipped=zipped)))
    images = [doc for doc in docs if doc["condition"] == "image"]
    assert [doc["id"] for doc in images] == ["quilt_vqa-100", "quilt_vqa-102", "quilt_vqa-104"]
    assert [doc["answer"] for doc in images] == ["yes", "no", "no"] and images[0]["image"].size == (14, 9)
    assert running_task.ledger.dropped == {"answer_type is not CLOSED": 1, quilt_vqa.UNLABELLED: 1}


def test_quilt_vqa_without_the_label_field_follows_the_official_rule():
    """Without yes_no_answer (the hub parquet) an answer must itself be yes or no: a sentence is unlabelled."""
    assert quilt_vqa.closed_label("Yes.") == "yes" and quilt_vqa.closed_label("Yes, a granuloma.") is None
    assert quilt_vqa.closed_label("Yes, a granuloma.", "no", has_label_field=True) == "no"
    assert quilt_vqa.closed_label("yes", None, has_label_field=True) is None
    assert quilt_vqa.closed_label(["yes"]) is None  # never the yes of a stringified list


@pytest.mark.parametrize("indent", [None, 2])
def test_pathmmu_reads_data_json_with_the_yaml_loader_settings(data_root, indent):
    """test-all = test + test_tiny of every subset; "A) " prefixes stripped; letters kept; source per subset."""
    raw = load("json", write_pathmmu(data_root / "pathmmu", indent=indent), **pathmmu_load_kwargs())
    docs = pathmmu.convert_test(raw)
    assert docs["id"] == ["PubMed-test-2", "PubMed-test-3", "PubMed-test_tiny-1", "PathCLS-test-6",
                          "PathCLS-test_tiny-5", "EduContent-test-8", "EduContent-test_tiny-9"]
    first = docs[0]
    assert first["options"] == ["Neutrophils", "Eosinophils", "Plasma cells", "Mast cells"]
    assert first["answer"] == "B" and first["source"] == "PathMMU/PubMed" and first["dimension"] is None
    assert first["question"] == "Which cells predominate in field 2?" and first["image"].size == (12, 10)
    assert pathmmu.convert_test_tiny(raw)["id"] == ["PubMed-test_tiny-1", "PathCLS-test_tiny-5",
                                                    "EduContent-test_tiny-9"]


def test_pathmmu_items_with_a_bad_answer_or_a_missing_image_are_dropped_and_counted(data_root, capsys, running_task):
    """"F) Basophils" of four options and an image absent from images/ are faults of the data: both items leave
    every condition, counted by reason, the missing file named in the log."""
    messages: list[str] = []
    sink = logger.add(messages.append, level="WARNING")
    try:
        docs = pathmmu.test_full(load("json", write_pathmmu(data_root / "pathmmu"), **pathmmu_load_kwargs()))
    finally:
        logger.remove(sink)
    assert "PubMed-test-3" not in docs["id"] and "PathCLS-test-6" not in docs["id"]
    assert running_task.ledger.dropped == {
        "field 'answer' is not one of the option letters": 1, "image file not found": 1}
    assert any(str(data_root / "pathmmu" / "images" / "absent.jpg") in message for message in messages)


def test_pathmmu_read_in_blocks_fails_with_the_fix(data_root):
    """A data.json the loader reads in chunks loses its split names: a clear error, not a silent mix-up."""
    raw = load("json", write_pathmmu(data_root / "pathmmu", indent=2), chunksize=256)
    with pytest.raises(ValueError, match="chunksize"):
        pathmmu.convert_test(raw)


def test_medxpert_path_selects_pathology_questions_and_strips_the_answer_choices(data_root):
    """The CT question is left out; the stem loses "Answer Choices: ..."; two figures become one image."""
    docs = medxpert.convert(load("json", data_root / "medxpert_path" / "test.jsonl"))
    assert docs["id"] == ["MM-1", "MM-3", "MM-4"]
    first = docs[0]
    assert first["question"].endswith("most likely diagnosis?") and "Answer Choices" not in first["question"]
    assert first["options"] == ["Adenocarcinoma", "Carcinoid tumor", "Lymphoma", "Leiomyoma", "GIST"]
    assert first["answer"] == "B" and first["image"].size == (20, 10)
    assert docs[1]["image"].size == (2 * 768 * 2 + 16, 768)
    assert docs[2]["answer"] == "F"  # a sixth option of five: kept raw, so vqa_docs drops it (a data fault)


def test_medxpert_path_follows_an_id_list_when_one_is_given(data_root):
    """pathology_ids.txt beside the data replaces the keyword rule (to reproduce a published selection)."""
    (data_root / "medxpert_path" / "pathology_ids.txt").write_text("MM-2\nMM-4\n")
    assert medxpert.convert(load("json", data_root / "medxpert_path" / "test.jsonl"))["id"] == ["MM-2", "MM-4"]


def test_omnimed_bright_reads_release_records_of_differing_keys(data_root):
    """Microscopy only (either modality key); two-option items; gt_answer text becomes its letter."""
    docs = omnimed.convert(load("json", data_root / "omnimed_bright" / "test.json"))
    assert docs["id"] == ["q1", "q3", "q4", "q5"]
    assert docs["answer"][:3] == ["B", "A", "D"] and docs["options"][1] == ["Normal tissue", "Adenocarcinoma"]
    assert docs["source"][0] == "OmniMedVQA/LC25000" and docs[0]["image"].size == (12, 10)
    assert docs["answer"][3] == "Benign (not an option)"  # dropped by vqa_docs: names no option


def test_omnimed_bright_follows_an_id_list_when_one_is_given(data_root):
    """question_ids.txt beside the data replaces the modality rule (OmniMed-Bright's own selection is unpublished)."""
    (data_root / "omnimed_bright" / "question_ids.txt").write_text("q2\nq3\n")
    assert omnimed.convert(load("json", data_root / "omnimed_bright" / "test.json"))["id"] == ["q2", "q3"]


def test_pathbind_vqa_local_format(data_root):
    """Columns pass through; an answer that is not an option letter stays as it is, for the scorer."""
    docs = pathbind_vqa.convert_vqa(load("parquet", data_root / "pathbind_vqa" / "test.parquet"))
    assert docs["dimension"] == ["D1", "D2", "D6"] and docs["answer"] == ["A", "C", "Z"]
    assert docs["options"][0] == ["Gland", "Vessel", "Nerve", "Duct"] and docs[0]["image"].size == (12, 10)


def test_pathbind_vqa_image_paths_resolve_against_the_data_folder(data_root, running_task):
    """A release that stores file names instead of image bytes reads them from $PATHBIND_DATA/<set>/images/."""
    folder = data_root / "pathbind_pta"
    (folder / "images").mkdir()
    (folder / "images" / "a.png").write_bytes(png(5))
    write_parquet(folder / "test.parquet", {"id": ["x", "y"], "image": ["a.png", "b.png"], "question": ["q?", "q?"],
                                            "options": [["u", "v"], ["u", "v"]], "answer": ["B", "A"],
                                            "dimension": ["D1", "D2"], "source": ["atlas", "atlas"]}, ())
    docs = pathbind_vqa.pta_full(load("parquet", folder / "test.parquet"))
    assert docs[0]["image"].size == (12, 10) and docs["condition"] == ["image", "text"]
    assert running_task.ledger.dropped == {"image file not found": 1}


def test_an_unreadable_embedded_image_drops_its_item(tmp_path, running_task):
    """Corrupt bytes: the item is dropped with the reason; the others are untouched."""
    path = write_parquet(tmp_path / "test.parquet", {"image": [{"bytes": b"not an image", "path": "x.jpg"},
                                                               {"bytes": png(1), "path": "y.jpg"}],
                                                     "question": ["a?", "b?"], "answer": ["yes", "no"]})
    docs = path_vqa.image_only(load("parquet", path))
    assert docs["id"] == ["path_vqa-test-1"]
    assert running_task.ledger.dropped == {"unreadable image": 1}


def test_no_image_folder_at_all_fails_before_any_model_call(data_root, tmp_path, monkeypatch):
    """File-name sources need $PATHBIND_DATA/<name>/ or the unpacked hub download; without either, say so."""
    raw = load("json", data_root / "medxpert_path" / "test.jsonl")
    monkeypatch.delenv("PATHBIND_DATA")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-hf-home"))
    with pytest.raises(ValueError, match="no folder with the image files: neither PATHBIND_DATA/medxpert_path/"):
        medxpert.convert(raw)


@pytest.mark.parametrize(("module", "columns", "missing"), [
    (path_vqa, {"image": [{"bytes": png(1), "path": None}], "question": ["q?"]}, "answer"),
    (quilt_vqa, {"image": [{"bytes": png(1), "path": None}], "question": ["q?"], "answer": ["yes"]}, "answer_type"),
    (pathbind_vqa, {"id": ["1"], "image": [{"bytes": png(1), "path": None}], "question": ["q?"], "answer": ["A"],
                    "dimension": ["D1"], "source": ["s"]}, "options"),
])
def test_a_missing_column_fails_before_any_model_call(tmp_path, module, columns, missing):
    """The error names the dataset, the missing column and the columns present."""
    raw = load("parquet", write_parquet(tmp_path / "test.parquet", columns))
    convert = getattr(module, "convert", None) or module.convert_vqa
    with pytest.raises(ValueError, match=f"no column '{missing}'") as error:
        convert(raw)
    assert "present: " in str(error.value) and "'question'" in str(error.value) and "README" in str(error.value)


def test_json_sources_name_their_missing_fields(data_root):
    """MedXpertQA without labels and a PathMMU item without options fail with the field named."""
    rows = [json.loads(line) for line in (data_root / "medxpert_path" / "test.jsonl").read_text().splitlines()]
    (data_root / "bad.jsonl").write_text("".join(json.dumps({k: v for k, v in r.items() if k != "label"}) + "\n"
                                                 for r in rows))
    with pytest.raises(ValueError, match="MedXpertQA-MM: the raw data has no column 'label'"):
        medxpert.convert(load("json", data_root / "bad.jsonl"))
    (data_root / "bad.json").write_text(json.dumps({"PubMed": {"test": [{"No": 1, "img": "a.jpg", "question": "q",
                                                                          "answer": "A) x"}]}}))
    with pytest.raises(ValueError, match="no item key 'options'"):
        pathmmu.convert_test(load("json", data_root / "bad.json", **pathmmu_load_kwargs()))


def test_process_docs_repeat_each_item_with_and_without_the_image(data_root):
    """The task's process_docs converts, then pairs every item across the image and text conditions."""
    docs = path_vqa.full(load("parquet", data_root / "path_vqa" / "test.parquet"))
    assert docs["condition"] == ["image", "text"] * 3 and docs["id"][::2] == docs["id"][1::2]
    assert set(path_vqa.image_only(load("parquet", data_root / "path_vqa" / "test.parquet"))["condition"]) \
        == {"image"}


# ---------------------------------------------------------------------------------------------------
# Task YAMLs
# ---------------------------------------------------------------------------------------------------

def test_every_task_has_its_image_and_thinking_variants_and_the_group_lists_the_sources():
    """Variants exist for each base task, share its data, and the sources group runs the five benchmarks."""
    names = {e.name: e for e in plugin_tasks(make_plugin_manager())}
    for task in BASE_TASKS:
        base = read_task_yaml(names[task].yaml_path)
        for variant in (f"{task}_image", f"{task}_think"):
            config = read_task_yaml(names[variant].yaml_path)
            assert config["task"] == variant
            assert config["dataset_path"] == base["dataset_path"] and config["test_split"] == base["test_split"]
            assert config["metadata"].get("pathbind_data") == base["metadata"]["pathbind_data"]
        assert read_task_yaml(names[f"{task}_think"].yaml_path)["lmms_eval_specific_kwargs"]["default"]["thinking"]
        assert read_task_yaml(names[f"{task}_image"].yaml_path)["process_docs"].endswith("image_only")
    group = read_task_yaml(names["pathbind_vqa_sources"].yaml_path)
    assert group["task"] == list(SOURCE_TASKS)


def test_hub_caches_match_the_yamls():
    """The converters look for unzipped images where the YAML tells lmms-eval to put them."""
    for module, yaml in ((pathmmu, "pathmmu/pathbind_pathmmu_test.yaml"),
                         (medxpert, "medxpert_path/pathbind_medxpert_path.yaml")):
        config = read_task_yaml(TASKS / yaml)
        assert config["dataset_kwargs"]["cache_dir"] == module.HUB_CACHE
        assert config["metadata"]["pathbind_data"] == module.DATA_NAME


def test_gated_sets_without_data_fail_with_the_variable_to_set(monkeypatch):
    """pathbind_vqa and pathbind_omnimed_bright are read from a local copy only: the seam says what to set."""
    monkeypatch.delenv("PATHBIND_DATA", raising=False)
    for task in ("pathbind_vqa", "pathbind_pta_image", "pathbind_omnimed_bright"):
        path = next(e.yaml_path for e in plugin_tasks(make_plugin_manager()) if e.name == task)
        with pytest.raises(ValueError, match="PATHBIND_DATA"):
            apply_data_root(read_task_yaml(path))


# ---------------------------------------------------------------------------------------------------
# End to end through the installed lmms_eval CLI
# ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cli_root(tmp_path_factory) -> Path:
    return write_all(tmp_path_factory.mktemp("sources") / "data")


FAMILIES = ("pathmmu", "quilt_vqa", "path_vqa", "medxpert_path", "omnimed_bright", "pathbind_vqa")
OWN_TASKS = sorted(e.name for e in plugin_tasks(make_plugin_manager()) if e.kind == "task" and e.family in FAMILIES)


@pytest.mark.parametrize("name", OWN_TASKS)
def test_every_task_builds_and_renders_from_its_data_folder(task_manager, cli_root, monkeypatch, name):
    """lmms-eval builds each task and variant from its benchmark's PATHBIND_DATA copy (a variant shares its base
    task's folder); two docs render their question and a reference, with an image unless text-only."""
    monkeypatch.setenv("PATHBIND_DATA", str(cli_root))
    task = task_manager.load_task_or_group([name])[name]
    docs = list(task.test_docs())[:2]
    assert len(docs) == 2
    for doc in docs:
        assert " ".join(doc["question"].split()) in task.doc_to_text(doc)
        assert task.doc_to_target(doc) not in (None, "")
        assert len(task.doc_to_visual(doc)) == (0 if doc["condition"] == "text" else 1)


@pytest.mark.slow
def test_blind_model_runs_a_yes_no_source_an_mcq_source_and_pathbind_vqa(cli_root, tmp_path):
    """PATHBIND_DATA copies in the raw layouts: every metric is reported; the invalid items are counted.

    PathMMU's release layout and variants reading their base task's folder run in the same evaluation.
    """
    tasks = ["pathbind_path_vqa", "pathbind_medxpert_path", "pathbind_vqa", "pathbind_pathmmu_test_tiny_image",
             "pathbind_quilt_vqa_think"]
    result = lmms_eval(tmp_path, "pathbind_blind", ",".join(tasks), env={"PATHBIND_DATA": str(cli_root)})
    for task in tasks:
        for name in ("acc_image", "invalid_rate") if task.endswith("_image") else ("acc_image", "acc_text", "mg",
                                                                                   "invalid_rate"):
            assert isinstance(metric(result, task, name), float), (task, name)
    for task in tasks:  # the blind control always answers in format; every bad reference is a data drop
        assert metric(result, task, "invalid_rate") == 0, task
    assert metric(result, "pathbind_path_vqa", "accounting") == {
        "rows": 4, "evaluated": 3, "dropped": {"open-ended (answer is not yes or no)": 1}}
    assert metric(result, "pathbind_medxpert_path", "accounting") == {  # MM-2's CT scan, MM-4's label "F"
        "rows": 4, "evaluated": 2, "dropped": {"not a pathology question": 1,
                                               "field 'answer' is not one of the option letters": 1}}
    assert metric(result, "pathbind_vqa", "accounting")["dropped"] == {
        "field 'answer' is not one of the option letters": 1}  # pb-2's answer "Z"
    assert metric(result, "pathbind_quilt_vqa_think", "accounting") == {
        "rows": 5, "evaluated": 3, "dropped": {"answer_type is not CLOSED": 1, quilt_vqa.UNLABELLED: 1}}
    log = next(result["out"].rglob("*medxpert_path.jsonl"))
    assert "MM-4" not in {json.loads(line)["pathbind"]["id"] for line in log.read_text().splitlines()}


@pytest.mark.slow
def test_lmms_eval_dummy_model_runs_a_source_task(cli_root, tmp_path):
    """lmms-eval's built-in dummy model (always "A") runs pathbind_omnimed_bright from its PATHBIND_DATA copy."""
    result = lmms_eval(tmp_path, "dummy", "pathbind_omnimed_bright", env={"PATHBIND_DATA": str(cli_root)})
    assert metric(result, "pathbind_omnimed_bright", "acc_image") == pytest.approx(100 / 3)  # q3 of three is A
    assert metric(result, "pathbind_omnimed_bright", "invalid_rate") == 0
    assert metric(result, "pathbind_omnimed_bright", "accounting")["dropped"] == {  # q2 is an X-ray; q5's answer
        "modality is not Microscopy Images": 1, "field 'answer' is not one of the option letters": 1}



def test_pathmmu_options_given_as_one_string_are_a_data_fault_not_characters(data_root, running_task):
    """A release whose options are one string ("A) x | B) y") has no agreed separator: the item is dropped naming
    the field and its type, never split into one option per character."""
    folder = data_root / "pathmmu"
    (folder / "images").mkdir(parents=True, exist_ok=True)
    (folder / "images" / "img_1.jpg").write_bytes(png(20))
    item = {**pathmmu_item(1), "options": "A) Neutrophils | B) Eosinophils"}
    (folder / "data.json").write_text(json.dumps({"PubMed": {"test": [item, pathmmu_item(2)], "test_tiny": []}}))
    (folder / "images" / "img_2.jpg").write_bytes(png(40))
    docs = pathmmu.test_full(load("json", folder / "data.json", **pathmmu_load_kwargs()))
    assert set(docs["id"]) == {"PubMed-test-2"}
    assert running_task.ledger.dropped == {"field 'options' is a str, not a list of option texts": 1}


@pytest.mark.parametrize(("module", "field", "value", "reason"), [
    (path_vqa, "question", ["is there necrosis?"], "field 'question' is a list, not text"),
    (path_vqa, "answer", {"text": "yes"}, "field 'answer' is a dict, not text"),
    (pathbind_vqa, "question", 7, "field 'question' is a int, not text"),
    (pathbind_vqa, "options", [["Gland"], ["Vessel"]], "field 'options' has a list, not text"),
    (pathbind_vqa, "dimension", 3.5, "field 'dimension' is a float, not text"),
    (omnimed, "question", ["What?"], "field 'question' is a list, not text"),
    (omnimed, "option_B", 12, "field 'option_B' is a int, not text"),
    (medxpert, "question", ["A photomicrograph?"], "field 'question' is a list, not text"),
    (medxpert, "options", {"A": "x", "B": ["y"]}, "field 'options' has a list, not text"),
    (quilt_vqa, "question", ["Is this a granuloma?"], "field 'question' is a list, not text"),
    (pathmmu, "question", ["Which cells?"], "field 'question' is a list, not text"),
    (pathmmu, "answer", 2, "field 'answer' is a int, not text"),
])
def test_a_field_of_the_wrong_type_is_named_never_stringified(data_root, module, field, value, reason):
    """Every source's text fields go through one rule (raw.text_field). A file types a column as a whole, so a
    list, dict or number where text is expected is in every row: each item is a fault of the data and the task
    stops before any model call naming the field and the type (never a prompt with a Python literal in it)."""
    rows, loader = _release_rows(data_root, module)
    with pytest.raises(ValueError, match=re.escape(reason)):
        _convert_rows(data_root, module, [{**row, field: value} for row in rows], loader)


def test_a_null_field_in_one_record_drops_that_item_naming_the_field(data_root, running_task):
    """JSON records may leave a field null: that item is dropped as a fault of the data, the others run."""
    rows = [dict(record) for record in QUILT_RECORDS]
    rows[0]["question"] = None
    docs = _convert_rows(data_root, quilt_vqa, rows, "json")
    assert [doc["id"] for doc in docs] == ["quilt_vqa-102", "quilt_vqa-104"]
    assert running_task.ledger.dropped["field 'question' is missing"] == 1


def _release_rows(data_root: Path, module: Any) -> tuple[list[dict[str, Any]], str]:
    """The first rows of a source's fixture as the raw records its release holds."""
    if module is path_vqa:
        return load("parquet", data_root / "path_vqa" / "test.parquet").cast_column(
            "image", datasets.Image(decode=False)).to_list(), "parquet"
    if module is pathbind_vqa:
        return load("parquet", data_root / "pathbind_vqa" / "test.parquet").cast_column(
            "image", datasets.Image(decode=False)).to_list(), "parquet"
    if module is pathmmu:
        data = json.loads((data_root / "pathmmu" / "data.json").read_text())
        return [data["PubMed"]["test"][0], data["EduContent"]["test"][0]], "pathmmu"
    if module is quilt_vqa:
        return [dict(record) for record in QUILT_RECORDS], "json"
    name = {omnimed: "omnimed_bright/test.json", medxpert: "medxpert_path/test.jsonl"}[module]
    text = (data_root / name).read_text()
    records = json.loads(text) if name.endswith(".json") else [json.loads(line) for line in text.splitlines()]
    return [r for r in records if r.get("modality_type", "Microscopy Images") == "Microscopy Images"
            and r.get("id") != "MM-2"], "json"


def _convert_rows(data_root: Path, module: Any, rows: list[dict[str, Any]], loader: str) -> datasets.Dataset:
    """The module's image-only process_docs on ``rows``, written the way its release is (pandas for parquet)."""
    if loader == "parquet":
        path = data_root / "rows.parquet"
        pd.DataFrame(rows).to_parquet(path)
        raw = load("parquet", path)
        return (module.vqa_image_only if module is pathbind_vqa else module.image_only)(raw)
    if loader == "pathmmu":
        (data_root / "pathmmu" / "data.json").write_text(json.dumps({"PubMed": {"test": rows, "test_tiny": []}}))
        return pathmmu.test_image_only(load("json", data_root / "pathmmu" / "data.json", **pathmmu_load_kwargs()))
    folder = {quilt_vqa: "quilt_vqa", omnimed: "omnimed_bright", medxpert: "medxpert_path"}[module]
    path = data_root / folder / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return module.image_only(load("json", path))
