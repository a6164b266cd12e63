"""Small data folders in each source's raw published layout, as a user lays them out under ``PATHBIND_DATA``."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import datasets
from PIL import Image


def png(shade: int, size: tuple[int, int] = (12, 10)) -> bytes:
    """A small PNG of one colour."""
    buffer = io.BytesIO()
    Image.new("RGB", size, (shade, 255 - shade, 128)).save(buffer, format="PNG")
    return buffer.getvalue()


def write_parquet(path: Path, columns: dict[str, list[Any]], image_columns: tuple[str, ...] = ("image",)) -> Path:
    """A parquet file as the hub serves it: images as {bytes, path} with datasets' feature metadata."""
    path.parent.mkdir(parents=True, exist_ok=True)
    features = datasets.Features({name: datasets.Image() if name in image_columns else
                                  datasets.List(datasets.Value("string")) if isinstance(values[0], list) else
                                  datasets.Value("string") for name, values in columns.items()})
    datasets.Dataset.from_dict(columns, features=features).to_parquet(str(path))
    return path


def write_path_vqa(folder: Path) -> Path:
    """flaviagiammarino/path-vqa: image, question, answer; open-ended rows mixed with yes/no ones."""
    return write_parquet(folder / "test.parquet", {
        "image": [{"bytes": png(10 * i), "path": f"test_{i}.jpg"} for i in range(4)],
        "question": ["is there necrosis?", "what organ is shown?", "are the glands dilated?", "is this benign?"],
        "answer": ["yes", "liver", "no", "Yes"]})


QUILT_RECORDS = [  # quiltvqa_test_w_ans.json: a sentence answer, and the label the official evaluation reads
    {"id": 100, "image": "q0.jpg", "question": "Is this a granuloma?", "answer_type": "CLOSED",
     "answer": "Yes, a caseating granuloma with giant cells.", "yes_no_answer": "yes", "context": "narrator text"},
    {"id": 101, "image": "q1.jpg", "question": "What is seen here?", "answer_type": "OPEN",
     "answer": "A caseating granuloma.", "yes_no_answer": "", "context": "narrator text"},
    {"id": 102, "image": "q2.jpg", "question": "Are there mitoses?", "answer_type": "CLOSED",
     "answer": "No. The nuclei are bland and no mitoses are seen.", "yes_no_answer": "no", "context": ""},
    {"id": 103, "image": "q3.jpg", "question": "Is it left or right?", "answer_type": "CLOSED",
     "answer": "It is on the left side of the field.", "yes_no_answer": "", "context": ""},
    {"id": 104, "image": "q4.jpg", "question": "Is this malignant?", "answer_type": "CLOSED",
     "answer": "This is consistent with a benign process.", "yes_no_answer": "no", "context": ""},
]


def write_quilt_vqa(folder: Path, *, zipped: bool = False) -> Path:
    """wisdomik/Quilt_VQA as the official evaluation reads it: quiltvqa_test_w_ans.json (a JSON list) and the
    images of quilt_vqa.zip (members quilt_vqa/images/<name>), unpacked into images/ or left zipped."""
    folder.mkdir(parents=True, exist_ok=True)
    images = {record["image"]: jpeg(30 * i) for i, record in enumerate(QUILT_RECORDS)}
    if zipped:
        with zipfile.ZipFile(folder / "quilt_vqa.zip", "w") as bundle:
            for name, data in images.items():
                bundle.writestr(f"quilt_vqa/images/{name}", data)
    else:
        (folder / "images").mkdir(exist_ok=True)
        for name, data in images.items():
            (folder / "images" / name).write_bytes(data)
    (folder / "quiltvqa_test_w_ans.json").write_text(json.dumps(QUILT_RECORDS, indent=2))
    return folder / "quiltvqa_test_w_ans.json"


def jpeg(shade: int, size: tuple[int, int] = (14, 9)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (shade, 90, 200 - shade)).save(buffer, format="JPEG")
    return buffer.getvalue()


def pathmmu_item(no: int, answer: str = "B) Eosinophils", img: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"No": no, "img": img or f"img_{no}.jpg", "question": f"Which cells predominate in field {no}?",
            "options": ["A) Neutrophils", "B) Eosinophils", "C) Plasma cells", "D) Mast cells"],
            "answer": answer, "explanation": "Bi-lobed nuclei with eosinophilic granules.", **extra}


def write_pathmmu(folder: Path, *, indent: int | None = None) -> Path:
    """jamessyx/PathMMU: data.json {subset: {split: [items]}} and images/<img>; one item's image is absent."""
    data = {
        "PubMed": {"test_tiny": [pathmmu_item(1)], "test": [pathmmu_item(2), pathmmu_item(3, answer="F) Basophils")],
                   "val": [pathmmu_item(4)]},
        "PathCLS": {"test_tiny": [pathmmu_item(5, source_img="CRC100K/ADI/x.tif")],
                    "test": [pathmmu_item(6, source_img="CRC100K/TUM/y.tif", img="absent.jpg")],
                    "val": [pathmmu_item(7, source_img="z.tif")]},
        "EduContent": {"test": [pathmmu_item(8, answer="C) Plasma cells")], "test_tiny": [pathmmu_item(9)]},
    }
    (folder / "images").mkdir(parents=True, exist_ok=True)
    for no in (1, 2, 3, 4, 5, 7, 8, 9):
        (folder / "images" / f"img_{no}.jpg").write_bytes(png(no * 20))
    (folder / "data.json").write_text(json.dumps(data, indent=indent))
    return folder / "data.json"


