"""The while-away line with real-time collaboration on, in a real JupyterLab and chromium.

With jupyter-collaboration the page's edits and runs reach the notebook file through the
collaboration room's autosave, a second or more after they happen (a long cell's result when it
ends), so after the person has left. Those saves are the person's own work: no "another client"
line, in the page or in the notebook's record. Another client still gets its line: a second
client of the kernel running a cell, a save through the contents API.

The lab also runs jupyter_server_mcp (Jupyter AI's MCP server) with Jupyter AI's notebook tools,
and an MCP client that calls itself "Claude Code" edits the notebook through them after the page
was reloaded: the line names it. The page's visibility is faked the way tests/labfocus.py fakes
it, so it still reads "visible" while the page unloads for the reload, as in any browser that
does not update it then: the unloading page used to report the notebook as looked at again after
saying it was leaving, and the server believed the gone page until its heartbeat timed out (45
s), so nothing done in that time was news.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kernelutil import execute
from labfocus import EXT, LabPage, reports_unfocused
from labserver import LabServer, running_lab
from playwright.sync_api import BrowserContext

pytestmark = pytest.mark.timeout(300)

OUTSIDE = ".jp-RecapBanner-outsideLine"
AWAY = "While you were away"
#: Jupyter AI's notebook tools, served by jupyter_server_mcp on a port the system picks.
TOOLS = ("add_cell", "edit_cell")
MCP_ARGS = (
    "--MCPExtensionApp.mcp_port=0",
    "--MCPServer.host=127.0.0.1",
    "--MCPExtensionApp.use_tool_discovery=False",
    *(f"--MCPExtensionApp.mcp_tools=jupyter_ai_tools.toolkits.notebook:{t}" for t in TOOLS),
)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    tmp = tmp_path_factory.mktemp("rtcchanges")
    env = {"JUPYTER_RECAP_MODEL": "offline", "JUPYTER_RECAP_LOG": str(tmp / "recap.log")}
    with running_lab(
        tmp, env, collaboration=True, args=MCP_ARGS, server_extensions=["jupyter_server_mcp"]
    ) as server:
        yield server


def until(check: Callable[[], Any], seconds: float = 30, what: str = "") -> Any:
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what or check}: {value!r}"
        time.sleep(0.1)


def until_line(lab: LabServer, name: str, expected: str, seconds: float = 30) -> None:
    """Wait until the notebook's while-away line reads ``expected`` (the last one seen, if not)."""
    seen: list[str | None] = []

    def check() -> bool:
        seen.append(line_of(lab, name))
        return seen[-1] == expected

    try:
        until(check, seconds, expected)
    except AssertionError as error:
        raise AssertionError(f"{error}; the line read {seen[-1]!r}") from None


def line_of(lab: LabServer, name: str) -> str | None:
    """The notebook's while-away line as the page reads it (with the agents list)."""
    outside = lab.api("GET", "jupyter-recap/api/agents").get("outside", {}).get(name)
    return None if outside is None else str(outside["text"])


def cells_of(lab: LabServer, name: str) -> list[tuple[str, int | None]]:
    """(source, execution count) of each cell of the notebook file.

    Jupyter's "atomic" save keeps a backup but writes the file in place, so a read can meet it
    empty or cut short while the room saves: such a read is tried again.
    """
    deadline = time.monotonic() + 10
    while True:
        try:
            cells = json.loads((lab.root / name).read_text())["cells"]
        except json.JSONDecodeError:
            assert time.monotonic() < deadline, f"{name} stayed unreadable for 10 s"
            time.sleep(0.05)
            continue
        return [("".join(c["source"]), c.get("execution_count")) for c in cells]


def leave(tab: LabPage) -> None:
    """The person switches to another browser tab (the server has heard it on return)."""
    with tab.page.expect_response(
        lambda r: "/jupyter-recap/api/focus" in r.url and reports_unfocused(r.request.post_data)
    ):
        tab.set_visible(False)


def come_back(tab: LabPage, name: str) -> None:
    tab.set_visible(True)
    tab.set_window_focus(True)
    tab.activate(name)


def record_events(tab: LabPage, name: str) -> list[str]:
    """The events of the notebook's record (its kernel's transcript)."""
    return list(
        tab.kernel_eval(name, f"[e.text for e in {EXT}.transcript.entries if e.kind == 'event']")
    )


