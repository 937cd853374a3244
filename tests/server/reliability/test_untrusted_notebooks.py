"""Notebooks an agent replaced with a FIFO or a deeply nested file, in a real jupyter_server.

What used to happen: a notebook looked at and left, then replaced by ``mkfifo``, blocked one
thread of the 4-thread drafts pool for good on its next read (a blocking ``open``); with four,
no other notebook's change was ever reported and every ``POST seen`` waited its full 5 s. A
chat persona whose tool call named a FIFO notebook froze the server's event loop (the cell
labels were read on it), and a notebook nested 100k deep raised an uncaught RecursionError
there. Every reader now goes through :mod:`jupyter_recap.untrusted` (non-blocking, regular
files only, checked on the descriptor), and the chat's cell labels are read on the pool.

The page is played by the routes (``POST focus``, ``POST seen``), the persona by jupyterlab-chat's
own chat model, as in tests/server/test_chat_source.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from server_fixtures import *  # noqa: F403
from server_fixtures import asynctest

from jupyter_recap.server.outside.changes import POLL_SECONDS

pytestmark = [
    pytest.mark.timeout(120),
    # jupyterlab-chat's own WebSocket route, not ours (tests/server checks our routes' auth).
    pytest.mark.filterwarnings(
        "ignore:Extension endpoints without:jupyter_server.utils.JupyterServerAuthWarning"
    ),
]

CLAUDE = "jupyter-ai-personas::recap_test_persona::ClaudeTestPersona"
SEEN_WITHIN = 2.0
"""A ``seen`` answers once its notebook is read: at once, not after its 5 s bound."""
LOOP_ANSWERS_WITHIN = 0.1
LOOP_HELD_UP = 1.0


@pytest.fixture  # type: ignore[no-redef]
def jp_server_config(recap_config: dict[str, Any]) -> Any:
    """Our extension and jupyterlab-chat's (its ChatManager), authentication required."""
    from traitlets.config import Config

    extensions = {"jupyter_recap": True, "jupyterlab_chat": True, "jupyter_server_terminals": False}
    return Config(
        {
            "ServerApp": {"jpserver_extensions": extensions, "allow_unauthenticated_access": False},
            "RecapServer": recap_config,
            "Recap": {"away_seconds": 0.3, "post_turn_seconds": 0.2, "model": "offline"},
        }
    )


@pytest.fixture
def fifos() -> Iterator[list[Path]]:
    """The FIFOs a test makes; at teardown a reader still blocked on one (the old code's) is
    released, so a failing test leaves no thread stuck behind it."""
    made: list[Path] = []
    yield made
    for path in made:
        release(path)


def release(path: Path) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # no reader waits on it
        return
    os.close(fd)


def notebook(source: str) -> str:
    cell = {
        "cell_type": "code",
        "id": "c1",
        "source": source,
        "metadata": {},
        "outputs": [],
        "execution_count": 1,
    }
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