def medxpert_record(key: str, question: str, label: str = "B", images: list[str] | None = None,
                    body_system: str = "Digestive") -> dict[str, Any]:
    options = {"A": "Adenocarcinoma", "B": "Carcinoid tumor", "C": "Lymphoma", "D": "Leiomyoma", "E": "GIST"}
    choices = " ".join(f"({k}) {v}" for k, v in options.items())
    return {"id": key, "question": f"{question} Answer Choices: {choices}", "options": options, "label": label,
            "images": images or [f"{key}-a.jpeg"], "medical_task": "Diagnosis", "body_system": body_system,
            "question_type": "Reasoning"}


def write_medxpert(folder: Path) -> Path:
    """TsinghuaC3I/MedXpertQA MM: test.jsonl rows and images/<name>; a CT question is not pathology."""
    records = [
        medxpert_record("MM-1", "A 54-year-old man has a gastric mass. A photomicrograph of the biopsy is shown. "
                                "What is the most likely diagnosis?"),
        medxpert_record("MM-2", "A 40-year-old woman has abdominal pain. Her CT scan is shown. What is the next step?"),
        medxpert_record("MM-3", "Histologic sections (Figures A and B) of the resected lesion are shown. "
                                "What is the diagnosis?", images=["MM-3-a.jpeg", "MM-3-b.jpeg"]),
        medxpert_record("MM-4", "Light microscopy of the kidney biopsy is shown. Which finding is expected?",
                        label="F"),
    ]
    (folder / "images").mkdir(parents=True, exist_ok=True)
    for name, shade in (("MM-1-a.jpeg", 30), ("MM-2-a.jpeg", 60), ("MM-3-a.jpeg", 90), ("MM-3-b.jpeg", 120),
                        ("MM-4-a.jpeg", 150)):
        (folder / "images" / name).write_bytes(png(shade, (20, 10)))
    (folder / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder / "test.jsonl"


def omnimed_record(qid: str, dataset: str, modality: str | None, gt: str, n_options: int = 4,
                   modality_key: str = "modality_type") -> dict[str, Any]:
    options = ["Normal tissue", "Adenocarcinoma", "Squamous cell carcinoma", "Lymphoma"][:n_options]
    record: dict[str, Any] = {"question_id": qid, "dataset": dataset, "question_type": "Disease Diagnosis",
                              "question": "What abnormality is shown in this image?", "gt_answer": gt,
                              "image_path": f"Images/{dataset}/{qid}.png"}
    record.update({f"option_{letter}": text for letter, text in zip("ABCD", options, strict=False)})
    if modality is not None:
        record[modality_key] = modality
    return record


def write_omnimed(folder: Path) -> Path:
    """OmniMedVQA QA_information records (keys differ between records), concatenated, with Images/<dataset>/."""
    records = [
        omnimed_record("q1", "LC25000", "Microscopy Images", "Adenocarcinoma"),
        omnimed_record("q2", "Chest X-Ray", "X-Ray", "Normal tissue"),
        omnimed_record("q3", "BreakHis", "Microscopy Images", "Normal tissue", n_options=2),
        omnimed_record("q4", "MHIST", "Microscopy Images", "Lymphoma", modality_key="modality"),
        omnimed_record("q5", "LC25000", "Microscopy Images", "Benign (not an option)"),
    ]
    for record in records:
        path = folder / record["image_path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(png(len(record["question_id"]) * 40))
    (folder / "test.json").write_text(json.dumps(records, indent=2))
    return folder / "test.json"


def write_pathbind(folder: Path, dimensions: tuple[str, ...] = ("D1", "D2", "D6")) -> Path:
    """The PathBind release's local format: id, image, question, options, answer, dimension, source."""
    n = len(dimensions)
    return write_parquet(folder / "test.parquet", {
        "id": [f"pb-{i}" for i in range(n)], "image": [{"bytes": png(40 * i), "path": None} for i in range(n)],
        "question": [f"Which structure is marked {i}?" for i in range(n)],
        "options": [["Gland", "Vessel", "Nerve", "Duct"]] * n, "answer": ["A", "C", "Z"][:n],
        "dimension": list(dimensions), "source": ["PathMMU", "Quilt-VQA", "Path-VQA"][:n]})


def write_grounding(folder: Path, splits: tuple[str, ...] = ("testA", "testA", "testB"),
                    bboxes: list[list[float] | None] | None = None) -> Path:
    """The PathBind-Grounding release: test.parquet with id, image, expression, bbox (pixels), width, height, split."""
    n = len(splits)
    path = folder / "test.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_dict({
        "id": [f"g{i}" for i in range(n)], "image": [{"bytes": png(30 * i, (16, 12)), "path": None} for i in range(n)],
        "expression": [f"gland lumen {i}" for i in range(n)], "bbox": bboxes or [[0.0, 0.0, 8.0, 6.0]] * n,
        "width": [16] * n, "height": [12] * n, "split": list(splits)},
    ).cast_column("image", datasets.Image()).to_parquet(str(path))
    return path


def write_all(root: Path) -> Path:
    """Every dataset in its documented PATHBIND_DATA layout under root (as a user would lay them out)."""
    write_path_vqa(root / "path_vqa")
    write_quilt_vqa(root / "quilt_vqa")
    write_pathmmu(root / "pathmmu")
    write_medxpert(root / "medxpert_path")
    write_omnimed(root / "omnimed_bright")
    write_pathbind(root / "pathbind_vqa")
    write_pathbind(root / "pathbind_pta", ("D1", "D5"))
    return root