def shown_line(tab: LabPage) -> str | None:
    """The while-away line above the active cell, if one is shown."""
    text = tab.page.evaluate(
        """(selector) => {
          const line = window.jupyterapp.shell.currentWidget.node.querySelector(selector);
          return line && line.checkVisibility() ? line.textContent : null;
        }""",
        OUTSIDE,
    )
    return None if text is None else str(text)


def test_the_persons_own_edit_and_run_saved_by_the_room_are_no_news(
    browser: BrowserContext, lab: LabServer
) -> None:
    name = "own.ipynb"
    sleepy = "import time\ntime.sleep(3)\ny = 2"
    lab.write_notebook(name, ["%load_ext jupyter_recap", "x = 1", sleepy, "z = 3"])
    tab = LabPage.open(browser, lab, name)
    tab.run_cells(name, [0])
    tab.prepare_kernel(name)
    tab.wait_focus_known(name)
    until(lambda: cells_of(lab, name)[0][1] == 1, what="the room saved the first run")

    # The person types in a cell, runs the slow one with Ctrl+Enter and leaves at once: the
    # edit and the run reach the file through the room's autosave, after they left.
    tab.page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(1).locator(".cm-content").click()
    tab.page.keyboard.press("End")
    tab.page.keyboard.type("0")
    tab.page.keyboard.press("Escape")
    tab.select_cell(name, 2)
    tab.page.keyboard.press("Control+Enter")
    leave(tab)
    saved = until(
        lambda: (cells := cells_of(lab, name))[1][0] == "x = 10" and cells[2][1] and cells,
        what="the room saved the page's edit and run",
    )
    assert saved[2] == (sleepy, 2)
    time.sleep(2.5)  # past the next poll of the file, and the save's own event
    assert line_of(lab, name) is None

    come_back(tab, name)
    time.sleep(1)
    assert shown_line(tab) is None

    # A real other client of the kernel still gets its line, in the page and in the record,
    # and the record holds no line about the person's own work.
    kernel_id = tab.kernel_id(name)
    leave(tab)
    other = lab.connect(kernel_id)
    try:
        execute(other, "w = 4")
    finally:
        other.stop_channels()
    ran = "While you were away: 1 cell ran — by another client of the kernel"
    until_line(lab, name, ran)
    come_back(tab, name)
    tab.page.wait_for_selector(OUTSIDE, state="visible", timeout=30_000)
    assert tab.page.inner_text(OUTSIDE).startswith(ran)
    events = until(lambda: record_events(tab, name), what="the line in the record")
    assert [e for e in events if AWAY in e] == [ran]

    # And a save through the contents API is another client of the server's (a moment after
    # the person left: the snapshot of what they saw is taken off the request's path).
    leave(tab)
    time.sleep(1)
    model = lab.api("GET", f"api/contents/{name}")
    model["content"]["cells"][3]["source"] = "z = 30"
    lab.api("PUT", f"api/contents/{name}", {"type": "notebook", "content": model["content"]})
    edited = "While you were away: 1 cell edited — by another client of the server"
    until_line(lab, name, edited)
    assert tab.errors == []
    tab.page.close()


def test_jupyter_server_mcp_edits_after_a_reload_name_the_client(
    browser: BrowserContext, lab: LabServer
) -> None:
    name = "reloaded.ipynb"
    lab.write_notebook(name, ["%load_ext jupyter_recap", "x = 1", "y = x + 1"])
    tab = LabPage.open(browser, lab, name)
    tab.run_cells(name, [0])
    # The person looked away and back once; later they reload the page and leave again.
    leave(tab)
    come_back(tab, name)
    # The reload restores the notebook from the saved workspace (tests/labfocus.py).
    until(
        lambda: name in json.dumps(lab.api("GET", f"lab/api/workspaces/{Path(name).stem}")),
        what="the workspace saved with the notebook open",
    )
    tab.reload(name)
    leave(tab)

    claude_code_edits(lab, name)
    line = "While you were away: 1 cell added, 1 edited — by Claude Code"
    until_line(lab, name, line)
    assert cells_of(lab, name)[1][0] == "x = 2"
    come_back(tab, name)
    tab.page.wait_for_selector(OUTSIDE, state="visible", timeout=30_000)
    assert tab.page.inner_text(OUTSIDE).startswith(line)
    tab.page.close()


