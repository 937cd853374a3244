"""A ``%%ai model@Persona`` cell's persona steps: which kernel owns a one-shot chat, and what
the kernel writes of a step (tests/server/test_chat_persona.py runs the real route)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from typing import Any

import pytest
from outsidekit import FakeSink

from jupyter_recap.chats.document import ToolStep
from jupyter_recap.ipython.reporting import AgentReporting
from jupyter_recap.record.transcript import Transcript
from jupyter_recap.server.outside.oneshot import MATCH_SECONDS, OneShotTurn, OneShotTurns, _entries


def turns(cells: dict[str, tuple[str, float]]) -> OneShotTurns:
    return OneShotTurns(FakeSink("/srv"), lambda: cells)


def test_the_chat_belongs_to_the_kernel_whose_running_cell_addresses_the_persona() -> None:
    source = turns({"k-other": ("Jupyternaut", 99.0), "k-ask": ("claude", 100.0)})
    assert source._kernel_for("Claude", OneShotTurn(opened=100.5)) == "k-ask"
    assert source._kernel_for("Codex", OneShotTurn(opened=100.5)) is None


def test_of_two_asking_kernels_the_latest_cell_wins_and_a_taken_kernel_is_skipped() -> None:
    cells = {"k-early": ("Claude", 90.0), "k-late": ("Claude", 100.0)}
    source = turns(cells)
    first = OneShotTurn(opened=100.2)
    source.turns.append(first)
    assert source._kernel_for("Claude", first) == "k-late"
    first.kernel_id = "k-late"
    second = OneShotTurn(opened=100.4)
    source.turns.append(second)
    assert source._kernel_for("Claude", second) == "k-early"
    # The late kernel's next cell (a new start time) may own a chat again.
    cells["k-late"] = ("Claude", 200.0)
    assert source._kernel_for("Claude", OneShotTurn(opened=200.1)) == "k-late"


def test_a_cell_that_started_well_after_the_chat_does_not_own_it() -> None:
    source = turns({"k": ("Claude", 100.0 + MATCH_SECONDS + 1)})
    assert source._kernel_for("Claude", OneShotTurn(opened=100.0)) is None


def reporting(transcript: Transcript) -> AgentReporting:
    return AgentReporting(
        None,
        transcript,
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        focus=lambda focused, at: None,
        typed=lambda: None,
        shown=lambda: None,
        drafting=lambda: False,
    )


def entries_of(state: str, **fields: Any) -> list[Any]:
    step = ToolStep(
        call_id="toolu_1",
        title="run_cell",
        kind="execute",
        status="failed" if state == "failed" else "completed",
        summary="run_cell churn.ipynb cell-1",
        input="",
        output="Traceback …",
        error="KeyError: 'region'" if state == "failed" else None,
        waiting=state == "waiting",
        paths=(),
        cell_id=None,
        at=0.0,
    )
    return _entries("Claude", dataclasses.replace(step, **fields), state)


def test_a_step_joins_the_turn_of_the_latest_prompt() -> None:
    transcript = Transcript()
    transcript.user("fix churn.ipynb", cell_id="cell-ask")
    reporting(transcript).outside_entries(entries_of("failed"), True)
    call, result = transcript.entries[1:]
    assert (call.kind, call.name, call.cell_id) == ("tool_call", "run_cell", "cell-ask")
    assert (result.kind, result.error, result.cell_id) == (
        "tool_result",
        "KeyError: 'region'",
        "cell-ask",
    )


def test_a_step_waiting_for_approval_is_said_as_an_event() -> None:
    transcript = Transcript()
    transcript.user("tidy the models", cell_id="cell-ask")
    waiting = entries_of("waiting", summary="mv models/churn.pkl models/old/")
    reporting(transcript).outside_entries(waiting, True)
    event = transcript.entries[-1]
    assert event.kind == "event" and event.cell_id == "cell-ask"
    assert event.text.startswith("Claude asked for your approval: mv models/churn.pkl models/old/")


GOOD: dict[str, Any] = {"kind": "tool_call", "text": "ls", "name": "Bash", "error": None}


@pytest.mark.parametrize(
    "bad",
    [
        {**GOOD, "kind": "recap"},  # not a kind anything outside may write
        {**GOOD, "kind": "<script>"},
        {**GOOD, "name": ""},  # a tool call names its tool
        {**GOOD, "name": ["Bash"]},
        {**GOOD, "error": 3},
        {**GOOD, "text": None},
        {"kind": "outcome", "text": "finished", "name": None, "error": None},
        {key: value for key, value in GOOD.items() if key != "text"},
        {},
        "an entry",
    ],
)
def test_an_entry_the_kernel_cannot_read_is_left_out(bad: Any) -> None:
    transcript = Transcript()
    reporting(transcript).outside_entries([bad, GOOD], False)
    assert [(e.kind, e.name, e.cell_id) for e in transcript.entries] == [
        ("tool_call", "Bash", None)
    ]


def test_a_server_without_the_persona_manager_running_imports_none_of_jupyter_ai() -> None:
    """Installed but not run by this server: following its one-shot route must not load it
    (that alone made every server with Jupyter AI installed some megabytes bigger)."""
    code = (
        "import sys\n"
        "from jupyter_recap.server.outside.oneshot import OneShotTurns\n"
        "turns = OneShotTurns(None, dict)  # the sink is not used before a chat opens\n"
        "turns.start()\n"
        "print(turns.installed, sorted(m for m in sys.modules if m.startswith('jupyter_ai')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.strip() == "False []"


@pytest.mark.parametrize("route_chat", ["another class", None])
def test_a_swap_that_cannot_be_made_is_said_once_in_the_log(
    route_chat: object, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A persona manager whose route does not make jupyterlab-chat's YChat (a newer release):
    nothing is swapped, and the log says which cells lose what, in one line."""
    import types

    handlers = types.ModuleType("jupyter_ai_persona_manager.handlers")
    if route_chat is not None:
        handlers.YChat = route_chat  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "jupyter_ai_persona_manager.handlers", handlers)
    turns = OneShotTurns(FakeSink("/srv"), dict)
    with caplog.at_level("WARNING", logger="jupyter_recap"):
        turns.start()
    assert not turns.installed
    assert getattr(handlers, "YChat", None) == route_chat  # left as it was
    (line,) = [record.getMessage() for record in caplog.records]
    assert line.startswith("jupyter_recap: %%ai persona cells' tool calls are not recorded")
    assert "\n" not in line
