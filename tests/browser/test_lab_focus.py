"""The labextension in a real JupyterLab and chromium: focus reports reach the kernel, and the
recap drafted while you were away waits in the banner directly above the active cell.

Kernels use short timers (away 1.5 s, post-turn debounce 1 s) and the offline engine, except
one scenario that drafts through a fake OpenAI-compatible server.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fakellm import FakeLLM
from labfocus import EXT, LabPage
from labserver import LabServer, running_lab
from playwright.sync_api import BrowserContext, expect

pytestmark = pytest.mark.timeout(180)

#: ``JUPYTER_RECAP_UPDATE_SCREENSHOT=1`` refreshes docs/banner.png; otherwise the screenshot goes
#: to the test's temporary directory (a test run never touches the working tree).
SCREENSHOT = Path(__file__).parents[2] / "docs" / "banner.png"
UPDATE_SCREENSHOT = os.environ.get("JUPYTER_RECAP_UPDATE_SCREENSHOT", "") not in ("", "0")

#: Each notebook starts with this visible cell; the agent's scripted answers and the short timers
#: are set up with silent executions around it, so the notebooks look like real sessions.
LOAD = "%load_ext jupyter_recap"
TIMERS = {"away_seconds": 1.5, "post_turn_seconds": 1}

INVOICES = "%%agent\nWhy does invoices.ts fail its FK constraint after the v2 migration?"
INVOICES_REPLY = (
    "The FK on line 142 still points at customers_v1. "
    "Next: repoint it to customers_v2 and rerun the migration."
)

PLAN = """import jupyter_recap as jr
jr.todo_write([
    {"text": "migrate the billing tables to v2", "status": "completed"},
    {"text": "repoint the invoices FK to customers_v2", "status": "in_progress"},
    {"text": "migrate the remaining three tables", "status": "pending"},
    {"text": "backfill the v2 audit log", "status": "blocked", "note": "waiting for DBA access"},
])"""


def prepare(
    tab: LabPage,
    name: str,
    replies: list[str],
    run: int,
    config: dict[str, object] | None = None,
    env: dict[str, str] | None = None,
) -> None:
    """Script the agent's ``replies``, run cell 0 (``%load_ext``), set the timers (and
    ``config``), run the cells up to ``run``, and wait until the kernel heard the page's focus."""
    tab.kernel_exec(
        name,
        f"import os, agentmagic\nos.environ.update({env or {}!r})\n"
        "agent = agentmagic.install(get_ipython())\n"
        + "".join(f"agent.script.append(lambda prompt: print({text!r}))\n" for text in replies),
    )
    tab.run_cells(name, [0])
    tab.prepare_kernel(name)
    settings = {**TIMERS, **(config or {})}
    tab.kernel_exec(
        name, "".join(f"{EXT}.settings.{key} = {value!r}\n" for key, value in settings.items())
    )
    tab.run_cells(name, list(range(1, run)))
    tab.wait_focus_known(name)


def start(
    browser: BrowserContext,
    lab: LabServer,
    name: str,
    cells: list[str],
    run: int,
    replies: list[str],
) -> LabPage:
    """Open ``name`` with ``cells`` in a page of its own and :func:`prepare` it."""
    lab.write_notebook(name, cells)
    tab = LabPage.open(browser, lab, name)
    prepare(tab, name, replies, run)
    return tab


def come_back_after_away(tab: LabPage, name: str) -> dict[str, object]:
    """Hide the page until the kernel drafted its recap, then show it again."""
    tab.set_visible(False)
    banner = tab.wait_kernel(name, f"{EXT}.banner.state", lambda s: s == "shown")
    tab.set_visible(True)
    tab.wait_for_banner(name)
    return {"state": banner, **tab.mount_state(name)}


