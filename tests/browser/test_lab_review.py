"""Reviewing what an agent changed, in a real JupyterLab and chromium, on a 200-cell notebook.

The person saves and switches to another browser tab; an outside writer adds cells at positions
17 and 150, edits cell 88, runs cell 60 so that it fails and deletes cell 120 — once by writing
the file on disk, once through the server's contents API. Back: exactly the four changed cells
carry a mark (``data-recap-change``), the deleted one is listed with what it held, the line
counts "0 of 4 reviewed"; ``jupyter-recap:next-change`` visits the four in notebook order in four
presses, scrolling to each; the diff of cell 88 holds the old and the new source; the count ends
at "4 of 4 reviewed". Away again, the writer edits cell 88 once more: its mark is back.

Real-time collaboration, where the person's unsaved edit must survive the writer's changes, is
in test_lab_changes_collaboration.py.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from labfocus import LabPage, reports_unfocused
from labserver import LabServer
from playwright.sync_api import BrowserContext
from reviewkit import active_id, code, command, marks, source, start, until_marks

pytestmark = pytest.mark.timeout(300)

DIFF = ".jp-RecapDiff"


def change(cells: list[dict[str, Any]]) -> None:
    """The writer's work: two cells added, one edited, one run that failed, one deleted."""
    cells[88]["source"] = source(88, " * 2  # doubled")
    cells[60]["execution_count"] = 7
    cells[60]["outputs"] = [
        {"output_type": "error", "ename": "KeyError", "evalue": "'region'", "traceback": []}
    ]
    del cells[120]
    cells.insert(150, code("new-150", "plot(x_149)"))
    cells.insert(17, code("new-17", "load('2024.csv')"))


def write(lab: LabServer, name: str, how: str, edit: Any) -> None:
    if how == "disk":
        file = lab.root / name
        notebook = json.loads(file.read_text())
        edit(notebook["cells"])
        file.write_text(json.dumps(notebook, indent=1))
    else:
        content = lab.api("GET", f"api/contents/{name}")["content"]
        edit(content["cells"])
        lab.api("PUT", f"api/contents/{name}", {"type": "notebook", "content": content})


def leave(tab: LabPage, lab: LabServer, name: str) -> None:
    """Save, then switch tabs; the server has what the person saw when this returns."""
    with tab.page.expect_request(lambda r: "/jupyter-recap/api/seen" in r.url) as seen:
        tab.page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    seen.value.response()
    with tab.page.expect_response(
        lambda r: "/jupyter-recap/api/focus" in r.url and reports_unfocused(r.request.post_data)
    ):
        tab.set_visible(False)
    lab.api("POST", "jupyter-recap/api/seen", {"path": name, "client_id": "test"})


def away_line(lab: LabServer, name: str) -> str:
    """The notebook's while-away line, once the server has read what the writer did."""
    deadline = time.monotonic() + 30
    while True:
        line = lab.api("GET", "jupyter-recap/api/agents").get("outside", {}).get(name)
        if line is not None:
            return str(line["text"])
        assert time.monotonic() < deadline, "the server never read the change"
        time.sleep(0.2)


def come_back(tab: LabPage, name: str) -> None:
    tab.set_visible(True)
    tab.set_window_focus(True)
    tab.activate(name)


def line_text(tab: LabPage) -> str:
    return str(tab.page.inner_text(".jp-RecapBanner-outsideLine"))


@pytest.mark.parametrize("how", ["disk", "contents"])
def test_every_changed_cell_waits_for_review_and_next_change_visits_them(
    browser: BrowserContext, lab: LabServer, how: str
) -> None:
    name = f"review-{how}.ipynb"
    start(lab, name)
    tab = LabPage.open(browser, lab, name, width=1200, height=900)
    tab.page.evaluate("() => window.jupyterapp.shell.activateById('jupyter-recap-agents')")
    tab.activate(name)
    tab.select_cell(name, 0)
    leave(tab, lab, name)
    write(lab, name, how, change)
    away_line(lab, name)

    come_back(tab, name)
    # In notebook order (the JSON of the marks found is compared as written).
    until_marks(tab, {"new-17": "added", "c060": "failed", "c088": "edited", "new-150": "added"})
    tab.page.wait_for_function(
        "() => document.querySelector('.jp-RecapBanner-outsideLine')?.textContent"
        ".includes('0 of 4 reviewed')",
        timeout=30_000,
    )
    assert "1 deleted cell" in line_text(tab)
    tab.page.click(".jp-RecapReview-deletedToggle")
    tab.page.wait_for_selector("text=x_120 = 120", timeout=10_000)

    visited: list[str] = []
    for press in range(1, 5):
        command(tab, "jupyter-recap:next-change")
        try:
            tab.page.wait_for_function(
                "(count) => document.querySelectorAll('.jp-Cell[data-recap-change]').length"
                " === 4 - count",
                arg=press,
                timeout=20_000,
            )
        except Exception as timeout:
            raise AssertionError(
                f"press {press}: marks {marks(tab)}, active {active_id(tab)}, visited {visited}, "
                f"line {line_text(tab)!r}, requests {[r for r, _ in tab.reports][-12:]}"
            ) from timeout
        visited.append(active_id(tab))
        if visited[-1] == "c088":
            command(tab, "jupyter-recap:show-change")
            tab.page.wait_for_selector(DIFF, timeout=10_000)
            text = tab.page.inner_text(DIFF)
            assert "x_88 = 88\n" in text or "x_88 = 88 " in text, text
            assert "doubled" in text, text
        # The cell is on screen, where the command scrolled it.
        assert tab.page.evaluate(
            """() => {
              const cell = window.jupyterapp.shell.currentWidget.content.activeCell.node;
              const box = cell.getBoundingClientRect();
              return box.bottom > 0 && box.top < window.innerHeight;
            }"""
        )
    assert visited == ["new-17", "c060", "c088", "new-150"]
    tab.page.wait_for_function(
        "() => document.querySelector('.jp-RecapBanner-outsideLine')?.textContent"
        ".includes('4 of 4 reviewed')",
        timeout=30_000,
    )

    # Away again; the writer edits cell 88 once more: reviewed, it is marked again.
    tab.select_cell(name, 0)
    leave(tab, lab, name)

    def again(cells: list[dict[str, Any]]) -> None:
        cell = next(c for c in cells if c["id"] == "c088")
        cell["source"] = source(88, " * 3  # tripled")

    write(lab, name, how, again)
    away_line(lab, name)
    come_back(tab, name)
    until_marks(tab, {"c088": "edited"})
    assert tab.errors == []
