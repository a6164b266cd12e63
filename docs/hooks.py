"""MkDocs hook: the CLI reference page (cli.md) is written from the commands' own argument parsers at each build,
so it lists exactly the commands and options of this checkout. They are imported from the checkout itself, not an
installed PathBind: the docs extra (``pip install '.[docs]'``, or its packages alone) carries everything building
the parsers imports, without torch or lmms-eval."""

from __future__ import annotations

import argparse
import os
import re
import sys
import tomllib
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

MARKER = "<!-- generated: pathbind commands -->"
WIDTH = "100"  # argparse wraps help at $COLUMNS: a fixed width keeps the page the same on every machine
ROOT = Path(__file__).resolve().parents[1]


PRE = re.compile(r"(<pre\b.*?</pre>)", re.S)
INLINE_CODE = re.compile(r"<code>(.*?)</code>", re.S)


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, pathbind_reference())


def on_page_content(html: str, **_: Any) -> str:
    """Inline code breaks only at its spaces: each word in a ``pb-word`` span (css/pathbind.css keeps it whole), so a
    narrow column never splits a flag after its dashes (``--`` / ``json``) or a metric name (``invalid_rat`` / ``e``).
    Code blocks are left as they are (they scroll)."""
    return "".join(part if part.startswith("<pre") else INLINE_CODE.sub(_whole_words, part)
                   for part in PRE.split(html))


def _whole_words(code: re.Match[str]) -> str:
    return "<code>" + re.sub(r"\S+", lambda word: f'<span class="pb-word">{word[0]}</span>', code[1]) + "</code>"


def pathbind_reference() -> str:
    """Each ``pathbind`` command's ``--help``, PathBind's own plugins' commands included (not third parties')."""
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    sys.path.insert(0, str(ROOT))
    try:
        from pathbind.cli import build_parser
        from pathbind.plugins import make_plugin_manager

        parser = build_parser(make_plugin_manager(autoload=False, plugins=_own_plugins()))
        return "\n".join(f"## `{name}`\n\n```text\n{command.format_help()}```\n" for name, command in _commands(parser))
    finally:
        sys.path.remove(str(ROOT))
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous


def _own_plugins() -> dict[str, Any]:
    """PathBind's own plugins, as pyproject.toml registers them (group ``pathbind``), imported from the checkout."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {name: EntryPoint(name, value, "pathbind").load()
            for name, value in project["entry-points"]["pathbind"].items()}


def _commands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """The parser and every subcommand's, depth first, each with its full command line (``pathbind data check``)."""
    yield parser.prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):  # an alias maps to the same parser
                yield from _commands(child)
