"""A banner with hostile lengths keeps its × on screen, in a real JupyterLab in chromium.

A model id is anyone's string, and a recap can be one unbroken word: with a 3,000-character
model id in the header row beside the trigger's words, the flex row must shrink the model and
the trigger (with an ellipsis), not push the dismiss button off the page. (A trigger name the
banner does not know is not shown at all, so a hostile one takes no room.) Checked where people
meet the banner: the view the labextension mounts above the active cell and, for frontends
without the labextension, the view in the cell's output.
"""

from __future__ import annotations

import pytest
from labserver import LabServer, open_and_run
from playwright.sync_api import BrowserContext, Locator, Page, expect

pytestmark = pytest.mark.timeout(420)

WIDTH, HEIGHT = 1200, 800
MODEL = "openai:" + "m" * 3_000
WORD = "w" * 10_000

SETUP = "%load_ext jupyter_recap"
SHOW = (
    "from jupyter_recap.ipython.extension import extension_for\n"
    "banner = extension_for(get_ipython()).banner\n"
    "banner.show('x' * 10_000, 'openai:' + 'm' * 3_000, reason='post_turn')"
)
# The same banner in the cell's output, as a frontend without the labextension shows it.
INLINE = "display(banner)"


def assert_dismissable(page: Page, banner: Locator) -> None:
    """The × lies inside the viewport and inside the banner, and a click dismisses it."""
    expect(banner.locator(".jp-RecapBanner-model")).to_contain_text("mmmm", timeout=120_000)
    button = banner.locator("button.jp-RecapBanner-dismiss")
    box, frame = button.bounding_box(), banner.bounding_box()
    assert box is not None and frame is not None
    assert box["width"] > 0 and box["height"] > 0
    assert box["x"] >= 0 and box["x"] + box["width"] <= WIDTH, (box, frame)
    assert frame["x"] <= box["x"] and box["x"] + box["width"] <= frame["x"] + frame["width"], (
        box,
        frame,
    )
    assert frame["x"] + frame["width"] <= WIDTH, frame  # the banner itself fits the page
    # The label shows whole, the model id and the trigger cut short but still there, and the
    # text (one 10,000-character word) wraps inside the banner.
    label = banner.locator(".jp-RecapBanner-label")
    assert label.evaluate("n => n.clientWidth > 0 && n.scrollWidth <= n.clientWidth")
    for part in (".jp-RecapBanner-model", ".jp-RecapBanner-reason"):
        width = banner.locator(part).evaluate("n => n.clientWidth")
        assert width >= 40, (part, width)
    text = banner.locator(".jp-RecapBanner-text").bounding_box()
    assert text is not None and text["x"] + text["width"] <= frame["x"] + frame["width"]
    button.click()  # a real click: nothing may cover the button either
    expect(banner).to_be_hidden()


def test_dismiss_stays_on_screen_above_the_active_cell(
    browser: BrowserContext, lab: LabServer
) -> None:
    page = open_and_run(browser, lab, "long.ipynb", [SETUP, SHOW], (WIDTH, HEIGHT))
    banner = page.locator(".jp-RecapBanner-mount .jp-RecapBanner")
    expect(banner).to_be_visible(timeout=120_000)
    page.screenshot(path=str(lab.root.parent / "long-banner.png"))
    assert_dismissable(page, banner)
    page.close()


def test_dismiss_stays_on_screen_in_the_cell_output(
    browser: BrowserContext, lab: LabServer
) -> None:
    page = open_and_run(browser, lab, "inline.ipynb", [SETUP, SHOW, INLINE], (WIDTH, HEIGHT))
    banner = page.locator(".jp-Cell").nth(2).locator(".jp-OutputArea .jp-RecapBanner")
    expect(banner).to_have_count(1, timeout=120_000)
    # Without the labextension's mount this view is the banner: once the mount is live (and
    # will not be touched again), take it away, as such a frontend would show the banner.
    mounted = page.locator(".jp-RecapBanner-mount.jp-mod-live .jp-RecapBanner-model")
    expect(mounted).to_contain_text("mmmm", timeout=120_000)
    page.evaluate(
        "() => document.querySelectorAll('.jp-mod-recapBanner')"
        ".forEach(n => n.classList.remove('jp-mod-recapBanner'))"
    )
    page.locator(".jp-RecapBanner-mount").evaluate_all("nodes => nodes.forEach(n => n.remove())")
    expect(banner).to_be_visible(timeout=30_000)
    assert_dismissable(page, banner)
    page.close()
