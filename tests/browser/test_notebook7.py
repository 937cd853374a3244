"""Notebook 7 (no ILabShell): the extension reports focus and mounts the banner there too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import new_page
from labserver import LabServer, running_lab
from playwright.sync_api import expect

pytestmark = pytest.mark.timeout(420)

SETUP = (
    "import agentmagic\nagent = agentmagic.install(get_ipython())\n"
    "%load_ext jupyter_recap\n%config Recap.away_seconds = 1"
)
HIDE = """(hidden) => {
  const state = hidden ? 'hidden' : 'visible';
  Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => state});
  Object.defineProperty(document, 'hidden', {configurable: true, get: () => hidden});
  document.dispatchEvent(new Event('visibilitychange'));
}"""


@pytest.fixture(scope="module")
def notebook7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    tmp: Path = tmp_path_factory.mktemp("nb7")
    env = {"JUPYTER_RECAP_MODEL": "offline", "JUPYTER_RECAP_LOG": str(tmp / "recap.log")}
    with running_lab(tmp, env, app="notebook") as server:
        yield server


def open_and_run_all(
    browser: Any, notebook7: LabServer, name: str, errors: list[str] | None = None
) -> Any:
    """A page on Notebook 7's notebook ``name``, every cell run (cell 1 has an output)."""
    page = new_page(browser, 1000, 600)
    if errors is not None:
        page.on("pageerror", lambda error: errors.append(f"{error} {error.stack}"))
    page.goto(f"{notebook7.url}notebooks/{name}?token={notebook7.token}", wait_until="commit")
    page.wait_for_function(
        "() => window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel?.status"
        " === 'idle'",
        timeout=120_000,
    )
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    expect(page.locator(".jp-Cell").nth(1).locator(".jp-OutputArea-output")).to_have_count(
        1, timeout=30_000
    )
    return page


def test_banner_above_the_active_cell_in_notebook_7(browser: Any, notebook7: LabServer) -> None:
    notebook7.write_notebook("nb7.ipynb", [SETUP, "%%agent\nfix the FK in invoices.ts", ""])
    errors: list[str] = []
    page = open_and_run_all(browser, notebook7, "nb7.ipynb", errors)
    page.evaluate(HIDE, True)
    page.wait_for_timeout(2500)  # longer than away_seconds: a recap is drafted while hidden
    page.evaluate(HIDE, False)

    banner = page.locator(".jp-RecapBanner-mount .jp-RecapBanner")
    expect(banner).to_be_visible(timeout=15_000)
    expect(banner.locator(".jp-RecapBanner-text")).to_contain_text("fix the FK in invoices.ts")
    active = page.locator(".jp-Cell.jp-mod-active")
    expect(active.locator(".jp-RecapBanner-mount")).to_have_count(1)
    # Notebook 7 itself logs unrelated errors while loading; none may come from our plugin.
    assert not [e for e in errors if "jupyter-recap" in e]
    page.close()


def test_agents_panel_in_notebook_7(browser: Any, notebook7: LabServer) -> None:
    """Notebook 7's notebook page has a left area too: the panel is there (View → Left
    Sidebar), and opening a row of the notebook on this page selects its stop cell."""
    notebook7.write_notebook("nb7-panel.ipynb", [SETUP, "%%agent\nreconcile March", "", ""])
    page = open_and_run_all(browser, notebook7, "nb7-panel.ipynb")
    page.evaluate("() => window.jupyterapp.shell.activateById('jupyter-recap-agents')")
    kernel = page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.id"
    )
    row = page.locator(f'#jupyter-recap-agents .jp-RecapAgents-row[data-kernel-id="{kernel}"]')
    expect(row).to_be_visible(timeout=20_000)
    expect(row.locator(".jp-RecapAgents-name")).to_have_text("nb7-panel.ipynb")
    page.evaluate("() => { window.jupyterapp.shell.currentWidget.content.activeCellIndex = 3; }")
    row.click()
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.content.activeCellIndex === 1"
    )
    page.close()
