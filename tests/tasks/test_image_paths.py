"""The image-path rule, by property over every converter and every road a path takes (a file-name column, a
``{bytes: null, path}`` struct, a JSON string, a list element, a zip member): each row's path, whatever its kind and
order, is read in the data folder or refused by name, never looked up in the working folder.

Each example runs from an unrelated working folder holding a decoy image of another colour at every relative name
the data uses, and outside the data folder (what absolute, ``..`` and linked paths point at): a kept item shows the
data folder's image, never the decoy; every other row is dropped under its named reason.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from source_data import medxpert_record, omnimed_record, pathmmu_item, png

from pathbind.lmms.running import RunningTask, running
from pathbind_tasks.common import faithfulness, grounding, vqa
from pathbind_tasks.common.image_paths import OUTSIDE
from pathbind_tasks.medxpert_path import utils as medxpert
from pathbind_tasks.omnimed_bright import utils as omnimed
from pathbind_tasks.path_vqa import utils as path_vqa
from pathbind_tasks.pathbind_vqa import utils as pathbind_vqa
from pathbind_tasks.pathmmu import utils as pathmmu
from pathbind_tasks.pathvg import utils as pathvg
from pathbind_tasks.pathview import schema as pathview
from pathbind_tasks.quilt_vqa import utils as quilt_vqa

# No shrinking: a failing example is seven named rows, readable as it is, and each example writes a data folder.
PROPERTY = settings(max_examples=2, derandomize=True, deadline=None, database=None, phases=[Phase.generate],
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
DATA_SHADE, DECOY_SHADE = 40, 220  # png(shade): the data folder's images, and the decoys elsewhere
SIZE = (16, 12)
NOT_FOUND = "image file not found"
# How a row names its image, and whether its item is kept (None) or dropped under a reason ending so.
KINDS = {"inside": None, "absolute": None, "linked": None, "absent": NOT_FOUND, "outside": OUTSIDE,
         "climbing": OUTSIDE, "link_out": OUTSIDE}
IN_ARCHIVE = {"inside": None, "absent": NOT_FOUND, "outside": OUTSIDE, "climbing": OUTSIDE}  # no links in a zip


@dataclass(frozen=True)
class Source:
    """One converter: where its image names resolve (``images``, relative to the data folder), the field that holds
    them, and how its rows are written (``write(folder, names, road) -> (builder, file, load options)``)."""

    name: str
    process_docs: Callable[[datasets.Dataset], datasets.Dataset]
    field: str
    images: str
    roads: tuple[str, ...]
    write: Callable[[Path, list[Any], str], tuple[str, Path, dict[str, Any]]]
    archive: str = ""  # the image zip the release ships, read packed
    prefixed: bool = False  # names carry the image folder (the converter looks in the data folder itself)

    def ids(self, count: int) -> list[str]:
        return [ID_FORMS[self.name].format(n=n) for n in range(count)]

    def relative(self, name: str) -> str:
        """A relative file name as the source's data writes it."""
        return f"{self.images}/{name}" if self.prefixed else name


def names_for(source: Source, data: Path, work: Path, kinds: list[str], road: str) -> list[Any]:
    """Each row's image as the data gives it, with its file in place: the data folder's (or archive's) image of the
    data shade, and a decoy of the other shade at the same relative name in the working folder."""
    images = data / source.images
    if road != "zip":  # a zip is read only where its images are not unpacked beside it
        images.mkdir(parents=True, exist_ok=True)
    packed = {}
    (work / "elsewhere.png").write_bytes(png(DECOY_SHADE, SIZE))
    names: list[Any] = []
    for n, kind in enumerate(kinds):
        name = f"r{n}.png"
        (work / source.images / name).parent.mkdir(parents=True, exist_ok=True)
        (work / source.images / name).write_bytes(png(DECOY_SHADE, SIZE))
        (work / name).write_bytes(png(DECOY_SHADE, SIZE))  # a decoy at the bare name too
        if kind in ("inside", "absolute", "linked"):
            if road == "zip":
                packed[name] = png(DATA_SHADE, SIZE)
            else:
                (images / f"{name}.real" if kind == "linked" else images / name).write_bytes(png(DATA_SHADE, SIZE))
        if kind == "linked":
            (images / name).symlink_to(images / f"{name}.real")
        if kind == "link_out":
            (images / name).symlink_to(work / "elsewhere.png")
        if kind == "absolute":
            name = str(images / name)
        elif kind == "outside":
            name = str(work / "elsewhere.png")
        elif kind == "climbing":
            name = "../" * (len(Path(source.images).parts) + 2) + "elsewhere.png"
        names.append(source.relative(name) if not os.path.isabs(name) and kind != "climbing" else name)
    if road == "zip":
        with zipfile.ZipFile(data / source.archive, "w") as bundle:
            for name, content in packed.items():
                bundle.writestr(f"{source.images}/{name}" if source.images else name, content)
            bundle.writestr("../escaped.png", png(DECOY_SHADE, SIZE))  # a member that would land outside
    return names


