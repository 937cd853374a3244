"""A real kernel with jupyter_recap loaded tells the agents panel about its agent work.

A `jupyter lab` server on 127.0.0.1, a kernel started through a notebook session, the stand-in
``%%agent`` magic, cells sent with JupyterLab's cell ids; the row is read from the server's route.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fakellm import FakeLLM, answer
from kernelutil import execute, stream_text
from labserver import LabServer, running_lab

pytestmark = pytest.mark.timeout(180)

NOTEBOOK_NAME = "billing.ipynb"
FOLDERS = itertools.count(1)
#: The context a recap of the kernel's live transcript would see.
CONTEXT = (
    "__import__('jupyter_recap.pipeline.context').pipeline.context.build_context(ext.transcript)"
)

SETUP = """\
import agentmagic, time
agent = agentmagic.install(get_ipython())
%load_ext jupyter_recap
%config Recap.post_turn_seconds = 0.2
from jupyter_recap.ipython.extension import extension_for
ext = extension_for(get_ipython())
deadline = time.time() + 20
while not (ext.reporter and ext.reporter.sent) and time.time() < deadline:
    time.sleep(0.05)
print('reporting' if ext.reporter and ext.reporter.sent else (ext.feed and ext.feed.last_error))
"""


def until(check: Callable[[], Any], seconds: float = 30.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabServer, Path]]:
    tmp: Path = tmp_path_factory.mktemp("agents")
    env = {"JUPYTER_RECAP_MODEL": "offline", "JUPYTER_RECAP_LOG": str(tmp / "recap.log")}
    with running_lab(tmp, env) as server:
        yield server, tmp


@pytest.fixture
def notebook(lab: tuple[LabServer, Path]) -> Iterator[tuple[LabServer, str, Any, str]]:
    """A notebook session's kernel with jupyter_recap loaded and reporting, and its path.

    Each test's notebook has a folder of its own: a kernel started on a notebook resumes the
    session stored for its path, which would hand one test the turns of the test before."""
    server, _ = lab
    folder = server.root / f"work-{next(FOLDERS)}"
    folder.mkdir()
    path = f"{folder.name}/{NOTEBOOK_NAME}"
    session = {"path": path, "type": "notebook", "name": "", "kernel": {"name": "python3"}}
    kernel_id = server.api("POST", "api/sessions", session)["kernel"]["id"]
    kc = server.connect(kernel_id)
    try:
        assert stream_text(execute(kc, SETUP)).strip() == "reporting"
        yield server, kernel_id, kc, path
    finally:
        kc.stop_channels()
        server.api("DELETE", f"api/kernels/{kernel_id}")


def row(lab: LabServer, kernel_id: str) -> dict[str, Any]:
    agent: dict[str, Any] = lab.api("GET", f"jupyter-recap/api/agents/{kernel_id}")["agent"]
    return agent


def value(kc: Any, expression: str) -> Any:
    """A kernel value, read from the execute reply (no output of ours in the way)."""
    msg_id = kc.execute("", user_expressions={"v": expression}, store_history=False)
    reply = kc.get_shell_msg(timeout=30)
    while reply["parent_header"].get("msg_id") != msg_id:  # replies to cells sent before
        reply = kc.get_shell_msg(timeout=30)
    result = reply["content"]["user_expressions"]["v"]
    assert result["status"] == "ok", result
    return eval(result["data"]["text/plain"])  # our own kernel's repr


def test_an_agent_turn_in_a_notebook_nobody_looks_at_needs_you(notebook: Any) -> None:
    lab, kernel_id, kc, path = notebook
    first = row(lab, kernel_id)
    assert (first["path"], first["name"]) == (path, "billing.ipynb")
    assert (first["state"], first["turn"]) == ("idle", None)

    # A browser tab has the notebook open but the person looks elsewhere.
    tab = {"kernel_id": kernel_id, "path": path, "client_id": "tab", "focused": False}
    lab.api("POST", "jupyter-recap/api/focus", tab)
    until(lambda: value(kc, "ext.schedule.focused") is False)
    execute(kc, "agent.script.append(lambda prompt: time.sleep(1.5) or 'Totals fixed.')")
    started = time.time()
    body = {
        "code": "%%agent\nfix the invoice totals",
        "silent": False,
        "store_history": True,
        "user_expressions": {},
        "allow_stdin": False,
    }
    msg = kc.session.msg("execute_request", body, metadata={"cellId": "cell-agent"})
    kc.shell_channel.send(msg)
    running = until(lambda: (r := row(lab, kernel_id))["state"] == "running" and r)
    assert running["turn_started"] >= started - 1
    assert running["stop_cell"]["cell_id"] == "cell-agent"

    finished = until(lambda: (r := row(lab, kernel_id))["turn"] == "ok" and r)
    # The turn ended while the person was away.
    assert (finished["state"], finished["needs_you"], finished["notice"]) == (
        "finished",
        "finished",
        1,
    )
    assert finished["stop_cell"] == {
        "cell_id": "cell-agent",
        "label": finished["stop_cell"]["label"],
        "failed": False,
    }
    assert finished["stop_cell"]["label"].startswith("In[")
    recapped = until(lambda: (r := row(lab, kernel_id))["recap"] and not r["drafting"] and r)
    assert recapped["recap"]["model"] == "offline"
    assert "invoice totals" in recapped["recap"]["text"]
    assert recapped["recap"]["at"] >= finished["turn_ended"]


def test_a_failed_cell_is_where_work_stopped_and_recaps_link_it(notebook: Any) -> None:
    lab, kernel_id, kc, _path = notebook
    execute(kc, "%%agent\nload the ledger", cell_id="cell-agent")
    execute(kc, "ledger = load('ledger.csv')", cell_id="cell-load")
    count = value(kc, "get_ipython().execution_count") - 1
    stop = until(lambda: (r := row(lab, kernel_id))["stop_cell"]["failed"] and r["stop_cell"])
    assert stop == {"cell_id": "cell-load", "label": f"In[{count}]", "failed": True}

    execute(kc, "%recap")
    banner = "(ext.banner.text, ext.banner.links, ext.banner.stop_cell)"
    text, links, banner_stop = value(kc, banner)
    label = f"In[{count}]"
    assert label in text  # the offline recap names the failed cell
    start = text.index(label)
    assert {"start": start, "end": start + len(label), "cell_id": "cell-load"} in links
    assert banner_stop == stop
    shown = until(lambda: (r := row(lab, kernel_id))["recap"] and r["recap"]["text"] == text and r)
    assert {"start": start, "end": start + len(label), "cell_id": "cell-load"} in shown["recap"][
        "links"
    ]
    # The same cell run again without error: the work no longer stopped there.
    execute(kc, "ledger = []", cell_id="cell-load")
    until(lambda: row(lab, kernel_id)["stop_cell"]["cell_id"] == "cell-agent")


def test_a_long_cell_is_noted_for_recaps_with_its_duration(notebook: Any) -> None:
    _lab, _kernel_id, kc, _path = notebook
    execute(kc, "%config Recap.long_cell_seconds = 0.5")
    execute(kc, "time.sleep(0.1)")
    execute(kc, "time.sleep(1.2); raise ValueError('ledger is empty')", cell_id="cell-slow")
    events = value(kc, "[e.text for e in ext.transcript.entries if e.kind == 'event']")
    assert len(events) == 1  # the short cell is not news
    assert "ran for 1 s and failed (ValueError: ledger is empty)" in events[0]
    context = value(kc, CONTEXT)
    assert "Event: In[" in context and "ran for 1 s and failed" in context


def test_a_restart_reaches_the_row_and_the_next_process_recaps(notebook: Any) -> None:
    lab, kernel_id, kc, path = notebook
    execute(kc, "%%agent\nreconcile March", cell_id="cell-agent")
    lab.api("POST", f"api/kernels/{kernel_id}/restart", {})
    events = row(lab, kernel_id)["events"]
    assert [(e["type"], e["crashed"]) for e in events] == [("restarted", False)]
    # The new process: nothing of ours is loaded until the person loads it again.
    kc.wait_for_ready(timeout=60)
    assert stream_text(execute(kc, SETUP)).strip() == "reporting"
    restarts = (
        "[e.text for e in ext.transcript.entries if e.kind == 'event' and e.name == 'kernel']"
    )
    texts = until(lambda: value(kc, restarts))
    assert len(texts) == 1 and texts[0].startswith("The kernel was restarted at ")
    context = value(kc, CONTEXT)
    assert "Event: The kernel was restarted at" in context
    # Reloading again (or a second feed connection) does not note it twice.
    execute(kc, "%reload_ext jupyter_recap")
    execute(kc, "ext = extension_for(get_ipython())")
    until(lambda: value(kc, "bool(ext.feed and ext.feed.connected)"))
    # The feed answers in order: once a focus change made after the reconnect has reached the
    # kernel, the reconnect's history (with the restart in it) was handled before it.
    looking = {"kernel_id": kernel_id, "path": path, "client_id": "restart-tab"}
    for focused in (True, False):
        lab.api("POST", "jupyter-recap/api/focus", {**looking, "focused": focused})
        until(lambda: value(kc, "ext.schedule.focused") is focused)  # noqa: B023 (waited here)
    assert value(kc, restarts) == texts


HOSTILE_ANSWER = (
    "<recap>Task: reconnect the billing job to postgresql://admin:Tr0ub4dor-and-3@db:5432/billing."
    " All tests \u202edeliaf\u202c passed.\x1b[31m Next: rerun the job.\x07</recap>"
)


def test_what_a_model_writes_is_shown_clean_in_the_banner_the_saved_output_and_the_row(
    notebook: Any, fake_llm: FakeLLM
) -> None:
    """A recap answer holding a secret, bidi overrides and terminal escapes, from a model whose id
    is longer than the server accepts: the banner, the text a saved notebook keeps and the
    agents row all show it redacted and plain, and the row takes it (no "drafting…" left)."""
    lab, kernel_id, kc, _path = notebook
    fake_llm.respond(answer(HOSTILE_ANSWER))
    model = "openai:" + "m" * 300
    # The session names the database, so the recap naming it is grounded (and gets redacted).
    execute(
        kc,
        "%%agent\nreconnect the billing job to postgresql://admin:Tr0ub4dor-and-3@db:5432/billing",
        cell_id="cell-agent",
    )
    execute(
        kc,
        f"import os\nos.environ.update(OPENAI_BASE_URL={fake_llm.url + '/v1'!r}, "
        "OPENAI_API_KEY='sk-test-0123456789abcdef')",
    )
    messages = execute(kc, f"%recap --model {model}")
    assert len(fake_llm.requests) == 1
    banner_text = value(kc, "ext.banner.text")
    recap = until(lambda: (r := row(lab, kernel_id))["recap"] and not r["drafting"] and r["recap"])
    saved = json.dumps([m["content"] for m in messages])  # what the .ipynb keeps of the cell
    for shown in (banner_text, recap["text"], saved):
        assert "Tr0ub4dor" not in shown
        assert "postgresql://admin:" in shown  # the rest of the sentence is kept
        for unsafe in ("\u202e", "\u202c", "\x1b", "\x07", "\\u202e", "\\u001b", "\\u0007"):
            assert unsafe not in shown
    assert "All tests deliaf passed." in recap["text"]
    assert recap["model"] == model[:256]  # cut to fit, not refused


def test_the_row_never_shows_the_recap_of_an_earlier_turn_as_current(notebook: Any) -> None:
    """A turn ends while the person looks elsewhere: its recap is the row's. They come back and
    watch the next turn end (no recap is drafted for that): the row shows the offline recap
    of that turn, never the recap of the turn before as if it were the news."""
    lab, kernel_id, kc, path = notebook
    tab = {"kernel_id": kernel_id, "path": path, "client_id": "tab", "focused": False}
    lab.api("POST", "jupyter-recap/api/focus", tab)
    until(lambda: value(kc, "ext.schedule.focused") is False)
    execute(kc, "agent.script.append(lambda p: print('Loaded orders. Next: load the invoices.'))")
    execute(kc, "%%agent\nload the orders table")
    first = until(lambda: (r := row(lab, kernel_id))["recap"] and r)
    assert "invoices" in first["recap"]["text"]

    lab.api("POST", "jupyter-recap/api/focus", {**tab, "focused": True})
    until(lambda: value(kc, "ext.schedule.focused") is True)
    execute(kc, "agent.script.append(lambda p: print('Loaded invoices. Next: load the payments.'))")
    execute(kc, "%%agent\nnow load the invoices table")
    latest = until(
        lambda: (r := row(lab, kernel_id))["recap"] and "payments" in r["recap"]["text"] and r
    )
    assert latest["turn_ended"] > first["turn_ended"]
    assert latest["drafting"] is False and latest["recap"]["model"] == "offline"
    assert value(kc, "ext.schedule.counters.drafts_started") == 1  # no model draft for it