def test_recap_waits_above_the_active_cell(browser: BrowserContext, lab: LabServer) -> None:
    name = "invoices.ipynb"
    cells = [
        LOAD,
        "%%agent\nMigrate the billing tables to the v2 schema",
        INVOICES,
        "",
        "rates = load_rates('v2')",
    ]
    replies = ["Migrated 4 of 7 tables; invoices.ts fails its FK check.", INVOICES_REPLY]
    tab = start(browser, lab, name, cells, run=3, replies=replies)
    tab.kernel_exec(name, PLAN)
    tab.select_cell(name, 3)
    counts = tab.execution_counts(name)

    state = come_back_after_away(tab, name)
    assert state["in_active_cell"] and state["first_child"] and state["before_input"], state
    assert state["active_index"] == 3
    assert "Migrate the billing tables to the v2 schema" in str(state["text"])
    assert "Next: Repoint it to customers_v2 and rerun the migration." in str(state["text"])
    assert state["model"] == "offline" and state["reason"] == "away"
    # The agent's task list, as a progress bar (its ASCII form stays in the text/plain output).
    assert state["progress"] == {"value": 1, "max": 4, "label": "1/4 tasks · 1 blocked"}
    assert state["note"] is None
    # The output view (the one %load_ext displayed) stays hidden: exactly one banner shows.
    assert state["count"] == 1 and state["visible_banners"] == 1
    assert tab.execution_counts(name) == counts, "no cell ran"
    assert tab.focus_reports(tab.kernel_id(name))[-2:] == [False, True]

    page = tab.page
    page.evaluate("() => window.jupyterapp.commands.execute('application:toggle-left-area')")
    page.mouse.move(0, 0)
    page.wait_for_timeout(300)
    shot = SCREENSHOT if UPDATE_SCREENSHOT else lab.root.parent / SCREENSHOT.name
    page.screenshot(path=str(shot))

    # The banner follows the active cell, and survives the deletion of the cell it sits in.
    tab.select_cell(name, 4)
    page.wait_for_function(
        """() => { const c = window.jupyterapp.shell.currentWidget.content.activeCell;
          return c.node.firstElementChild.classList.contains('jp-RecapBanner-mount'); }"""
    )
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:delete-cell')")
    tab.wait_for_banner(name)
    state = tab.mount_state(name)
    assert state["active_index"] == 3 and state["first_child"] and state["count"] == 1, state
    assert not tab.errors
    page.close()


def test_turn_ending_while_away_is_recapped_after_the_debounce(
    browser: BrowserContext, lab: LabServer
) -> None:
    name = "loader.ipynb"
    recap = "You are making the CSV loader skip BOMs. Next: rerun the loader.py tests."
    with FakeLLM(text=f"<recap>{recap}</recap>") as fake:
        cells = [LOAD, "%%agent\nMake load_csv in loader.py skip a UTF-8 BOM"]
        lab.write_notebook(name, cells)
        tab = LabPage.open(browser, lab, name)
        prepare(
            tab,
            name,
            replies=[],
            run=1,
            config={"model": "openai:gpt-4o-mini", "away_seconds": 60},
            env={"OPENAI_BASE_URL": fake.url + "/v1", "OPENAI_API_KEY": "sk-test"},
        )
        tab.kernel_exec(
            name, "import time\nagent.script.append(lambda p: (time.sleep(1), print('Patched.')))"
        )
        tab.set_visible(False)
        tab.run_cells(name, [1])
        ended = time.monotonic()
        tab.wait_kernel(name, f"{EXT}.banner.state", lambda s: s == "shown")
        waited = time.monotonic() - ended
        # After the 1 s debounce, long before the 60 s away timer.
        assert 0.5 <= waited < 10, waited
        assert tab.banner(name)["reason"] == "post_turn"
        assert len(fake.requests) == 1
        assert "load_csv in loader.py" in json.dumps(fake.requests[0].body)

        tab.set_visible(True)
        tab.wait_for_banner(name)
        state = tab.mount_state(name)
        assert state["text"] == recap and state["model"] == "openai:gpt-4o-mini", state
        assert state["first_child"] and state["active_index"] == 1
    tab.page.close()


def test_typing_or_dismissing_clears_the_banner(browser: BrowserContext, lab: LabServer) -> None:
    name = "typing.ipynb"
    cells = [LOAD, INVOICES, "", "%recap"]
    tab = start(browser, lab, name, cells, run=2, replies=[INVOICES_REPLY])
    tab.select_cell(name, 2)
    come_back_after_away(tab, name)

    # Typing in the active cell: one input report, the kernel clears the banner.
    page = tab.page
    page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".cm-content").click()
    page.keyboard.type("df")
    tab.wait_for_banner(name, visible=False)
    assert tab.banner(name)["state"] == "hidden"
    inputs = [body for route, body in tab.reports if route == "input"]
    assert len(inputs) == 1 and inputs[0]["kernel_id"] == tab.kernel_id(name)

    # %recap shows the banner again (above the active cell, its output view hidden) ...
    page.keyboard.press("Escape")
    tab.run_cells(name, [3])
    tab.wait_for_banner(name)
    state = tab.mount_state(name)
    assert state["active_index"] == 3 and state["first_child"] and state["visible_banners"] == 1
    # ... and its dismiss control hides it, in the page and in the kernel.
    page.locator(".jp-RecapBanner-mount button.jp-RecapBanner-dismiss").click()
    tab.wait_for_banner(name, visible=False)
    tab.wait_kernel(name, f"{EXT}.banner.state", lambda s: s == "hidden")
    assert not tab.errors
    page.close()


