"""The contributor guides (docs/guides/) stay true: every code excerpt is in the file it names, and every example a
guide walks through is run by the test it names."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
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


def _defined(path: str, code: str) -> set[str]:
    """What an excerpt defines: the module-level functions, classes and names of its Python file that it shows
    being defined (none for an excerpt from inside a definition, such as a registry entry), the task of a YAML."""
    source = (ROOT / path).read_text(encoding="utf-8")
    if path.endswith(".py"):
        body = ast.parse(source).body
        names = {node.name for node in body if isinstance(node, ast.FunctionDef | ast.ClassDef)}
        names.update(n.id for node in body if isinstance(node, ast.Assign | ast.AnnAssign)
                     for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
                     for n in ast.walk(target) if isinstance(n, ast.Name))
        shown = re.findall(r"^\s*(?:def|class) (\w+)", code, re.M) + [
            name.strip() for names_assigned in re.findall(r"^\s*(\w+(?:\s*,\s*\w+)*)\s*(?::[^=\n]+)?=(?!=)", code, re.M)
            for name in names_assigned.split(",")]
        return names & set(shown)
    if path.endswith(".yaml"):
        return set(re.findall(r"^task: (\w+)", source, re.M))
    return set()  # a packaging file: what it declares is run through the code it names


def _module_file(module: str) -> str:
    """The file, relative to the root, of a module of this tree (a package's ``__init__.py``), or ""."""
    path = ROOT / Path(*module.split("."))
    found = next((p for p in (path.with_suffix(".py"), path / "__init__.py") if p.is_file()), None)
    return str(found.relative_to(ROOT)) if found else ""


def _reached(test_file: Path, test: str) -> tuple[set[str], set[str]]:
    """What the test's code reaches: its own body and, transitively, the module-level functions, fixtures and
    constants of its file and of ``tests/conftest.py`` that it names. Returns every identifier, attribute and word
    of a string in that code, and the files of this tree whose names it uses (imported in that code or its file)."""
    definitions: dict[str, ast.AST] = {}
    imported: dict[str, str] = {}  # local name -> the file it comes from
    for source in (ROOT / "tests" / "conftest.py", test_file):
        tree = ast.parse(source.read_text(encoding="utf-8"))
        imported.update(_imports(tree.body))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                definitions[node.name] = node
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    definitions.update((n.id, node) for n in ast.walk(target) if isinstance(n, ast.Name))
    assert test in definitions, f"{test_file.relative_to(ROOT)} has no test {test}"
    words: set[str] = set()
    todo, seen = [test], set()
    while todo:
        name = todo.pop()
        if name in seen or name not in definitions:
            continue
        seen.add(name)
        imported.update(_imports(ast.walk(definitions[name])))
        for node in ast.walk(definitions[name]):
            if isinstance(node, ast.Name | ast.arg):
                found = node.id if isinstance(node, ast.Name) else node.arg
                words.add(found)
                todo.append(found)  # a helper called, a fixture asked for, a constant read
            elif isinstance(node, ast.Attribute):
                words.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                words.update(re.findall(r"\w+", node.value))
    return words, {imported[word] for word in words if word in imported}


def _imports(nodes: Iterable[ast.AST]) -> dict[str, str]:
    """Local name -> file of this tree, for the imports among ``nodes``."""
    found = {}
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                file = _module_file(f"{node.module}.{alias.name}") or _module_file(node.module)
                found[alias.asname or alias.name] = file
        elif isinstance(node, ast.Import):
            found.update((alias.asname or alias.name.split(".")[0], _module_file(alias.name)) for alias in node.names)
    return {name: file for name, file in found.items() if file}


@pytest.mark.parametrize("guide", GUIDES, ids=lambda path: path.stem)
def test_every_example_is_run_by_the_test_it_names(guide: Path):
    """Each test a guide names reaches the guide's example: it names something an excerpt defines (a function, a
    class, a constant, the task of a YAML), or, where an excerpt defines nothing public (a registry entry, a private
    builder), it uses a name from that excerpt's file. A test that exists but runs none of it fails."""
    text = guide.read_text(encoding="utf-8")
    named = TESTED_BY.findall(text)
    assert named, f"{guide.name} names no test that runs its example"
    example: dict[str, set[str]] = {}
    for path, code in EXCERPT.findall(text):
        example.setdefault(path, set()).update(_defined(path, code))
    for path, name in named:
        words, used = _reached(ROOT / path, name)
        assert any(words & defined or (file in used and all(d.startswith("_") for d in defined))
                   for file, defined in example.items()), (
            f"{guide.name}: {path}::{name} runs none of the guide's example (names none of "
            f"{', '.join(sorted(set().union(*example.values())))}, nor uses the files of the others)")
