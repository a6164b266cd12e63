"""The duplicate audit's markdown tables and the contact sheet of its closest pairs, for eyeballing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

THUMB = 160  # px: enough to see tissue architecture side by side
CAPTION = 34  # px under each pair: two lines of ids and distances


def markdown(report: dict[str, Any], max_pairs: int) -> str:
    """The per-source overlap table, then the closest pairs (up to ``max_pairs``), then the unreadable files."""
    thresholds = report["thresholds"]
    lines = ["# Near-duplicate images of test sets in training sets", "",
             f"A test image is a near-duplicate when a training image lies within pHash distance "
             f"{thresholds['phash']} and dHash distance {thresholds['dhash']} (64-bit hashes).", "",
             "| train | test | test images assessed | not assessed (unreadable) | with a near-duplicate | rho_image % "
             "| pairs |", "|---|---|---:|---:|---:|---:|---:|"]
    for row in report["matrix"]:
        rho = "n/a" if row["rho_image"] != row["rho_image"] else f"{100 * row['rho_image']:.1f}"
        lines.append(f"| {row['train']} | {row['test']} | {row['n_assessed']} | {row['n_not_assessed']} | "
                     f"{row['n_duplicated']} | {rho} | {row['n_pairs']} |")
    lines += ["", *(f"Note: {note}" for note in report["notes"])]
    closest = report["pairs"][:max_pairs]  # listed closest first
    lines += ["", f"## Closest pairs ({len(closest)} of {report['n_pairs']})", "",
              "| test source | test image | train source | train image | pHash | dHash | matched on |",
              "|---|---|---|---|---:|---:|---|"]
    lines += [f"| {p['test_source']} | {_cell(p['test'])} | {p['train_source']} | {_cell(p['train'])} | "
              f"{p['distance']['phash']} | {p['distance']['dhash']} | {p['train_window']} |" for p in closest]
    if report["unreadable"]:
        lines += ["", f"## Unreadable files ({len(report['unreadable'])})", "", "| side | source | file | reason |",
                  "|---|---|---|---|"]
        lines += [f"| {u['side']} | {u['source']} | {_cell(u['id'])} | {_cell(u['reason'])} |"
                  for u in report["unreadable"]]
    return "\n".join(lines) + "\n"


def contact_sheet(pairs: list[tuple[Image.Image, Image.Image, str, str]], path: Path) -> None:
    """Test image left, training image right, one pair per row with its ids and distances underneath."""
    width, row_height = 2 * THUMB + 30, THUMB + CAPTION
    sheet = Image.new("RGB", (width, max(1, len(pairs)) * row_height + 10), "white")
    draw = ImageDraw.Draw(sheet)
    if not pairs:
        draw.text((10, THUMB // 2), "no near-duplicate pairs", fill="black")
    for row, (test, train, top, bottom) in enumerate(pairs):
        y = 10 + row * row_height
        for column, image in enumerate((test, train)):
            thumb = image.copy()
            thumb.thumbnail((THUMB, THUMB))
            sheet.paste(thumb, (10 + column * (THUMB + 10), y))
        draw.text((10, y + THUMB + 3), top, fill="black")
        draw.text((10, y + THUMB + 17), bottom, fill="dimgray")
    sheet.save(path)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")