def test_each_notebook_gets_its_own_recap(browser: BrowserContext, lab: LabServer) -> None:
    alpha, beta = "alpha.ipynb", "beta.ipynb"
    lab.write_notebook(alpha, [LOAD, "%%agent\nFix the alpha tokenizer in tokenize_alpha.py", ""])
    lab.write_notebook(
        beta, [LOAD, "%%agent\nWhy does the beta cache in cache_beta.py serve stale pages?", ""]
    )
    tab = LabPage.open(browser, lab, alpha)
    alpha_reply = "Alpha: the tokenizer drops emoji. Next: add a test for the zwj sequence."
    prepare(tab, alpha, replies=[alpha_reply], run=2)

    # Switching to the beta tab makes alpha "away": alpha's kernel drafts about alpha.
    tab.open_document(beta)
    beta_reply = "Beta: the cache key ignores locale. Next: include locale in cache_key()."
    prepare(tab, beta, replies=[beta_reply], run=2)
    tab.wait_kernel(alpha, f"{EXT}.banner.state", lambda s: s == "shown")
    assert tab.banner(beta)["state"] == "hidden"

    # Back on alpha: its recap waits above its active cell; now beta is away and gets its own.
    tab.activate(alpha)
    tab.wait_for_banner(alpha)
    text = str(tab.mount_state(alpha)["text"])
    assert "tokenize_alpha.py" in text and "zwj" in text
    assert "beta" not in text.lower()
    tab.wait_kernel(beta, f"{EXT}.banner.state", lambda s: s == "shown")
    text = str(tab.banner(beta)["text"])
    assert "cache_beta.py" in text and "locale" in text
    assert "alpha" not in text.lower()
    # Mounted in beta's panel too (hidden with its background tab).
    tab.wait_for_banner_text(beta, text)
    assert tab.kernel_id(alpha) != tab.kernel_id(beta)
    assert not tab.errors
    tab.page.close()


def test_a_quick_blur_drafts_nothing_and_closing_the_tab_is_away(
    browser: BrowserContext, lab: LabServer
) -> None:
    name = "blink.ipynb"
    tab = start(browser, lab, name, [LOAD, INVOICES], run=2, replies=[INVOICES_REPLY])
    kernel = tab.kernel_id(name)
    tab.set_window_focus(False)
    tab.wait_focus_known(name, focused=False)
    tab.set_window_focus(True)
    tab.wait_focus_known(name, focused=True)
    tab.page.wait_for_timeout(2500)  # longer than away_seconds
    assert tab.kernel_eval(name, f"{EXT}.schedule.counters.drafts_started") == 0
    assert tab.banner(name)["state"] == "hidden"
    # The changes as reported (a heartbeat repeats the current state: it is no change).
    reports = tab.focus_reports(kernel)
    changes = [r for i, r in enumerate(reports) if i == 0 or r != reports[i - 1]]
    assert changes[-2:] == [False, True]

    # Closing the tab reports "away" on its way out (keepalive), not 45 s later by timeout.
    tab.page.close()
    assert server_focus(lab, kernel, until=lambda focused: focused is False) is False


def server_focus(lab: LabServer, kernel_id: str, until: Callable[[object], bool]) -> object:
    """The server's aggregate focus of ``kernel_id`` once ``until(it)``, polled for 5 s."""
    url = f"{lab.url}jupyter-recap/api/kernels/{kernel_id}"
    headers = {"Authorization": f"token {lab.token}"}
    deadline = time.monotonic() + 5
    while True:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers)) as response:
            focused = json.load(response)["focused"]
        if until(focused) or time.monotonic() > deadline:
            return focused
        time.sleep(0.1)


def test_a_restarted_kernel_brings_its_new_banner(browser: BrowserContext, lab: LabServer) -> None:
    name = "restart.ipynb"
    tab = start(browser, lab, name, [LOAD, INVOICES, ""], run=2, replies=[INVOICES_REPLY])
    mount = tab.page.locator(".jp-RecapBanner-mount.jp-mod-live")
    # No recap yet, so no banner: the kernel makes it with the first thing it shows.
    expect(mount).to_have_count(0)
    tab.kernel_exec(name, f"{EXT}.banner.show('Before the restart.', 'offline')")
    expect(mount).to_have_count(1, timeout=10_000)
    old = mount.get_attribute("data-model-id")
    # The restart takes the widget along: its view goes, and none comes back until the new
    # kernel loads the extension and has a recap to show (the banner is made then).
    tab.page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.restartKernel()")
    expect(mount).to_have_count(0, timeout=20_000)
    tab.wait_for_kernel(name)
    tab.run_cells(name, [0])
    tab.prepare_kernel(name)
    # The new kernel resumes the notebook's session: its resume recap makes the new banner.
    tab.wait_kernel(name, f"{EXT}.banner.reason", lambda reason: reason == "resume")
    tab.kernel_exec(name, f"{EXT}.banner.show('Back after the restart.', 'offline')")
    expect(mount).to_have_count(1, timeout=10_000)
    assert mount.get_attribute("data-model-id") not in (None, old)
    tab.wait_for_banner(name)
    assert tab.mount_state(name)["text"] == "Back after the restart."
    assert not tab.errors
    tab.page.close()


