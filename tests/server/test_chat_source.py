"""The chat source against jupyterlab-chat's real ChatManager, in a real jupyter_server.

The persona's messages are written through the chat model's own API (``add_message``, then
``update_message`` for each tool-call update, as Jupyter AI's ACP client does), and the persona
manager's ``persona_state`` events through the server's event bus with their real schema. The
page is played by the routes: ``POST focus`` with ``{chat}``, ``GET agents``. The whole persona,
in a lab and a browser, is in tests/browser/test_lab_chats.py.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from server_fixtures import *  # noqa: F403
from server_fixtures import asynctest

pytestmark = pytest.mark.filterwarnings(
    # jupyterlab-chat's own WebSocket route, not ours (tests/server checks our routes' auth).
    "ignore:Extension endpoints without:jupyter_server.utils.JupyterServerAuthWarning"
)

CLAUDE = "jupyter-ai-personas::recap_test_persona::ClaudeTestPersona"
MOVE = "mv models/churn.pkl models/old/"
PERSONA_STATE = "https://schema.jupyter.org/jupyter_ai_persona_manager/persona_state/v1"


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


@pytest.fixture  # type: ignore[no-redef]
def recap_config() -> dict[str, Any]:
    return {"reconcile_interval": 0.5}


class Persona:
    """Writes a turn into a chat model the way Jupyter AI's ACP client does."""

    def __init__(self, model: Any, events: Any) -> None:
        from jupyterlab_chat import models

        user: Any = models.User  # untyped constructor
        self.model, self.events = model, events
        model.set_user(user(username=CLAUDE, name="Claude", display_name="Claude", bot=True))
        model.set_user(user(username="ana", name="Ana", display_name="Ana"))

    def ask(self, body: str) -> None:
        from jupyterlab_chat.models import NewMessage

        message_id = self.model.add_message(NewMessage(body=body, sender="ana"))
        message = self.model.get_message(message_id)
        message.mentions = [CLAUDE]
        self.model.update_message(message)

    def processing(self, busy: bool) -> None:
        from jupyter_ai_persona_manager.persona_events import register_persona_event_schemas

        register_persona_event_schemas(self.events)
        chat_id = self.model.get_id()
        data = {"chat_id": chat_id, "persona_id": CLAUDE, "processing": busy}
        data["model"] = {"current": "claude-test-1"}
        self.events.emit(schema_id=PERSONA_STATE, data=data)

    def tools(self, *calls: dict[str, Any]) -> str:
        from jupyterlab_chat.models import NewMessage

        message_id = self.model.add_message(NewMessage(body="", sender=CLAUDE))
        self.update(message_id, *calls)
        return str(message_id)

    def update(self, message_id: str, *calls: dict[str, Any]) -> None:
        message = self.model.get_message(message_id)
        message.metadata = {"tool_calls": list(calls)}
        self.model.update_message(message)

    def say(self, body: str) -> None:
        from jupyterlab_chat.models import NewMessage

        self.model.add_message(NewMessage(body=body, sender=CLAUDE))


def tool(call_id: str, title: str, status: str, **fields: Any) -> dict[str, Any]:
    return {"tool_call_id": call_id, "title": title, "kind": "execute", "status": status, **fields}


