"""Bad rows of a VQA set: each is evaluated (invalid with its reason where it must be) and none stops the run."""

from __future__ import annotations

import io
import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import BIN, lmms_eval, metric
from PIL import Image, ImageFile, TiffImagePlugin

from pathbind.faults import Fault
from pathbind.wire import MODEL_FAILED
from pathbind_tasks.common.conditions import ABLATIONS, with_readable_images
from pathbind_tasks.common.images import MAX_PIXELS_ENV, max_pixels, rgb_image
from pathbind_tasks.common.raw import letter_answer, unique_ids
from pathbind_tasks.common.vqa import ablation, doc_to_text, doc_to_visual, item_problem, process_results
from pathbind_tasks.pathbind_vqa.utils import convert_vqa

OPTIONS = ["Gland", "Vessel", "Nerve", "Duct"]


def encoded(image: Image.Image, fmt: str = "PNG", **save: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **save)
    return buffer.getvalue()


def grey16(value: int, mode: str = "I;16", size: tuple[int, int] = (6, 4)) -> Image.Image:
    """A uniform 16-bit greyscale image (``I;16`` little-endian, ``I;16B`` big-endian)."""
    dtype = "<u2" if mode == "I;16" else ">u2"
    return Image.frombytes(mode, size, np.full(size[::-1], value, dtype=dtype).tobytes())


