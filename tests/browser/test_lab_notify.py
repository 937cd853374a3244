"""Coming back to JupyterLab after a while away, in a real JupyterLab and chromium.

A notification about an agent notebook that finished while the page was hidden must still be
there when the page shows again, however long the absence (a toast that closes itself after a
few seconds is gone before anyone sees it), and go once that notebook is opened. And a recap
drafted while away, above an active cell far down the notebook (after Run All), is scrolled
into view on return, without taking the keyboard focus, once per return.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from labfocus import EXT, LabPage
from labserver import LabServer, offline_lab
from playwright.sync_api import BrowserContext

pytestmark = pytest.mark.timeout(240)

LOAD = "%load_ext jupyter_recap"
BILLING, FRONT = "billing.ipynb", "front.ipynb"
BILLING_CELLS = [LOAD, "%%agent\nRefund order A-1001 in full"]
FRONT_CELLS = [LOAD, "%%agent\nSummarise the churn report"]
#: How long JupyterLab showed the away notification before (it closed itself after 10 s).
OLD_AUTOCLOSE_S = 10

#: The toasts on screen now (JupyterLab's notifications are react-toastify toasts).
TOASTS = "() => [...document.querySelectorAll('.Toastify__toast')].map(t => t.textContent)"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    yield from offline_lab(tmp_path_factory.mktemp("labnotify"))


def prepare(tab: LabPage, name: str, replies: list[str], **settings: float) -> None:
    """The stand-in agent with scripted ``replies``, ``%load_ext`` run, short timers."""
    tab.kernel_exec(
        name,
        "import agentmagic\nagent = agentmagic.install(get_ipython())\n"
        + "".join(f"agent.script.append(lambda prompt: print({text!r}))\n" for text in replies),
    )
    tab.run_cells(name, [0])
    tab.prepare_kernel(name)
    values = {"post_turn_seconds": 0.3, **settings}
    tab.kernel_exec(name, "".join(f"{EXT}.settings.{k} = {v!r}\n" for k, v in values.items()))


def toasts(tab: LabPage, text: str) -> list[str]:
    return [t for t in tab.page.evaluate(TOASTS) if text in t]


def test_away_notification_waits_for_the_person(browser: BrowserContext, lab: LabServer) -> None:
    lab.write_notebook(BILLING, BILLING_CELLS)
    lab.write_notebook(FRONT, FRONT_CELLS)
    tab = LabPage.open(browser, lab, BILLING)
    prepare(tab, BILLING, ["Refunded 1,299 EUR for order A-1001."])
    tab.open_document(FRONT)
    prepare(tab, FRONT, [])
    tab.activate(FRONT)
    tab.wait_focus_known(FRONT)
    tab.wait_focus_known(BILLING, focused=False)

    # The person switches to another browser tab; meanwhile billing's agent finishes.
    tab.set_visible(False)
    assert tab.run_as_cell(BILLING, BILLING_CELLS[1], "cell-1") == "ok"
    tab.page.wait_for_function(
        f"() => ({TOASTS})().some(t => t.includes('billing.ipynb: the agent finished'))",
        timeout=30_000,
    )

    # Longer than JupyterLab kept it before: it is still there, waiting.
    time.sleep(OLD_AUTOCLOSE_S + 2)
    assert len(toasts(tab, "billing.ipynb: the agent finished")) == 1

    # The person comes back (to the other notebook): the notification is there to be seen.
    tab.set_visible(True)
    tab.set_window_focus(True)
    time.sleep(1)
    [toast] = toasts(tab, "billing.ipynb: the agent finished")
    assert toast.startswith("billing.ipynb: the agent finished — ")

    # They open billing: its notification has nothing left to say and goes at once (well
    # before it would close by itself).
    opened = time.monotonic()
    tab.activate(BILLING)
    tab.page.wait_for_function(
        f"() => !({TOASTS})().some(t => t.includes('billing.ipynb'))", timeout=5_000
    )
    assert time.monotonic() - opened < 5
    assert tab.errors == []
    tab.page.close()


LONG = "long.ipynb"
#: A notebook with enough cells that its last one is far below the fold of a 520 px page.
LONG_CELLS = [
    LOAD,
    "%%agent\nRetrain the churn model on the March data",
    *[
        f"step_{i} = {i}\n" + "\n".join(f"# check {j} of step {i}" for j in range(4))
        for i in range(30)
    ],
]

#: Where the banner of the current notebook is, relative to the notebook's scrolled view.
BANNER_BOX = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const scroller = panel.content.outerNode ?? panel.content.node;
  const root = panel.content.node.querySelector(
    '.jp-RecapBanner-mount.jp-mod-live .jp-RecapBanner');
  if (!root || root.style.display === 'none') return null;
  const view = scroller.getBoundingClientRect();
  const box = root.getBoundingClientRect();
  return {
    in_view: box.top >= view.top && box.bottom <= view.bottom,
    top: box.top - view.top,
    scroll: scroller.scrollTop,
  };
}"""