def test_the_banner_survives_full_windowing(
    browser: BrowserContext, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """With ``windowingMode: full`` cells out of view are detached or not rendered yet."""
    tmp = tmp_path_factory.mktemp("windowing")
    full: dict[str, dict[str, object]] = {
        "@jupyterlab/notebook-extension:tracker": {"windowingMode": "full"}
    }
    with running_lab(tmp, {"JUPYTER_RECAP_MODEL": "offline"}, settings=full) as lab:
        name = "long.ipynb"
        lab.write_notebook(name, [LOAD] + [f"step_{i} = {i}\n" * 4 for i in range(80)])
        tab = LabPage.open(browser, lab, name)
        tab.run_cells(name, [0])
        tab.prepare_kernel(name)
        content = "window.jupyterapp.shell.currentWidget.content"
        assert tab.page.evaluate(f"() => {content}.notebookConfig.windowingMode") == "full"
        tab.kernel_exec(name, f"{EXT}.banner.show('Still here.', 'offline')")
        for index in (40, 0, 79):  # far away (never rendered yet), back to the top, the end
            tab.select_cell(name, index)
            tab.page.evaluate(f"(i) => {content}.scrollToItem(i)", index)
            tab.wait_for_banner(name)
            state = tab.mount_state(name)
            assert state["active_index"] == index and state["first_child"], state
            assert state["count"] == 1 and state["text"] == "Still here."
        assert not tab.errors
        tab.page.close()


def test_without_the_server_extension_one_warning(
    browser: BrowserContext, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp = tmp_path_factory.mktemp("noserverext")
    with running_lab(tmp, {"JUPYTER_RECAP_MODEL": "offline"}, recap_server=False) as lab:
        lab.write_notebook("plain.ipynb", ["1 + 1"])
        tab = LabPage.open(browser, lab, "plain.ipynb")
        toast = tab.page.locator(".Toastify__toast", has_text="server extension is not enabled")
        expect(toast).to_have_count(1, timeout=10_000)
        tab.page.wait_for_timeout(500)
        warnings = [text for kind, text in tab.console if kind == "warning" and "recap" in text]
        assert len(warnings) == 1, tab.console
        assert "jupyter_recap: the server extension is not enabled" in warnings[0]
        assert [route for route, _ in tab.reports] == ["capabilities"]
        assert not tab.errors
        tab.page.close()


def test_one_heartbeat_per_page_and_only_for_kernels_running_the_extension(
    browser: BrowserContext, tmp_path: Path
) -> None:
    """Three notebooks open in one page: while no kernel runs jupyter_recap, an idle page sends
    no focus request at all; a kernel that loads it is reported at once (not at the next beat);
    then each beat is one request naming just the notebooks whose kernel runs it."""
    env = {"JUPYTER_RECAP_MODEL": "offline"}
    # Beats every second (a third of the tab time-out), so a few seconds show several.
    with running_lab(tmp_path, env, args=["--RecapServer.heartbeat_timeout=3"]) as server:
        names = ["one.ipynb", "two.ipynb", "three.ipynb"]
        for name in names:
            server.write_notebook(name, ["x = 1"])
        tab = LabPage.open(browser, server, names[0])
        for name in names[1:]:
            tab.open_document(name)
        kernels = {name: tab.kernel_id(name) for name in names}
        tab.page.wait_for_timeout(1500)  # the opening's reports answered

        def focus_requests() -> list[dict[str, Any]]:
            return [body for route, body in tab.reports if route == "focus"]

        tab.reports.clear()
        tab.page.wait_for_timeout(4000)  # four beats
        assert focus_requests() == [], "an idle page reported kernels without the extension"

        # Loaded in a notebook the person is not looking at: reported at once.
        started = time.monotonic()
        tab.run_as_cell(names[1], LOAD, "cell-0")
        while kernels[names[1]] not in tab.focus_kernels() and time.monotonic() - started < 10:
            tab.page.wait_for_timeout(100)
        assert kernels[names[1]] in tab.focus_kernels()
        assert time.monotonic() - started < 5
        tab.run_as_cell(names[0], LOAD, "cell-0")
        tab.page.wait_for_timeout(1500)

        tab.reports.clear()
        tab.page.wait_for_timeout(5000)
        requests = focus_requests()
        assert 3 <= len(requests) <= 7, requests  # one a second, whatever the notebooks
        for body in requests:
            assert body["client_id"] and isinstance(body.get("reports"), list), body
            named = {report["kernel_id"] for report in body["reports"]}
            assert named == {kernels[names[0]], kernels[names[1]]}, body
        assert not tab.errors
        tab.page.close()
