"""The documentation: every page is on the site, the changelog names the package's version, and every shell and
Python example in the README and the docs runs.

An example is a fenced ``bash`` or ``python`` block. The HTML comment right above a block may say how it runs:
``<!-- excerpt: PATH -->`` (code quoted from the tree, checked by test_guides.py), ``<!-- not run: REASON -->``
(a command that installs, or needs a GPU, a server, the hub or data of your own), or
``<!-- run with: --limit N -->`` (each ``lmms_eval`` command of the block, ``python -m`` and ``torchrun -m`` ones
included, runs on the first N documents). A page's examples run in order in one folder
that holds the checkout's files, so a later example reads what an earlier one wrote. A ``text`` block marked
``<!-- output: the last line -->`` is a ``$ command`` and the last line it prints, checked by running it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from conftest import BIN, OFFLINE

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SITE_PAGES = sorted(DOCS.rglob("*.md"))
PAGES = [ROOT / "README.md", *SITE_PAGES]
README_LINES = 250
INCLUDE = re.compile(r'^--8<-- "([^"]+)"$', re.M)  # pymdownx.snippets: the file's text stands in for the line
FENCE = re.compile(r"(?:<!-- (?P<note>[^\n]*?) -->\s*)?^```(?P<lang>[\w-]*)\n(?P<code>.*?)^```$", re.S | re.M)
RUNNABLE = {"bash", "python"}
NOT_RUNNABLE = {"text", "yaml", "toml", "json", "jinja", ""}  # output, configuration and templates: nothing to run


@dataclass(frozen=True)
class Example:
    page: Path
    line: int
    lang: str
    code: str
    note: str


def page_text(page: Path) -> str:
    return INCLUDE.sub(lambda match: (ROOT / match[1]).read_text(encoding="utf-8"), page.read_text(encoding="utf-8"))


def blocks(page: Path) -> list[Example]:
    text = page_text(page)
    return [Example(page, text.count("\n", 0, match.start("code")), match["lang"], match["code"], match["note"] or "")
            for match in FENCE.finditer(text)]


def runnable(page: Path) -> list[Example]:
    return [b for b in blocks(page) if b.lang in RUNNABLE and not b.note.startswith(("excerpt:", "not run:"))]


def where(example: Example) -> str:
    return f"{example.page.relative_to(ROOT)}:{example.line}"


def test_every_page_is_on_the_site():
    """The navigation of mkdocs.yml lists every page of docs/ (mkdocs --strict fails on the reverse)."""
    def listed(entry: object) -> list[str]:
        if isinstance(entry, str):
            return [entry]
        items = entry.values() if isinstance(entry, dict) else entry
        return [page for item in items for page in listed(item)]  # type: ignore[union-attr]

    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)  # no !tags in it
    assert sorted(listed(config["nav"])) == sorted(str(p.relative_to(DOCS)) for p in SITE_PAGES)


def test_the_readme_is_short_and_its_links_reach_files():
    """The README stays a front page (the site holds the rest), and every relative link names a file that exists."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_LINES
    links = re.findall(r"\]\((?!https?://)([^)#]+)(?:#[^)]*)?\)", readme)
    missing = [link for link in links if not (ROOT / link).is_file()]
    assert links and not missing, missing


def quoting(page: Path) -> bool:
    return "guides" not in page.parts and any(b.note.startswith("excerpt:") for b in blocks(page))


