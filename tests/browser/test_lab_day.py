"""A day of use, not a moment: rounds of work → leave → return in two agent notebooks.

One JupyterLab page holds two agent notebooks. Each round the person scripts what the agent will
do, leaves (the page is hidden), the agent cell runs, and the person comes back. Every return
after new work must show a banner above the active cell whose text names what that round did —
its ask, its failure — also when the round's recap reads exactly like the one before; a return
with nothing new must make no model call and show nothing new. The rounds mix what a working day
brings: the same answer again, a follow-up that changes the amount, a tool that fails while the
reply glosses over it, a turn that errors, a return with no new work, and a reload of the page.

It runs twice: with the offline engine (the words come from the session itself) and with a
local fake OpenAI-compatible server (the words come from the model's answer, and the request
must carry the round's ask or failure). A new round is one more line in :data:`ROUNDS`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import pytest
from fakellm import FakeLLM, answer
from labfocus import EXT, LabPage
from labserver import LabServer
from playwright.sync_api import BrowserContext

pytestmark = pytest.mark.timeout(420)

LOAD = "%load_ext jupyter_recap"
REFUNDS, CHURN = "refunds", "churn"

# What the scripted agent does in a round: Python run in the kernel, defining ``behaviour``.
REPLY_REFUND = """def behaviour(prompt):
    print("Prepared the refund of order A-1001 for 2 monitors. Next: confirm it with finance.")"""
REPLY_PARTIAL = """def behaviour(prompt):
    print("Changed the refund to one monitor. Next: send the 199 EUR refund for approval.")"""
GLOSSED_TOOL_FAILURE = """def behaviour(prompt):
    import jupyter_recap as jr
    t = jr.current()
    t.tool_call("read_table", {"path": "churn.csv"})
    t.tool_result("read_table", "churn.csv: 12 columns, 48,210 rows")
    t.tool_call("load_history", {"path": "history.parquet"})
    t.tool_result("load_history", "PermissionError: history.parquet is locked", error=True)
    print("I read the churn table. The summary is not complete yet.")"""
ERRORED_TURN = """def behaviour(prompt):
    raise ConnectionError("payments API unreachable")"""
REPLY_CHURN = """def behaviour(prompt):
    print("Loaded history.parquet once the lock cleared. Next: plot churn by month.")"""


@dataclass(frozen=True)
class Round:
    """One round of the day: leave, the agent works (or not), come back."""

    notebook: str
    """Which notebook (its name without the run's prefix)."""
    cell: str | None
    """The agent cell run while away (a cell already in the notebook runs again); None: no
    new work this round."""
    behaviour: str = ""
    """What the agent does (source defining ``behaviour(prompt)``)."""
    names: tuple[str, ...] = ()
    """Words the offline banner must hold: what this round did."""
    context: tuple[str, ...] = ()
    """Words the request to the model must hold (the fake LLM run)."""
    recap: str = ""
    """What the fake LLM answers this round (and so what the banner shows)."""
    reload: bool = False
    """Reload the page before the round."""
    needs: str = "finished"
    """How the notebook's Agents row says the round ended while the person was away."""


REFUND_ASK = "%%agent\nRefund order A-1001 in full."
PARTIAL_ASK = (
    "%%agent\nWait, only one monitor came back. Refund only one monitor (199 EUR) of order A-1001."
)
CHURN_ASK = "%%agent\nSummarise churn by month from churn.csv and history.parquet."
RETRY_ASK = "%%agent\nTry again."

FIRST_RECAP = "You are refunding order A-1001. Next: confirm the refund with finance."

ROUNDS = [
    Round(REFUNDS, REFUND_ASK, REPLY_REFUND, ("A-1001",), ("A-1001",), FIRST_RECAP),
    # The same ask, the same answer: the recap may read the same, and must still show.
    Round(REFUNDS, REFUND_ASK, REPLY_REFUND, ("A-1001",), ("A-1001",), FIRST_RECAP),
    Round(
        REFUNDS,
        PARTIAL_ASK,
        REPLY_PARTIAL,
        ("199 EUR",),
        ("199 EUR",),
        "You are refunding one monitor (199 EUR) of A-1001. Next: send it for approval.",
    ),
    Round(
        CHURN,
        CHURN_ASK,
        GLOSSED_TOOL_FAILURE,
        ("load_history", "history.parquet is locked"),
        ("load_history", "history.parquet is locked"),
        "Churn summary: load_history failed (history.parquet is locked). Next: unlock it.",
    ),
    Round(
        REFUNDS,
        PARTIAL_ASK,
        ERRORED_TURN,
        ("payments API unreachable",),
        ("payments API unreachable",),
        "The refund turn errored: payments API unreachable. Next: retry once it is back.",
        needs="errored",
    ),
    Round(REFUNDS, None),
    Round(
        CHURN,
        RETRY_ASK,
        REPLY_CHURN,
        ("churn by month",),
        ("Try again", "churn by month"),
        "Churn history is loaded. Next: plot churn by month.",
        reload=True,
    ),
]


def notebook_cells(notebook: str) -> list[str]:
    """The notebook's cells: ``%load_ext`` and each distinct agent cell of its rounds."""
    cells = [LOAD]
    for round_ in ROUNDS:
        if round_.notebook == notebook and round_.cell is not None and round_.cell not in cells:
            cells.append(round_.cell)
    return cells


def start(tab: LabPage, name: str, config: dict[str, object], env: dict[str, str]) -> None:
    """Load the extension in ``name``'s kernel with short timers and the stand-in agent."""
    tab.kernel_exec(
        name,
        f"import os, agentmagic\nos.environ.update({env!r})\n"
        "agent = agentmagic.install(get_ipython())",
    )
    tab.activate(name)
    tab.run_cells(name, [0])
    tab.prepare_kernel(name)
    settings = {"away_seconds": 1.5, "post_turn_seconds": 0.5, **config}
    tab.kernel_exec(name, "".join(f"{EXT}.settings.{k} = {v!r}\n" for k, v in settings.items()))
    tab.wait_focus_known(name)


def drafts(tab: LabPage, name: str) -> int:
    return int(tab.kernel_eval(name, f"{EXT}.schedule.counters.drafts_started"))


def agent_row(lab: LabServer, kernel_id: str, text: str, timeout: float = 30) -> dict[str, Any]:
    """The notebook's Agents row once it holds the recap ``text`` (its state then)."""
    deadline = time.monotonic() + timeout
    while True:
        row: dict[str, Any] = lab.api("GET", f"jupyter-recap/api/agents/{kernel_id}")["agent"]
        recap = row.get("recap") or {}
        if recap.get("text") == text or time.monotonic() > deadline:
            return row
        time.sleep(0.1)


def banner_text(tab: LabPage, name: str) -> str:
    state = tab.mount_state(name)
    assert state["visible"], f"no visible banner above the active cell of {name}: {state}"
    return str(state["text"])


def live_day(browser: BrowserContext, lab: LabServer, fake: FakeLLM | None, prefix: str) -> None:
    """Play :data:`ROUNDS` in notebooks named ``prefix-…``; ``fake`` is the model server
    (None: the offline engine)."""
    config: dict[str, object] = {}
    env: dict[str, str] = {}
    if fake is not None:
        config = {"model": "openai:gpt-4o-mini"}
        env = {"OPENAI_BASE_URL": fake.url + "/v1", "OPENAI_API_KEY": "sk-test"}
    names = {notebook: f"{prefix}-{notebook}.ipynb" for notebook in (REFUNDS, CHURN)}
    for notebook, name in names.items():
        lab.write_notebook(name, notebook_cells(notebook))
    tab = LabPage.open(browser, lab, names[REFUNDS])
    tab.open_document(names[CHURN])
    for name in names.values():
        start(tab, name, config, env)
    shown: dict[str, str] = {}
    for number, round_ in enumerate(ROUNDS, 1):
        where = f"round {number} ({round_.notebook}: {round_.cell!r})"
        name = names[round_.notebook]
        if round_.reload:
            tab.reload(names[REFUNDS])
            tab.open_document(names[CHURN])  # opened again, or found restored
        tab.set_visible(True)
        tab.activate(name)
        tab.wait_focus_known(name)
        before, requests = drafts(tab, name), len(fake.requests) if fake else 0
        if round_.cell is None:
            # Leave and come back with nothing new: no model call, nothing new on screen.
            tab.set_visible(False)
            tab.wait_focus_known(name, focused=False)
            tab.page.wait_for_timeout(2500)  # past away_seconds
            tab.set_visible(True)
            tab.wait_for_banner(name)
            assert drafts(tab, name) == before, f"{where}: a draft for nothing new"
            assert not fake or len(fake.requests) == requests, f"{where}: a model call"
            assert banner_text(tab, name) == shown[name], f"{where}: the banner changed"
            continue
        tab.kernel_exec(name, round_.behaviour + "\nagent.script.append(behaviour)")
        if fake is not None:
            fake.respond(answer(f"<recap>{round_.recap}</recap>"))
        tab.set_visible(False)
        tab.run_cells(name, [notebook_cells(round_.notebook).index(round_.cell)])
        # A new draft, shown in the kernel's banner while the person is still away.
        tab.wait_kernel(
            name,
            f"{EXT}.schedule.counters.drafts_started > {before} and {EXT}.banner.state",
            lambda state: state == "shown",
            timeout=30,
        )
        # What the notification waits for: the row says how the round ended, and carries this
        # round's recap (written after the turn ended), before the person is back.
        text = str(tab.banner(name)["text"])
        row = agent_row(lab, tab.kernel_id(name), text)
        assert row["needs_you"] == round_.needs, f"{where}: the row says {row['needs_you']}"
        assert (row["recap"] or {}).get("text") == text, f"{where}: the row's recap is stale"
        assert row["recap"]["at"] >= row["turn_ended"], f"{where}: the recap predates the turn"
        tab.set_visible(True)
        tab.wait_for_banner(name)
        assert banner_text(tab, name) == text
        if fake is None:
            missing = [word for word in round_.names if word not in text]
            assert not missing, f"{where}: the banner does not name {missing}: {text!r}"
        else:
            assert text == round_.recap, f"{where}: {text!r}"
            sent = json.dumps(fake.requests[-1].body)
            missing = [word for word in round_.context if word not in sent]
            assert not missing, f"{where}: the model was not told {missing}"
        shown[name] = text
    assert not tab.errors, tab.errors
    tab.page.close()


def test_a_day_with_the_offline_engine(browser: BrowserContext, lab: LabServer) -> None:
    live_day(browser, lab, None, "offline")


def test_a_day_with_a_model(browser: BrowserContext, lab: LabServer) -> None:
    with FakeLLM() as fake:
        live_day(browser, lab, fake, "model")
