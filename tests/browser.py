"""Playwright on Debian's chromium, shared by the browser tests."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright

CHROMIUM = pathlib.Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

#: What a test needing the browser says when it is missing (a failure, never a skip: a run
#: without the browser tests must not pass as if they had run).
MISSING = (
    f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium; "
    "scripts/setup does it when run as root)"
)


class Chromium:
    """One headless chromium (and Playwright's driver) for a worker's session, started on first
    use: each launch cost a driver and a browser process, about 3 CPU-s, and a run has 17
    browser modules. Each module still gets a browser of its own to the page: a fresh context
    (:meth:`person`), with nothing of another module's cache, cookies or ``localStorage``."""

    def __init__(self) -> None:
        self._playwright: Any = None
        self._browser: Browser | None = None

    def person(self) -> BrowserContext:
        """A new context: one person's browser, whose pages share the HTTP cache, the compiled
        scripts and ``localStorage`` the way a person's tabs do. (A context per page loads and
        compiles JupyterLab from nothing each time: about 6 CPU-s a page against 4.) A browser
        that crashed or was closed in an earlier module is started again."""
        if not CHROMIUM.exists():
            pytest.fail(MISSING, pytrace=False)
        if self._browser is None or not self._browser.is_connected():
            if self._playwright is None:
                self._playwright = sync_playwright().start()
            self._browser = self._playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
            )
        return self._browser.new_context()

    def close(self) -> None:
        try:
            if self._browser is not None and self._browser.is_connected():
                self._browser.close()
        finally:
            if self._playwright is not None:
                self._playwright.stop()
            self._browser = self._playwright = None


def new_page(browser: BrowserContext, width: int, height: int) -> Page:
    """A new tab of the person's browser, its window ``width`` × ``height``."""
    page = browser.new_page()
    page.set_viewport_size({"width": width, "height": height})
    return page
