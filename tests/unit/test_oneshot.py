"""A ``%%ai model@Persona`` cell's persona steps: which kernel owns a one-shot chat, and what
the kernel writes of a step (tests/server/reliability/test_oneshot_owner.py runs the real route)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from outsidekit import FakeSink

from jupyter_recap.chats.document import ToolStep
from jupyter_recap.ipython.reporting import AgentReporting
from jupyter_recap.record.transcript import Transcript
from jupyter_recap.server.outside.host import PersonaCell as Cell
from jupyter_recap.server.outside.oneshot import (
    MATCH_SECONDS,
    OneShotTurn,
    OneShotTurns,
    _entries,
    could_send,
)


def turns(cells: dict[str, Cell]) -> OneShotTurns:
    return OneShotTurns(FakeSink("/srv"), lambda: cells)


def test_the_chat_belongs_to_the_kernel_whose_running_cell_addresses_the_persona() -> None:
    source = turns({"k-other": Cell("Jupyternaut", 99.0), "k-ask": Cell("claude", 100.0)})
    assert source._kernel_for("Claude", OneShotTurn(opened=100.5)) == "k-ask"
    assert source._kernel_for("Codex", OneShotTurn(opened=100.5)) is None


def test_of_two_asking_kernels_the_latest_cell_wins_and_a_taken_kernel_is_skipped() -> None:
    cells = {"k-early": Cell("Claude", 90.0), "k-late": Cell("Claude", 100.0)}
    source = turns(cells)
    first = OneShotTurn(opened=100.2)
    source.turns.append(first)
    assert source._kernel_for("Claude", first) == "k-late"
    first.kernel_id = "k-late"
    second = OneShotTurn(opened=100.4)
    source.turns.append(second)
    assert source._kernel_for("Claude", second) == "k-early"
    # The late kernel's next cell (a new start time) may own a chat again.
    cells["k-late"] = Cell("Claude", 200.0)
    assert source._kernel_for("Claude", OneShotTurn(opened=200.1)) == "k-late"


def test_a_cell_that_started_well_after_the_chat_does_not_own_it() -> None:
    source = turns({"k": Cell("Claude", 100.0 + MATCH_SECONDS + 1)})
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


# -- the prompt: which running cell sent a request ------------------------------------------------


class _Names(dict[str, object]):
    """What the magic formats a prompt with: the kernel's names, an unknown one left as is."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


@pytest.mark.parametrize(
    ("cell", "prompt", "sent"),
    [
        ("please fix a.ipynb", "please fix a.ipynb", True),
        ("please fix a.ipynb", "please fix b.ipynb", False),
        ("fix {name} now", "fix churn.ipynb now", True),
        ("fix {name} now", "fix churn.ipynb later", False),
        ("fix {name}", "fix {name}", True),  # an unknown name is sent as it was written
        ("{a}{b}", "", True),
        ("use {{braces}} in {what}", "use {braces} in JSON", True),
        ("use {{braces}}", "use {{braces}}", False),
        ("x{a}yy{b}y", "xyyy", True),
        ("x{a}yy{b}y", "xyy", False),  # the pieces may not overlap
        ("unbalanced {", "unbalanced {", False),  # the magic fails on it: nothing is sent
        ("unbalanced {", "unbalanced {x", False),
    ],
)
def test_a_cell_could_send_its_text_with_any_fields_filled_in(
    cell: str, prompt: str, sent: bool
) -> None:
    assert could_send(cell, prompt) is sent


_TEXT = st.text(alphabet=st.characters(blacklist_characters="{}", codec="utf-8"), max_size=12)
_NAME = st.from_regex(r"[a-z_][a-z0-9_]{0,5}", fullmatch=True)


@given(
    pieces=st.lists(_TEXT, min_size=1, max_size=6),
    names=st.lists(_NAME, min_size=0, max_size=5),
    values=st.dictionaries(_NAME, st.text(max_size=12), max_size=5),
)
def test_any_cell_could_send_what_the_magic_makes_of_it(
    pieces: list[str], names: list[str], values: dict[str, str]
) -> None:
    # A cell of literal pieces with fields between them, formatted as the magic does (a value
    # may hold braces, a name may be unknown); and the same with its first character changed.
    fields = [f"{{{name}}}" for name in names] + [""] * len(pieces)
    cell = "".join(piece + field for piece, field in zip(pieces, fields, strict=False))
    prompt = cell.format_map(_Names(values))
    assert could_send(cell, prompt)
    if cell and not cell.startswith("{"):
        changed = ("#" if cell[0] != "#" else "%") + prompt[1:]
        assert not could_send(cell, changed)


