"""The chat source with real-time collaboration on: chats are Y documents in a real lab.

A person posts into a collaborative chat the way the chat's front end does (``RtcChat``: the
collaboration room's WebSocket, the Y sync protocol, a message map appended to the document)
and the test persona "Claude" answers through Jupyter AI's ACP client, which writes the Y
document in the server. Under collaboration jupyterlab-chat reports new messages but not their
updates (a tool call that fails, a permission request), so these tests hold the chat source to
what the agents listing must still show: the row waiting for approval first, the recap written
while nobody looks at the chat, the line on the notebook the agent edited, the row leaving
"waiting" once the person answers.

The lab saves a chat's document only when asked (a one-hour save delay): every row update
seen here comes from the live document, not from the ``.chat`` file; once saved, the file
says what the row said.
A turn the source reads going from "waiting" straight to "finished" (the approved rest of the
turn ran between two re-reads) still ends: its recap is written again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from chatkit import PERSONA_MODEL, PERSONA_NAME, RtcChat, chat_lab, is_reply, tool_calls
from labserver import PERSONA_ID, LabServer

MOVE = "mv models/churn.pkl models/old/"
ENV = {"JUPYTER_RECAP_MODEL": "offline"}
#: Short recap timers (``c.Recap``), and collaboration saving a document only when asked.
ARGS = (
    "--Recap.away_seconds=1",
    "--Recap.post_turn_seconds=0.3",
    "--YDocExtension.document_save_delay=3600",
)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    tmp = tmp_path_factory.mktemp("rtcchat")
    with chat_lab(tmp, ENV, collaboration=True, args=ARGS) as server:
        yield server


def listing(lab: LabServer) -> dict[str, Any]:
    found: dict[str, Any] = lab.api("GET", "jupyter-recap/api/agents")
    return found


def wait_row(
    lab: LabServer,
    row_id: str,
    ready: Callable[[dict[str, Any]], Any],
    timeout: float = 30,
    every: float = 0.2,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Poll the agents listing until row ``row_id`` satisfies ``ready``; the row and listing."""
    deadline = time.monotonic() + timeout
    while True:
        agents = listing(lab)
        row = next((r for r in agents["agents"] if r["id"] == row_id), None)
        if row is not None and ready(row):
            return row, agents
        if time.monotonic() > deadline:
            log = (lab.root.parent / "lab.log").read_text(errors="replace")[-4000:]
            dump = json.dumps(agents, indent=1)[-4000:]
            raise AssertionError(f"{row_id} not ready in {timeout} s:\n{dump}\n--- lab log\n{log}")
        time.sleep(every)


def call_summary(messages: list[dict[str, Any]]) -> list[tuple[str, str, str | None]]:
    """Each tool call of the messages: its title, status and permission status."""
    return [
        (call["title"], call["status"], call.get("permission_status"))
        for message in messages
        for call in tool_calls(message)
    ]


def test_a_collaborative_chat_waits_for_approval_then_finishes(lab: LabServer) -> None:
    lab.write_notebook("churn.ipynb", ["import math", "print('old')"])
    with RtcChat.create(lab, "churn.chat") as chat:
        prompt = chat.post("@Claude fix churn.ipynb, fail and approval")
        # The message is the front end's: the person registered, the server's clock on it.
        sent = chat.messages()[0]
        assert sent["id"] == prompt
        assert sent["sender"] == chat.user["username"] in chat.read()["users"]
        assert sent["metadata"] == {"to_persona": PERSONA_ID}
        assert sent["mentions"] == [PERSONA_ID]
        assert sent["raw_time"] is False

        waiting, agents = wait_row(lab, "chat:churn.chat", lambda r: r["state"] == "waiting")
        assert waiting["kind"] == "chat"
        assert waiting["approval"] == MOVE
        assert waiting["agent"] == PERSONA_NAME
        assert waiting["model"] == PERSONA_MODEL
        # The permission request the row shows is in the live document; the file on disk,
        # never saved yet, has no message at all.
        call = chat.wait_for_permission(timeout=10)
        assert call["raw_input"]["command"] == MOVE
        assert chat.saved()["messages"] == []
        assert chat.writing() == "is typing..."  # the persona's status, in the room's awareness

        # Another chat finishes meanwhile: the one waiting for the person stays first.
        with RtcChat.create(lab, "hello.chat") as other:
            other.post("@Claude hello")
            assert other.wait_for_reply()["body"] == "Done: nothing needed changing."
            wait_row(lab, "chat:hello.chat", lambda r: r["state"] == "finished")
        _, agents = wait_row(lab, "chat:churn.chat", lambda r: r["state"] == "waiting")
        assert [r["id"] for r in agents["agents"]][:2] == ["chat:churn.chat", "chat:hello.chat"]

        # Nobody looks at the chat: its recap is written, naming the failure and what waits.
        recapped, agents = wait_row(lab, "chat:churn.chat", lambda r: r["recap"])
        text = recapped["recap"]["text"]
        assert "KeyError: 'region'" in text
        assert text.endswith(f"Waiting for your approval: {MOVE}.")
        assert recapped["recap"]["model"] == "offline"
        # The notebook the agent edited and ran has its line.
        outside = agents["outside"]["churn.ipynb"]["text"]
        assert outside.startswith(f"{PERSONA_NAME} (churn.chat) edited")
        assert "KeyError: 'region'" in outside

        chat.answer(call, "allow")
        reply = chat.wait_for_reply(after=prompt)
        assert (
            reply["body"] == "Error: running cell cell-1 of churn.ipynb raised KeyError: 'region'."
        )
        # The allowed command runs (the row is "running" again), then the turn ends.
        done, _ = wait_row(
            lab, "chat:churn.chat", lambda r: r["state"] not in ("waiting", "running")
        )
        assert done["state"] == "finished"
        assert done["approval"] is None
        assert chat.saved()["messages"] == []  # still unsaved: the row followed the live chat

        # Saved now, the file says what the live document and the row said.
        assert chat.save() == "success"
        live, saved = chat.read(), chat.saved()
        assert saved["messages"] == live["messages"]
        assert saved["metadata"] == live["metadata"]
        assert [m["id"] for m in saved["messages"] if is_reply(m)] == [reply["id"]]
        assert (f"`{MOVE}`", "completed", "resolved") in call_summary(saved["messages"])


