"""The report as data (sections of tables, figures, notes) and its renderings: Markdown and self-contained HTML, and
each table as CSV and LaTeX (booktabs)."""

from __future__ import annotations

import base64
import csv
import html
import re
from dataclasses import dataclass, field
from pathlib import Path

BEST = "best"  # bold: the best value of a column (image-conditioned rows)
BEST_TEXT = "best_text"  # underlined (Markdown: italic): the best text-only value of a column (paper Table 2)
# The leakage audit's Table 1 colours: red above 80% overlap, orange from 20% to 80%, white where audited clean (0).
LEAK_HIGH, LEAK_MID, LEAK_CLEAN = "leak_high", "leak_mid", "leak_clean"


@dataclass(frozen=True)
class Cell:
    text: str
    mark: str = ""


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[Cell]]


@dataclass(frozen=True)
class Figure:
    path: Path
    caption: str


@dataclass(frozen=True)
class Note:
    text: str


Block = Table | Figure | Note


@dataclass
class Section:
    title: str
    intro: str = ""
    blocks: list[Block] = field(default_factory=list)


def write_markdown(sections: list[Section], title: str, path: Path) -> None:
    lines = [f"# {title}", ""]
    for section in sections:
        lines += [f"## {section.title}", ""] + ([section.intro, ""] if section.intro else [])
        for block in section.blocks:
            lines += [*_markdown_block(block, path.parent), ""]
    path.write_text("\n".join(lines), encoding="utf-8")


def _markdown_block(block: Block, folder: Path) -> list[str]:
    if isinstance(block, Note):
        return [f"> **Note.** {block.text}"]
    if isinstance(block, Figure):
        return [f"![{block.caption}]({block.path.relative_to(folder).as_posix()})", "", f"*{block.caption}*"]
    marked = [[_markdown_cell(cell) for cell in row] for row in block.rows]
    columns = [column.replace("|", "\\|") for column in block.columns]
    return [f"**{block.title}**", "", "| " + " | ".join(columns) + " |",
            "| " + " | ".join("---" for _ in block.columns) + " |", *("| " + " | ".join(row) + " |" for row in marked)]


def _markdown_cell(cell: Cell) -> str:
    text = cell.text.replace("|", "\\|")
    return {BEST: f"**{text}**", BEST_TEXT: f"_{text}_", LEAK_HIGH: f"🟥 {text}", LEAK_MID: f"🟧 {text}",
            LEAK_CLEAN: f"⬜ {text}"}.get(cell.mark, text)


STYLE = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:.9em}th,td{border:1px solid #ccc;padding:.25em .6em;
text-align:right}th:first-child,td:first-child{text-align:left}th{background:#f3f3f3}td.best{font-weight:bold}
td.best_text{text-decoration:underline}.note{background:#fff7e0;border-left:4px solid #e0a800;padding:.4em .8em}
figure{margin:1em 0}figure img{max-width:100%}figcaption{font-size:.9em;color:#555}
td.leak_high{background:#f4a6a6}td.leak_mid{background:#fbd38d}td.leak_clean{background:#fff}"""


def write_html(sections: list[Section], title: str, path: Path) -> None:
    """One file, figures embedded as base64 data URIs: it opens anywhere with no network and no folder beside it."""
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>"]
    for section in sections:
        parts.append(f"<h2>{html.escape(section.title)}</h2>")
        if section.intro:
            parts.append(f"<p>{html.escape(section.intro)}</p>")
        parts += [_html_block(block) for block in section.blocks]
    parts.append("</body></html>")
    path.write_text("\n".join(parts), encoding="utf-8")


def _html_block(block: Block) -> str:
    if isinstance(block, Note):
        return f"<p class='note'>{html.escape(block.text)}</p>"
    if isinstance(block, Figure):
        data = base64.b64encode(block.path.read_bytes()).decode("ascii")
        return (f"<figure><img alt='{html.escape(block.caption)}' src='data:image/png;base64,{data}'>"
                f"<figcaption>{html.escape(block.caption)}</figcaption></figure>")
    head = "".join(f"<th>{html.escape(column)}</th>" for column in block.columns)
    body = "".join("<tr>" + "".join(f"<td class='{cell.mark}'>{html.escape(cell.text)}</td>" for cell in row) + "</tr>"
                   for row in block.rows)
    return f"<p><b>{html.escape(block.title)}</b></p><table><tr>{head}</tr>{body}</table>"


def write_tables(sections: list[Section], folder: Path) -> list[Path]:
    """Each table as ``NN_title.csv`` (plain cells) and ``NN_title.tex`` (booktabs; bold and underline as the
    paper marks them), numbered in the report's order; returns the files."""
    folder.mkdir(parents=True, exist_ok=True)
    for stale in [*folder.glob("*.csv"), *folder.glob("*.tex")]:  # a reused --out: only this report's tables
        stale.unlink()
    written = []
    tables = [block for section in sections for block in section.blocks if isinstance(block, Table)]
    for number, table in enumerate(tables, start=1):
        stem = folder / f"{number:02d}_{re.sub(r'[^a-z0-9]+', '_', table.title.lower()).strip('_')[:60]}"
        with stem.with_suffix(".csv").open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(table.columns)
            writer.writerows([cell.text for cell in row] for row in table.rows)
        stem.with_suffix(".tex").write_text(_latex(table), encoding="utf-8")
        written += [stem.with_suffix(".csv"), stem.with_suffix(".tex")]
    return written


LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                 "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                 # the report's symbols, for pdflatex without Unicode input
                 "↑": r"$\uparrow$", "↓": r"$\downarrow$", "–": "--", "−": "$-$", "σ": r"$\sigma$",
                 "ρ": r"$\rho$", "Δ": r"$\Delta$", "≥": r"$\geq$", "≤": r"$\leq$", "×": r"$\times$",
                 "±": r"$\pm$"}


def _latex(table: Table) -> str:
    """A booktabs tabular in a table float with the title as its caption (needs ``\\usepackage{booktabs}``)."""
    def row(cells: list[str]) -> str:
        return " & ".join(cells) + r" \\"

    marked = [[{BEST: r"\textbf{%s}", BEST_TEXT: r"\underline{%s}"}.get(cell.mark, "%s") % _tex(cell.text)
               for cell in cells] for cells in table.rows]
    return "\n".join([r"\begin{table}", r"\centering", rf"\caption{{{_tex(table.title)}}}",
                      rf"\begin{{tabular}}{{l{'r' * (len(table.columns) - 1)}}}", r"\toprule",
                      row([_tex(column) for column in table.columns]), r"\midrule", *map(row, marked),
                      r"\bottomrule", r"\end{tabular}", r"\end{table}", ""])


def _tex(text: str) -> str:
    return "".join(LATEX_SPECIAL.get(char, char) for char in text)
