"""The agents panel in a real JupyterLab and chromium, with two agent notebooks.

One notebook is looked at, the other works in the background. When the background agent's turn
ends, its row moves to the top marked, one notification says so, and the page title counts it;
opening the row goes to the cell where the work stopped. Rows come from the server, so a reload
keeps them; a restart shows in the row; a link in the banner selects the cell it names. The
panel's last line says what recaps cost today, and follows when a kernel reports.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from labfocus import EXT, ROW_RECAP, LabPage
from labserver import LabServer, offline_lab
from playwright.sync_api import BrowserContext

from jupyter_recap.stores.usage import UsageLedger

pytestmark = pytest.mark.timeout(240)

LOAD = "%load_ext jupyter_recap"
BILLING, FRONT = "billing.ipynb", "front.ipynb"
BILLING_CELLS = [
    LOAD,
    "%%agent\nFix the invoice totals",
    "ledger = load('ledger.csv')",
    "%%agent\nCheck the rounding of the totals",
]
FRONT_CELLS = [LOAD, "%%agent\nSummarise the churn report"]

# Every toast and page title, as the person would have seen them (toasts close by themselves).
WATCH = """() => {
  window._toasts = [];
  const seen = new WeakSet();
  const look = () => {
    for (const toast of document.querySelectorAll('.Toastify__toast')) {
      if (!seen.has(toast)) { seen.add(toast); window._toasts.push(toast.textContent); }
    }
  };
  new MutationObserver(look).observe(document.body, {subtree: true, childList: true});
  look();
}"""

ROWS = f"""() => [...document.querySelectorAll('#jupyter-recap-agents .jp-RecapAgents-row')]
  .map(row => ({{
    kernel: row.dataset.kernelId,
    state: row.dataset.state,
    needs: row.dataset.needsYou ?? null,
    marked: row.classList.contains('jp-mod-needsYou'),
    name: row.querySelector('.jp-RecapAgents-name').textContent,
    recap: row.querySelector({ROW_RECAP!r})?.textContent ?? '',
    activity: row.querySelector('.jp-RecapAgents-activity')?.textContent ?? '',
    events: row.querySelector('.jp-RecapAgents-events')?.textContent ?? '',
    progress: row.querySelector('progress.jp-RecapAgents-progress')?.value ?? null,
  }}))"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    yield from offline_lab(tmp_path_factory.mktemp("labagents"))


def prepare(tab: LabPage, name: str, replies: list[str]) -> None:
    """The stand-in agent with scripted ``replies``, ``%load_ext`` run, a short post-turn wait."""
    tab.kernel_exec(
        name,
        "import agentmagic, time\nagent = agentmagic.install(get_ipython())\n"
        + "".join(
            f"agent.script.append(lambda prompt: time.sleep(0.5) or print({text!r}))\n"
            for text in replies
        ),
    )
    tab.run_cells(name, [0])
    tab.prepare_kernel(name)
    tab.kernel_exec(name, f"{EXT}.settings.post_turn_seconds = 0.3")


def rows(tab: LabPage) -> list[dict[str, Any]]:
    return list(tab.page.evaluate(ROWS))


def wait_rows(tab: LabPage, check: str, timeout: float = 20) -> list[dict[str, Any]]:
    """Wait until ``check`` (a JS expression over ``rows``) holds; the rows then."""
    tab.page.wait_for_function(
        f"() => {{ const rows = ({ROWS})(); return {check}; }}", timeout=timeout * 1000
    )
    return rows(tab)


def show_panel(tab: LabPage) -> None:
    tab.page.evaluate("() => window.jupyterapp.shell.activateById('jupyter-recap-agents')")
    tab.page.wait_for_selector("#jupyter-recap-agents .jp-RecapAgents-list", state="visible")


#: A notification the rows on the page call for is on screen within this (it is emitted in the
#: same update, and drawn on a later frame).
TOAST_SETTLE_MS = 500

USAGE_LINE = "#jupyter-recap-agents .jp-RecapAgents-usage:not([hidden])"

# Where the panel's parts are: row heights, the header's top and the usage line's bottom
# against the panel's, which of panel and list scroll.
LAYOUT = """() => {
  const panel = document.getElementById('jupyter-recap-agents');
  const box = panel.getBoundingClientRect();
  const at = (name) => panel.querySelector(name).getBoundingClientRect();
  return {
    rows: [...panel.querySelectorAll('.jp-RecapAgents-row')]
      .map(row => row.getBoundingClientRect().height),
    header_top: at('.jp-RecapAgents-header').top - box.top,
    usage_bottom: box.bottom - at('.jp-RecapAgents-usage').bottom,
    panel_scrolls: getComputedStyle(panel).overflowY,
    list_scrolls: getComputedStyle(panel.querySelector('.jp-RecapAgents-body')).overflowY,
  };
}"""

