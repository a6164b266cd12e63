"""PathBind's models read their requests' documents in chunks: the same documents as lmms-eval's one-by-one reads,
and a document that cannot be read fails its own request only."""

from __future__ import annotations

import io

import datasets
import pytest
from lmms_eval.api.instance import Instance
from PIL import Image

from pathbind.wire import MODEL_FAILED
from pathbind_models import documents
from pathbind_models.controls.models import BlindControlModel
from pathbind_models.documents import RequestDocuments


def png(shade: int, size: tuple[int, int] = (7, 5)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (shade, 255 - shade, 90)).save(buffer, format="PNG")
    return buffer.getvalue()


def split(rows: int, broken: int | None = None) -> datasets.Dataset:
    """``rows`` documents with embedded images and a few scalar columns; the image of row ``broken`` is no image."""
    images = [{"bytes": b"not an image" if i == broken else png(i % 200), "path": f"{i}.png"} for i in range(rows)]
    features = datasets.Features({"image": datasets.Image(), "question": datasets.Value("string"),
                                  "answer": datasets.Value("string"), "score": datasets.Value("float32"),
                                  "options": datasets.Sequence(datasets.Value("string"))})
    columns = {"image": images, "question": [f"is there necrosis in field {i}?" for i in range(rows)],
               "answer": ["yes" if i % 3 else "no" for i in range(rows)], "score": [i / 7 for i in range(rows)],
               "options": [[] if i % 2 else ["a", f"b{i}"] for i in range(rows)]}
    return datasets.Dataset.from_dict(columns, features=features)


def ask(doc_id: int, task: str, context: str = 'Is there necrosis? Answer "Yes" or "No".') -> Instance:
    arguments = (context, {"until": ["\n\n"]}, lambda doc: [doc["image"]], doc_id, task, "test")
    return Instance("generate_until", arguments, 0, {"task": task, "doc_id": doc_id, "repeats": 1})


def comparable(doc: dict) -> dict:
    return {key: (value.tobytes(), value.size, value.mode) if isinstance(value, Image.Image) else value
            for key, value in doc.items()}


def test_documents_equal_lmms_evals_reads_across_chunks_tasks_and_formats():
    """Two tasks interleaved (one split filtered, so it reads through an indices mapping), doc ids out of order and
    repeated, more requests than a chunk, and a split with a format of its own: every document equals
    ``task_dict[task][split][doc_id]``."""
    plain = split(150)
    filtered = split(150).filter(lambda doc: doc["answer"] == "yes")
    # a transform sees the rows it is applied to: one, as lmms-eval reads them
    formatted = split(20).with_transform(lambda batch: {**batch, "rows": [len(batch["answer"])] * len(batch["answer"])})
    task_dict = {"plain": {"test": plain}, "filtered": {"test": filtered}, "formatted": {"test": formatted},
                 "listed": {"test": [{"image": Image.new("L", (3, 9)), "question": "q"}]}}
    order = [(149 - i if i % 2 else i, "plain") for i in range(120)] + [(i * 7 % len(filtered), "filtered")
                                                                         for i in range(60)]
    order = [order[i // 2] if i % 2 else order[-1 - i // 2] for i in range(len(order))]
    order += [(5, "plain"), (5, "plain"), (3, "formatted"), (0, "listed"), (4, "formatted"), (1, "formatted"),
              (0, "plain")]
    requests = [ask(doc_id, task) for doc_id, task in order]
    assert len(requests) > 2 * documents.CHUNK
    docs = RequestDocuments(task_dict, requests)
    for index, (doc_id, task) in enumerate(order):
        read = docs[index]
        expected = task_dict[task]["test"][doc_id]
        assert read.keys() == expected.keys()
        assert comparable(read) == comparable(expected), (index, task, doc_id)
    assert docs[3]["question"] == task_dict[order[3][1]]["test"][order[3][0]]["question"]  # read again, out of order


def test_a_document_that_cannot_be_read_fails_its_own_request_only():
    """Row 9's image is not an image: the chunk it is in is read document by document, the other requests of the
    chunk are answered, and row 9's answer names the cause."""
    model = BlindControlModel(batch_size=4)
    model.task_dict = {"task": {"test": split(30, broken=9)}}
    answers = model.generate_until([ask(i, "task") for i in range(30)])
    assert answers[9].startswith(f"{MODEL_FAILED} ") and "Image" in answers[9]
    assert all(answer in ("<answer>Yes</answer>", "<answer>No</answer>") for i, answer in enumerate(answers) if i != 9)


@pytest.mark.parametrize("rows", [1, documents.CHUNK, documents.CHUNK + 1])
def test_every_request_is_answered_at_chunk_boundaries(rows):
    model = BlindControlModel(batch_size=3)
    model.task_dict = {"task": {"test": split(rows)}}
    answers = model.generate_until([ask(i, "task") for i in range(rows)])
    assert len(answers) == rows and not any(answer.startswith(MODEL_FAILED) for answer in answers)
