"""In a real JupyterLab with a real browser: %recap shows the banner in the notebook."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import needs_chromium
from labserver import LabServer, running_lab
from playwright.sync_api import Browser, Page, expect

pytestmark = [needs_chromium, pytest.mark.timeout(240)]

SETUP = "import agentmagic\nagent = agentmagic.install(get_ipython())\n%load_ext jupyter_recap"
SCRIPT = (
    "agent.script.append(lambda prompt: print("
    "'The FK on line 142 points at customers_v1. Next: repoint it to customers_v2 and rerun.'))"
)
AGENT = "%%agent\nWhy does invoices.ts fail its FK constraint after the v2 migration?"
XSS = '%%agent\nexplain <img src=x onerror="window.pwned=1"> in the template'


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    tmp: Path = tmp_path_factory.mktemp("lab")
    env = {"JUPYTER_RECAP_MODEL": "offline", "JUPYTER_RECAP_LOG": str(tmp / "recap.log")}
    with running_lab(tmp, env) as server:
        yield server


def open_and_run(browser: Browser, lab: LabServer, name: str, cells: list[str]) -> Page:
    lab.write_notebook(name, cells)
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.goto(lab.lab_url(name), wait_until="commit")
    # The notebook must be the current one (a restored workspace may open others first) and
    # its kernel ready before cells can run.
    page.wait_for_function(
        """(name) => {
          const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
          return w && w.context && w.context.path === name
            && w.sessionContext.session?.kernel?.status === 'idle';
        }""",
        arg=name,
        timeout=60_000,
    )
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    return page


@needs_chromium
def test_recap_banner_appears_in_the_notebook(browser: Browser, lab: LabServer) -> None:
    page = open_and_run(browser, lab, "session.ipynb", [SETUP, SCRIPT, AGENT, "%recap"])
    # The labextension shows the banner directly above the active cell (the %recap cell) ...
    banner = page.locator(".jp-RecapBanner-mount .jp-RecapBanner")
    expect(banner).to_have_count(1, timeout=60_000)
    text = banner.locator(".jp-RecapBanner-text")
    expect(text).to_contain_text("invoices.ts", timeout=30_000)
    expect(text).to_contain_text("Next: repoint it to customers_v2 and rerun.")
    expect(banner).to_contain_text("✦ recap")
    expect(banner).to_contain_text("offline")
    expect(banner).to_be_visible()
    mount = page.locator(".jp-Cell").nth(3).locator(":scope > .jp-RecapBanner-mount")
    expect(mount).to_have_count(1)
    # ... and hides the widget's views in outputs (the %recap cell's, the one %load_ext
    # displayed), so exactly one banner shows.
    outputs = page.locator(".jp-OutputArea .jp-RecapBanner")
    expect(outputs).to_have_count(2)
    expect(outputs.first).to_be_hidden()
    expect(outputs.last).to_be_hidden()
    expect(page.locator(".jp-Cell").nth(2).locator(".jp-RecapBanner")).to_have_count(0)
    page.screenshot(path=str(lab.root.parent / "lab-banner.png"))

    banner.locator("button.jp-RecapBanner-dismiss").click()
    expect(banner).to_be_hidden()
    page.close()


@needs_chromium
def test_model_output_is_plain_text(browser: Browser, lab: LabServer) -> None:
    page = open_and_run(
        browser,
        lab,
        "xss.ipynb",
        [SETUP, "agent.script.append(lambda prompt: print('Next: <b>bold</b> it'))", XSS, "%recap"],
    )
    text = page.locator(".jp-RecapBanner-mount .jp-RecapBanner-text")
    expect(text).to_contain_text("<img src=x", timeout=60_000)
    expect(text).to_contain_text("<b>bold</b>")
    assert page.locator(".jp-RecapBanner img, .jp-RecapBanner b").count() == 0
    assert page.evaluate("() => window.pwned") is None
    page.close()
