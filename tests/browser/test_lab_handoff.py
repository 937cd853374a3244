"""The handoff in a real JupyterLab: the banner's *Continue* and ``%recap handoff`` each put an
agent cell below the active one, under the notebook's own agent magic, carrying the session's
state; neither runs it."""

from __future__ import annotations

from typing import Any

import pytest
from labfocus import EXT, LabPage
from labserver import LabServer
from playwright.sync_api import BrowserContext

pytestmark = pytest.mark.timeout(300)

MAGIC = "%%ai openai:gpt-4o-mini"
TASK = "Move the invoices tables to the billing_v2 schema. Never write to the prod database."
SETUP = "import agentmagic\nagent = agentmagic.install(get_ipython())\n%load_ext jupyter_recap"
REPLY = "Copied 3 tables; invoices fails its FK check. Next: backfill customers_v2."
SCRIPT = f"agent.answers.append({REPLY!r})"
CELLS = [SETUP, SCRIPT, f"{MAGIC}\n{TASK}", "invoices.check_fk()", "%recap", "%recap handoff"]
ASK = 2

# The notebook's cells as the page has them: type, source, execution count.
CELLS_JS = """([name]) => {
  for (const w of window.jupyterapp.shell.widgets('main')) {
    if (w.context && w.context.path === name) {
      return {
        active: w.content.activeCellIndex,
        cells: w.content.widgets.map(c => ({
          type: c.model.type,
          source: c.model.sharedModel.getSource(),
          count: c.model.type === 'code' ? (c.model.executionCount ?? null) : null,
        })),
      };
    }
  }
  return null;
}"""


def _notebook(tab: LabPage, name: str) -> dict[str, Any]:
    return dict(tab.page.evaluate(CELLS_JS, [name]))


def _wait_cells(tab: LabPage, name: str, count: int) -> dict[str, Any]:
    tab.page.wait_for_function(
        f"([name, n]) => ({CELLS_JS})([name]).cells.length === n", arg=[name, count]
    )
    return _notebook(tab, name)


def _handed_off(cell: dict[str, Any]) -> None:
    """A code cell under the notebook's agent magic, carrying the state, never run."""
    lines = cell["source"].splitlines()
    assert cell["type"] == "code" and lines[0] == MAGIC, cell
    assert lines[1] == f"Continue this task where the last session stopped: {TASK}", cell
    assert "- Never write to the prod database." in lines, cell
    assert "- In[4]: NameError: name 'invoices' is not defined" in lines, cell
    assert lines[-1] == "Next step: backfill customers_v2", cell
    assert cell["count"] is None, cell


def test_continue_and_recap_handoff_insert_an_agent_cell_below(
    browser: BrowserContext, lab: LabServer
) -> None:
    name = lab.write_notebook("handoff-invoices.ipynb", CELLS)
    tab = LabPage.open(browser, lab, name)
    tab.activate(name)
    tab.run_cells(name, [0])
    tab.prepare_kernel(name)
    tab.kernel_exec(name, f"{EXT}.settings.model = 'offline'")
    tab.run_cells(name, [1, ASK, 3, 4])
    tab.wait_kernel(name, f"{EXT}.banner.state", lambda state: state == "shown", timeout=30)
    tab.wait_for_banner(name)

    # The person goes back to the agent cell; the banner follows, its Continue with it.
    tab.select_cell(name, ASK)
    tab.page.wait_for_function(
        """([name]) => {
          for (const w of window.jupyterapp.shell.widgets('main')) {
            if (w.context && w.context.path === name) {
              const mount = w.content.activeCell.node.firstElementChild;
              return !!mount && mount.classList.contains('jp-mod-live');
            }
          }
          return false;
        }""",
        arg=[name],
    )
    proceed = tab.page.locator(".jp-RecapBanner-mount.jp-mod-live .jp-RecapBanner-continue")
    assert proceed.is_visible()
    assert proceed.get_attribute("aria-label") == "Continue in a new agent cell below"
    # Only the mounted view has it: the banner's views in outputs never offer it.
    assert tab.page.locator(".jp-OutputArea .jp-RecapBanner-continue:visible").count() == 0
    prompts = tab.kernel_eval(name, f"{EXT}.transcript.prompt_count")
    proceed.click()

    notebook = _wait_cells(tab, name, len(CELLS) + 1)
    assert notebook["active"] == ASK + 1
    _handed_off(notebook["cells"][ASK + 1])
    assert [cell["source"] for cell in notebook["cells"][ASK + 2 :]] == CELLS[ASK + 1 :]

    # %recap handoff: the cell below the one running the magic.
    handoff = len(CELLS)  # its index, one further down now
    tab.run_cells(name, [handoff])
    notebook = _wait_cells(tab, name, len(CELLS) + 2)
    _handed_off(notebook["cells"][handoff + 1])

    # Neither was run, then or since: no agent turn started, both cells still without a count.
    tab.page.wait_for_timeout(1000)
    notebook = _notebook(tab, name)
    assert notebook["cells"][ASK + 1]["count"] is None
    assert notebook["cells"][handoff + 1]["count"] is None
    assert tab.kernel_eval(name, f"{EXT}.transcript.prompt_count") == prompts
    assert not tab.errors, tab.errors
    tab.page.close()
