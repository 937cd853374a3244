"""Playwright on Debian's chromium, shared by the browser tests."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, sync_playwright

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


def launch() -> Iterator[Browser]:
    """A headless chromium for the duration of a fixture."""
    if not CHROMIUM.exists():
        pytest.fail(MISSING, pytrace=False)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
