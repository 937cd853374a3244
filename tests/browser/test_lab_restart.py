"""A kernel restart in JupyterLab: running the ``%load_ext`` cell again brings the story back.

The person works with an agent notebook, restarts its kernel (Kernel → Restart), and runs the
``%load_ext jupyter_recap`` cell again. The resume recap must appear above the active cell within
seconds, from one model call that is shown, not discarded; and the banner's stop line must link to
the agent cell the session stopped at. Then a round of new work after the restart, a return, and a
second restart: the story holds over more than one restart.

The bare-kernel version of this lives in ``tests/kernel/test_resume.py``; here the server's feed
(focus reports, the restart it saw) reaches the kernel during the load, as it does for a person.
"""

from __future__ import annotations

import time

import pytest
from fakellm import FakeLLM, answer
from labfocus import EXT, LabPage
from labserver import LabServer
from playwright.sync_api import BrowserContext

pytestmark = pytest.mark.timeout(300)

LOAD = "%load_ext jupyter_recap"
ASK = "%%agent\nMigrate the invoices table to the billing_v2 schema."
REPLY = """def behaviour(prompt):
    print("Copied invoices to billing_v2. Next: repoint the invoice_lines foreign key.")"""
RECAP = "You are migrating invoices to billing_v2. Next: repoint the invoice_lines FK."
SECOND_RECAP = "Invoices are on billing_v2; the FK is repointed. Next: migrate payments."


def restart(tab: LabPage, name: str) -> None:
    """Restart ``name``'s kernel as Kernel → Restart does (no dialog), and wait until idle."""
    tab.page.evaluate(
        """(name) => {
          for (const w of window.jupyterapp.shell.widgets('main')) {
            if (w.context && w.context.path === name) {
              return w.sessionContext.session.kernel.restart();
            }
          }
        }""",
        name,
    )
    tab.wait_for_kernel(name)


def load(tab: LabPage, name: str, fake: FakeLLM) -> None:
    """What the person does after a restart: the model set up, the ``%load_ext`` cell run."""
    env = {
        "OPENAI_BASE_URL": fake.url + "/v1",
        "OPENAI_API_KEY": "sk-test",
        "JUPYTER_RECAP_MODEL": "openai:gpt-4o-mini",
    }
    tab.kernel_exec(
        name,
        f"import os, agentmagic\nos.environ.update({env!r})\n"
        "agent = agentmagic.install(get_ipython())",
    )
    tab.run_cells(name, [0])
    tab.prepare_kernel(name)


def test_restart_shows_the_resume_recap(browser: BrowserContext, lab: LabServer) -> None:
    name = lab.write_notebook("restart-billing.ipynb", [LOAD, ASK, "x = 1"])
    with FakeLLM() as fake:
        tab = LabPage.open(browser, lab, name)
        tab.activate(name)
        load(tab, name, fake)
        tab.kernel_exec(name, f"{EXT}.settings.away_seconds = 1.5")
        tab.kernel_exec(name, REPLY + "\nagent.script.append(behaviour)")
        tab.run_cells(name, [1])
        tab.kernel_exec(name, "get_ipython().run_line_magic('recap', 'save')")

        for number, text in enumerate((RECAP, SECOND_RECAP), 1):
            where = f"restart {number}"
            fake.respond(answer(f"<recap>{text}</recap>"))
            requests = len(fake.requests)
            restart(tab, name)
            started = time.monotonic()
            load(tab, name, fake)
            tab.wait_for_banner_text(name, text, timeout=10)
            took = time.monotonic() - started
            assert took < 10, f"{where}: the resume recap took {took:.1f} s"
            kept = f"{EXT}.schedule.counters"
            counters = tab.kernel_eval(name, f"[{kept}.drafts_started, {kept}.discarded_stale]")
            assert counters == [1, 0], f"{where}: drafts started, discarded: {counters}"
            assert len(fake.requests) == requests + 1, f"{where}: model calls"
            banner = tab.banner(name)
            assert banner["reason"] == "resume", banner
            state = tab.mount_state(name)
            assert state["visible"] and state["in_active_cell"], f"{where}: {state}"
            stop = tab.page.evaluate(
                """(name) => {
                  for (const w of window.jupyterapp.shell.widgets('main')) {
                    if (w.context && w.context.path === name) {
                      const line = w.node.querySelector('.jp-RecapBanner-stop');
                      return line ? line.textContent : null;
                    }
                  }
                }""",
                name,
            )
            assert stop == "Stopped at In[2]", f"{where}: the stop line: {stop!r}"
            if number == 1:
                # New work after the restart, then the next restart tells it too.
                tab.kernel_exec(
                    name,
                    "def behaviour(prompt):\n"
                    "    print('Repointed the FK. Next: migrate payments.')\n"
                    "agent.script.append(behaviour)",
                )
                tab.run_cells(name, [1])
                tab.kernel_exec(name, "get_ipython().run_line_magic('recap', 'save')")
        assert not tab.errors, tab.errors
        tab.page.close()
