"""Properties of every source converter over generated rows of the source's shape with faults injected anywhere:
each row ends up evaluated or dropped with a named reason (``rows == evaluated + dropped``), the clean rows are the
evaluated ones, no exception escapes, and every prompt (or grounding entity) is plain text, never a Python repr.

Rows are written as users write them (json files, pandas, plain pyarrow, datasets) and read by the real
``datasets`` loader, as lmms-eval reads them. Derandomized and small, so the suite stays fast and repeatable.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import datasets
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from source_data import jpeg, medxpert_record, omnimed_record, pathmmu_item, png

from pathbind.lmms.running import RunningTask, running
from pathbind_tasks.common import grounding as grounding_task
from pathbind_tasks.common import vqa
from pathbind_tasks.common.accounting import UNACCOUNTED
from pathbind_tasks.medxpert_path import utils as medxpert
from pathbind_tasks.omnimed_bright import utils as omnimed
from pathbind_tasks.path_vqa import utils as path_vqa
from pathbind_tasks.pathbind_vqa import utils as pathbind_vqa
from pathbind_tasks.pathmmu import utils as pathmmu
from pathbind_tasks.pathvg import utils as pathvg
from pathbind_tasks.pathview import prompts as pathview_prompts
from pathbind_tasks.pathview import schema as pathview_schema
from pathbind_tasks.quilt_vqa import utils as quilt_vqa

PROPERTY = settings(max_examples=12, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
REPRS = ("{'", "['", "None", "nan", "[", "]", "{", "}")  # what str() of a non-text value would leave in a prompt
# JSON values that are not text (NaN is not JSON; parquet sources inject it where they hold numbers)
NON_TEXT = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False),
                     st.lists(st.sampled_from(["a", "b", 1]), max_size=2),
                     st.dictionaries(st.sampled_from(["k", "text"]), st.integers(0, 3), max_size=2))
OUTSIDE = st.sampled_from(["/tmp/elsewhere.png", "../elsewhere.png", "images/../../x.png"])
BROKEN_IMAGES = st.sampled_from([b"", b"not an image", jpeg(80)[:40]])


def faulty_rows(faults: st.SearchStrategy[Any], max_size: int = 5) -> st.SearchStrategy[list[Any]]:
    """A clean row first (the task has a good item), then clean rows (None) and faulty ones in any order."""
    return st.lists(st.one_of(st.none(), faults), min_size=0, max_size=max_size).map(lambda rows: [None, *rows])


def converted(process_docs: Callable[[datasets.Dataset], datasets.Dataset], raw: datasets.Dataset
              ) -> tuple[datasets.Dataset, Any]:
    with running(RunningTask("property")) as task:
        docs = process_docs(raw)
    return docs, task.ledger


def assert_accounted(docs: datasets.Dataset, ledger: Any, rows: int, clean: int) -> None:
    """Every row evaluated or dropped with a named reason; the clean rows, and only they, evaluated."""
    assert ledger.rows == rows
    assert ledger.kept == len(set(docs["id"])) == clean, dict(ledger.dropped)
    assert ledger.rows == ledger.kept + sum(ledger.dropped.values())
    assert UNACCOUNTED not in ledger.dropped and all(reason.strip() for reason in ledger.dropped)


def assert_plain_prompts(docs: datasets.Dataset) -> None:
    for doc in docs.remove_columns("image"):
        prompt = vqa.doc_to_text(doc)
        assert not any(marker in prompt for marker in REPRS), prompt


def load(tmp: Path, builder: str, path: Path, **kwargs: Any) -> datasets.Dataset:
    return datasets.load_dataset(builder, data_files={"test": str(path)}, split="test", cache_dir=str(tmp / "cache"),
                                 **kwargs)


@pytest.fixture
def folder(monkeypatch) -> Callable[[str], Any]:
    """A fresh PATHBIND_DATA root per generated example: ``folder(name)`` gives (root, its <name>/ folder)."""
    made: list[tempfile.TemporaryDirectory] = []

    def make(name: str) -> tuple[Path, Path]:
        made.append(tempfile.TemporaryDirectory(prefix="pathbind-property-"))
        root = Path(made[-1].name)
        monkeypatch.setenv("PATHBIND_DATA", str(root))
        (root / name).mkdir()
        return root, root / name

    yield make
    for scratch in made:
        scratch.cleanup()


# ------------------------------------------------------------------------------------------------------ PathMMU

PATHMMU_FAULTS = st.one_of(
    st.tuples(st.just("replace"), st.one_of(NON_TEXT, st.text(max_size=4))),  # the item is not an object
    st.tuples(st.just("without"), st.sampled_from(pathmmu.ITEM_KEYS)),
    st.tuples(st.sampled_from(["question", "answer", "options", "img"]), NON_TEXT),
    st.tuples(st.just("answer"), st.sampled_from(["F) Basophils", "Z", ""])),
    st.tuples(st.just("img"), st.one_of(OUTSIDE, st.just("absent.jpg"))),
    st.tuples(st.just("broken"), BROKEN_IMAGES))


@PROPERTY
@given(rows=faulty_rows(PATHMMU_FAULTS))
def test_pathmmu(folder, rows):
    root, data = folder("pathmmu")
    (data / "images").mkdir()
    items = []
    for no, fault in enumerate(rows, 1):
        item: Any = pathmmu_item(no)
        (data / "images" / item["img"]).write_bytes(png(no))
        if fault is not None:
            kind, value = fault
            if kind == "replace":
                item = value
            elif kind == "without":
                del item[value]
            elif kind == "broken":
                (data / "images" / item["img"]).write_bytes(value)
            else:
                item[kind] = value
        items.append(item)
    (data / "data.json").write_text(json.dumps({"PubMed": {"test": items[::2], "test_tiny": items[1::2]}}))
    docs, ledger = converted(pathmmu.test_image_only, load(root, "json", data / "data.json", chunksize=1 << 30))
    assert_accounted(docs, ledger, len(rows), rows.count(None))
    assert_plain_prompts(docs)


# --------------------------------------------------------------------------------------------------- MedXpertQA

MEDXPERT_FAULTS = st.one_of(
    st.tuples(st.sampled_from(["question", "label", "images"]), NON_TEXT.filter(lambda v: v is not None)),
    st.tuples(st.just("options"), st.one_of(st.sampled_from(["ABCDE", 3, None]), st.lists(st.just("x"), max_size=2))),
    st.tuples(st.just("option"), NON_TEXT.filter(lambda v: v is not None)),
    st.tuples(st.just("label"), st.sampled_from(["Z", "F", "", "AB"])),
    st.tuples(st.just("images"), st.one_of(OUTSIDE.map(lambda p: [p]), st.just(["absent.png"]),
                                           st.tuples(st.just("ok.png"), OUTSIDE).map(list))),
    st.tuples(st.just("broken"), BROKEN_IMAGES))


@PROPERTY
@given(rows=faulty_rows(MEDXPERT_FAULTS), montage=st.booleans())
def test_medxpert(folder, rows, montage):
    root, data = folder("medxpert_path")
    (data / "images").mkdir()
    (data / "images" / "ok.png").write_bytes(png(5))
    records = []
    for n, fault in enumerate(rows):
        names = [f"{n}-a.png", f"{n}-b.png"] if montage else [f"{n}-a.png"]
        for name in names:
            (data / "images" / name).write_bytes(png(n, (12 + n, 10)))
        record = medxpert_record(f"MM-{n}", "A photomicrograph of the biopsy is shown. Which diagnosis?",
                                 images=names)
        if fault is not None:
            kind, value = fault
            if kind == "option":
                record["options"]["C"] = value
            elif kind == "broken":
                (data / "images" / names[-1]).write_bytes(value)
            else:
                record[kind] = value
        records.append(record)
    (data / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    docs, ledger = converted(medxpert.image_only, load(root, "json", data / "test.jsonl"))
    assert_accounted(docs, ledger, len(rows), rows.count(None))
    assert_plain_prompts(docs)


# --------------------------------------------------------------------------------------------------- OmniMedVQA

OMNIMED_FAULTS = st.one_of(
    st.tuples(st.sampled_from(["question", "gt_answer", "option_A", "option_B"]),
              NON_TEXT.filter(lambda v: v is not None)),
    st.tuples(st.just("gt_answer"), st.sampled_from(["Benign", "", "adenocarcinoma or lymphoma"])),
    st.tuples(st.just("image_path"), st.one_of(OUTSIDE, st.sampled_from(["Images/LC25000/absent.png",
                                                                         "Images/Restricted/x.png"]))),
    st.tuples(st.just("broken"), BROKEN_IMAGES))


@PROPERTY
@given(rows=faulty_rows(OMNIMED_FAULTS))
def test_omnimed(folder, rows):
    root, data = folder("omnimed_bright")
    (data / "Images" / "LC25000").mkdir(parents=True)
    records = []
    for n, fault in enumerate(rows):
        record = omnimed_record(f"q{n}", "LC25000", "Microscopy Images", "Adenocarcinoma")
        (data / record["image_path"]).write_bytes(png(n))
        if fault is not None:
            kind, value = fault
            if kind == "broken":
                (data / record["image_path"]).write_bytes(value)
            else:
                record[kind] = value
        records.append(record)
    (data / "test.json").write_text(json.dumps(records))
    docs, ledger = converted(omnimed.image_only, load(root, "json", data / "test.json"))
    assert_accounted(docs, ledger, len(rows), rows.count(None))
    assert_plain_prompts(docs)


# ---------------------------------------------------------------------------------------------------- Quilt-VQA

QUILT_FAULTS = st.one_of(
    st.tuples(st.sampled_from(["question", "yes_no_answer"]), NON_TEXT),
    st.tuples(st.just("yes_no_answer"), st.sampled_from(["maybe", "", "yes and no"])),
    st.tuples(st.just("image"), st.one_of(OUTSIDE, st.just("absent.jpg"))),
    st.tuples(st.just("broken"), BROKEN_IMAGES))


@PROPERTY
@given(rows=faulty_rows(QUILT_FAULTS))
def test_quilt_vqa(folder, rows):
    root, data = folder("quilt_vqa")
    (data / "images").mkdir()
    records = []
    for n, fault in enumerate(rows):
        record = {"id": n, "image": f"q{n}.jpg", "question": f"Is this granuloma {n} caseating?",
                  "answer": "Yes, it is.", "answer_type": "CLOSED", "yes_no_answer": "yes" if n % 2 else "no"}
        (data / "images" / record["image"]).write_bytes(jpeg(n))
        if fault is not None:
            kind, value = fault
            if kind == "broken":
                (data / "images" / record["image"]).write_bytes(value)
            else:
                record[kind] = value
        records.append(record)
    (data / "quiltvqa_test_w_ans.json").write_text(json.dumps(records))
    docs, ledger = converted(quilt_vqa.image_only, load(root, "json", data / "quiltvqa_test_w_ans.json"))
    assert_accounted(docs, ledger, len(rows), rows.count(None))
    assert_plain_prompts(docs)


# ----------------------------------------------------------------------------- Path-VQA and PathBind-VQA (parquet)

TABLE_FAULTS = st.one_of(st.tuples(st.sampled_from(["question", "answer"]), st.sampled_from([None, "", "  "])),
                         st.tuples(st.just("image"), BROKEN_IMAGES))


@PROPERTY
@given(rows=faulty_rows(TABLE_FAULTS))
def test_path_vqa_written_with_pandas(folder, rows):
    root, data = folder("path_vqa")
    table = []
    for n, fault in enumerate(rows):
        row = {"image": {"bytes": png(n), "path": f"{n}.png"}, "question": f"is there necrosis in field {n}?",
               "answer": "yes" if n % 2 else "no"}
        if fault is not None:
            kind, value = fault
            row[kind] = {"bytes": value, "path": None} if kind == "image" else value
        table.append(row)
    pd.DataFrame(table).to_parquet(data / "test.parquet")
    docs, ledger = converted(path_vqa.image_only, load(root, "parquet", data / "test.parquet"))
    # "" and "  " are open-ended answers (the task's selection), None a missing field: dropped either way
    assert_accounted(docs, ledger, len(rows), rows.count(None))
    assert_plain_prompts(docs)


PATHBIND_FAULTS = st.one_of(
    TABLE_FAULTS, st.tuples(st.just("answer"), st.sampled_from(["Z", "E", "AB"])),
    st.tuples(st.just("options"), st.sampled_from([[], ["Gland", None], ["Gland", ""], None])),
    st.tuples(st.just("file"), st.one_of(OUTSIDE, st.just("absent.png"))))


@PROPERTY
@given(rows=faulty_rows(PATHBIND_FAULTS), files=st.booleans())
def test_pathbind_vqa_written_with_plain_pyarrow(folder, rows, files):
    root, data = folder("pathbind_vqa")
    (data / "images").mkdir()
    table = []
    for n, fault in enumerate(rows):
        (data / "images" / f"{n}.png").write_bytes(png(n))
        row = {"id": f"pb-{n}", "image": {"bytes": png(n), "path": None}, "question": f"Which structure {n}?",
               "options": ["Gland", "Vessel", "Nerve", "Duct"], "answer": "ABCD"[n % 4], "dimension": "D1",
               "source": "atlas"}
        if fault is not None:
            kind, value = fault
            if kind == "file":
                files = True
                row["image"] = {"bytes": None, "path": value}
            elif kind == "image":
                (data / "images" / f"{n}.png").write_bytes(value)
                row["image"] = {"bytes": value, "path": None}
            else:
                row[kind] = value
        table.append(row)
    image = pa.string() if files else pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    if files:
        for n, row in enumerate(table):
            row["image"] = row["image"]["path"] or f"{n}.png"
    pq.write_table(pa.Table.from_pylist(table, schema=pa.schema([
        ("id", pa.string()), ("image", image), ("question", pa.string()), ("options", pa.list_(pa.string())),
        ("answer", pa.string()), ("dimension", pa.string()), ("source", pa.string())])), data / "test.parquet")
    docs, ledger = converted(pathbind_vqa.vqa_image_only, load(root, "parquet", data / "test.parquet"))
    assert_accounted(docs, ledger, len(rows), rows.count(None))
    assert_plain_prompts(docs)


# ------------------------------------------------------------------------------ PathVG (RefPath) and PathBind-Grounding

BOX_FAULTS = st.one_of(
    st.tuples(st.just("bbox"), st.sampled_from([[40, 0, 10, 16], [8, 8, 8, 20], [0, 0, 64], [100, 100, 120, 120],
                                                 None, "0 0 8 8"])),
    st.tuples(st.just("width"), st.sampled_from([65, 0, -3, 1.5, None])),
    st.tuples(st.just("expression"), st.one_of(NON_TEXT.filter(lambda v: not (isinstance(v, list) and v)),
                                               st.sampled_from(["", "  ", "[]", "[ ]"]))),
    st.tuples(st.just("image"), st.one_of(OUTSIDE, st.just("refpath_image/absent.jpg"))))


def assert_plain_entities(docs: datasets.Dataset) -> None:
    for doc in docs.remove_columns("image"):
        grounding_task.doc_to_text(doc)  # renders
        for entity in (doc["expression"], *doc["alternatives"]):
            assert isinstance(entity, str) and entity.strip() and not any(m in entity for m in REPRS), entity


@PROPERTY
@given(rows=faulty_rows(BOX_FAULTS), bracketed=st.booleans())
def test_pathvg(folder, rows, bracketed):
    root, data = folder("pathvg")
    (data / "refpath_image").mkdir()
    (data / "refpath_image" / "s.jpg").write_bytes(jpeg(50, (64, 32)))
    records = []
    for n, fault in enumerate(rows):
        texts = [f"the cluster of cells {n}", f"the nuclei {n}"][: 1 + n % 2]
        record = {"image_id": "s", "image": "refpath_image/s.jpg", "height": 32, "width": 64, "bbox": [0, 0, 32, 16],
                  "bbox_id": n, "expression": [f"[{t}]" if bracketed else t for t in texts]}
        if fault is not None:
            kind, value = fault
            record[kind] = value if kind != "expression" or not isinstance(value, str) else [value]
        records.append(record)
    (data / "testA.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    expressions = sum(len(r["expression"]) if isinstance(r["expression"], list) and r["expression"] else 1
                      for r in records)
    clean = sum(len(r["expression"]) for r, fault in zip(records, rows, strict=True) if fault is None)
    docs, ledger = converted(pathvg.testa, load(root, "json", data / "testA.jsonl"))
    assert_accounted(docs, ledger, expressions, clean)
    assert_plain_entities(docs)


# a parquet column has one type: faults of the grounding file are values of its columns' types
GROUNDING_FAULTS = st.one_of(
    st.tuples(st.just("bbox"), st.sampled_from([[40.0, 0.0, 10.0, 16.0], [8.0, 8.0, 8.0, 20.0], [0.0, 0.0, 64.0],
                                                 [100.0, 100.0, 120.0, 120.0], [float("nan")] * 4, None])),
    st.tuples(st.sampled_from(["width", "height"]), st.sampled_from([65.0, 0.0, -3.0, 1.5, float("nan"), None])),
    st.tuples(st.just("expression"), st.sampled_from([None, "", "  "])),
    st.tuples(st.just("split"), st.sampled_from(["testB", "val", None])),
    st.tuples(st.just("image"), BROKEN_IMAGES))


@PROPERTY
@given(rows=faulty_rows(GROUNDING_FAULTS))
def test_pathbind_grounding_written_with_pandas(folder, rows):
    root, data = folder("pathbind_grounding")
    table = []
    for n, fault in enumerate(rows):
        row = {"id": f"g{n}", "image": {"bytes": png(n, (64, 32)), "path": None}, "expression": f"gland lumen {n}",
               "bbox": [0.0, 0.0, 32.0, 16.0], "width": 64.0, "height": 32.0, "split": "testA"}
        if fault is not None:
            kind, value = fault
            row[kind] = {"bytes": value, "path": None} if kind == "image" else value
        table.append(row)
    pd.DataFrame(table).to_parquet(data / "test.parquet")
    docs, ledger = converted(grounding_task.by_split_testa, load(root, "parquet", data / "test.parquet"))
    assert_accounted(docs, ledger, len(rows), rows.count(None))
    assert_plain_entities(docs)


# ------------------------------------------------------------------------------------------------------ PathView

PATHVIEW_FAULTS = st.one_of(
    st.tuples(st.just("question"), st.sampled_from([None, "", "  "])),
    st.tuples(st.just("options"), st.sampled_from([None, [], ["tumor"], ["tumor", ""], ["tumor", None]])),
    st.tuples(st.just("answer"), st.sampled_from([None, "", "necrosis", "A"])),
    st.tuples(st.just("boxes"), st.sampled_from([[[20.0, 1.0, 5.0, 9.0]], [[50.0, 1.0, 60.0, 20.0]], [[1.0, 2.0]]])),
    st.tuples(st.just("width"), st.sampled_from([80.0, 0.0, 1.5, None])),
    st.tuples(st.just("image"), st.one_of(OUTSIDE, st.just("absent.png"), st.just("broken.png"))))


@PROPERTY
@given(rows=faulty_rows(PATHVIEW_FAULTS), kind=st.sampled_from(["choice", "grounding"]))
def test_pathview(folder, rows, kind):
    root, data = folder("pathview")
    (data / "images").mkdir()
    (data / "images" / "a.png").write_bytes(png(3, (40, 30)))
    (data / "images" / "broken.png").write_bytes(b"not an image")
    table = []
    for n, fault in enumerate(rows):
        row: dict[str, Any] = {"id": f"v{n}", "image": "a.png", "question": f"Which tissue is shown in field {n}?"}
        row.update({"options": ["tumor", "stroma"], "answer": "stroma"} if kind == "choice" else
                   {"target": "tumor", "boxes": [[1.0, 1.0, 20.0, 20.0]], "width": 40.0, "height": 30.0})
        if fault is not None and fault[0] in row:
            row[fault[0]] = fault[1]
        elif fault is not None:  # a fault of the other kind's fields: this row stays clean
            rows[n] = None
        table.append(row)
    datasets.Dataset.from_list(table).to_parquet(str(data / "test.parquet"))
    process_docs = pathview_schema.choice_docs if kind == "choice" else pathview_schema.grounding_docs
    docs, ledger = converted(process_docs, load(root, "parquet", data / "test.parquet"))
    assert_accounted(docs, ledger, len(rows), rows.count(None))
    for doc in docs.remove_columns("image"):
        prompt = pathview_prompts.doc_to_text(doc, {"template": f"pathview_{'box' if kind == 'grounding' else kind}"})
        assert not any(marker in prompt for marker in ("{'", "['", "None", "nan")), prompt
        assert not any(marker in text for text in (doc["question"], *doc["options"]) for marker in REPRS)
