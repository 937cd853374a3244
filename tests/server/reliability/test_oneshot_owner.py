"""``%%ai model@Persona`` cells in real kernels: the persona's tool calls reach the cell that
asked, and no other kernel.

A ``%%ai model@Claude`` cell sends its prompt to the persona manager's one-shot route; the
server gives the tool calls of the chat the route makes to the kernel whose running cell
addresses that persona with that prompt (timing decides only where the prompt cannot). In a
real lab with Jupyter AI and the test persona:

- cells one after the other in one kernel, through jupyter-ai-magic-commands' real ``%%ai``;
- two kernels whose real ``%%ai`` cells ask the same persona at the same moment, round after
  round (by timing alone, the first chat read went to whichever cell started last);
- an attack that ran two cells a second apart: the chat of the first was given to the second
  kernel. There the request is the test's own (it stands for ``%%ai``, whose cell waits while
  the route answers: here a cell magic of that name that waits), so the order of the start of
  A's cell, the chat's opening and the start of B's cell is known.

``scripts/test-latest`` runs this module again against the newest persona manager and
jupyterlab-chat: the route's names this relies on are checked there too.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chatkit import chat_lab
from kernelutil import execute, feed_ready, stream_text
from labserver import LabServer
from outsidekit import FakeSink

from jupyter_recap.server.outside.host import PersonaCell as Cell
from jupyter_recap.server.outside.oneshot import MATCH_SECONDS, OneShotTurn, OneShotTurns

pytestmark = pytest.mark.timeout(300)

SETUP = (
    feed_ready()
    + """\
import os

def ai(line, cell):
    # As %%ai waits for the route's answer: until the test says the answer came.
    deadline = time.time() + 90
    while not os.path.exists({release!r}) and time.time() < deadline:
        time.sleep(0.05)

get_ipython().register_magic_function(ai, "cell", "ai")
"""
)
ENTRIES = "[(e.kind, e.name, e.text) for e in ext.transcript.entries]"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    with chat_lab(tmp_path_factory.mktemp("oneshotlab")) as server:
        yield server


def notebook_kernel(lab: LabServer, path: str) -> str:
    """A kernel for notebook ``path``, asked for as JupyterLab asks (the session's name is the
    file's: the kernel's notebook is then ``path``, not the server's root folder that every
    nameless session shares, with its stored session)."""
    session = {"path": path, "type": "notebook", "name": path, "kernel": {"name": "python3"}}
    kernel_id: str = lab.api("POST", "api/sessions", session)["kernel"]["id"]
    return kernel_id


def kernel_value(kc: Any, expression: str) -> Any:
    msg_id = kc.execute("", user_expressions={"v": expression}, store_history=False)
    reply = kc.get_shell_msg(timeout=30)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=30)
    result = reply["content"]["user_expressions"]["v"]
    assert result["status"] == "ok", result
    return eval(result["data"]["text/plain"])  # our own kernel's repr


def tool_entries(kc: Any, count: int, seconds: float = 20) -> list[tuple[str, str, str]]:
    """The kernel's tool calls, once there are ``count`` (or after ``seconds``, what there is)."""
    deadline = time.monotonic() + seconds
    while True:
        calls = [entry for entry in kernel_value(kc, ENTRIES) if entry[0] == "tool_call"]
        if len(calls) >= count or time.monotonic() > deadline:
            return calls
        time.sleep(0.2)