async def until(check: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


@asynctest
async def test_four_fifo_notebooks_leave_a_fifth_reported_and_seen_prompt(
    api: Any, recap: Any, kernel_id: str, jp_root_dir: Path, fifos: list[Path]
) -> None:
    names = [f"trap-{n}.ipynb" for n in range(4)] + ["work.ipynb"]
    for name in names:
        (jp_root_dir / name).write_text(notebook("rows = [1, 2, 3]"), encoding="utf-8")
    # The person looks at each notebook and leaves it (each from a tab of its own).
    for n, name in enumerate(names):
        look = {"kernel_id": kernel_id, "path": name, "client_id": f"tab-{n}"}
        assert (await api("focus", method="POST", body={**look, "focused": True}))[0] == 200
        assert (await api("focus", method="POST", body={**look, "focused": False}))[0] == 200
        seen = {"path": name, "client_id": f"tab-{n}"}
        assert (await api("seen", method="POST", body=seen))[0] == 200
    await until(lambda: all(recap.changes.notebooks[n].baseline is not None for n in names))
    # An agent replaces four of them with FIFOs; the next polls read them.
    for name in names[:4]:
        (jp_root_dir / name).unlink()
        os.mkfifo(jp_root_dir / name)
        fifos.append(jp_root_dir / name)
    await asyncio.sleep(POLL_SECONDS * 2 + 0.5)
    # The person's page saves the fifth: its read is not queued behind the FIFOs'.
    started = time.monotonic()
    status, _ = await api("seen", method="POST", body={"path": "work.ipynb", "client_id": "tab-4"})
    assert status == 200
    assert time.monotonic() - started < SEEN_WITHIN
    # And while the person is away the fifth changes on disk: its line still comes.
    (jp_root_dir / "work.ipynb").write_text(notebook("rows = load('2024.csv')"), encoding="utf-8")
    status, listing = await until_outside(api, "work.ipynb")
    text = listing["outside"]["work.ipynb"]["text"]
    assert text.startswith("While you were away: 1 cell edited"), text
    # The FIFOs are notebooks nobody can read: no line for them, nothing stuck.
    assert not any(name in listing["outside"] for name in names[:4])


async def until_outside(api: Any, notebook: str) -> tuple[int, Any]:
    deadline = time.monotonic() + 20
    while True:
        status, listing = await api("agents")
        if notebook in listing.get("outside", {}):
            return status, listing
        assert time.monotonic() < deadline, listing
        await asyncio.sleep(0.05)


# -- a chat's persona names the notebook -----------------------------------------------------------


class Persona:
    """Writes a turn into a chat model the way Jupyter AI's ACP client does."""

    def __init__(self, model: Any) -> None:
        from jupyterlab_chat import models

        user: Any = models.User  # untyped constructor
        self.model = model
        model.set_user(user(username=CLAUDE, name="Claude", display_name="Claude", bot=True))
        model.set_user(user(username="ana", name="Ana", display_name="Ana"))

    def ask(self, body: str) -> None:
        from jupyterlab_chat.models import NewMessage

        message_id = self.model.add_message(NewMessage(body=body, sender="ana"))
        message = self.model.get_message(message_id)
        message.mentions = [CLAUDE]
        self.model.update_message(message)

    def tools(self, *calls: dict[str, Any]) -> None:
        from jupyterlab_chat.models import NewMessage

        message_id = self.model.add_message(NewMessage(body="", sender=CLAUDE))
        message = self.model.get_message(message_id)
        message.metadata = {"tool_calls": list(calls)}
        self.model.update_message(message)


async def open_chat(jp_serverapp: Any, root: Path, name: str) -> Persona:
    """A new chat, open, and read once by the source (what comes later is news)."""
    (root / name).write_text(json.dumps({"messages": [], "users": {}}), encoding="utf-8")
    settings = jp_serverapp.web_app.settings
    model = settings["chat_manager"].ws_open(name)
    chats = settings["jupyter_recap"].chats.chats
    await until(lambda: (chat := chats.get(name)) is not None and chat.view is not None)
    return Persona(model)


def deep_notebook(levels: int = 100_000) -> bytes:
    return b'{"cells": [' + b"[" * levels + b"]" * levels + b"]}"


@pytest.mark.parametrize("kind", ["fifo", "deep"])
@asynctest
async def test_a_persona_naming_a_fifo_or_deep_notebook_never_stalls_the_loop(
    jp_serverapp: Any,
    jp_root_dir: Path,
    jp_fetch: Any,
    recap: Any,
    fifos: list[Path],
    kind: str,
) -> None:
    """The chat's line for the notebook is made, and ``api/status`` answers within 100 ms all
    along: the notebook's cell labels are read on the pool, the safe way."""
    target = jp_root_dir / "trap.ipynb"
    if kind == "fifo":
        os.mkfifo(target)
        fifos.append(target)
        # The old code blocked the loop in open(): a writer that comes after 5 s lets it go on
        # (and the test fail on the time it took, rather than hang).
        timer = threading.Timer(5.0, release, (target,))
        timer.daemon = True
        timer.start()
    else:
        target.write_bytes(deep_notebook())
    persona = await open_chat(jp_serverapp, jp_root_dir, "trap.chat")
    persona.ask("@Claude fix the loader in trap.ipynb")
    run = {
        "tool_call_id": "r1",
        "title": "mcp__jupyter__run_cell",
        "kind": "execute",
        "status": "completed",
        "raw_input": {"cell_id": "c7"},
        "locations": [str(target)],
    }
    persona.tools(run)
    took: list[float] = []
    deadline = time.monotonic() + 1.5  # the chat is read 50 ms after a change
    while time.monotonic() < deadline:
        started = time.monotonic()
        response = await jp_fetch("api", "status")
        assert response.code == 200
        took.append(time.monotonic() - started)
        await asyncio.sleep(0.02)
    # The typical answer within 100 ms, and none held up: a blocked loop held every answer for
    # the whole read (5 s here). A loaded machine may delay one answer, never by a second.
    typical = statistics.median(took)
    assert typical < LOOP_ANSWERS_WITHIN, f"the loop answered in {typical:.2f} s (median)"
    assert max(took) < LOOP_HELD_UP, f"the loop was held up for {max(took):.2f} s"
    line = await until(lambda: recap.board.outside.get("trap.ipynb"))
    assert line["text"].startswith("Claude (trap.chat) ran"), line