def claude_code_edits(lab: LabServer, name: str) -> None:
    """An MCP client named Claude Code adds a cell and edits one through jupyter_server_mcp
    (on a thread: Playwright's sync API holds this one's event loop)."""
    import mcp.types
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    [info_file] = (lab.root.parent / "runtime").glob("jpserver-mcp-*.json")
    url = json.loads(info_file.read_text())["url"]
    claude_code = mcp.types.Implementation(name="claude-code", title="Claude Code", version="2")

    async def edit() -> None:
        async with Client(StreamableHttpTransport(url), client_info=claude_code) as client:
            await client.call_tool("add_cell", {"file_path": name, "content": "plot(x)"})
            await client.call_tool(
                "edit_cell", {"file_path": name, "cell_id": "cell-1", "content": "x = 2"}
            )

    failure: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(edit())
        except BaseException as error:  # noqa: BLE001 - re-raised on the test's thread
            failure.append(error)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(120)
    if failure:
        raise failure[0]
    assert not worker.is_alive(), "the MCP client did not finish"


def test_changes_through_the_shared_document_are_marked_and_the_persons_edit_stays(
    browser: BrowserContext, lab: LabServer
) -> None:
    """The 200-cell review with collaboration on: the person edits cell 5 and leaves without
    saving; another client of the room that says it is Ada adds cells at 17 and 150, edits 88,
    writes a failed run into 60 and deletes 120. Back: the four marks name Ada, the deleted cell
    is listed, next-change visits the four in order, and the person's edit of cell 5 is there."""
    from reviewkit import active_id, command, start, until_marks
    from yroom import RtcNotebook

    name = "review-rtc.ipynb"
    start(lab, name)
    tab = LabPage.open(browser, lab, name, width=1200, height=900)
    tab.select_cell(name, 0)
    mine = 'x_5 = "the person\'s own edit"'
    tab.page.evaluate(
        "(text) => window.jupyterapp.shell.currentWidget.content.widgets[5]"
        ".model.sharedModel.setSource(text)",
        mine,
    )
    with tab.page.expect_response(
        lambda r: "/jupyter-recap/api/focus" in r.url and reports_unfocused(r.request.post_data)
    ):
        tab.set_visible(False)

    ada = RtcNotebook(lab, name, {"username": "ada", "display_name": "Ada"})
    try:
        ada.edit("c088", "x_88 = 88 * 2  # doubled")
        ada.ran("c060", 7, "KeyError: 'region'")
        ada.delete("c120")
        ids = ada.cell_ids()
        ada.insert(ids.index("c149") + 1, "new-150", "plot(x_149)")
        ada.insert(17, "new-17", "load('2024.csv')")
        until(lambda: "— by Ada" in (line_of(lab, name) or ""), 60, "the line naming Ada")
    finally:
        ada.close()

    tab.set_visible(True)
    tab.set_window_focus(True)
    tab.activate(name)
    until_marks(tab, {"new-17": "added", "c060": "failed", "c088": "edited", "new-150": "added"})
    labels = tab.page.eval_on_selector_all(
        ".jp-RecapMark", "nodes => nodes.map(n => n.textContent)"
    )
    assert all(label.endswith("— Ada") for label in labels), labels
    tab.page.wait_for_function(
        "() => document.querySelector('.jp-RecapBanner-outsideLine')?.textContent"
        ".includes('0 of 4 reviewed')",
        timeout=30_000,
    )
    visited: list[str] = []
    for _ in range(4):
        command(tab, "jupyter-recap:next-change")
        tab.page.wait_for_function(
            "(before) => window.jupyterapp.shell.currentWidget.content.activeCell.model.id"
            " !== before",
            arg=visited[-1] if visited else "c000",
            timeout=10_000,
        )
        visited.append(active_id(tab))
    assert visited == ["new-17", "c060", "c088", "new-150"]
    cell_five = tab.page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.content.model.cells.get(5).sharedModel"
        ".getSource()"
    )
    assert cell_five == mine
    assert tab.errors == []
