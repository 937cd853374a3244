"""In a real JupyterLab with a real browser: %recap shows the banner in the notebook."""

from __future__ import annotations

import pytest
from labserver import LabServer, open_and_run
from playwright.sync_api import BrowserContext, expect

pytestmark = pytest.mark.timeout(240)

SETUP = "import agentmagic\nagent = agentmagic.install(get_ipython())\n%load_ext jupyter_recap"
SCRIPT = (
    "agent.script.append(lambda prompt: print("
    "'The FK on line 142 points at customers_v1. Next: repoint it to customers_v2 and rerun.'))"
)
AGENT = "%%agent\nWhy does invoices.ts fail its FK constraint after the v2 migration?"
XSS = '%%agent\nexplain <img src=x onerror="window.pwned=1"> in the template'


def test_recap_banner_appears_in_the_notebook(browser: BrowserContext, lab: LabServer) -> None:
    page = open_and_run(browser, lab, "session.ipynb", [SETUP, SCRIPT, AGENT, "%recap"])
    # The labextension shows the banner directly above the active cell (the %recap cell) ...
    banner = page.locator(".jp-RecapBanner-mount .jp-RecapBanner")
    expect(banner).to_have_count(1, timeout=60_000)
    text = banner.locator(".jp-RecapBanner-text")
    expect(text).to_contain_text("invoices.ts", timeout=30_000)
    expect(text).to_contain_text("Next: Repoint it to customers_v2 and rerun.")
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


def test_model_output_is_plain_text(browser: BrowserContext, lab: LabServer) -> None:
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
