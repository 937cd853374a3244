"""A page reload brings the live banner back above the active cell, not only the plain-text
copy the ``%load_ext`` cell's output keeps (far from the work in a long notebook)."""

from __future__ import annotations

import pytest
from labfocus import EXT, LabPage
from labserver import LabServer
from playwright.sync_api import BrowserContext

pytestmark = pytest.mark.timeout(300)

LOAD = "%load_ext jupyter_recap"
ASK = "%%agent\nReconcile the March invoices against the ledger."
REPLY = """def behaviour(prompt):
    print("Matched 212 of 215 invoices. Next: look at INV-3301, INV-3307 and INV-3342.")"""

# Whether the live banner of notebook ``name`` lies within what its notebook shows.
IN_VIEW = """(name) => {
  for (const w of window.jupyterapp.shell.widgets('main')) {
    if (w.context && w.context.path === name) {
      const root = w.content.node.querySelector(
        '.jp-RecapBanner-mount.jp-mod-live .jp-RecapBanner');
      if (!root) return false;
      const view = (w.content.outerNode || w.content.node).getBoundingClientRect();
      const box = root.getBoundingClientRect();
      return box.top >= view.top && box.bottom <= view.bottom;
    }
  }
  return false;
}"""


def test_a_reload_brings_the_live_banner_back(browser: BrowserContext, lab: LabServer) -> None:
    filler = [f"value_{i} = {i}" for i in range(30)]  # a long notebook: the load cell is far up
    name = lab.write_notebook("reload-ledger.ipynb", [LOAD, *filler, ASK, "y = 2"])
    ask = 1 + len(filler)
    tab = LabPage.open(browser, lab, name)
    tab.activate(name)
    tab.kernel_exec(name, "import agentmagic\nagent = agentmagic.install(get_ipython())")
    tab.run_cells(name, [0])
    tab.prepare_kernel(name)
    tab.kernel_exec(name, f"{EXT}.settings.away_seconds = 1.0\n{EXT}.settings.model = 'offline'")
    tab.wait_focus_known(name)
    tab.kernel_exec(name, REPLY + "\nagent.script.append(behaviour)")
    tab.set_visible(False)
    tab.run_cells(name, [ask])
    tab.wait_kernel(name, f"{EXT}.banner.state", lambda state: state == "shown", timeout=30)
    text = str(tab.banner(name)["text"])

    for round_ in (1, 2):
        tab.reload(name)
        tab.wait_for_banner_text(name, text, timeout=20)
        tab.wait_for_banner(name)
        state = tab.mount_state(name)
        assert state["in_active_cell"] and state["first_child"], f"reload {round_}: {state}"
        # The page made the first cell active; the banner went to where the session stopped.
        assert state["active_index"] == ask, f"reload {round_}: {state}"
        assert state["visible_banners"] == 1, f"reload {round_}: {state}"
        tab.page.wait_for_function(IN_VIEW, arg=name, timeout=5000)
    assert not tab.errors, tab.errors
    tab.page.close()