#: A compact row: two lines (name and time; state and the recap's first line), about 40 px.
COMPACT_ROW_PX = 44


def wait_usage(tab: LabPage, *parts: str, timeout: float = 20) -> str:
    """Wait until the panel's usage line holds every one of ``parts``; the line then."""
    tab.page.wait_for_function(
        """([selector, parts]) => {
          const text = document.querySelector(selector)?.textContent ?? '';
          return parts.every(part => text.includes(part));
        }""",
        arg=[USAGE_LINE, list(parts)],
        timeout=timeout * 1000,
    )
    return str(tab.page.text_content(USAGE_LINE))


def spend(lab: LabServer) -> None:
    """Two paid model calls in the person's usage ledger, as kernels write them."""
    ledger = UsageLedger(lab.root.parent / "recap-home")  # the server's store (labserver.py)
    for automatic, cost in [(True, 0.0021), (False, 0.0010)]:
        ticket = ledger.start("openai:gpt-4o-mini", automatic=automatic)
        assert ticket is not None
        ledger.finish(ticket, tokens_in=9_000, tokens_out=650, estimated=False, cost=cost)


def toasts(tab: LabPage) -> list[str]:
    return list(tab.page.evaluate("() => window._toasts"))


def title(tab: LabPage) -> str:
    return str(tab.page.evaluate("() => document.title"))


def active_cell(tab: LabPage, name: str) -> int:
    return int(
        tab.page.evaluate(
            """(name) => {
              const w = window.jupyterapp.shell.currentWidget;
              return w && w.context.path === name ? w.content.activeCellIndex : -1;
            }""",
            name,
        )
    )


