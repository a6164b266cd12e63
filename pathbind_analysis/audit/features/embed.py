"""``pathbind embed``: mean-pooled vision-tower embeddings of an image folder with a ``pathbind_hf`` checkpoint.

The checkpoint is run by the image encoder the models plugin offers (the ``pathbind_image_encoders`` hook).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathbind import get_plugin_manager
from pathbind_analysis.json_report import output_problem
from pathbind_metrics.tcga import slide_key

if TYPE_CHECKING:  # torch is imported when the command runs: `pathbind --help` stays fast
    import numpy as np

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp")
FEATURES = {"vision": "the vision tower's output tokens (before any projector or token merging)",
            "projected": "the image tokens the language model reads (after the projector)"}
PROGRESS_SECONDS = 10
ENCODER = "pathbind_hf"  # the image encoder of pathbind_hf checkpoints


class EmbedError(ValueError):
    """An input the command cannot embed; the message names the folder, file or option."""


def add_embed_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "embed", help="mean-pooled vision-tower embeddings of an image folder, for `pathbind audit-features`",
        description="Run a pathbind_hf checkpoint's vision tower (the encoder its answers depend on) on every image "
                    "of IMAGES_DIR and its subfolders, one image per forward through the checkpoint's own image "
                    "processor, and write one mean-pooled embedding per image: a Parquet file of 'id' (the file "
                    "stem, e.g. a TCGA barcode) and 'embedding' that `pathbind audit-features` reads as it is.")
    parser.add_argument("images", type=Path, metavar="IMAGES_DIR",
                        help=f"folder of images ({', '.join(IMAGE_SUFFIXES)}); file stems must be unique")
    parser.add_argument("--model", required=True, metavar="PATH_OR_ID",
                        help="a pathbind_hf checkpoint: hub id or folder (see `pathbind models`)")
    parser.add_argument("--out", type=Path, required=True, metavar="EMB.parquet", help="Parquet file to write")
    parser.add_argument("--features", choices=sorted(FEATURES), default="vision",
                        help="what is mean-pooled: " + "; ".join(f"{k}: {v}" for k, v in FEATURES.items())
                             + " (default vision)")
    parser.add_argument("--dtype", default="auto", help="float32, bfloat16, float16 or auto (the checkpoint's own)")
    parser.add_argument("--device", help="cpu, cuda, cuda:1, … (default: cuda when available, else cpu)")
    parser.add_argument("--processor-option", action="append", default=[], metavar="KEY=VALUE",
                        help="image processor option as pathbind_hf's model_args take it, e.g. max_pixels=1003520 "
                             "(repeatable); the effective image limits are stored in the file's metadata")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        options = dict(_key_value(text) for text in args.processor_option)
        if problem := output_problem(args.out, "--out"):  # before the model loads and every image is embedded
            raise EmbedError(problem)
        from pathbind_tasks.common.images import max_pixels

        max_pixels()  # a bad PATHBIND_MAX_IMAGE_PIXELS: now, not at the first image
        images = find_images(args.images)
        encoder = load_encoder(args.model, args.features, args.dtype, args.device, options)
        vectors = embed_all(encoder, images)
        metadata = {**encoder.metadata(), "pooling": f"mean over {FEATURES[args.features]}"}
        write_parquet(args.out, [path.stem for path in images], vectors, metadata)
    except (ValueError, OSError) as exc:  # EmbedError, an unsupported checkpoint, an unknown option, a missing file
        print(f"pathbind embed: error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {len(images):,} {vectors.shape[1]}-dimensional embeddings to {args.out}")
    print(f"audit them with: pathbind audit-features {args.out} --json features.json --encoder {args.model}")
    return 0


def find_images(folder: Path) -> list[Path]:
    """The images under ``folder`` (sorted); EmbedError for none, or two with one stem (their ids would clash)."""
    if not folder.is_dir():
        raise EmbedError(f"no such folder: {folder}")
    images = sorted(p for p in folder.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
    if not images:
        raise EmbedError(f"{folder}: no images ({', '.join(IMAGE_SUFFIXES)})")
    seen: dict[str, Path] = {}
    for path in images:  # "Slide_7.png" and "slide_7.tif" would be one slide to audit-features: refused by name
        key = slide_key(path.name)
        if key in seen:
            raise EmbedError(f"{seen[key]} and {path} name the same slide {path.stem!r} (ids are file stems, "
                             "compared without case)")
        seen[key] = path
    return images


def load_encoder(pretrained: str, features: str, dtype: str, device: str | None, options: dict[str, Any]) -> Any:
    """The image encoder of ``pathbind_hf`` checkpoints, as the models plugin offers it (torch loads here)."""
    offered = get_plugin_manager().image_encoders()
    if ENCODER not in offered:
        raise EmbedError(f"no PathBind plugin offers the image encoder {ENCODER!r} (pathbind_models does); "
                         f"offered: {', '.join(sorted(offered)) or 'none'}")
    return offered[ENCODER].value(pretrained, features, dtype, device, options)


def embed_all(encoder: Any, images: list[Path]) -> np.ndarray:
    """One vector per image, each decoded as every task shows images (16-bit by bit depth, never white); a bad file
    stops the run."""
    import numpy as np

    from pathbind_tasks.common.images import image_problem, max_pixels, rgb_image

    vectors, started, reported = [], time.monotonic(), time.monotonic()
    for done, path in enumerate(images, 1):
        if problem := image_problem({"bytes": None, "path": str(path)}, max_pixels()):
            raise EmbedError(f"{path}: {problem}")
        vectors.append(encoder.embed(rgb_image(str(path))))
        if time.monotonic() - reported > PROGRESS_SECONDS or done == len(images):
            rate = done / max(time.monotonic() - started, 1e-9)
            print(f"embed: {done:,}/{len(images):,} images ({rate:.1f}/s)", file=sys.stderr, flush=True)
            reported = time.monotonic()
    return np.stack(vectors)


def write_parquet(path: Path, ids: list[str], vectors: np.ndarray, metadata: dict[str, Any]) -> None:
    """``id`` and ``embedding`` (list of float32) columns; how they were made under the schema key ``pathbind``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    embedding = pa.array(list(vectors.astype("float32")), type=pa.list_(pa.float32()))
    table = pa.table({"id": pa.array(ids, type=pa.string()), "embedding": embedding})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table.replace_schema_metadata({"pathbind": json.dumps(metadata)}), path)


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise EmbedError(f"--processor-option {text!r}: expected KEY=VALUE")
    return key, value
