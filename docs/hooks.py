"""MkDocs hook: the CLI reference page (cli.md) is written from the commands' own argument parsers at each build,
so it lists exactly the commands and options the installed PathBind has."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from importlib.metadata import entry_points
from typing import Any

MARKER = "<!-- generated: pathbind commands -->"
WIDTH = "100"  # argparse wraps help at $COLUMNS: a fixed width keeps the page the same on every machine


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, pathbind_reference())


def pathbind_reference() -> str:
    """Each ``pathbind`` command's ``--help``, PathBind's own plugins' commands included (not third parties')."""
    from pathbind.cli import build_parser
    from pathbind.plugins import make_plugin_manager

    own = {e.name: e.load() for e in entry_points(group="pathbind") if e.dist and e.dist.name == "pathbind"}
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        parser = build_parser(make_plugin_manager(autoload=False, plugins=own))
        return "\n".join(f"## `{name}`\n\n```text\n{command.format_help()}```\n" for name, command in _commands(parser))
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous


def _commands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """The parser and every subcommand's, depth first, each with its full command line (``pathbind data check``)."""
    yield parser.prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):  # an alias maps to the same parser
                yield from _commands(child)
