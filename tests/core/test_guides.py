"""The contributor guides (docs/guides/) stay true: every code excerpt is in the file it names, and every example a
guide walks through is run by the test it names."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDES = sorted((ROOT / "docs" / "guides").glob("*.md"))
EXCERPT = re.compile(r"<!-- excerpt: (\S+) -->\s*```\w*\n(.*?)```", re.S)
TESTED_BY = re.compile(r"<!-- tested by: (\S+)::(\w+) -->")


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _contains(haystack: list[str], needle: list[str]) -> bool:
    return any(haystack[i:i + len(needle)] == needle for i in range(len(haystack) - len(needle) + 1))


def test_there_is_a_guide_for_each_thing_contributors_add():
    assert {guide.stem for guide in GUIDES} >= {"adding-a-benchmark", "adding-a-model-family", "adding-a-metric",
                                                "adding-an-audit"}
    plugins = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    assert all(f"(guides/{guide.name})" in plugins for guide in GUIDES)


@pytest.mark.parametrize("guide", GUIDES, ids=lambda path: path.stem)
def test_every_excerpt_is_in_the_file_it_names(guide: Path):
    excerpts = EXCERPT.findall(guide.read_text(encoding="utf-8"))
    assert excerpts, f"{guide.name} shows no code from the tree"
    for path, code in excerpts:
        source = ROOT / path
        assert source.is_file(), f"{guide.name}: {path} does not exist"
        assert _contains(_lines(source.read_text(encoding="utf-8")), _lines(code)), \
            f"{guide.name}: this excerpt is not in {path}:\n{code}"


@pytest.mark.parametrize("guide", GUIDES, ids=lambda path: path.stem)
def test_every_example_is_run_by_the_test_it_names(guide: Path):
    named = TESTED_BY.findall(guide.read_text(encoding="utf-8"))
    assert named, f"{guide.name} names no test that runs its example"
    for path, name in named:
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        tests = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        assert name in tests, f"{guide.name}: {path} has no test {name}"