async def until(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def open_chat(jp_serverapp: Any, root: Path, name: str) -> Persona:
    """A new chat, open, and read once by the source (what comes later is news)."""
    (root / name).write_text(json.dumps({"messages": [], "users": {}}), encoding="utf-8")
    settings = jp_serverapp.web_app.settings
    model = settings["chat_manager"].ws_open(name)
    chats = settings["jupyter_recap"].chats.chats
    await until(lambda: (chat := chats.get(name)) is not None and chat.view is not None)
    return Persona(model, jp_serverapp.event_logger)


def chat_row(recap: Any, name: str) -> dict[str, Any] | None:
    row: dict[str, Any] | None = recap.board.row(f"chat:{name}")
    return row


@asynctest
async def test_a_persona_turn_becomes_a_row_that_waits_then_finishes(
    jp_serverapp: Any, jp_root_dir: Path, api: Any, recap: Any
) -> None:
    persona = await open_chat(jp_serverapp, jp_root_dir, "churn.chat")
    status, _ = await api(
        "focus", method="POST", body={"chat": "churn.chat", "focused": False, "client_id": "tab1"}
    )
    assert status == 200
    persona.ask("@Claude please retrain the churn model in churn.ipynb")
    persona.processing(True)
    run = tool("r1", "mcp__jupyter__run_cell", "in_progress", raw_input={"path": "churn.ipynb"})
    message = persona.tools(run)
    row = await until(
        lambda: (r := chat_row(recap, "churn.chat")) and r["state"] == "running" and r
    )
    assert (row["agent"], row["model"], row["kind"]) == ("Claude", "claude-test-1", "chat")
    failed = dict(run, status="failed", raw_output={"error": "KeyError: 'region'"})
    move = tool("m1", "Bash", "pending", raw_input={"command": MOVE}, permission_status="pending")
    persona.update(message, failed, move)
    row = await until(
        lambda: (r := chat_row(recap, "churn.chat")) and r["state"] == "waiting" and r
    )
    assert (row["needs_you"], row["approval"], row["notice"]) == ("approval", MOVE, 1)
    status, listing = await api("agents")
    assert listing["agents"][0]["id"] == "chat:churn.chat"  # waiting sorts first
    # Away, the chat's schedule drafts a recap that names the failure and what waits.
    row = await until(lambda: (r := chat_row(recap, "churn.chat")) and r["recap"] and r)
    assert "KeyError: 'region'" in row["recap"]["text"]
    assert row["recap"]["text"].endswith(f"Waiting for your approval: {MOVE}.")
    assert row["recap"]["model"] == "offline"
    # The person approves in the chat; the agent finishes while they are still away.
    persona.update(message, failed, dict(move, status="completed", permission_status="resolved"))
    persona.say("Moved the old model aside; the merge still needs a region column.")
    persona.processing(False)
    row = await until(
        lambda: (r := chat_row(recap, "churn.chat")) and r["state"] == "finished" and r
    )
    assert (row["needs_you"], row["approval"], row["notice"]) == ("finished", None, 1)
    status, one = await api("agents", "chat:churn.chat")
    assert status == 200 and one["agent"]["id"] == "chat:churn.chat"
    # Looking at the chat ends the absence.
    await api(
        "focus", method="POST", body={"chat": "churn.chat", "focused": True, "client_id": "tab1"}
    )
    row = await until(lambda: (r := chat_row(recap, "churn.chat")) and r["needs_you"] is None and r)
    assert row["state"] == "idle"  # as a notebook row once seen


@asynctest
async def test_a_chat_row_never_keeps_the_recap_of_an_earlier_turn_as_current(
    jp_serverapp: Any, jp_root_dir: Path, api: Any, recap: Any
) -> None:
    """A turn ends while the person is away: its recap is the row's. The person looks at the
    chat and watches the next turn end (no draft follows it): the row shows the offline recap
    of that turn, not the text of the one before."""
    persona = await open_chat(jp_serverapp, jp_root_dir, "etl.chat")
    look = {"chat": "etl.chat", "client_id": "tab1"}
    await api("focus", method="POST", body={**look, "focused": False})
    persona.ask("@Claude load the orders table")
    persona.processing(True)
    await until(lambda: (r := chat_row(recap, "etl.chat")) and r["state"] == "running")
    persona.say("Loaded the orders table. Next: load the invoices table.")
    persona.processing(False)
    first = await until(lambda: (r := chat_row(recap, "etl.chat")) and r["recap"] and r)
    assert "invoices" in first["recap"]["text"]

    await api("focus", method="POST", body={**look, "focused": True})
    chat = recap.chats.chats["etl.chat"]
    await until(lambda: chat.schedule.focused is True)
    persona.ask("@Claude now load the invoices table")
    persona.processing(True)
    await until(lambda: (r := chat_row(recap, "etl.chat")) and r["state"] == "running")
    persona.say("Loaded the invoices table. Next: load the payments table.")
    persona.processing(False)
    row = await until(
        lambda: (
            (r := chat_row(recap, "etl.chat"))
            and r["turn_ended"]
            and r["turn_ended"] > first["turn_ended"]
            and r
        )
    )
    assert row["drafting"] is False
    assert row["recap"] is not None and row["recap"]["text"] != first["recap"]["text"]
    assert "payments" in row["recap"]["text"] and row["recap"]["model"] == "offline"


@asynctest
async def test_a_chat_between_people_gets_no_row(
    jp_serverapp: Any, jp_root_dir: Path, recap: Any
) -> None:
    persona = await open_chat(jp_serverapp, jp_root_dir, "lunch.chat")
    from jupyterlab_chat.models import NewMessage

    persona.model.add_message(NewMessage(body="lunch?", sender="ana"))
    await asyncio.sleep(0.3)
    assert chat_row(recap, "lunch.chat") is None
    assert recap.chats.chats["lunch.chat"].view is not None  # read, and found no persona


@asynctest
async def test_a_chat_focus_report_is_checked(api: Any) -> None:
    bad = [
        {"chat": "notes.md", "focused": True, "client_id": "t"},
        {"chat": "a.chat", "focused": "yes", "client_id": "t"},
        {"chat": "a.chat", "focused": True},
    ]
    for body in bad:
        status, answer = await api("focus", method="POST", body=body)
        assert status == 400, answer
    status, answer = await api("agents", "chat:none.chat")
    assert status == 404 and "no agents row" in answer["message"]


@asynctest
async def test_the_agents_event_names_the_chat_row(
    jp_serverapp: Any, jp_root_dir: Path, recap: Any
) -> None:
    seen: list[dict[str, Any]] = []

    async def listen(logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        seen.append(data)

    from jupyter_recap.server import AGENTS_SCHEMA

    jp_serverapp.event_logger.add_listener(schema_id=AGENTS_SCHEMA, listener=listen)
    persona = await open_chat(jp_serverapp, jp_root_dir, "events.chat")
    persona.ask("@Claude hello")
    persona.say("Hello.")
    await until(lambda: any(event["id"] == "chat:events.chat" for event in seen))
    assert all(set(event) == {"id", "action", "version"} for event in seen)


@asynctest
async def test_what_the_agent_did_in_a_notebook_while_away_is_one_line(
    jp_serverapp: Any, jp_root_dir: Path, api: Any, recap: Any, kernel_id: str
) -> None:
    cells = [
        {
            "cell_type": "code",
            "id": "c1",
            "source": "import pandas",
            "metadata": {},
            "outputs": [],
            "execution_count": 1,
        },
        {
            "cell_type": "code",
            "id": "c7",
            "source": "df.merge(r)",
            "metadata": {},
            "outputs": [],
            "execution_count": 7,
        },
    ]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (jp_root_dir / "churn.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    where = {"locations": [str(jp_root_dir / "churn.ipynb")]}
    look = {"kernel_id": kernel_id, "path": "churn.ipynb", "client_id": "tab1"}
    status, _ = await api("focus", method="POST", body={**look, "focused": False})
    assert status == 200
    persona = await open_chat(jp_serverapp, jp_root_dir, "churn.chat")
    persona.ask("@Claude please fix the merge in churn.ipynb")
    edit = tool("e1", "mcp__jupyter__edit_cell", "completed", raw_input={"cell_id": "c7"}, **where)
    run = tool(
        "r1",
        "mcp__jupyter__run_cell",
        "failed",
        raw_input={"cell_id": "c7"},
        raw_output={"error": "KeyError: 'region'"},
        **where,
    )
    persona.tools(edit, run)
    persona.say("The merge needs a region column.")
    status, listing = await until_listing(api, "churn.ipynb")
    line = listing["outside"]["churn.ipynb"]
    assert (
        line["text"] == "Claude (churn.chat) edited In[7] and ran it; it failed: KeyError: 'region'"
    )
    assert line["links"] == [{"start": 27, "end": 32, "cell_id": "c7"}]
    assert recap.board.row(kernel_id) is None  # no row needed: the kernel has no jupyter_recap
    # Back at the notebook: what the agent does now is seen as it happens, not news for later.
    await api("focus", method="POST", body={**look, "focused": True})
    persona.ask("@Claude run it again")
    persona.tools(dict(run, tool_call_id="r2"))
    await until(lambda: "churn.ipynb" not in recap.board.outside)


async def until_listing(api: Any, notebook: str) -> tuple[int, Any]:
    deadline = time.monotonic() + 10
    while True:
        status, listing = await api("agents")
        if notebook in listing.get("outside", {}):
            return status, listing
        assert time.monotonic() < deadline, listing
        await asyncio.sleep(0.05)


def chat_file(path: Path, *, waiting: bool) -> None:
    """A chat file as an older jupyterlab-chat (no ChatManager) leaves it."""
    move = tool("m1", "Bash", "in_progress", raw_input={"command": MOVE})
    if waiting:
        move["permission_status"] = "pending"
    else:
        move.update(status="completed", permission_status="resolved")
    messages: list[dict[str, Any]] = [
        {
            "body": "@Claude archive the old model",
            "id": "1",
            "time": 10.0,
            "sender": "ana",
            "mentions": [CLAUDE],
        },
        {"body": "", "id": "2", "time": 11.0, "sender": CLAUDE, "metadata": {"tool_calls": [move]}},
    ]
    if not waiting:
        messages.append({"body": "Done: archived.", "id": "3", "time": 12.0, "sender": CLAUDE})
    users = {CLAUDE: {"username": CLAUDE, "display_name": "Claude", "bot": True}}
    path.write_text(json.dumps({"messages": messages, "users": users}), encoding="utf-8")


@asynctest
async def test_without_a_chat_manager_the_files_the_page_opens_are_read(
    jp_serverapp: Any, jp_root_dir: Path, api: Any, recap: Any
) -> None:
    from jupyter_recap.server.outside.chats import ChatSource
    from jupyter_recap.server.outside.sink import ServerSink

    # jupyterlab-chat before 0.25 has no ChatManager: the source falls back to the files.
    await asyncio.sleep(0.05)
    recap.chats.stop()
    del jp_serverapp.web_app.settings["chat_manager"]
    recap.chats = ChatSource(ServerSink(recap, ChatSource.name), recap)
    recap.chats.start()
    assert (recap.chats.enabled, recap.chats.fallback) == (True, True)
    assert recap.chats._poller is None  # nothing to read until a page opens a chat
    chat_file(jp_root_dir / "old.chat", waiting=True)
    outside = jp_root_dir.parent / "elsewhere.chat"
    chat_file(outside, waiting=True)
    for path in ("old.chat", "../elsewhere.chat"):
        body = {"chat": path, "focused": False, "client_id": "tab1"}
        status, _ = await api("focus", method="POST", body=body)
        assert status == 200
    row = await until(lambda: (r := chat_row(recap, "old.chat")) and r)
    assert (row["state"], row["approval"]) == ("waiting", MOVE)
    chat_file(jp_root_dir / "old.chat", waiting=False)
    row = await until(
        lambda: (r := chat_row(recap, "old.chat")) and r["state"] != "waiting" and r, timeout=8
    )
    assert (row["state"], row["needs_you"]) == ("finished", "finished")
    assert chat_row(recap, "../elsewhere.chat") is None  # outside the server's folder: unread
    recap.chats.stop()


@asynctest
async def test_an_old_chat_opened_again_is_no_news(
    jp_serverapp: Any, jp_root_dir: Path, api: Any, recap: Any
) -> None:
    chat_file(jp_root_dir / "old.chat", waiting=False)  # its agent finished long ago
    model = jp_serverapp.web_app.settings["chat_manager"].ws_open("old.chat")
    row = await until(lambda: (r := chat_row(recap, "old.chat")) and r)
    assert (row["state"], row["needs_you"], row["notice"]) == ("idle", None, 0)
    await asyncio.sleep(0.6)  # past the post-turn and away timers of this module
    tracked = recap.chats.chats["old.chat"]
    assert tracked.recap is None and tracked.schedule.counters.drafts_started == 0
    # What happens from now on is news again.
    persona = Persona(model, jp_serverapp.event_logger)
    persona.ask("@Claude please archive the new model as well")
    persona.say("Done: archived.")
    row = await until(lambda: (r := chat_row(recap, "old.chat")) and r["needs_you"] and r)
    assert (row["needs_you"], row["notice"]) == ("finished", 1)


@asynctest
async def test_a_renamed_chat_keeps_its_row_under_its_new_name(
    jp_serverapp: Any, jp_root_dir: Path, jp_fetch: Any, recap: Any
) -> None:
    persona = await open_chat(jp_serverapp, jp_root_dir, "draft.chat")
    persona.ask("@Claude please summarise the churn results")
    persona.say("Done: churn is 4.1 %.")
    await until(lambda: (r := chat_row(recap, "draft.chat")) and r["needs_you"] == "finished")
    body = json.dumps({"path": "work/final.chat"})
    (jp_root_dir / "work").mkdir()
    await jp_fetch("api", "contents", "draft.chat", method="PATCH", body=body)
    row = await until(lambda: chat_row(recap, "work/final.chat"))
    assert chat_row(recap, "draft.chat") is None
    assert (row["name"], row["needs_you"], row["notice"]) == ("final.chat", "finished", 1)
    # What the agent does next lands in the same row.
    before = row["last_activity"]
    persona.ask("@Claude now plot it")
    persona.say("Done: plotted.")
    await until(lambda: (r := chat_row(recap, "work/final.chat")) and r["last_activity"] > before)
    assert set(recap.chats.chats) >= {"work/final.chat"} and "draft.chat" not in recap.chats.chats


def recap_says(recap: Any, name: str, words: str) -> bool:
    row = chat_row(recap, name)
    return bool(row and row["recap"] and words in row["recap"]["text"])


@asynctest
async def test_each_absence_brings_its_own_notice(
    jp_serverapp: Any, jp_root_dir: Path, api: Any, recap: Any
) -> None:
    """A day, not a moment: away, back, away again; each wait for approval is told once."""
    persona = await open_chat(jp_serverapp, jp_root_dir, "day.chat")

    async def look(focused: bool) -> None:
        body = {"chat": "day.chat", "focused": focused, "client_id": "tab1"}
        assert (await api("focus", method="POST", body=body))[0] == 200

    notices = []
    for round_ in range(3):
        await look(False)
        persona.ask(f"@Claude please archive model {round_}")
        persona.processing(True)
        move = tool(
            f"m{round_}", "Bash", "in_progress", raw_input={"command": f"mv m{round_} old/"}
        )
        message = persona.tools(dict(move, permission_status="pending"))
        row = await until(lambda: (r := chat_row(recap, "day.chat")) and r["approval"] and r)
        notices.append(row["notice"])
        assert row["needs_you"] == "approval"
        # A recap of this round, not the last one's.
        await until(partial(recap_says, recap, "day.chat", f"mv m{round_} old/"))
        await look(True)  # back: the absence ends
        persona.update(message, dict(move, status="completed", permission_status="resolved"))
        persona.say("Done: archived.")
        persona.processing(False)
        await until(lambda: (r := chat_row(recap, "day.chat")) and r["state"] == "idle")
    assert notices == [1, 2, 3]


@asynctest
async def test_the_persona_picker_names_the_persona_before_it_answers(
    jp_serverapp: Any, jp_root_dir: Path, recap: Any
) -> None:
    from jupyterlab_chat.models import NewMessage

    persona = await open_chat(jp_serverapp, jp_root_dir, "picked.chat")
    asked = persona.model.add_message(NewMessage(body="archive the old model", sender="ana"))
    message = persona.model.get_message(asked)
    message.metadata = {"to_persona": CLAUDE}  # no @mention: the picker chose Claude
    persona.model.update_message(message)
    row = await until(lambda: chat_row(recap, "picked.chat"))
    assert (row["agent"], row["state"]) == ("Claude", "idle")