def test_which_agent_needs_me(browser: BrowserContext, lab: LabServer) -> None:
    lab.write_notebook(BILLING, BILLING_CELLS)
    lab.write_notebook(FRONT, FRONT_CELLS)
    tab = LabPage.open(browser, lab, BILLING)
    prepare(tab, BILLING, ["Totals fixed in totals.py.", "Rounding now half-even."])
    billing = tab.kernel_id(BILLING)
    tab.open_document(FRONT)
    prepare(tab, FRONT, ["Churn is 4% this quarter."])
    front = tab.kernel_id(FRONT)
    tab.activate(FRONT)
    tab.wait_focus_known(FRONT)
    tab.wait_focus_known(BILLING, focused=False)
    show_panel(tab)
    tab.page.evaluate(WATCH)
    listed = wait_rows(tab, "rows.length === 2")
    assert {row["name"] for row in listed} == {BILLING, FRONT}
    # Offline recaps call no model: nothing spent yet, read when the panel was shown.
    assert wait_usage(tab, "Recaps today:") == "Recaps today: no model calls"
    # Compact rows between a header and a usage line that stay where they are: only the list
    # between them scrolls.
    layout = tab.page.evaluate(LAYOUT)
    assert all(height <= COMPACT_ROW_PX for height in layout["rows"]), layout
    assert abs(layout["header_top"]) < 1 and abs(layout["usage_bottom"]) < 1, layout
    assert (layout["panel_scrolls"], layout["list_scrolls"]) == ("hidden", "auto"), layout

    # A turn in the notebook being looked at: no mark, no notification. Recaps were paid for
    # meanwhile; the kernel's report (a push) is when the panel reads today's cost again.
    spend(lab)
    assert tab.run_as_cell(FRONT, FRONT_CELLS[1], "cell-1") == "ok"
    line = wait_usage(tab, "2 model calls (1 automatic)", "~$0.0031")
    assert line == "Recaps today: 2 model calls (1 automatic) · 19.3k tokens · ~$0.0031"
    # The ended turn reached the row (it has an activity now, and runs no more): unmarked.
    ended = f"rows.some(r => r.kernel === {front!r} && r.activity && r.state !== 'running')"
    [looked_at] = [row for row in wait_rows(tab, ended) if row["kernel"] == front]
    assert (looked_at["state"], looked_at["marked"]) == ("idle", False)
    # Its disclosure button shows the rest of the row, and opens nothing.
    selector = f'.jp-RecapAgents-row[data-kernel-id="{front}"]'
    tab.page.click(f"{selector} .jp-RecapAgents-toggle")
    assert tab.page.get_attribute(f"{selector} .jp-RecapAgents-toggle", "aria-expanded") == "true"
    assert tab.page.is_visible(f"{selector} .jp-RecapAgents-path")
    box = tab.page.locator(selector).bounding_box()
    assert box is not None and box["height"] > COMPACT_ROW_PX
    tab.page.click(f"{selector} .jp-RecapAgents-toggle")
    assert not tab.page.is_visible(f"{selector} .jp-RecapAgents-path")
    assert active_cell(tab, FRONT) >= 0  # still the current notebook: nothing was opened

    # The background notebook's agent finishes: its row goes to the top, marked.
    assert tab.run_as_cell(BILLING, BILLING_CELLS[1], "cell-1") == "ok"
    top = wait_rows(tab, f"rows[0].kernel === {billing!r} && rows[0].needs === 'finished'")[0]
    assert top["marked"] and top["state"] == "finished"
    tab.page.wait_for_function(
        "() => window._toasts.some(t => t.includes('billing.ipynb: the agent finished'))",
        timeout=20_000,
    )
    assert title(tab).startswith("(1) ")
    # The notification carries the first sentence of the recap the kernel drafted meanwhile.
    recap = wait_rows(tab, f"rows[0].kernel === {billing!r} && rows[0].recap !== ''")[0]["recap"]
    [toast] = [t for t in toasts(tab) if BILLING in t]
    assert "billing.ipynb: the agent finished — " in toast
    assert recap.split(". ")[0][:40] in toast

    # A second turn ends in the same absence: the row stays marked, no second notification,
    # also once that turn's own recap is on the row (when a notification would be sent).
    assert tab.run_as_cell(BILLING, BILLING_CELLS[3], "cell-3") == "ok"
    wait_rows(tab, f"rows[0].kernel === {billing!r} && rows[0].recap !== {recap!r}")
    tab.page.wait_for_timeout(TOAST_SETTLE_MS)
    assert [t for t in toasts(tab) if BILLING in t] == [toast]
    assert not any(FRONT in t for t in toasts(tab))
    assert rows(tab)[0]["kernel"] == billing and title(tab).startswith("(1) ")

    # The panel's state lives in the server: a reload keeps it (and notifies nothing again).
    tab.reload(BILLING, FRONT)
    show_panel(tab)
    tab.page.evaluate(WATCH)
    after = wait_rows(tab, f"rows.length === 2 && rows[0].kernel === {billing!r}")[0]
    assert after["marked"] and after["needs"] == "finished"
    # The title is counted from the same rows the notifier reads: they have been seen.
    tab.page.wait_for_function("() => document.title.startsWith('(1) ')")
    tab.page.wait_for_timeout(TOAST_SETTLE_MS)
    assert toasts(tab) == []

    # Opening the row goes to the cell where the work stopped: the latest agent cell.
    tab.page.click(f'.jp-RecapAgents-row[data-kernel-id="{billing}"]')
    tab.page.wait_for_function(
        "(name) => window.jupyterapp.shell.currentWidget?.context?.path === name", arg=BILLING
    )
    tab.page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.content.activeCellIndex === 3"
    )
    opened = wait_rows(tab, f"rows.every(r => r.kernel !== {billing!r} || !r.marked)")
    assert not any(row["marked"] for row in opened)
    tab.page.wait_for_function("() => !document.title.startsWith('(')")

    # A failed cell, then a recap: the banner links the cell it names, and selects it.
    assert tab.run_as_cell(BILLING, BILLING_CELLS[2], "cell-2") == "error"
    assert tab.run_as_cell(BILLING, "%recap", "cell-recap") == "ok"
    tab.select_cell(BILLING, 0)
    link = tab.page.wait_for_selector(
        '.jp-RecapBanner-mount.jp-mod-live a.jp-RecapBanner-link[data-cell-id="cell-2"]'
    )
    assert link is not None and (link.text_content() or "").startswith("In[")
    link.click()
    tab.page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.content.activeCellIndex === 2"
    )
    # The row shows the same recap, its stop cell now the failed one.
    row = wait_rows(tab, f"rows.some(r => r.kernel === {billing!r} && r.recap.includes('In['))")
    assert any(r["kernel"] == billing for r in row)

    # A restart of the background kernel shows in its row.
    lab.api("POST", f"api/kernels/{billing}/restart", {})
    restarted = wait_rows(
        tab, f"rows.some(r => r.kernel === {billing!r} && r.events.includes('restart'))"
    )
    assert any("restart" in r["events"] for r in restarted if r["kernel"] == billing)
    assert tab.errors == []