@pytest.mark.parametrize("page", [p for p in PAGES if quoting(p)], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_excerpt_outside_the_guides_is_in_the_file_it_names(page):
    """Code a page quotes from the tree (``<!-- excerpt: PATH -->``) is in that file (test_guides checks the guides)."""
    def lines(text: str) -> list[str]:
        return [line.strip() for line in text.splitlines() if line.strip()]

    for block in blocks(page):
        if block.note.startswith("excerpt:"):
            source, quoted = lines((ROOT / block.note.split()[1]).read_text(encoding="utf-8")), lines(block.code)
            assert any(source[i:i + len(quoted)] == quoted for i in range(len(source))), where(block)


def test_each_local_only_data_set_points_at_a_section_of_the_page_that_says_how_to_get_it():
    """A task whose data is read from a local copy only stops naming where that data is published
    (``metadata.requires_pathbind_data``): a section of docs/data-access.md, by its heading's id."""
    from pathbind.catalog import plugin_tasks, read_task_yaml
    from pathbind.plugins import make_plugin_manager

    own = [e for e in plugin_tasks(make_plugin_manager()) if e.plugin == "pathbind_tasks" and e.variants is None]
    pointers = {(read_task_yaml(e.yaml_path).get("metadata") or {}).get("requires_pathbind_data") for e in own}
    pointers.discard(None)
    sections = set(re.findall(r"^#+ .*\{ #(\w+) \}$", (DOCS / "data-access.md").read_text(), re.M))
    assert {"docs/data-access.md#pathbind_vqa", "docs/data-access.md#pathview"} <= pointers
    assert {pointer.partition("#")[2] for pointer in pointers} <= sections
    assert {pointer.partition("#")[0] for pointer in pointers} == {"docs/data-access.md"}


def test_one_repository_address_everywhere():
    """The package metadata, the site's repository link and every clone command name the same repository."""
    repository = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
    site = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    clones = {clone for page in PAGES for clone in re.findall(r"git clone (\S+)", page_text(page))
              if "lmms-eval" not in clone}
    assert site["repo_url"] == repository and clones == {repository}


def test_the_changelogs_newest_version_is_the_packages():
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    newest = re.search(r"^## \[(\d[^\]]*)\]", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert newest and newest[1] == version


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_block_is_an_example_that_runs_or_says_why_not(page):
    """A shell block written as ``sh`` or ``console`` would escape the runner; a skipped example gives its reason."""
    for block in blocks(page):
        assert block.lang in RUNNABLE | NOT_RUNNABLE, f"{where(block)}: a ```{block.lang} block (use bash or python)"
        if block.note.startswith("not run:"):
            assert block.note.removeprefix("not run:").strip(), f"{where(block)}: say why the example does not run"


def workspace(tmp_path: Path) -> Path:
    """A folder with the checkout's files (linked, not copied) and none of its outputs."""
    folder = tmp_path / "workspace"
    folder.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in {"out", "build", ".cache"} and not entry.name.startswith((".venv", ".git")):
            (folder / entry.name).symlink_to(entry)
    return folder


def limited(code: str, note: str) -> str:
    limit = re.fullmatch(r"run with: (--limit \d+)", note)
    return re.sub(r"(^|\s)lmms_eval(?=\s)", rf"\1lmms_eval {limit[1]}", code, flags=re.M) if limit else code


def shown_last_lines(page: Path) -> list[Example]:
    """``text`` blocks marked ``<!-- output: the last line -->``: a ``$ command`` line, then the last line it prints."""
    return [b for b in blocks(page) if b.lang == "text" and b.note == "output: the last line"]


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PAGES if shown_last_lines(p)], ids=lambda p: str(p.relative_to(ROOT)))
def test_the_last_line_a_page_shows_is_the_one_the_command_prints(page, tmp_path):
    """A command's output quoted in the docs is what it prints today (stdout and stderr in order), without
    PATHBIND_DATA."""
    folder = workspace(tmp_path)
    env = {key: value for key, value in os.environ.items() if key != "PATHBIND_DATA"}
    env.update(OFFLINE, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    for block in shown_last_lines(page):
        command, *_, shown = block.code.splitlines()
        assert command.startswith("$ "), f"{where(block)}: the block starts with the command, as `$ command`"
        done = subprocess.run(["bash", "-c", command.removeprefix("$ ")], cwd=folder, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=1800)
        printed = [line for line in done.stdout.splitlines() if line.strip()]
        assert printed and printed[-1] == shown, f"{where(block)}: the command printed last\n{done.stdout[-3000:]}"


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PAGES if runnable(p)], ids=lambda p: str(p.relative_to(ROOT)))
def test_the_examples_run(page, tmp_path):
    folder = workspace(tmp_path)
    env = {**os.environ, **OFFLINE, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    for example in runnable(page):
        code = limited(example.code, example.note)
        command = ["bash", "-euo", "pipefail", "-c", code] if example.lang == "bash" else [sys.executable, "-c", code]
        done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=1800)
        assert done.returncode == 0, (f"{where(example)}: the example exited {done.returncode}\n{code}\n"
                                      f"{done.stdout[-3000:]}\n{done.stderr[-5000:]}")
