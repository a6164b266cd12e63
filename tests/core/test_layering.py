"""The package layering of the Layering table in docs/architecture.md: each package imports only what its row
allows."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
PACKAGES = ("pathbind", "pathbind_tasks", "pathbind_models", "pathbind_metrics", "pathbind_conventions",
            "pathbind_analysis")
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def may_import() -> dict[str, set[str]]:
    """Each package's "may import" cell of the table: the module names it gives in backticks."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("\n## Layering\n", 1)[1].split("\n## ", 1)[0]
    cells = (line.strip("| ").split(" | ") for line in section.splitlines() if line.startswith("| `"))
    return {row[0].strip("`"): set(re.findall(r"`([A-Za-z_][\w.]*)`", row[2])) for row in cells if len(row) == 3}


def imports(package: str) -> Iterator[tuple[str, str, bool]]:
    """``(where, module, at import time)`` of each absolute import in the package, in functions and
    ``TYPE_CHECKING`` blocks too."""
    module = ROOT / f"{package}.py"  # pathbind_conventions is one module
    for path in [module] if module.is_file() else sorted((ROOT / package).rglob("*.py")):
        for module, line, runtime in _imports(ast.parse(path.read_text(encoding="utf-8")), runtime=True):
            yield f"{path.relative_to(ROOT)}:{line}", module, runtime


def _imports(node: ast.AST, runtime: bool) -> Iterator[tuple[str, int, bool]]:
    if isinstance(node, ast.Import):
        yield from ((alias.name, node.lineno, runtime) for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        if node.level == 0 and node.module:  # a relative import stays in its package
            yield node.module, node.lineno, runtime
    elif isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
        yield from (found for child in node.body for found in _imports(child, False))
        yield from (found for child in node.orelse for found in _imports(child, runtime))
    else:
        inner = runtime and not isinstance(node, FUNCTIONS)
        yield from (found for child in ast.iter_child_nodes(node) for found in _imports(child, inner))


def allowed(module: str, names: set[str]) -> bool:
    return any(module == name or module.startswith(f"{name}.") for name in names)


def first_party(module: str) -> bool:
    return module.split(".")[0] in PACKAGES


def test_the_table_has_a_row_for_each_package():
    """The test reads every row (a reworded table must not leave a package unchecked)."""
    assert sorted(may_import()) == sorted(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_imports_only_the_packages_its_row_names(package):
    """Every import of another PathBind package, lazy or for type checking alone, is one the row allows."""
    names = may_import()[package]
    broken = [f"{where} imports {module}" for where, module, _ in imports(package)
              if first_party(module) and not allowed(module, names | {package})]
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("package", [p for p in PACKAGES if any(not first_party(n) for n in may_import()[p])])
def test_a_row_naming_libraries_names_all_a_package_imports_at_import_time(package):
    """Where a row names libraries (``pathbind``'s: a light core), any other is imported inside functions only."""
    names = may_import()[package]
    broken = [f"{where} imports {module}" for where, module, runtime in imports(package) if runtime
              and not first_party(module) and module.split(".")[0] not in sys.stdlib_module_names
              and not allowed(module, names)]
    assert not broken, "\n".join(broken)


def _module_imports() -> dict[str, set[str]]:
    """Each first-party module and the first-party modules it imports (in functions and ``TYPE_CHECKING`` blocks
    too); ``from package import name`` is an import of the submodule where ``name`` is one."""
    files = {".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): path
             for package in PACKAGES
             for path in ([ROOT / f"{package}.py"] if (ROOT / f"{package}.py").is_file()
                          else sorted((ROOT / package).rglob("*.py")))}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        graph[module] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                graph[module].update(alias.name for alias in node.names if alias.name in files)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in files:
                submodules = {f"{node.module}.{alias.name}" for alias in node.names} & files.keys()
                graph[module].update(submodules or {node.module})
    return graph


def test_no_module_is_part_of_an_import_circle():
    """Modules import one another without a circle, lazily or not: each can be read and replaced from the bottom
    up (a package's __init__ that hands names on counts as its own module)."""
    graph = _module_imports()
    circles, state = [], dict.fromkeys(graph, 0)  # 0 unseen, 1 on the current path, 2 done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module] - {module}):
            if state[target] == 1:
                circles.append(" -> ".join([*path[path.index(target):], target]))
            elif state[target] == 0:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if state[module] == 0:
            visit(module, [module])
    assert not circles, "\n".join(circles)


def test_no_module_is_over_500_lines():
    """A module over 500 lines holds more than one thing: its private engines go to ``_``-prefixed modules."""
    long = [f"{path.relative_to(ROOT)}: {n}" for package in PACKAGES
            for path in ([ROOT / f"{package}.py"] if (ROOT / f"{package}.py").is_file()
                         else sorted((ROOT / package).rglob("*.py")))
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 500]
    assert not long, "\n".join(long)


def test_the_shared_task_code_imports_no_benchmark_folder():
    """``pathbind_tasks/common`` is what the benchmark folders share: it imports none of them."""
    graph = _module_imports()
    upward = [f"{module} imports {target}" for module, targets in graph.items()
              if module.startswith("pathbind_tasks.common") for target in targets
              if target.startswith("pathbind_tasks.") and not target.startswith("pathbind_tasks.common")]
    assert not upward, "\n".join(upward)
