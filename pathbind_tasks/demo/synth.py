"""The demo's multiple-choice and yes/no VQA items on synthetic tiles, and their parquet files."""

from __future__ import annotations

import io
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from pathbind_tasks.demo.tissue import QUADRANTS, TileSpec, render_tile

LETTERS = "ABCD"


@dataclass(frozen=True)
class Draw:
    """A tile template whose nucleus count (and DAB-positive fraction) is drawn per item."""

    template: TileSpec
    count: tuple[int, int]
    dab: tuple[float, float] = (0.0, 0.0)

    def spec(self, rng: np.random.Generator) -> TileSpec:
        return replace(self.template, n_nuclei=int(rng.integers(self.count[0], self.count[1] + 1)),
                       dab_fraction=float(rng.uniform(*self.dab)))


@dataclass(frozen=True)
class QuestionFamily:
    """One question: its wording, its answer classes (option text or yes/no) and the tiles for each."""

    dimension: str
    question: str
    labels: tuple[str, ...]
    classes: tuple[tuple[Draw, ...], ...]  # per class, tile variants; each item draws one


_FIBROBLASTS = TileSpec(radius=4.8, elongation=3.5)  # spindle nuclei in collagen, area ~72 px^2
_LYMPHOCYTES = TileSpec("inflamed_stroma", radius=3.4)  # small dark round nuclei, area ~36 px^2
_FAT = TileSpec("adipose", radius=3.5, elongation=3.0)
_CARCINOMA = TileSpec("neoplasm", radius=5.5, elongation=1.1, atypia=1.0)  # ~4x nuclear area, hyperchromatic
_IHC = TileSpec(radius=5.0, ihc=True)


def _lesions(count: tuple[int, int]) -> tuple[Draw, ...]:
    return tuple(Draw(replace(_FIBROBLASTS, lesion_quadrant=q), count) for q in range(len(QUADRANTS)))


MCQ_FAMILIES = (
    QuestionFamily("D1", "Which tissue type predominates in this field?",
                   ("adipose tissue", "lymphoid tissue", "fibrous stroma", "epithelial nests"),
                   ((Draw(_FAT, (5, 9)),), (Draw(replace(_LYMPHOCYTES, tissue="lymphoid"), (240, 290)),),
                    (Draw(_FIBROBLASTS, (18, 30)),),
                    (Draw(TileSpec("epithelial_nests", radius=5.5, elongation=1.15), (50, 60)),))),
    QuestionFamily("D2", "Which description best fits the nuclei in this field?",
                   ("small, round, uniform nuclei", "elongated, spindle-shaped nuclei",
                    "medium-sized, round, uniform nuclei", "large, pleomorphic, hyperchromatic nuclei"),
                   ((Draw(TileSpec(radius=3.5), (50, 70)),), (Draw(_FIBROBLASTS, (30, 45)),),
                    (Draw(TileSpec(radius=6.0, elongation=1.1), (35, 50)),),
                    (Draw(TileSpec(radius=6.0, elongation=1.1, atypia=1.0), (25, 35)),))),
    QuestionFamily("D3", "How cellular is the stroma in this field, that is, how many nuclei does the field contain?",
                   ("fewer than 30 nuclei (paucicellular)", "30 to 90 nuclei (mildly cellular)",
                    "90 to 180 nuclei (moderately cellular)", "more than 180 nuclei (highly cellular)"),
                   tuple((Draw(TileSpec(radius=4.0), count),)
                         for count in ((12, 20), (45, 70), (115, 150), (220, 255)))),
    QuestionFamily("D4", "In which quadrant of the image is the cluster of atypical nuclei located?",
                   QUADRANTS, tuple((lesion,) for lesion in _lesions((18, 28)))),
    QuestionFamily("D5", "Which diagnosis is most consistent with this field?",
                   ("normal fibrous stroma", "chronic inflammation", "malignant neoplasm", "fatty tissue (lipomatous)"),
                   ((Draw(_FIBROBLASTS, (18, 30)),), (Draw(_LYMPHOCYTES, (200, 250)),), (Draw(_CARCINOMA, (35, 45)),),
                    (Draw(_FAT, (5, 9)),))),
    QuestionFamily("D6", "What proportion of the nuclei are DAB-positive (brown)?",
                   ("under 5%", "5% to 25%", "25% to 50%", "over 50%"),
                   tuple((Draw(_IHC, (55, 65), dab),)
                         for dab in ((0.0, 0.02), (0.12, 0.18), (0.33, 0.42), (0.62, 0.78)))),
)

YES_NO_FAMILIES = (
    QuestionFamily("D6", "Are there DAB-positive (brown) nuclei in this field?", ("yes", "no"),
                   ((Draw(_IHC, (45, 60), (0.2, 0.5)),), (Draw(_IHC, (45, 60)),))),
    QuestionFamily("D2", "Is there a cluster of atypical nuclei in this field?", ("yes", "no"),
                   (_lesions((18, 28)), (Draw(_FIBROBLASTS, (18, 28)), Draw(_LYMPHOCYTES, (120, 200))))),
)