def test_a_turn_read_going_from_waiting_to_finished_gets_a_new_recap(lab: LabServer) -> None:
    """Under collaboration the source reads an approved turn's end from the model: it sees the
    chat go from "waiting" straight to "finished" (the updates in between are not reported),
    and that still ends the turn, so the recap no longer says it waits for approval."""
    with RtcChat.create(lab, "tail.chat") as chat:
        prompt = chat.post("@Claude this needs approval")
        call = chat.wait_for_permission()
        asked, _ = wait_row(lab, "chat:tail.chat", lambda r: r["state"] == "waiting" and r["recap"])
        assert asked["recap"]["text"].endswith(f"Waiting for your approval: {MOVE}.")
        assert not asked["drafting"]
        # While the persona waits only the one-second re-reads change the row (its "updated"
        # time): answering just after one leaves the rest of the turn (a fraction of a second)
        # to end before the next, so no re-read sees it running.
        wait_row(lab, "chat:tail.chat", lambda r: r["updated"] != asked["updated"], 5, 0.02)
        chat.answer(call, "allow")
        reply = chat.wait_for_reply(after=prompt)
        assert reply["body"] == "Done: moved models/churn.pkl to models/old/."
        done, _ = wait_row(lab, "chat:tail.chat", lambda r: r["state"] == "finished")
        assert done["approval"] is None
        # The turn's end brings a new recap a moment later (post_turn_seconds); meanwhile the
        # row carries none rather than the older one, which said it waits for approval.
        assert done["recap"] is None or "Waiting for" not in done["recap"]["text"]
        redrafted, _ = wait_row(
            lab, "chat:tail.chat", lambda r: r["recap"] is not None and not r["drafting"], 5
        )
        assert "Waiting for" not in redrafted["recap"]["text"]
        assert redrafted["recap"]["text"].endswith(reply["body"])


def test_a_collaborator_s_edits_in_the_room_are_marked_with_their_name(lab: LabServer) -> None:
    """A notebook open in its room: while the person is away, another person (a client of the
    room that says it is Ada) edits one cell and adds another through the shared document and
    saves. Back, each cell's mark names Ada, and so does the line."""
    from urllib.parse import urlencode

    from yroom import RtcNotebook

    path = "shared-work.ipynb"
    lab.write_notebook(path, ["rows = [1, 2]", "total = sum(rows)"])
    session = {"path": path, "type": "notebook", "name": path, "kernel": {"name": "python3"}}
    kernel_id = lab.api("POST", "api/sessions", session)["kernel"]["id"]
    page = RtcNotebook(lab, path, {"username": "person", "display_name": "The Person"})
    ada: RtcNotebook | None = None

    def look(focused: bool) -> None:
        report = {"kernel_id": kernel_id, "path": path, "focused": focused, "client_id": "p-1"}
        lab.api("POST", "jupyter-recap/api/focus", report)

    try:
        first, second = page.cell_ids()
        look(True)
        look(False)
        lab.api("POST", "jupyter-recap/api/seen", {"path": path, "client_id": "p-1"})
        ada = RtcNotebook(lab, path, {"username": "ada", "display_name": "Ada"})
        ada.edit(second, "total = sum(rows) * 2")
        ada.insert(2, "ada-plot", "plot(rows)")
        assert ada.room.save(lambda check, timeout: ada.until(check, timeout)) == "success"
        query = urlencode({"path": path})

        def marked() -> dict[str, Any] | None:
            answer: dict[str, Any] = lab.api("GET", f"jupyter-recap/api/changes?{query}")
            return answer if answer["total"] == 2 else None

        deadline = time.monotonic() + 30
        while (answer := marked()) is None:
            assert time.monotonic() < deadline, lab.api("GET", f"jupyter-recap/api/changes?{query}")
            time.sleep(0.2)
        assert [(c["cell_id"], c["label"]) for c in answer["cells"]] == [
            (second, "edited — Ada"),
            ("ada-plot", "added — Ada"),
        ]
        assert answer["cells"][0]["before"] == "total = sum(rows)"
        line = listing(lab)["outside"][path]["text"]
        assert line.endswith("— by Ada"), line
        assert first not in [c["cell_id"] for c in answer["cells"]]
    finally:
        page.close()
        if ada is not None:
            ada.close()
        lab.api("DELETE", f"api/kernels/{kernel_id}")