SCROLL_TOP = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  (panel.content.outerNode ?? panel.content.node).scrollTop = 0;
}"""


def test_banner_scrolled_into_view_on_return(browser: BrowserContext, lab: LabServer) -> None:
    lab.write_notebook(LONG, LONG_CELLS)
    tab = LabPage.open(browser, lab, LONG)
    prepare(tab, LONG, ["The churn model reached 0.91 AUC."], away_seconds=1.5)
    tab.wait_focus_known(LONG)
    # Run All: the active cell ends up at the bottom; the person scrolls back to the top.
    tab.run_cells(LONG, list(range(1, len(LONG_CELLS))), timeout=120)
    last = len(LONG_CELLS) - 1
    tab.select_cell(LONG, last)
    page = tab.page
    page.evaluate(SCROLL_TOP)
    # Where the keyboard focus is: a return must leave it there.
    page.evaluate("() => { window._focused = document.activeElement; }")

    # Away long enough for a recap; it waits above the active cell, out of view.
    tab.set_visible(False)
    tab.wait_kernel(LONG, f"{EXT}.banner.state", lambda s: s == "shown")
    page.wait_for_function(f"() => ({BANNER_BOX})() !== null")
    away = page.evaluate(BANNER_BOX)
    assert not away["in_view"] and away["scroll"] == 0, away  # nothing moves while away

    # Back: the notebook scrolls to the banner.
    tab.set_visible(True)
    tab.set_window_focus(True)
    page.wait_for_function(f"() => ({BANNER_BOX})()?.in_view === true", timeout=5_000)
    back = page.evaluate(BANNER_BOX)
    assert back["scroll"] > 0, back
    assert page.evaluate("() => document.activeElement === window._focused")
    assert page.evaluate("() => window.jupyterapp.shell.currentWidget.content.activeCellIndex") == (
        last
    )

    # Once per return: the person scrolls up to read; focus coming and going moves nothing.
    page.evaluate(SCROLL_TOP)
    page.evaluate("() => window.dispatchEvent(new Event('focus'))")
    time.sleep(1)
    assert page.evaluate(BANNER_BOX)["scroll"] == 0

    # The next return brings it into view again.
    tab.set_window_focus(False)
    time.sleep(0.3)
    tab.set_window_focus(True)
    page.wait_for_function(f"() => ({BANNER_BOX})()?.in_view === true", timeout=5_000)
    assert tab.errors == []
    page.close()


def test_a_notification_goes_as_soon_as_its_notebook_is_back_in_view(
    browser: BrowserContext, lab: LabServer
) -> None:
    """The person left while looking at this very notebook: on return it is looked at again,
    so its notification has nothing left to say and must not linger (it did, about 3 s)."""
    name = "returned.ipynb"
    lab.write_notebook(name, [LOAD, "%%agent\nRecount the March stock"])
    tab = LabPage.open(browser, lab, name)
    prepare(tab, name, ["Recounted 1,204 items. Next: reconcile with the ledger."])
    tab.activate(name)
    tab.wait_focus_known(name)
    for round_ in (1, 2):
        tab.set_visible(False)
        tab.wait_focus_known(name, focused=False)
        tab.kernel_exec(name, "agent.script.append(lambda prompt: print('Recounted again.'))")
        assert tab.run_as_cell(name, "%%agent\nRecount the March stock", "cell-1") == "ok"
        tab.page.wait_for_function(
            f"() => ({TOASTS})().some(t => t.includes('returned.ipynb: the agent finished'))",
            timeout=30_000,
        )
        back = time.monotonic()
        tab.set_visible(True)
        tab.set_window_focus(True)
        tab.page.wait_for_function(
            f"() => !({TOASTS})().some(t => t.includes('returned.ipynb'))", timeout=10_000
        )
        took = time.monotonic() - back
        assert took < 1.5, f"round {round_}: the notification stayed {took:.1f} s"
    assert tab.errors == []
    tab.page.close()


#: Whether the banner's × can be clicked: the element at its centre is the × itself.
DISMISS_CLEAR = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const button = panel.content.node.querySelector(
    '.jp-RecapBanner-mount.jp-mod-live .jp-RecapBanner-dismiss');
  if (!button || !button.checkVisibility()) return null;
  const box = button.getBoundingClientRect();
  const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
  return hit === button || button.contains(hit);
}"""

#: The close button of each of JupyterLab's toasts.
CLOSE = ".jp-Notification-Toast-Close"

#: The index of a cell whose top lies in the lowest quarter of the notebook's view.
LOW_CELL = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const view = (panel.content.outerNode ?? panel.content.node).getBoundingClientRect();
  const cells = panel.content.widgets;
  for (let i = cells.length - 1; i >= 0; i--) {
    const top = cells[i].node.getBoundingClientRect().top;
    if (top < view.bottom - 40 && top > view.bottom - view.height / 4) return i;
  }
  return -1;
}"""


def test_a_banner_near_the_bottom_is_not_left_under_the_toasts(
    browser: BrowserContext, lab: LabServer
) -> None:
    name = "toasts.ipynb"
    lab.write_notebook(name, [LOAD, *[f"row_{i} = {i}" for i in range(40)]])
    tab = LabPage.open(browser, lab, name)
    prepare(tab, name, [])
    tab.set_visible(True)
    tab.set_window_focus(True)
    page = tab.page
    for round_ in (1, 2):
        page.evaluate(SCROLL_TOP)
        low = page.evaluate(LOW_CELL)
        assert low > 0, "no cell near the bottom of the view"
        tab.select_cell(name, low)
        # Notifications on screen, in JupyterLab's corner over the notebook.
        for n in range(3):
            page.evaluate(
                "(m) => window.jupyterapp.commands.execute('apputils:notify',"
                " {message: m, type: 'info', options: {autoClose: false}})",
                f"Another notebook finished ({round_}.{n}).",
            )
        page.wait_for_function(f"() => ({TOASTS})().length >= 3")
        tab.kernel_exec(name, f"{EXT}.banner.show('Round {round_}: look at row 7.', 'offline')")
        tab.wait_for_banner_text(name, f"Round {round_}: look at row 7.")
        page.wait_for_function(f"() => ({DISMISS_CLEAR})() === true", timeout=5_000)
        tab.kernel_exec(name, f"{EXT}.banner.clear()")
        page.evaluate(f"() => document.querySelectorAll('{CLOSE}').forEach(b => b.click())")
        page.wait_for_function(f"() => ({TOASTS})().length === 0", timeout=5_000)
    assert tab.errors == []
    page.close()
