"""A notebook changed while the person was away, in a real JupyterLab and chromium.

The person saves and switches to another browser tab; an agent in a terminal rewrites the
notebook file (cells added, edited, deleted). Back, one line above the active cell and the
notebook's row in the Agents panel say what changed and that it happened on disk; the link of
the added cells reloads the notebook from disk and selects the first of them. A notebook
nobody changed shows no line.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from labfocus import LabPage, reports_unfocused
from labserver import LabServer, offline_lab
from playwright.sync_api import BrowserContext

pytestmark = pytest.mark.timeout(240)

OUTSIDE = ".jp-RecapBanner-outsideLine"
ROW_LINE = "#jupyter-recap-agents .jp-RecapAgents-row .jp-RecapAgents-outside"
LINE = "While you were away: 2 cells added, 1 edited, 1 deleted — on disk"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    yield from offline_lab(tmp_path_factory.mktemp("labchanges"))


def save(tab: LabPage, name: str) -> None:
    """Save from the page, as the person does (the page then tells the server it saw it)."""
    tab.activate(name)
    try:
        with tab.page.expect_request(lambda r: "/jupyter-recap/api/seen" in r.url) as seen:
            tab.page.evaluate(
                "() => window.jupyterapp.commands.execute('docmanager:save').then(() => 0)"
            )
    except Exception:
        print([r for r, _ in tab.reports], tab.console[-20:], tab.errors)
        raise
    seen.value.response()  # the server has read the file when it answers


def hide(tab: LabPage, lab: LabServer, name: str) -> None:
    """The person switches to another browser tab; the server has read what they saw when this
    returns (the page's report that it is hidden is answered first, then a ``seen`` is)."""
    with tab.page.expect_response(
        lambda r: "/jupyter-recap/api/focus" in r.url and reports_unfocused(r.request.post_data)
    ):
        tab.set_visible(False)
    lab.api("POST", "jupyter-recap/api/seen", {"path": name, "client_id": "test"})


def rewrite(lab: LabServer, name: str) -> None:
    """An agent in a terminal: one cell edited, one deleted, two added, written to the file."""
    file = lab.root / name
    notebook: dict[str, Any] = json.loads(file.read_text())
    cells = notebook["cells"]
    cells[1]["source"] = "rows = load('2024.csv')"
    del cells[3]
    for cell_id, source in (("plot-rows", "plot(rows)"), ("save-rows", "save(rows)")):
        cells.append(
            {
                "cell_type": "code",
                "id": cell_id,
                "metadata": {},
                "source": source,
                "outputs": [],
                "execution_count": None,
            }
        )
    file.write_text(json.dumps(notebook, indent=1))


def test_a_notebook_rewritten_on_disk_says_what_changed_on_return(
    browser: BrowserContext, lab: LabServer
) -> None:
    name, quiet = "ledger.ipynb", "quiet.ipynb"
    sources = ["%load_ext jupyter_recap", "rows = [1, 2]", "total = sum(rows)", "print(total)"]
    lab.write_notebook(name, sources)
    lab.write_notebook(quiet, ["x = 1"])
    tab = LabPage.open(browser, lab, name)
    tab.run_cells(name, [0])
    tab.prepare_kernel(name)
    tab.open_document(quiet)
    tab.activate(name)
    save(tab, quiet)
    save(tab, name)
    tab.page.evaluate("() => window.jupyterapp.shell.activateById('jupyter-recap-agents')")

    hide(tab, lab, name)
    rewrite(lab, name)
    # While away, the notebook's row says it already.
    tab.page.wait_for_function(
        """([selector, line]) => [...document.querySelectorAll(selector)]
          .some(node => node.textContent.includes(line))""",
        arg=[ROW_LINE, LINE],
        timeout=30_000,
    )

    started = time.monotonic()
    tab.set_visible(True)
    tab.set_window_focus(True)
    tab.activate(name)
    tab.page.wait_for_selector(OUTSIDE, state="visible", timeout=30_000)
    assert time.monotonic() - started < 10
    assert tab.page.inner_text(OUTSIDE).startswith(LINE)
    links = tab.page.eval_on_selector_all(
        f"{OUTSIDE} a.jp-RecapBanner-link", "links => links.map(a => a.textContent)"
    )
    assert links == ["2 cells added", "1 edited"]
    # The page still shows the file as it was: the link reloads it, then selects the cell.
    tab.page.click(f"{OUTSIDE} a.jp-RecapBanner-link >> nth=0")
    tab.page.wait_for_function(
        """() => {
          const notebook = window.jupyterapp.shell.currentWidget.content;
          return notebook.activeCell && notebook.activeCell.model.id === 'plot-rows';
        }""",
        timeout=30_000,
    )
    sources_now = tab.page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.content.model.cells.length"
    )
    assert sources_now == 5

    # The other notebook, which nothing changed, has no line.
    tab.activate(quiet)
    tab.page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.context.path === 'quiet.ipynb'"
    )
    shown = tab.page.evaluate(
        """(selector) => {
          const line = window.jupyterapp.shell.currentWidget.node.querySelector(selector);
          return !!line && line.checkVisibility();
        }""",
        OUTSIDE,
    )
    assert not shown
    assert tab.errors == []