def expected(source: Source, kinds: list[str]) -> tuple[list[str], Counter[str]]:
    """The ids kept and the drops by reason the rule gives these rows."""
    ids = source.ids(len(kinds))
    kept = [i for i, kind in zip(ids, kinds, strict=True) if KINDS[kind] is None]
    dropped = Counter(f"field {source.field!r} {OUTSIDE}" if KINDS[kind] == OUTSIDE else KINDS[kind]
                      for kind in kinds if KINDS[kind] is not None)
    return kept, dropped


# --------------------------------------------------------------------------------------------- how each source
# writes its rows (the file, the loader and its options), as users write them


def parquet_of(rows: list[dict[str, Any]], path: Path, road: str, image_types: dict[str, Any]) -> None:
    """``rows`` with plain pyarrow: the image a struct ``{bytes: null, path}`` or a file name, as ``road`` says."""
    struct = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    table = [{**row, "image": {"bytes": None, "path": row["image"]} if road == "struct" else row["image"]}
             for row in rows]
    schema = pa.schema([(key, struct if key == "image" and road == "struct" else image_types.get(key, pa.string()))
                        for key in rows[0]])
    pq.write_table(pa.Table.from_pylist(table, schema=schema), path)


def write_pathmmu(data: Path, names: list[Any], road: str) -> tuple[str, Path, dict[str, Any]]:
    items = [pathmmu_item(n, img=name) for n, name in enumerate(names)]
    (data / "data.json").write_text(json.dumps({"PubMed": {"test": items, "test_tiny": []}}))
    return "json", data / "data.json", {"chunksize": 1 << 30}


