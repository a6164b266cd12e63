"""The documentation site as a reader's browser shows it (headless Chromium, tests/browser.py): inline code is never
broken inside a word nor cut off, wide tables and code blocks scroll, search finds pages, every figure loads."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from browser import served
from conftest import BIN

ROOT = Path(__file__).resolve().parents[2]
# Each piece of inline code that spans more than one line box: a word broken inside (`--` / `json`).
BROKEN_CODE = """return [...document.querySelectorAll('.md-typeset code .pb-word, .md-typeset table code')]
  .filter(element => element.getClientRects().length > 1).map(element => element.textContent)"""
CODE_WORDS = "return document.querySelectorAll('.md-typeset code .pb-word').length"
# Elements wider than their box that do not scroll: their overflow is cut off (or spills over the page).
CLIPPED = """return [...document.querySelectorAll('.md-typeset table, .md-typeset pre > code, .md-typeset p')]
  .filter(element => element.scrollWidth > element.clientWidth + 1
          && !['auto', 'scroll'].includes(getComputedStyle(element).overflowX))
  .map(element => element.tagName + ': ' + element.textContent.slice(0, 80))"""
PAGE_OVERFLOW = "return document.documentElement.scrollWidth - document.documentElement.clientWidth"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built as `make docs` builds it (--strict), served over HTTP."""
    folder = tmp_path_factory.mktemp("site")
    done = subprocess.run([str(BIN / "mkdocs"), "build", "--strict", "--site-dir", str(folder)], cwd=ROOT,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    with served(folder) as url:
        yield url


@pytest.mark.parametrize("width", [1280, 700])
@pytest.mark.parametrize("page", ["cli/", "metrics/"])
def test_no_code_is_broken_inside_a_word_or_cut_off(browser, site, page, width):
    """The command overview's flags and the metric names stay whole at a desktop and a narrow width; whatever is
    too wide for the page scrolls inside its own box."""
    browser.set_window_size(width, 1600)
    browser.get(f"{site}/{page}")
    assert browser.execute_script(CODE_WORDS) > 100
    assert browser.execute_script(BROKEN_CODE) == []
    assert browser.execute_script(CLIPPED) == []
    assert browser.execute_script(PAGE_OVERFLOW) <= 0


def test_search_finds_the_page_that_answers(browser, site):
    """The search index is built and the search box answers (mkdocs' search plugin, in a web worker)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.set_window_size(1280, 1600)
    browser.get(f"{site}/")
    browser.find_element(By.CSS_SELECTOR, "input.md-search__input").send_keys("gated")
    WebDriverWait(browser, 30).until(lambda b: b.find_elements(By.CSS_SELECTOR, "a.md-search-result__link"))
    found = {link.get_attribute("href") for link in browser.find_elements(By.CSS_SELECTOR, "a.md-search-result__link")}
    assert any("/data-access/" in href for href in found), found


def test_the_demo_reports_figures_load(browser, site):
    """The report page shows the demo's figures (docs/img/demo, from `make docs-figures`), each decoded."""
    browser.get(f"{site}/report/")
    sizes = browser.execute_script("return [...document.querySelectorAll('.md-typeset img')]"
                                   ".map(image => [image.getAttribute('src'), image.naturalWidth])")
    assert len(sizes) >= 3 and all(width > 0 for _, width in sizes), sizes
