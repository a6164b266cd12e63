"""Headless Chromium for the tests that look at rendered pages (the docs site), driven with selenium.

The browser is the system's Chromium and its WebDriver, which ``make browser`` installs (``make test`` runs it
first); a test that needs them fails, saying so, when they are missing: a browser check that skips itself checks
nothing. ``PATHBIND_CHROMIUM`` and ``PATHBIND_CHROMEDRIVER`` name other binaries.
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = Path(os.environ.get("PATHBIND_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("PATHBIND_CHROMEDRIVER", "/usr/bin/chromedriver"))
# No network, no first-run or background work: the page is all the browser does.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync")


@contextmanager
def chromium(width: int = 1280, height: int = 1600) -> Iterator[object]:
    """A selenium WebDriver on headless Chromium with a ``width`` × ``height`` window."""
    missing = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not os.access(path, os.X_OK)]
    if missing:
        pytest.fail(f"no headless browser: {', '.join(missing)} missing (`make browser` installs Chromium and its "
                    "driver; PATHBIND_CHROMIUM and PATHBIND_CHROMEDRIVER name others)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--window-size={width},{height}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@contextmanager
def served(folder: Path) -> Iterator[str]:
    """``folder`` over HTTP on a free local port (a site's search runs in a web worker, which file:// pages lack);
    yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # the requests are not the test's output
        pass