def _balanced(rng: np.random.Generator, n: int, k: int, start: int = 0) -> np.ndarray:
    """n labels in 0..k-1 whose counts differ by at most one, in random order.

    ``start`` rotates which labels get the remainder, so consecutive calls stay balanced overall too.
    """
    return rng.permutation((np.arange(n) + start) % k)


def _row(item_id: str, family: QuestionFamily, cls: int, rng: np.random.Generator) -> dict:
    """Render one item of ``family`` showing class ``cls``, on a tile generator seeded from ``rng``."""
    tile_rng = np.random.default_rng(rng.integers(2**63))
    variants = family.classes[cls]
    rgb, truth = render_tile(variants[tile_rng.integers(len(variants))].spec(tile_rng), tile_rng)
    return {
        "id": item_id, "image": Image.fromarray(rgb), "question": family.question, "dimension": family.dimension,
        "source": "synthetic", "width": rgb.shape[1], "height": rgb.shape[0], "boxes": truth["lesion_boxes"],
        "nuclei_count": truth["nuclei_count"], "dab_fraction": truth["dab_fraction"], "tissue": truth["tissue"],
        "dab_centres": truth["centres"][truth["dab_positive"]].tolist(),  # [x, y] per DAB-positive nucleus; not written
    }


def demo_items(n_per_dimension: int = 10, n_yes_no: int = 24, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """(multiple-choice rows, yes/no rows); classes and answer letters balanced, all from one seed."""
    rng = np.random.default_rng(seed)
    mcq: list[dict] = []
    for f, family in enumerate(MCQ_FAMILIES):
        start = f * n_per_dimension
        classes, letters = _balanced(rng, n_per_dimension, 4, start), _balanced(rng, n_per_dimension, 4, start)
        for i, (cls, letter) in enumerate(zip(classes, letters, strict=True)):
            order = list(rng.permutation([c for c in range(4) if c != cls]))
            order.insert(int(letter), int(cls))
            row = _row(f"demo-{family.dimension}-{i:03d}", family, int(cls), rng)
            row.update(options=[family.labels[c] for c in order], answer=LETTERS[letter])
            mcq.append(row)
    yes_no: list[dict] = []
    per_family = np.diff(np.linspace(0, n_yes_no, len(YES_NO_FAMILIES) + 1).round().astype(int))
    for family, count in zip(YES_NO_FAMILIES, per_family, strict=True):
        for cls in _balanced(rng, int(count), 2, start=len(yes_no)):
            row = _row(f"demo-YN-{len(yes_no):03d}", family, int(cls), rng)
            row["answer"] = family.labels[cls]
            yes_no.append(row)
    return mcq, yes_no


# ---------------------------------------------------------------- parquet


def _features(with_options: bool) -> Any:
    from datasets import Features, List, Value
    from datasets import Image as ImageFeature

    columns: dict[str, Any] = {"id": Value("string"), "image": ImageFeature(), "question": Value("string")}
    if with_options:
        columns["options"] = List(Value("string"))
    columns.update(
        answer=Value("string"), dimension=Value("string"), source=Value("string"), width=Value("int32"),
        height=Value("int32"), boxes=List(List(Value("float32"))), nuclei_count=Value("int32"),
        dab_fraction=Value("float32"), tissue=Value("string"),
    )
    return Features(columns)


def _jpeg(image: Image.Image, quality: int = 90) -> dict[str, Any]:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality)
    return {"bytes": buffer.getvalue(), "path": None}


PACKAGED_FILES = {"vqa": "vqa.parquet", "yesno": "yesno.parquet"}


def write_demo_data(out_dir: str | Path, n_per_dimension: int = 10, n_yes_no: int = 24, seed: int = 0,
                    file_names: dict[str, str] = PACKAGED_FILES) -> dict[str, Path]:
    """Write the MCQ ("vqa") and yes/no ("yesno") sets as parquet with JPEG images under out_dir, at the
    relative paths ``file_names`` gives; returns {"vqa": path, "yesno": path}."""
    import datasets

    mcq, yes_no = demo_items(n_per_dimension, n_yes_no, seed)
    paths = {}
    quiet = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()  # the writer prints nothing
    try:
        for name, rows in (("vqa", mcq), ("yesno", yes_no)):
            if not rows:  # --n-yes-no 0: no file, rather than an empty parquet lmms-eval cannot load
                continue
            features = _features(with_options=name == "vqa")
            records = [{key: _jpeg(row[key]) if key == "image" else row[key] for key in features} for row in rows]
            paths[name] = Path(out_dir) / file_names[name]
            paths[name].parent.mkdir(parents=True, exist_ok=True)
            datasets.Dataset.from_list(records, features=features).to_parquet(paths[name])
    finally:
        if not quiet:
            datasets.enable_progress_bars()
    return paths


__all__ = ["MCQ_FAMILIES", "YES_NO_FAMILIES", "Draw", "QuestionFamily", "demo_items", "write_demo_data"]