def test_the_prompt_names_the_kernel_where_timing_would_not() -> None:
    # Both cells started before either chat was made: by time, the later cell takes the first
    # chat read. The prompts say which asked what.
    cells = {
        "k-a": Cell("Claude", 100.0, "please fix a.ipynb"),
        "k-b": Cell("Claude", 100.1, "{what} b.ipynb"),
    }
    source = turns(cells)
    chat_a = OneShotTurn(opened=100.2, prompt="please fix a.ipynb")
    chat_b = OneShotTurn(opened=100.3, prompt="now fix b.ipynb")
    source.turns += [chat_b, chat_a]
    assert source._kernel_for("Claude", chat_a) == "k-a"
    chat_a.kernel_id = "k-a"
    assert source._kernel_for("Claude", chat_b) == "k-b"
    # A prompt no running cell wrote (the magic's --eval, a script): time decides, as before.
    assert source._kernel_for("Claude", OneShotTurn(opened=100.4, prompt="from --eval")) == "k-b"
    # The same prompt in two cells: time decides between those two only.
    cells["k-c"] = Cell("Claude", 100.05, "please fix a.ipynb")
    cells["k-d"] = Cell("Claude", 100.15, "something else")
    source = turns(cells)
    assert source._kernel_for("Claude", OneShotTurn(opened=100.2, prompt="please fix a.ipynb")) == (
        "k-c"
    )


@given(st.data())
def test_chats_read_in_any_order_go_to_the_cells_that_asked(data: st.DataObject) -> None:
    # Several kernels ask one persona within a second, each its own prompt; their chats are
    # made in one order and first read in another. Every chat reaches its own kernel.
    count = data.draw(st.integers(2, 6), label="kernels")
    starts = data.draw(
        st.lists(st.floats(100.0, 101.0), min_size=count, max_size=count), label="starts"
    )
    cells = {f"k{i}": Cell("Claude", starts[i], f"task {i}: fix n{i}.ipynb") for i in range(count)}
    source = turns(cells)
    made = data.draw(st.permutations(range(count)), label="made")
    chats = {
        i: OneShotTurn(opened=101.0 + n / 10, prompt=f"task {i}: fix n{i}.ipynb")
        for n, i in enumerate(made)
    }
    source.turns += [chats[i] for i in made]
    for i in data.draw(st.permutations(range(count)), label="read"):
        chats[i].kernel_id = source._kernel_for("Claude", chats[i])
        assert chats[i].kernel_id == f"k{i}"


def test_the_route_s_message_hands_its_prompt_to_its_own_request_s_chat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The route's two names are wrapped while the source runs and put back at stop; each
    request's prompt reaches the chat that request made, even when two requests interleave."""
    import asyncio
    import types

    from jupyterlab_chat.models import Message
    from jupyterlab_chat.ychat import YChat

    handlers = types.ModuleType("jupyter_ai_persona_manager.handlers")
    handlers.YChat = YChat  # type: ignore[attr-defined]
    handlers.Message = Message  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "jupyter_ai_persona_manager.handlers", handlers)
    source = OneShotTurns(FakeSink("/srv"), dict)
    source.start()
    assert source.installed
    assert handlers.YChat is not YChat and handlers.Message is not Message

    async def request(prompt: str, pause: asyncio.Event, resume: asyncio.Event) -> Any:
        handlers.YChat()
        pause.set()
        await resume.wait()  # another request runs in between
        return handlers.Message(id="msgid", body=prompt, time=0.0, sender="person", raw_time=False)

    async def both() -> list[Any]:
        first_made, second_made, go = asyncio.Event(), asyncio.Event(), asyncio.Event()
        first = asyncio.ensure_future(request("first prompt", first_made, go))
        await first_made.wait()
        second = asyncio.ensure_future(request("second prompt", second_made, asyncio.Event()))
        await second_made.wait()
        go.set()
        done = await first
        second.cancel()
        return [done]

    # A loop of its own, never made current: asyncio.run would leave the thread without one,
    # which later tests in this process (an SDK's fixtures, a server's) expect to find.
    loop = asyncio.new_event_loop()
    try:
        (message,) = loop.run_until_complete(both())
    finally:
        loop.close()
    assert type(message) is Message  # the route's message is jupyterlab-chat's own
    assert [turn.prompt for turn in source.turns] == ["first prompt", None]
    source.stop()
    assert handlers.YChat is YChat and handlers.Message is Message