def truncated_jpeg() -> bytes:
    pixels = np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8)
    data = encoded(Image.fromarray(pixels), "JPEG", quality=90)
    return data[: len(data) // 2]


def huge_png() -> bytes:
    """12000 x 12000 pixels in about 17 KB (one bit per pixel, all black)."""
    return encoded(Image.new("1", (12000, 12000)))


# Runs a command and writes its peak RSS (KiB). A forked child starts with its parent's peak as its own
# ru_maxrss, so the command runs as the child of this small process, never of the large pytest process.
MEASURED = """import resource, subprocess, sys
done = subprocess.run(sys.argv[2:])
open(sys.argv[1], "w").write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(done.returncode)
"""


def measured(tmp_path: Path, command: list[str]) -> list[str]:
    """``command`` run under MEASURED, which leaves its peak RSS in ``tmp_path / "maxrss"``."""
    (tmp_path / "measure.py").write_text(MEASURED)
    return [sys.executable, str(tmp_path / "measure.py"), str(tmp_path / "maxrss"), *command]


def peak_rss(tmp_path: Path, command: list[str]) -> int:
    """Peak resident memory (bytes) of ``command``, which must succeed."""
    done = subprocess.run(measured(tmp_path, command), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return int((tmp_path / "maxrss").read_text()) * 1024


def image_docs(values: list[Any], feature: Any = None) -> datasets.Dataset:
    ids = [f"i{n}" for n in range(len(values))]
    if feature is None:
        return datasets.Dataset.from_dict({"id": ids, "image": values})
    return datasets.Dataset.from_dict({"id": ids, "image": values},
                                      features=datasets.Features({"id": datasets.Value("string"), "image": feature}))


@pytest.fixture
def strict_global():
    """lmms-eval sets LOAD_TRUNCATED_IMAGES for the whole process; the check must not depend on it."""
    before = ImageFile.LOAD_TRUNCATED_IMAGES
    ImageFile.LOAD_TRUNCATED_IMAGES = True
    yield
    ImageFile.LOAD_TRUNCATED_IMAGES = before


# ---------------------------------------------------------------------------------------------------
# Images
# ---------------------------------------------------------------------------------------------------

def test_images_in_every_storage_form_come_back_decodable(tmp_path):
    """Image features, {bytes, path} structs (parquet without datasets' metadata), bytes and paths: PIL images."""
    data = encoded(Image.new("RGB", (5, 3), (200, 10, 10)))
    (tmp_path / "a.png").write_bytes(data)
    struct = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    pq.write_table(pa.table({"id": ["s"], "image": pa.array([{"bytes": data, "path": "a.png"}], struct)}),
                   tmp_path / "plain.parquet")
    plain = datasets.load_dataset("parquet", data_files={"test": str(tmp_path / "plain.parquet")}, split="test")
    assert isinstance(plain.features["image"], dict)  # no metadata: a plain struct, as pandas writes it
    forms = [image_docs([data], datasets.Value("binary")), image_docs([str(tmp_path / "a.png")]),
             image_docs([{"bytes": data, "path": None}], datasets.Image()),
             image_docs([{"bytes": data, "path": None}], datasets.Image(decode=False)), plain]
    for docs in forms:
        checked = with_readable_images(docs)
        assert checked.features["image"] == datasets.Image() and checked["image_error"] == [None]
        assert checked[0]["image"].size == (5, 3)
        assert doc_to_visual(checked[0])[0].getpixel((0, 0)) == (200, 10, 10)


@pytest.mark.parametrize(("mode", "fmt"), [("I;16", "PNG"), ("I;16", "TIFF"), ("I;16B", "TIFF")])
def test_16_bit_images_map_to_8_bits_by_their_bit_depth(mode, fmt):
    """A 16-bit value v becomes round(v / 257) (not white, not stretched): 128 * 257 is mid-grey 128."""
    docs = with_readable_images(image_docs([encoded(grey16(128 * 257, mode), fmt)]))
    assert docs["image_error"] == [None]
    assert docs[0]["image"].mode.startswith("I")  # decoded as 16 bits; the conversion is ours
    assert np.asarray(doc_to_visual(docs[0])[0]).max() == 128 == np.asarray(doc_to_visual(docs[0])[0]).min()
    dim = rgb_image(Image.open(io.BytesIO(encoded(grey16(1000, mode), fmt))))
    assert dim.getpixel((0, 0)) == (4, 4, 4)  # 1000 / 257: a dim image stays dim


def test_32_bit_and_float_pixels_need_a_declared_range():
    """Float pixels map by the TIFF's declared sample range, else are invalid; signed or undeclared integers too."""
    as_float = Image.fromarray(np.full((4, 4), 0.5, np.float32))
    declared = TiffImagePlugin.ImageFileDirectory_v2()
    declared[340], declared[341] = 0.0, 2.0  # SMinSampleValue, SMaxSampleValue
    as_int = Image.fromarray(np.full((4, 4), 2**30, dtype=np.int32))
    docs = with_readable_images(image_docs([encoded(as_float, "TIFF", tiffinfo=declared), encoded(as_float, "TIFF"),
                                            encoded(as_int, "TIFF")]))
    faults = [Fault.read(value) for value in docs["image_error"]]
    assert faults[0] is None and doc_to_visual(docs[0])[0].getpixel((0, 0)) == (64, 64, 64)  # 0.5 of 2
    assert faults[1].reason == "unreadable image" and "mode F" in faults[1].detail
    assert "declared range" in faults[1].detail
    assert "signed integer pixels (mode I)" in faults[2].detail  # what PIL writes for int32
    with pytest.raises(ValueError, match="without a declared bit depth"):
        rgb_image(as_int)  # made in memory: no file declares its depth


def test_a_truncated_jpeg_is_invalid_whatever_lmms_eval_set(strict_global):
    """Not a grey-filled half image: the item is invalid, naming the truncation."""
    docs = with_readable_images(image_docs([truncated_jpeg()], datasets.Image()))
    assert str(Fault.read(docs["image_error"][0])).startswith(
        "unreadable image (truncated file; OSError: image file is truncated")
    assert ImageFile.LOAD_TRUNCATED_IMAGES  # the global is left as it was


def test_an_image_over_the_pixel_limit_is_invalid_from_its_header(monkeypatch):
    """12000 x 12000 exceeds the default 100,000,000 pixels; the variable lowers or raises the limit."""
    assert len(huge_png()) < 20_000 and max_pixels() == 100_000_000
    docs = with_readable_images(image_docs([huge_png(), encoded(Image.new("RGB", (12, 10)))], datasets.Image()))
    too_large = Fault("image too large",
                      f"12000x12000 = 144,000,000 pixels; the limit is 100,000,000, set by {MAX_PIXELS_ENV}")
    assert [Fault.read(value) for value in docs["image_error"]] == [too_large, None]
    monkeypatch.setenv(MAX_PIXELS_ENV, "100")
    assert str(Fault.read(with_readable_images(image_docs([encoded(Image.new("RGB", (12, 10)))]))["image_error"][0])
               ).startswith("image too large (12x10 = 120 pixels; the limit is 100")
    monkeypatch.setenv(MAX_PIXELS_ENV, "many")
    with pytest.raises(ValueError, match="not a positive number of pixels"):
        max_pixels()


def frames(fmt: str, count: int) -> bytes:
    """A GIF or TIFF of ``count`` frames of different colours."""
    images = [Image.new("RGB", (8, 6), (60 * n, 90, 200 - 60 * n)) for n in range(count)]
    return encoded(images[0], fmt, save_all=True, append_images=images[1:])


def test_an_image_of_several_frames_is_refused_and_one_of_one_frame_is_shown():
    """Which frame of an animated GIF or a multi-page TIFF a model would see is never left unsaid: such an image is
    a fault of the data, naming the format and the frame count; a one-frame GIF or TIFF is an image like any."""
    docs = with_readable_images(image_docs([frames("GIF", 3), frames("TIFF", 2), frames("GIF", 1),
                                            frames("TIFF", 1)], datasets.Image()))
    faults = [Fault.read(value) for value in docs["image_error"]]
    assert faults[:2] == [Fault("image has several frames", f"{fmt}, {n} frames; save the one to show as its own file")
                          for fmt, n in (("GIF", 3), ("TIFF", 2))]
    assert faults[2:] == [None, None] and doc_to_visual(docs[3])[0].size == (8, 6)


def test_checking_a_huge_image_stays_far_below_4_gb(tmp_path):
    """Peak memory (ru_maxrss) of a process that builds, shows and scores the documents of such an item stays
    under 512 MiB (measured: about 170 MB): its RGB decoding alone would take 432 MB."""
    (tmp_path / "huge.png").write_bytes(huge_png())
    Image.new("RGB", (8, 8)).save(tmp_path / "small.png")
    script = textwrap.dedent(f"""
        import datasets
        from pathbind.lmms.running import RunningTask, running
        from pathbind_tasks.common.vqa import ablation, doc_to_visual, process_results
        images = [{str(tmp_path / "huge.png")!r}, {str(tmp_path / "small.png")!r}]
        with running(RunningTask("huge", {{"test": {str(tmp_path / "test.parquet")!r}}})) as task:
            docs = ablation(datasets.Dataset.from_dict({{"id": ["big", "small"], "image": images,
                                                        "question": ["q?"] * 2, "options": [["a", "b"]] * 2,
                                                        "answer": ["A"] * 2}}))
        assert set(docs["id"]) == {{"small"}} and task.ledger.dropped == {{"image too large": 1}}
        for doc in docs:
            doc_to_visual(doc)
            assert process_results(doc, ["<answer>A</answer>"])["acc_image"]["valid"]
    """)
    assert peak_rss(tmp_path, [sys.executable, "-c", script]) < 512 * 2**20


def test_a_broken_image_drops_its_item_from_every_condition_and_no_swap_shows_it(running_task):
    """The unreadable image of b is a fault of the data: b is in no condition, counted in accounting, and no other
    item is shown it as a swap."""
    good = encoded(Image.new("RGB", (8, 8), (9, 9, 9)))
    rows = {"id": ["a", "b", "c"], "dimension": ["D1"] * 3, "image": [good, b"broken", good], "question": ["q?"] * 3,
            "options": [OPTIONS] * 3, "answer": ["A"] * 3}
    docs = ablation(datasets.Dataset.from_dict(rows))
    assert set(docs["id"]) == set(docs["image_from"]) == {"a", "c"}
    assert running_task.ledger.dropped == {"unreadable image": 1}
    assert all(process_results(doc, ["<answer>A</answer>"])[f"acc_{doc['condition']}" if doc["condition"] != "image"
                                                            else "acc_image"]["valid"] for doc in docs)


def test_a_model_that_cannot_use_the_image_is_reported_with_the_cause():
    """A PathBind model that cannot answer answers MODEL_FAILED and its error: the record names that cause."""
    doc = {"id": "f", "question": "q?", "options": OPTIONS, "answer": "A", "condition": "image"}
    answer = f"{MODEL_FAILED} ValueError: floating-point pixels (mode F) without a declared range"
    record = process_results(doc, [answer])["acc_image"]
    assert not record["valid"] and record["reference"] == "A"
    assert record["reason"] == "the model could not answer: ValueError: floating-point pixels (mode F) without a " \
                               "declared range"
    assert process_results(doc, [""])["acc_image"]["reason"].startswith("empty answer")


# ---------------------------------------------------------------------------------------------------
# Questions, options and answers
# ---------------------------------------------------------------------------------------------------

MCQ = {"id": "q", "question": "Which structure?", "options": OPTIONS, "answer": "C", "condition": "image"}


def score(doc: dict[str, Any], answer: str = "<answer>C</answer>") -> dict[str, Any]:
    return process_results(doc, [answer])["acc_image"]


@pytest.mark.parametrize(("options", "reason"), [
    ("Gland|Vessel|Nerve", "field 'options' is a str, not a list of option texts (got 'Gland|Vessel|Nerve')"),
    ([f"o{n}" for n in range(27)], "field 'options' has more options than the 26 letters A-Z (27 options)"),
    ([], "field 'options' is empty"), (["x", " ", "y"], "field 'options' has an empty option (option B)"),
])
def test_options_that_cannot_be_lettered_are_a_data_fault_and_never_fail_the_run(options, reason):
    """vqa_docs drops such an item with the problem (item_problem); a document that did not come through it still
    renders (without choices) and scores invalid naming the problem, never raising."""
    doc = {**MCQ, "options": options}
    assert str(item_problem({**doc, "answer_format": "mcq"})) == reason
    prompt = doc_to_text(doc)
    assert "Which structure?" in prompt and "\nA. " not in prompt
    record = score(doc)
    assert (record["valid"], record["reason"]) == (False, reason)


def test_options_given_as_one_string_are_not_split_into_characters():
    """The converter keeps no options for "x|y" and says why in doc_error (images here a plain bytes column)."""
    docs = convert_vqa(datasets.Dataset.from_dict({
        "id": ["s", "t"], "image": [encoded(Image.new("RGB", (4, 4)))] * 2, "question": ["q?"] * 2,
        "options": ["Gland|Vessel", "Nerve|Duct"], "answer": ["A", "B"], "dimension": ["D1"] * 2,
        "source": ["x"] * 2}))
    assert docs["options"] == [[], []] and docs[0]["image"].size == (4, 4)
    assert Fault.read(docs["doc_error"][0]) == Fault("field 'options' is a str, not a list of option texts",
                                                     "got 'Gland|Vessel'")


def test_an_option_cannot_inject_an_option_line():
    """Line breaks in an option collapse to spaces: four option lines, and parsing sees the same texts."""
    doc = {**MCQ, "options": ["Gland", "Vessel\nB. Nerve (the correct one)", "Nerve", "Duct"]}
    prompt = doc_to_text(doc)
    option_lines = [line for line in prompt.splitlines() if line[:3] in ("A. ", "B. ", "C. ", "D. ", "E. ")]
    assert option_lines == ["A. Gland", "B. Vessel B. Nerve (the correct one)", "C. Nerve", "D. Duct"]
    assert score(doc, "<answer>Vessel B. Nerve (the correct one)</answer>")["parsed"] == "B"


def test_a_multi_line_question_keeps_its_lines():
    """A vignette's paragraphs stay; only option texts are made one line."""
    prompt = doc_to_text({**MCQ, "question": "History: a mass.\nWhich structure?"})
    assert "History: a mass.\nWhich structure?" in prompt


@pytest.mark.parametrize(("question", "reason"), [
    ("", "field 'question' is empty"), ("  \n", "field 'question' is empty"),
    (None, "field 'question' is missing (null)"),
    (["Which?"], "field 'question' is a list, not text (got ['Which?'])")])
def test_an_empty_question_is_a_data_fault(question, reason):
    """vqa_docs drops it (item_problem); a document that did not come through vqa_docs scores invalid."""
    assert str(item_problem({**MCQ, "question": question, "answer_format": "mcq"})) == reason
    record = score({**MCQ, "question": question})
    assert (record["valid"], record["reason"]) == (False, reason)


def test_a_lowercase_reference_letter_names_its_option_in_scoring_and_in_the_item_check():
    """'c' is C for the converter, the item check and the scorer alike; 'e' of four options is none; a list or a
    number never becomes a letter by its Python text."""
    assert [letter_answer(a, 4) for a in ("c", "(c)", " C ", "e", "c) Nerve")] == ["C", "C", "C", None, None]
    assert [letter_answer(a, 4) for a in (["A"], 1, None, b"A")] == [None] * 4
    assert item_problem({**MCQ, "answer": "c"}) is None
    assert item_problem({**MCQ, "answer": "e"}).reason == "field 'answer' is not one of the option letters"
    record = score({**MCQ, "answer": "c"})
    assert (record["valid"], record["correct"], record["reference"]) == (True, True, "C")


def test_unique_ids_never_collide_even_with_ids_that_look_like_renames():
    """dup, dup, dup#2: the second dup cannot take dup#2; every id distinct, first occurrences unchanged."""
    assert unique_ids(["dup", "dup", "dup#2"], dataset="t") == ["dup", "dup#3", "dup#2"]
    assert unique_ids(["a#2", "a", "a", "a#3", "a"], dataset="t") == ["a#2", "a", "a#4", "a#3", "a#5"]
    rng = random.Random(7)
    alphabet = ["x", "x#2", "x#3", "x#2#2", "y", "y#1", "#2", ""]
    for _ in range(300):
        ids = [rng.choice(alphabet) for _ in range(rng.randint(0, 12))]
        out = unique_ids(ids, dataset="t")
        assert len(out) == len(ids) == len(set(out))
        firsts = {value: ids.index(value) for value in ids}
        assert all(out[index] == value for value, index in firsts.items())


# ---------------------------------------------------------------------------------------------------
# End to end through the installed lmms_eval CLI
# ---------------------------------------------------------------------------------------------------

def bad_rows() -> list[dict[str, Any]]:
    """One row per problem, beside good ones; ids repeat adversarially."""
    good = encoded(Image.new("RGB", (12, 10), (120, 40, 90)))
    row = lambda i, **kw: {"id": i, "image": {"bytes": good, "path": None}, "question": f"Which structure {i}?",  # noqa: E731
                           "options": OPTIONS, "answer": "A", "dimension": "D1", "source": "atlas", **kw}
    return [
        row("dup"), row("dup"), row("dup#2"), row("lower", answer="c"),
        row("deep", image={"bytes": encoded(grey16(128 * 257)), "path": None}),
        row("trunc", image={"bytes": truncated_jpeg(), "path": None}),
        row("huge", image={"bytes": huge_png(), "path": None}),
        row("corrupt", image={"bytes": b"not an image", "path": None}),
        row("many", options=[f"o{n}" for n in range(27)]),
        row("inject", options=["Gland", "Vessel\nB. Nerve", "Nerve", "Duct"]),
        row("blank", question="  "), row("none", question=None), row("ok", dimension="D2"),
    ]


def write_with_datasets(path: Path, rows: list[dict[str, Any]]) -> None:
    text = datasets.Value("string")
    features = datasets.Features({"id": text, "image": datasets.Image(), "question": text,
                                  "options": datasets.List(text), "answer": text, "dimension": text, "source": text})
    datasets.Dataset.from_list(rows, features=features).to_parquet(str(path))


def write_with_pyarrow(path: Path, rows: list[dict[str, Any]]) -> None:
    """As pandas/pyarrow write it: the image a plain {bytes, path} struct, no Hugging Face metadata."""
    table = pa.Table.from_pylist(rows, schema=pa.schema([
        ("id", pa.string()), ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
        ("question", pa.string()), ("options", pa.list_(pa.string())), ("answer", pa.string()),
        ("dimension", pa.string()), ("source", pa.string())]))
    pq.write_table(table, path)
    assert b"huggingface" not in (pq.read_schema(path).metadata or {})




def records(out: Path, task: str) -> list[dict[str, Any]]:
    """The score records of the sample log (every metric of a document holds the same record)."""
    log = next(out.rglob(f"*_{task}.jsonl"))
    return [json.loads(line)["pathbind"] for line in log.read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.parametrize("write", [write_with_datasets, write_with_pyarrow])
def test_every_bad_row_is_evaluated_or_dropped_with_its_reason_through_lmms_eval(tmp_path, write):
    """pathbind_vqa and its ablations from a PATHBIND_DATA copy: every row is evaluated or, when its data is at
    fault, dropped from every condition and counted by reason (never charged to the model as invalid); no item is
    lost to a repeated id, no swap shows a dropped image, and peak memory stays under 4 GB."""
    rows = bad_rows()
    (tmp_path / "data" / "pathbind_vqa").mkdir(parents=True)
    write(tmp_path / "data" / "pathbind_vqa" / "test.parquet", rows)
    result = lmms_eval(tmp_path, "pathbind_blind", "pathbind_vqa,pathbind_vqa_ablation",
                       launcher=measured(tmp_path, [str(BIN / "lmms_eval")]),
                       env={"PATHBIND_DATA": str(tmp_path / "data")})
    assert int((tmp_path / "maxrss").read_text()) * 1024 < 4 * 2**30
    ids = {"dup", "dup#3", "dup#2", "lower", "deep", "inject", "ok"}
    dropped = {"unreadable image": 2, "image too large": 1, "field 'question' is empty": 1,
               "field 'question' is missing": 1, "field 'options' has more options than the 26 letters A-Z": 1}
    for task, conditions in (("pathbind_vqa", ("image", "text")), ("pathbind_vqa_ablation", ABLATIONS)):
        assert metric(result, task, "accounting") == {"rows": len(rows), "evaluated": len(ids), "dropped": dropped}
        logged = records(result["out"], task)
        # No swap onto an item's own image: "ok" (alone in D2) has no swap_same, and the five D1 items on its
        # image have no swap_cross.
        unswapped = 6 if task == "pathbind_vqa_ablation" else 0
        assert {r["id"] for r in logged} == ids and len(logged) == len(ids) * len(conditions) - unswapped
        image = [r for r in logged if r["condition"] == "image"]
        assert metric(result, task, "acc_image") == pytest.approx(100 * np.mean([r["correct"] for r in image]))
        assert all(r["valid"] for r in image) and metric(result, task, "invalid_rate") == 0
    swaps = [r for r in records(result["out"], "pathbind_vqa_ablation") if r["condition"].startswith("swap_")]
    assert swaps and {r["image_from"] for r in swaps} <= ids
    assert all(r["cluster_from"] != r["cluster"] for r in swaps)
