"""``pathbind audit-duplicates``: test images that are near-duplicates of training images, by perceptual hashing."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathbind.text_table import format_table
from pathbind_analysis.audit.leakage.inventory import InventoryError
from pathbind_analysis.json_report import write_json_report

if TYPE_CHECKING:
    from PIL import Image

    from pathbind_analysis.audit.duplicates.hashing import Hashes
    from pathbind_analysis.audit.duplicates.matching import Matches, Pair
    from pathbind_analysis.audit.duplicates.sources import ImageSource

# Tuned on planted copies of 40 synthetic tissue tiles (README): the worst copy (a 10% crop anywhere, resized 0.75x,
# JPEG q75) lies at (12, 11) from its tile's closest window, the closest pair of different tiles at (18, 18).
PHASH_THRESHOLD = 12
DHASH_THRESHOLD = 12
SOURCE_HELP = ("[NAME=]PATH: a folder (searched recursively for .png .jpg .jpeg .tif .tiff .bmp .webp .gif), an "
               "image, a text list of image paths (one per line, relative to the list's folder) or a .parquet file "
               "as PATH[:image_column[,id_column]] (found when omitted: an HF datasets Image column {bytes, path}, "
               "a binary column, or paths in a column named image or image_path); NAME (default: the file or "
               "folder name) labels per-source counts; repeat a NAME to merge inputs")


def add_duplicates_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "audit-duplicates", help="test images that are near-duplicates of training images (perceptual hashes)",
        description="Content-level leakage that barcodes miss: every test image whose pHash AND dHash (64 bits each, "
                    "imagehash) lie within the thresholds of a training image's, so that re-encoded (JPEG), resized "
                    "and lightly cropped copies are found. Reports the pairs, rho_image (share of assessed test "
                    "images with a near-duplicate in training) per test source and per training x test source, and "
                    "every unreadable file with its reason: an unreadable test image is not assessed (outside "
                    "rho_image's denominator, counted apart), an unreadable training image makes rho_image a lower "
                    "bound. Images are decoded as models are shown them (16-bit by bit depth, greyscale and RGBA "
                    "to RGB). Each training image is also hashed in 18 crop windows (90% and 95% of each side), "
                    "so a test image cut from it by up to 10% of each side is found. Training hashes go into a "
                    "multi-index hash table: the pairs are exactly a full scan's, several times faster at 10^6 "
                    "training images.")
    parser.add_argument("--train", action="append", required=True, metavar="[NAME=]PATH", help=SOURCE_HELP)
    parser.add_argument("--test", action="append", required=True, metavar="[NAME=]PATH", help=SOURCE_HELP)
    parser.add_argument("--json", type=Path, required=True, metavar="OUT", help="machine-readable report")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="also write DIR/duplicates.md (tables) and DIR/contact_sheet.png (closest pairs)")
    parser.add_argument("--phash-threshold", type=int, default=PHASH_THRESHOLD, metavar="BITS",
                        help=f"largest pHash Hamming distance of a near-duplicate, 0-64 (default {PHASH_THRESHOLD}: "
                             "above every JPEG q50-95, 0.5-2x resize and 10%% crop of synthetic tissue tiles, below "
                             "every pair of different tiles; see benchmarks/duplicates.py)")
    parser.add_argument("--dhash-threshold", type=int, default=DHASH_THRESHOLD, metavar="BITS",
                        help=f"largest dHash Hamming distance of a near-duplicate, 0-64 (default {DHASH_THRESHOLD})")
    parser.add_argument("--closest", type=int, default=24, metavar="N",
                        help="pairs on the contact sheet and in the markdown table, closest first (default 24)")
    parser.add_argument("--max-pairs", type=int, default=1000, metavar="N",
                        help="pairs listed in the JSON, closest first (default 1000); every pair is counted, and "
                             "each test image lists how many training images lie within the thresholds")
    parser.add_argument("--nearest", type=int, default=3, metavar="N",
                        help="training images listed per duplicated test image, closest first (default 3)")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="processes hashing images (default: the CPU count, at most 4; 1 hashes in this process)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except InventoryError as exc:
        print(f"pathbind audit-duplicates: error: {exc}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    from pathbind_analysis.audit.duplicates.hashing import default_workers, hash_side
    from pathbind_analysis.audit.duplicates.matching import near_duplicates, overlap
    from pathbind_analysis.audit.duplicates.sources import DuplicateError, check_source, parse_image_source
    from pathbind_analysis.json_report import output_problem
    from pathbind_tasks.common.images import max_pixels

    for option in ("phash_threshold", "dhash_threshold"):
        if not 0 <= getattr(args, option) <= 64:
            raise DuplicateError(f"--{option.replace('_', '-')} must be between 0 and 64 bits")
    if min(args.closest, args.max_pairs, args.nearest) < 0 or (args.workers is not None and args.workers < 1):
        raise DuplicateError("--closest, --max-pairs and --nearest must be 0 or more and --workers 1 or more")
    for problem in (output_problem(args.json, "--json"), output_problem(args.out, "--out", folder=True)):
        if problem:  # before the long hashing pass, not after it
            raise DuplicateError(problem)
    try:
        max_pixels()
    except ValueError as exc:
        raise DuplicateError(str(exc)) from None
    train_sources = [parse_image_source(text, "--train") for text in args.train]
    test_sources = [parse_image_source(text, "--test") for text in args.test]
    for option, source in [("--train", s) for s in train_sources] + [("--test", s) for s in test_sources]:
        check_source(source, option)  # every input's errors before the long hashing pass
    workers = args.workers or default_workers()
    train = hash_side(train_sources, "training", workers, crops=True)
    test = hash_side(test_sources, "test", workers)
    train_names, test_names = _names(train_sources), _names(test_sources)
    matches = near_duplicates(train, test, args.phash_threshold, args.dhash_threshold, train_names, test_names,
                              max_pairs=args.max_pairs, nearest=args.nearest)
    per_test, matrix = overlap(matches, test, train_names, test_names)
    report = _report(args, matches, train, test, per_test, matrix, train_names, test_names)
    if args.out is not None:
        report["outputs"] = _write_outputs(args, report, matches.listed, (train_sources, train), (test_sources, test))
    write_json_report(args.json, report)
    _print_summary(report, args.json)
    return _measured(report, args.json)


def _measured(report: dict[str, Any], json_path: Path) -> int:
    """1 with an error line when nothing was measured: no test image read, or no training image to compare with."""
    if report["n_test_assessed"] and not report["n_train_hashed"]:
        problem = "no training image could be read: there was nothing to compare the test images with"
    elif not report["n_test_assessed"]:
        problem = "no test image could be read: nothing was assessed"
    else:
        return 0
    print(f"pathbind audit-duplicates: error: {problem} (reasons under 'unreadable' in {json_path})",
          file=sys.stderr)
    return 1


def _names(sources: list[ImageSource]) -> list[str]:
    return list(dict.fromkeys(source.name for source in sources))


def _report(args: argparse.Namespace, matches: Matches, train: Hashes, test: Hashes, per_test: list[dict[str, Any]],
            matrix: list[dict[str, Any]], train_names: list[str], test_names: list[str]) -> dict[str, Any]:
    from importlib.metadata import version

    from pathbind_analysis.audit.duplicates.hashing import WINDOWS, window_name

    unreadable = [{"side": side, **entry} for side, hashes in (("train", train), ("test", test))
                  for entry in hashes.unreadable]
    assessed = sum(row["n_assessed"] for row in per_test)
    duplicated = sum(row["n_duplicated"] for row in per_test)
    measured = assessed and train.ids  # against no training image, 0% would be no finding but no measurement
    return {
        "rule": "near-duplicate: pHash distance <= thresholds.phash AND dHash distance <= thresholds.dhash",
        "thresholds": {"phash": args.phash_threshold, "dhash": args.dhash_threshold},
        "hashes": {"phash_bits": 64, "dhash_bits": 64, "library": f"imagehash {version('imagehash')}",
                   "train_windows": [window_name(index) for index in range(len(WINDOWS))]},
        "rho_image": duplicated / assessed if measured else float("nan"),
        "n_test_assessed": assessed, "n_test_duplicated": duplicated,
        "n_test_not_assessed": len(test.unreadable), "n_train_hashed": len(train.ids),
        "n_train_unreadable": len(train.unreadable),
        "per_test": per_test, "matrix": matrix,
        "train": _side_counts(train, train_names), "test": _side_counts(test, test_names),
        "notes": _notes(train, test),
        "n_pairs": matches.n_pairs, "max_pairs": args.max_pairs,
        "pairs": [pair.record(train, test) for pair in matches.listed],
        "duplicated_test_images": matches.per_image(train, test),
        "repeated": {side: {"n": hashes.n_repeated, "examples": hashes.repeated}
                     for side, hashes in (("train", train), ("test", test))},
        "unreadable": unreadable, "n_unreadable": len(unreadable), "outputs": {},
    }


def _side_counts(hashes: Hashes, names: list[str]) -> dict[str, dict[str, int]]:
    return {name: {"hashed": hashes.sources.count(name),
                   "unreadable": sum(entry["source"] == name for entry in hashes.unreadable)} for name in names}


def _notes(train: Hashes, test: Hashes) -> list[str]:
    notes = []
    if test.unreadable:
        notes.append(f"{len(test.unreadable):,} test image(s) unreadable: not assessed, outside rho_image's "
                     "denominator (listed under 'unreadable').")
    for side, hashes in (("test", test), ("training", train)):
        if hashes.n_repeated:
            notes.append(f"{hashes.n_repeated:,} {side} listing(s) name a file already listed on that side (another "
                         "spelling of its path, or another list or folder): hashed and counted once (examples "
                         "under 'repeated').")
    if train.unreadable:
        notes.append(f"{len(train.unreadable):,} training image(s) unreadable: they may hide near-duplicates, so "
                     "rho_image is a lower bound (listed under 'unreadable').")
    return notes


def _write_outputs(args: argparse.Namespace, report: dict[str, Any], pairs: list[Pair],
                   train: tuple[list[ImageSource], Hashes], test: tuple[list[ImageSource], Hashes]) -> dict[str, str]:
    from pathbind_analysis.audit.duplicates.hashing import window_name
    from pathbind_analysis.audit.duplicates.report import contact_sheet, markdown

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / "duplicates.md").write_text(markdown(report, args.closest), encoding="utf-8")
    closest = pairs[:args.closest]  # the listing is closest first
    train_images = _images(*train, {pair.train for pair in closest})
    test_images = _images(*test, {pair.test for pair in closest})
    sheet = [(test_images[pair.test], train_images[pair.train],
              f"test {test[1].sources[pair.test]}: {test[1].ids[pair.test]}",
              f"train {train[1].sources[pair.train]}: {train[1].ids[pair.train]} ({window_name(pair.window)}; "
              f"pHash {pair.phash}, dHash {pair.dhash})") for pair in closest]
    contact_sheet(sheet, out / "contact_sheet.png")
    return {"table": str(out / "duplicates.md"), "contact_sheet": str(out / "contact_sheet.png")}


def _images(sources: list[ImageSource], hashes: Hashes, wanted: set[int]) -> dict[int, Image.Image]:
    """The decoded images at these places among ``hashes``, read again from their sources."""
    from pathbind_analysis.audit.duplicates.sources import fetch_items
    from pathbind_tasks.common.images import rgb_image

    found: dict[int, Image.Image] = {}
    by_position = {hashes.positions[index]: index for index in wanted}
    first = 0
    for source, size in zip(sources, hashes.source_sizes, strict=True):
        local = {position - first for position in by_position if first <= position < first + size}
        for position, item in fetch_items(source, local).items():
            found[by_position[first + position]] = rgb_image(item.encoded())
        first += size
    return found


def _print_summary(report: dict[str, Any], json_path: Path) -> None:
    rows = [{"train": "(all)", **row} for row in report["per_test"]] + report["matrix"]
    print(format_table([{"train": r["train"], "test": r["test"], "assessed": r["n_assessed"],
                         "not_assessed": r["n_not_assessed"], "duplicated": r["n_duplicated"],
                         "rho_image_%": 100 * r["rho_image"]} for r in rows]))
    for note in report["notes"]:
        print(f"\nnote: {note}")
    written = ", ".join([str(json_path), *report["outputs"].values()])
    listed = f" ({len(report['pairs']):,} closest listed)" if len(report["pairs"]) < report["n_pairs"] else ""
    print(f"\n{report['n_pairs']:,} near-duplicate pair(s){listed}; wrote {written}")