def write_medxpert(data: Path, names: list[Any], road: str) -> tuple[str, Path, dict[str, Any]]:
    records = [medxpert_record(f"MM-{n}", "A photomicrograph of the biopsy is shown. Diagnosis?", images=[name])
               for n, name in enumerate(names)]  # the release's list of image names: the list-element road
    (data / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return "json", data / "test.jsonl", {}


def write_omnimed(data: Path, names: list[Any], road: str) -> tuple[str, Path, dict[str, Any]]:
    records = [{**omnimed_record(f"q{n}", "LC25000", "Microscopy Images", "Adenocarcinoma"), "image_path": name}
               for n, name in enumerate(names)]
    (data / "test.json").write_text(json.dumps(records))
    return "json", data / "test.json", {}


def write_quilt(data: Path, names: list[Any], road: str) -> tuple[str, Path, dict[str, Any]]:
    rows = [{"id": n, "image": name, "question": f"Is this granuloma {n} caseating?", "answer": "Yes.",
             "answer_type": "CLOSED", "yes_no_answer": "yes"} for n, name in enumerate(names)]
    if road == "struct":  # the hub's test split as parquet, each image a path instead of its bytes
        parquet_of(rows, data / "test.parquet", road, {"id": pa.int64()})
        return "parquet", data / "test.parquet", {}
    (data / "quiltvqa_test_w_ans.json").write_text(json.dumps(rows))
    return "json", data / "quiltvqa_test_w_ans.json", {}


def write_path_vqa(data: Path, names: list[Any], road: str) -> tuple[str, Path, dict[str, Any]]:
    rows = [{"image": name, "question": f"is there necrosis in field {n}?", "answer": "yes"}
            for n, name in enumerate(names)]
    if road == "json":  # a test.json whose image field holds file paths
        (data / "test.json").write_text(json.dumps(rows))
        return "json", data / "test.json", {}
    parquet_of(rows, data / "test.parquet", road, {})
    return "parquet", data / "test.parquet", {}


def write_pathbind(data: Path, names: list[Any], road: str) -> tuple[str, Path, dict[str, Any]]:
    rows = [{"id": f"pb-{n}", "image": [name] if road == "list" else name, "question": f"Which structure {n}?",
             "options": ["Gland", "Vessel"], "answer": "A", "dimension": "D1", "source": "s"}
            for n, name in enumerate(names)]
    if road == "list":  # JSON Lines with a list of one image name: the list-element road
        (data / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        return "json", data / "test.jsonl", {}
    parquet_of(rows, data / "test.parquet", road, {"options": pa.list_(pa.string())})
    return "parquet", data / "test.parquet", {}


def write_grounding(data: Path, names: list[Any], road: str) -> tuple[str, Path, dict[str, Any]]:
    rows = [{"id": f"g{n}", "image": name, "expression": f"gland lumen {n}", "bbox": [0.0, 0.0, 8.0, 6.0],
             "width": float(SIZE[0]), "height": float(SIZE[1]), "split": "testA"} for n, name in enumerate(names)]
    parquet_of(rows, data / "test.parquet", "struct",
               {"bbox": pa.list_(pa.float64()), "width": pa.float64(), "height": pa.float64()})
    return "parquet", data / "test.parquet", {}


def write_pathvg(data: Path, names: list[Any], road: str) -> tuple[str, Path, dict[str, Any]]:
    records = [{"image_id": f"s{n}", "image": name, "height": SIZE[1], "width": SIZE[0], "bbox": [0, 0, 8, 6],
                "bbox_id": n, "expression": [f"the nuclei {n}"]} for n, name in enumerate(names)]
    (data / "testA.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return "json", data / "testA.jsonl", {}


def write_pathview(data: Path, names: list[Any], road: str) -> tuple[str, Path, dict[str, Any]]:
    rows = [{"id": f"v{n}", "image": name, "question": f"Which tissue is shown in field {n}?",
             "options": ["tumor", "stroma"], "answer": "stroma"} for n, name in enumerate(names)]
    if road == "names":  # pandas, as users write a table of file names
        pd.DataFrame(rows).to_parquet(data / "region_rcl.parquet")
    else:
        parquet_of(rows, data / "region_rcl.parquet", road, {"options": pa.list_(pa.string())})
    return "parquet", data / "region_rcl.parquet", {}


ID_FORMS = {"pathmmu": "PubMed-test-{n}", "medxpert_path": "MM-{n}", "omnimed_bright": "q{n}",
            "quilt_vqa": "quilt_vqa-{n}", "path_vqa": "path_vqa-test-{n}", "pathbind_vqa": "pb-{n}",
            "pathbind_demo_vqa": "pb-{n}", "pathbind_grounding": "g{n}", "faithfulness": "g{n}",
            "pathvg": "testA-{n}-0", "pathview": "v{n}"}


SOURCES = [  # every converter of the public sources and of PathBind, PathView and PathVG, with its roads
    Source("pathmmu", pathmmu.test_image_only, "img", "images", ("names", "zip"), write_pathmmu, "images.zip"),
    Source("medxpert_path", medxpert.image_only, "images", "images", ("names", "zip"), write_medxpert,
           "images.zip"),
    Source("omnimed_bright", omnimed.image_only, "image_path", "Images/LC25000", ("names",), write_omnimed,
           prefixed=True),
    Source("quilt_vqa", quilt_vqa.image_only, "image", "images", ("names", "zip", "struct"), write_quilt,
           "quilt_vqa.zip"),
    Source("path_vqa", path_vqa.image_only, "image", "", ("struct", "json"), write_path_vqa),
    Source("pathbind_vqa", pathbind_vqa.vqa_image_only, "image", "images", ("struct", "names", "list"),
           write_pathbind),
    Source("pathbind_demo_vqa", vqa.image_only, "image", "", ("struct",), write_pathbind),
    Source("pathbind_grounding", grounding.by_split_testa, "image", "", ("struct",), write_grounding),
    Source("faithfulness", faithfulness.by_split, "image", "", ("struct",), write_grounding),
    Source("pathvg", pathvg.testa, "image", "refpath_image", ("names", "zip"), write_pathvg, "refpath_image.zip",
           prefixed=True),
    Source("pathview", pathview.choice_docs, "image", "images", ("names", "struct"), write_pathview),
]


@pytest.fixture
def places(monkeypatch) -> Iterator[Callable[[str], tuple[Path, Path]]]:
    """``places(name) -> (data folder, working folder)``, fresh per example: ``$PATHBIND_DATA/<name>/``, and an
    unrelated folder the converter runs in."""
    made: list[tempfile.TemporaryDirectory] = []

    def make(name: str) -> tuple[Path, Path]:
        made.append(tempfile.TemporaryDirectory(prefix="pathbind-paths-"))
        root = Path(made[-1].name)
        (root / "data" / name).mkdir(parents=True)
        (root / "work").mkdir()
        monkeypatch.setenv("PATHBIND_DATA", str(root / "data"))
        monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", root / "cache")  # where zips are unpacked
        monkeypatch.chdir(root / "work")
        return root / "data" / name, root / "work"

    yield make
    for scratch in made:
        scratch.cleanup()


def shade(image: Any) -> int:
    return int(np.asarray(image.convert("RGB"))[0, 0, 0])


@pytest.mark.parametrize(("source", "road"), [(source, road) for source in SOURCES for road in source.roads],
                         ids=lambda value: value.name if isinstance(value, Source) else value)
@PROPERTY
@given(data=st.data())
def test_every_converter_reads_image_paths_in_the_data_folder_only(places, source, road, data):
    """Whatever the order of the rows, on each road, kept items show the data folder's images and the others are
    dropped as missing or as outside the data folder, counted, the decoy never read."""
    kinds = data.draw(st.permutations(sorted(IN_ARCHIVE if road == "zip" else KINDS)), label="kinds")
    folder, work = places(source.name if source.name != "faithfulness" else "pathbind_grounding")
    names = names_for(source, folder, work, kinds, road)
    builder, path, options = source.write(folder, names, road)
    raw = datasets.load_dataset(builder, data_files={"test": str(path)}, split="test",
                                cache_dir=str(work / "cache"), **options)
    with running(RunningTask("paths", {"test": str(path)})) as task:
        docs = source.process_docs(raw)
    kept, dropped = expected(source, kinds)
    assert sorted(set(docs["id"])) == sorted(kept), dict(task.ledger.dropped)
    assert task.ledger.dropped == dropped and task.ledger.rows == len(kinds)
    assert all(shade(image) == DATA_SHADE for image in docs["image"])  # never a decoy
    assert not list(work.parent.rglob("escaped.png"))  # a zip member that would land outside is never written
