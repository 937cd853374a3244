"""Jupyter AI chats in a real JupyterLab and chromium: the test persona "Claude" at work.

The persona (tests/persona/) runs behind Jupyter AI's own ACP client, so every message it leaves
in the chat is one the real client wrote; it edits and runs the notebook it is asked about. The
page shows the chat's row in the Agents panel, the notification while the person is away, the
chat's recap, and, back at the notebook, the line saying what the agent did there.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from chatkit import Chat, chat_lab
from labfocus import ROW_RECAP, LabPage
from labserver import LabServer
from playwright.sync_api import BrowserContext

MOVE = "mv models/churn.pkl models/old/"
TOASTS = "() => [...document.querySelectorAll('.Toastify__toast')].map(t => t.textContent)"
ROW = "#jupyter-recap-agents li.jp-RecapAgents-row"
ROWS = f"() => [...document.querySelectorAll('{ROW}')].map(r => r.dataset.rowId)"
OUTSIDE = ".jp-RecapBanner-outsideLine"

#: Short timers (the server's ``c.Recap``): a chat's recap a moment after its turn stops.
TIMERS = ("--Recap.away_seconds=1", "--Recap.post_turn_seconds=0.3")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    env = {"JUPYTER_RECAP_MODEL": "offline"}
    with chat_lab(tmp_path_factory.mktemp("labchats"), env, args=TIMERS) as server:
        yield server


def open_chat(tab: LabPage, path: str) -> None:
    """Open the chat document ``path`` in the page (it becomes the current widget)."""
    tab.page.evaluate(
        "(path) => window.jupyterapp.commands.execute('docmanager:open', {path}).then(() => null)",
        path,
    )
    tab.page.wait_for_function(
        """(path) => {
          const w = window.jupyterapp.shell.currentWidget;
          return w && w.context && w.context.path === path;
        }""",
        arg=path,
        timeout=60_000,
    )


def show_agents(tab: LabPage) -> None:
    tab.page.evaluate("() => window.jupyterapp.shell.activateById('jupyter-recap-agents')")
    tab.page.wait_for_selector("#jupyter-recap-agents", state="visible")


def row(tab: LabPage, row_id: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = tab.page.evaluate(
        """([selector, id, recap]) => {
          const row = [...document.querySelectorAll(selector)].find(r => r.dataset.rowId === id);
          if (!row) return null;
          const text = (name) => row.querySelector(name)?.textContent ?? '';
          return {
            state: row.dataset.state, waiting: row.classList.contains('jp-RecapAgents-row-waiting'),
            agent: text('.jp-RecapAgents-agent'), status: text('.jp-RecapAgents-stateText'),
            recap: text(recap), html: row.innerHTML,
          };
        }""",
        [ROW, row_id, ROW_RECAP],
    )
    return found


def wait_row(tab: LabPage, row_id: str, check: str, timeout: float = 60) -> dict[str, Any]:
    """Wait until the row's JS condition ``check`` (over ``r``, the row element) holds."""
    tab.page.wait_for_function(
        f"""([selector, id]) => {{
          const r = [...document.querySelectorAll(selector)].find(x => x.dataset.rowId === id);
          return !!r && ({check});
        }}""",
        arg=[ROW, row_id],
        timeout=timeout * 1000,
    )
    found = row(tab, row_id)
    assert found is not None
    return found


def toasts(tab: LabPage, text: str) -> list[str]:
    return [t for t in tab.page.evaluate(TOASTS) if text in t]


