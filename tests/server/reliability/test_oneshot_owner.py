"""A one-shot persona chat goes to the kernel whose cell asked for it, not one started later.

A ``%%ai model@Claude`` cell sends its prompt to the persona manager's one-shot route; the
server gives the tool calls of the chat the route makes to the kernel whose running cell
addresses that persona. An attack ran two such cells in two kernels a second apart: the chat of
the first was given to the second kernel, and the second's chat to the first. Which kernel owns
a chat was decided at the chat's first read (once the persona wrote, seconds after the chat
opened), and the latest cell to start won, even one that started after the chat had opened.

In a real lab with Jupyter AI and the test persona: kernel A runs a persona cell, its request
reaches the route, and kernel B's persona cell starts while the persona is still preparing its
answer. The request is the test's own (it stands for jupyter-ai-magic-commands' ``%%ai``, whose
cell waits while the route answers: here a cell magic of that name that waits), so the order of
the start of A's cell, the chat's opening and the start of B's cell is known.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chatkit import chat_lab
from kernelutil import execute, stream_text
from labserver import LabServer
from outsidekit import FakeSink

from jupyter_recap.server.outside.oneshot import MATCH_SECONDS, OneShotTurn, OneShotTurns

pytestmark = pytest.mark.timeout(300)

SETUP = """\
import os, time
%load_ext jupyter_recap
from jupyter_recap.ipython.extension import extension_for
ext = extension_for(get_ipython())
deadline = time.time() + 20
while not (ext.feed and ext.feed.connected) and time.time() < deadline:
    time.sleep(0.05)

def ai(line, cell):
    # As %%ai waits for the route's answer: until the test says the answer came.
    deadline = time.time() + 90
    while not os.path.exists({release!r}) and time.time() < deadline:
        time.sleep(0.05)

get_ipython().register_magic_function(ai, "cell", "ai")
print('connected' if ext.feed and ext.feed.connected else 'not connected')
"""
ENTRIES = "[(e.kind, e.name, e.text) for e in ext.transcript.entries]"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    with chat_lab(tmp_path_factory.mktemp("oneshotlab")) as server:
        yield server


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
            session = {"path": name, "type": "notebook", "name": "", "kernel": {"name": "python3"}}
            kernels.append(lab.api("POST", "api/sessions", session)["kernel"]["id"])
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
    cells = {"k-a": ("Claude", 100.0), "k-b": ("Claude", 101.0)}
    source = OneShotTurns(FakeSink("/srv"), lambda: cells)
    chat_a = OneShotTurn(opened=100.2)
    source.turns.append(chat_a)
    assert source._kernel_for("Claude", chat_a) == "k-a"
    chat_a.kernel_id = "k-a"
    chat_b = OneShotTurn(opened=101.1)
    source.turns.append(chat_b)
    assert source._kernel_for("Claude", chat_b) == "k-b"
    # With no cell from before the chat, the first cell heard after it (its input came late).
    late = {"k-c": ("Claude", 201.0), "k-d": ("Claude", 200.4)}
    source = OneShotTurns(FakeSink("/srv"), lambda: late)
    assert source._kernel_for("Claude", OneShotTurn(opened=200.0)) == "k-d"
    assert source._kernel_for("Claude", OneShotTurn(opened=200.0 - MATCH_SECONDS - 1)) is None