def in_background(work: Any, *args: Any) -> tuple[threading.Thread, dict[str, Any]]:
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = work(*args)
        except BaseException as error:  # noqa: BLE001 - handed to the test
            result["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, result


def test_a_cell_that_starts_after_the_chat_opened_does_not_take_it(
    lab: LabServer, tmp_path: Path
) -> None:
    lab.write_notebook("first.ipynb", ["import pandas as pd", "df = pd.DataFrame({'a': [1]})"])
    release = tmp_path / "answered"
    kernels: list[str] = []
    clients: list[Any] = []
    try:
        for name in ("asks-a.ipynb", "asks-b.ipynb"):
            kernels.append(notebook_kernel(lab, name))
            clients.append(lab.connect(kernels[-1]))
        first, second = clients
        for kc in clients:
            shown = stream_text(execute(kc, SETUP.format(release=str(release))))
            assert shown.strip() == "connected", shown
        # A's cell starts; the server's watcher hears it; then its request opens the chat.
        cell_a, _ = in_background(execute, first, "%%ai @Claude\nplease fix first.ipynb", 120)
        time.sleep(1.0)
        ask = {"message": "please fix first.ipynb, slow"}
        request, answer = in_background(lab.api, "POST", "api/ai/message/Claude", ask)
        # B's cell starts once the chat has opened (the route takes the request at once) and while
        # the persona prepares its first words (1.5 s, "slow").
        time.sleep(0.8)
        cell_b, _ = in_background(execute, second, "%%ai @Claude\nsomething else", 120)
        request.join(90)
        assert "error" not in answer, answer
        assert answer["value"]["response"].startswith("I'll look at first.ipynb first.")
        release.write_text("")
        cell_a.join(60)
        cell_b.join(60)
        calls = tool_entries(first, 3)
        assert [name for _, name, _ in calls] == ["read_notebook", "edit_cell", "run_cell"]
        assert all("first.ipynb" in text for *_, text in calls), calls
        # The server hands a chat's calls to one kernel, in one pass over its kernels: with all
        # three in A, any given to B would be in B's feed too by now (2 s of slack for it).
        assert tool_entries(second, 1, seconds=2) == []
    finally:
        release.write_text("")
        for kc in clients:
            kc.stop_channels()
        for kernel_id in kernels:
            lab.api("DELETE", f"api/kernels/{kernel_id}")


def test_the_cell_that_started_before_the_chat_opened_is_preferred() -> None:
    # The rule alone: A's cell started before the chat opened, B's after (within the time a
    # late cell input may take); A owns the chat, and B the next one.
    cells = {"k-a": Cell("Claude", 100.0), "k-b": Cell("Claude", 101.0)}
    source = OneShotTurns(FakeSink("/srv"), lambda: cells)
    chat_a = OneShotTurn(opened=100.2)
    source.turns.append(chat_a)
    assert source._kernel_for("Claude", chat_a) == "k-a"
    chat_a.kernel_id = "k-a"
    chat_b = OneShotTurn(opened=101.1)
    source.turns.append(chat_b)
    assert source._kernel_for("Claude", chat_b) == "k-b"
    # With no cell from before the chat, the first cell heard after it (its input came late).
    late = {"k-c": Cell("Claude", 201.0), "k-d": Cell("Claude", 200.4)}
    source = OneShotTurns(FakeSink("/srv"), lambda: late)
    assert source._kernel_for("Claude", OneShotTurn(opened=200.0)) == "k-d"
    assert source._kernel_for("Claude", OneShotTurn(opened=200.0 - MATCH_SECONDS - 1)) is None


ONE_SHOT_SETUP = feed_ready(after_load="%load_ext jupyter_ai_magic_commands")


def test_persona_cells_are_turns_with_the_persona_s_tool_calls(lab: LabServer) -> None:
    """`%%ai model@Claude` cells in a notebook, one after the other: each is one turn, with the
    prompt and reply from the kernel and the tool calls the persona made in the server's
    one-shot chat written into that turn. A one-shot request no cell made reaches no kernel."""
    lab.write_notebook("oneshot.ipynb", ["import pandas as pd", "df = pd.DataFrame({'a': [1]})"])
    kernel_id = notebook_kernel(lab, "asks.ipynb")
    kc = lab.connect(kernel_id)
    entries = "[(e.kind, e.name, e.error, e.cell_id) for e in ext.transcript.entries]"
    try:
        assert stream_text(execute(kc, ONE_SHOT_SETUP)).strip() == "connected"
        # Someone else's request to the route (a script, another tool): no cell asked for it.
        answer = lab.api("POST", "api/ai/message/Claude", {"message": "please fix oneshot.ipynb"})
        assert answer["response"].startswith("I'll look at oneshot.ipynb first.")
        ask = "%%ai openai:gpt-4o@Claude\nplease fix oneshot.ipynb, fail"
        shown = execute(kc, ask, 120, cell_id="cell-ask")
        assert "KeyError" in json.dumps([m["content"] for m in shown])  # the reply, shown
        calls = until_calls(kc, entries, 3)
        assert [(name, cell) for _, name, _, cell in calls] == [
            ("read_notebook", "cell-ask"),
            ("edit_cell", "cell-ask"),
            ("run_cell", "cell-ask"),
        ]
        assert "KeyError: 'region'" in (calls[-1][2] or "")
        # What a model would read for a recap of this notebook: the persona's calls, the
        # failed one with its error, in the turn of the cell that asked.
        request = stream_text(execute(kc, "%recap --dry-run --model openai:gpt-test"))
        assert "Tool error (run_cell): KeyError: 'region'" in request, request
        prompt = request.index("User: please fix oneshot.ipynb, fail")
        assert prompt < request.index("Tool call: edit_cell") < request.index("Assistant:")
        # The next cell asks again, and this time the run works: a turn of its own.
        execute(kc, "%%ai @Claude\nplease fix oneshot.ipynb", 120, cell_id="cell-again")
        calls = until_calls(kc, entries, 6)
        assert [cell for *_, cell in calls] == ["cell-ask"] * 3 + ["cell-again"] * 3
        assert [error for _, _, error, _ in calls[3:]] == [None, None, None]
        kinds = [kind for kind, *_ in kernel_value(kc, entries)]
        assert kinds.count("user") == 2 and kinds.count("tool_call") == 6, kinds
    finally:
        kc.stop_channels()
        lab.api("DELETE", f"api/kernels/{kernel_id}")


def until_calls(kc: Any, entries: str, count: int) -> list[tuple[str, str, str | None, str]]:
    """The tool results of the kernel's transcript, once there are ``count`` of them (a step
    can reach the kernel just after the cell's end)."""
    deadline = time.monotonic() + 20
    while True:
        calls = [entry for entry in kernel_value(kc, entries) if entry[0] == "tool_result"]
        if len(calls) >= count or time.monotonic() > deadline:
            return calls
        time.sleep(0.1)


def test_two_kernels_asking_the_same_persona_at_once_each_get_their_own_calls(
    lab: LabServer,
) -> None:
    names = ("twin-a.ipynb", "twin-b.ipynb")
    for name in names:
        lab.write_notebook(name, ["import pandas as pd", "df = pd.DataFrame({'a': [1]})"])
    kernels: list[str] = []
    clients: list[Any] = []
    try:
        for name in names:
            kernels.append(notebook_kernel(lab, f"asks-{name}"))
            clients.append(lab.connect(kernels[-1]))
            assert stream_text(execute(clients[-1], ONE_SHOT_SETUP)).strip() == "connected"
        # Three rounds; each cell's persona takes 1.5 s before its first words, so both chats
        # are open before either is read, and the order the cells start in is left to chance.
        for round_ in range(1, 4):
            start = threading.Barrier(2)

            def ask(kc: Any, name: str, start: threading.Barrier = start) -> Any:
                start.wait(30)
                return execute(kc, f"%%ai @Claude\nplease fix {name}, slow", 120)

            running = [
                in_background(ask, kc, name) for kc, name in zip(clients, names, strict=True)
            ]
            for thread, result in running:
                thread.join(150)
                assert "error" not in result, result
            for kc, name in zip(clients, names, strict=True):
                calls = tool_entries(kc, 3 * round_)
                assert len(calls) == 3 * round_, (round_, name, calls)
                assert all(name in text for *_, text in calls), (round_, name, calls)
    finally:
        for kc in clients:
            kc.stop_channels()
        for kernel_id in kernels:
            lab.api("DELETE", f"api/kernels/{kernel_id}")