def test_an_agent_that_waits_for_approval_while_the_person_is_away(
    browser: BrowserContext, lab: LabServer
) -> None:
    lab.write_notebook("churn.ipynb", ["import pandas as pd", "df = pd.DataFrame({'a': [1]})"])
    chat = Chat.create(lab, "churn.chat")
    notes = Chat.create(lab, "notes.chat")
    tab = LabPage.open(browser, lab, "churn.ipynb")
    open_chat(tab, "churn.chat")
    show_agents(tab)

    # The person looks at the chat and asks; the agent starts working.
    chat.post("@Claude fix churn.ipynb, fail and approval, slow")
    wait_row(tab, "chat:churn.chat", "r.dataset.state === 'running'")
    # They switch to another browser tab while it runs; another chat's agent finishes then.
    tab.set_visible(False)
    notes.post("@Claude hello")
    notes.wait_for_reply()
    wait_row(tab, "chat:notes.chat", "r.dataset.needsYou === 'finished'")
    ours = ("chat:notes.chat", "chat:churn.chat")
    assert [r for r in tab.page.evaluate(ROWS) if r in ours] == list(ours)
    # Then churn's agent asks for approval: its row moves to the top (above every other row,
    # those of this module's other chats included).
    waiting = wait_row(tab, "chat:churn.chat", "r.classList.contains('jp-RecapAgents-row-waiting')")
    assert tab.page.evaluate(ROWS)[0] == "chat:churn.chat"
    assert [r for r in tab.page.evaluate(ROWS) if r in ours] == list(reversed(ours))
    assert waiting["agent"].startswith("Claude")
    assert MOVE in waiting["status"]
    # Away: told at once, with what waits.
    asks = "churn.chat: Claude is waiting for your approval"
    tab.page.wait_for_function(
        f"(asks) => ({TOASTS})().some(t => t.includes(asks))", arg=asks, timeout=30_000
    )
    [toast] = toasts(tab, "churn.chat: Claude is waiting")
    assert MOVE in toast
    # While away the chat's recap is written: the ask, the failure, what waits.
    recap = wait_row(tab, "chat:churn.chat", f"r.querySelector({ROW_RECAP!r})?.textContent")
    assert "Fix churn.ipynb" in recap["recap"]  # the ask
    assert "KeyError: 'region'" in recap["recap"]
    assert recap["recap"].rstrip(".").endswith(f"Waiting for your approval: {MOVE}")

    # Back, at the notebook the agent worked on: one line says what changed there, and who.
    tab.set_visible(True)
    tab.set_window_focus(True)
    tab.activate("churn.ipynb")
    tab.page.wait_for_selector(OUTSIDE, state="visible", timeout=30_000)
    line = tab.page.inner_text(OUTSIDE)
    assert line.startswith(
        "While you were away: 1 cell edited, 1 ran (1 failed) — by Claude via churn.chat"
    )
    # "1 failed" links too: to the cell whose run failed, the one the agent edited here.
    links = tab.page.eval_on_selector_all(
        f"{OUTSIDE} a.jp-RecapBanner-link", "as => as.map(a => [a.textContent, a.dataset.cellId])"
    )
    assert [text for text, _ in links] == ["1 cell edited", "1 failed"], links
    assert links[0][1] == links[1][1], links
    # Its cell link selects the cell the agent edited (the last one).
    tab.page.click(f"{OUTSIDE} a.jp-RecapBanner-link")
    active = tab.page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.content.activeCellIndex"
    )
    assert active == 1

    # The person approves from the chat: the agent finishes, the row stops waiting.
    call = chat.wait_for_permission()
    chat.answer(call, "allow")
    chat.wait_for_reply()
    # (The allowed command runs first: the row is "running" again for a moment.)
    done = wait_row(tab, "chat:churn.chat", "!['waiting', 'running'].includes(r.dataset.state)")
    assert done["state"] in ("finished", "errored")  # the person is still at the notebook
    assert not done["waiting"]
    assert tab.errors == []
    chat.close()
    notes.close()
    tab.page.close()


def test_no_notification_while_the_person_watches_the_chat(
    browser: BrowserContext, lab: LabServer
) -> None:
    lab.write_notebook("plain.ipynb", ["x = 1"])
    chat = Chat.create(lab, "watched.chat")
    tab = LabPage.open(browser, lab, "plain.ipynb")
    open_chat(tab, "watched.chat")
    show_agents(tab)
    chat.post("@Claude tidy up, approval")
    wait_row(tab, "chat:watched.chat", "r.classList.contains('jp-RecapAgents-row-waiting')")
    time.sleep(1.5)  # a notification would have shown by now (it is sent at once)
    assert toasts(tab, "watched.chat") == []
    call = chat.wait_for_permission()
    chat.answer(call, "reject")
    chat.wait_for_reply()
    chat.close()
    assert tab.errors == []
    tab.page.close()


def test_hostile_chat_content_stays_text(browser: BrowserContext, lab: LabServer) -> None:
    from chatkit import FAKE_GITHUB_TOKEN, FAKE_OPENAI_KEY

    lab.write_notebook("host.ipynb", ["x = 1"])
    chat = Chat.create(lab, "hostile.chat")
    tab = LabPage.open(browser, lab, "host.ipynb")
    tab.page.evaluate("() => { window.__pwned = 0; window.alert = () => { window.__pwned++; }; }")
    show_agents(tab)
    chat.post("@Claude hostile huge")
    chat.wait_for_reply(timeout=90)
    found = wait_row(tab, "chat:hostile.chat", "r.dataset.state !== 'running'", timeout=60)
    assert "<img" not in found["html"].replace("&lt;img", "")  # shown as text, never as HTML
    assert FAKE_OPENAI_KEY not in found["html"] and FAKE_GITHUB_TOKEN not in found["html"]
    assert tab.page.evaluate("() => window.__pwned") == 0
    listing = lab.api("GET", "jupyter-recap/api/agents")
    assert len(str(listing)) < 100_000  # a 2 MB tool output is not carried along
    chat.close()
    tab.page.close()
