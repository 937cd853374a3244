"""Playwright on Debian's chromium, shared by the browser tests."""

from __future__ import annotations

import os
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

# Without chromium we skip locally; under CI a missing browser must fail the run.
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("CI"),
    reason="/usr/bin/chromium is not installed (apt-get install chromium)",
)


def launch() -> Iterator[Browser]:
    """A headless chromium for the duration of a fixture."""
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
