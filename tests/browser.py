"""Playwright on Debian's chromium, shared by the browser tests."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest
from playwright.sync_api import BrowserContext, Page, sync_playwright

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


def launch() -> Iterator[BrowserContext]:
    """A headless chromium for the duration of a fixture, as one person's browser: one context,
    whose pages share the HTTP cache, the compiled scripts and ``localStorage`` the way a
    person's tabs do. (A context per page loads and compiles JupyterLab from nothing each time:
    about 6 CPU-s a page against 4.)"""
    if not CHROMIUM.exists():
        pytest.fail(MISSING, pytrace=False)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context()
            try:
                yield context
            finally:
                context.close()
        finally:
            browser.close()


def new_page(browser: BrowserContext, width: int, height: int) -> Page:
    """A new tab of the person's browser, its window ``width`` × ``height``."""
    page = browser.new_page()
    page.set_viewport_size({"width": width, "height": height})
    return page
