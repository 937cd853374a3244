"""Jupyter AI chats for tests: a lab with the test persona "Claude", a person posting to a
chat, waiting for the persona's answer, answering its permission requests; and ``.chat`` files
written directly, as a persona would leave them, for tests that need no server.

The persona and its scripts are in tests/persona/ (the prompt words are listed in
recap_test_agent.py). Import this module, not the persona's class: pytest would try to collect
a ``Test…`` class imported into a test module.

    with chat_lab(tmp_path) as lab:
        chat = Chat.create(lab, "work.chat")
        chat.post("@Claude fix churn.ipynb, fail and approval")
        call = chat.wait_for_permission()
        chat.answer(call, "allow")
        reply = chat.wait_for_reply()

With real-time collaboration on (``chat_lab(tmp, collaboration=True)``), ``RtcChat`` does the
same through the chat's collaboration room, as a Y document.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import websocket  # websocket-client, a dependency of jupyter_server
from acp.schema import PermissionOptionKind
from labserver import PERSONA_ID, LabServer, running_lab
from persona.recap_test_agent import (  # what the scripted agent writes, for assertions
    ANSI,
    BIDI,
    FAKE_GITHUB_TOKEN,
    FAKE_OPENAI_KEY,
    HTML,
    HUGE_BYTES,
    SCRIPT,
)

if TYPE_CHECKING:
    from typing_extensions import Self  # typing's own from Python 3.11

__all__ = [
    "ANSI",
    "BIDI",
    "FAKE_GITHUB_TOKEN",
    "FAKE_OPENAI_KEY",
    "HTML",
    "HUGE_BYTES",
    "SCRIPT",
    "Call",
    "Chat",
    "Events",
    "RtcChat",
    "chat_lab",
    "is_reply",
    "tool_calls",
    "write_chat",
]

PERSONA_NAME = "Claude"
PERSONA_MODEL = "claude-test-1"
SYSTEM_USER = "hidden::jupyter_ai_system"
#: How the scripted agent names the notebook tools (Claude Code's names for the tools of
#: Jupyter AI's MCP server).
MCP_TOOL = "mcp__Jupyter_MCP_Server__"
REPLY_PREFIXES = ("Done:", "Error:")


@contextmanager
def chat_lab(
    tmp: Path,
    env: dict[str, str] | None = None,
    collaboration: bool = False,
    **options: Any,
) -> Iterator[LabServer]:
    """A lab with Jupyter AI's chats and the test persona (``running_lab(..., chat=True)``)."""
    with running_lab(tmp, env, chat=True, collaboration=collaboration, **options) as lab:
        yield lab


# -- reading a chat ------------------------------------------------------------------------------


def tool_calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool calls a persona message carries (none for a text message)."""
    return list((message.get("metadata") or {}).get("tool_calls") or [])


def is_reply(message: dict[str, Any]) -> bool:
    """A whole final reply of the test persona ("Done: …." or "Error: ….": the reply streams
    in chunks, and only the last one brings the full stop)."""
    body = message.get("body", "")
    return (
        message.get("sender") == PERSONA_ID
        and not tool_calls(message)
        and body.startswith(REPLY_PREFIXES)
        and body.endswith(".")
    )


@dataclass
class Chat:
    """One ``.chat`` file of a lab, open the way the person has it open in the browser.

    Without collaboration the chat is connected over jupyterlab-chat's WebSocket
    (``/api/chat/ws/<path>``), and stays connected until :meth:`close` (the person closing the
    tab): the server frees a chat nobody has open, and its personas with it. Use it as a
    context manager. What the persona writes is read from the ``.chat`` file, which the server
    rewrites on every message; the WebSocket's ephemeral frames (the persona's "is typing"
    status) are kept in :attr:`frames`.
    """

    lab: LabServer
    path: str
    frames: list[dict[str, Any]] = field(default_factory=list, repr=False)
    _socket: Any = field(default=None, repr=False)
    _reader: Any = field(default=None, repr=False)

    @classmethod
    def create(cls, lab: LabServer, path: str = "work.chat") -> Self:
        """A new, empty chat file (what "New chat" makes), opened (in its collaboration room,
        for an :class:`RtcChat`)."""
        lab.api(
            "PUT", f"api/contents/{_quote(path)}", {"type": "file", "format": "text", "content": ""}
        )
        return cls.open(lab, path)

    @classmethod
    def open(cls, lab: LabServer, path: str, timeout: float = 30) -> Self:
        """Connect to an existing chat file."""
        chat = cls(lab, path)
        url = lab.url.replace("http", "ws", 1) + f"api/chat/ws/{_quote(path)}"
        chat._socket = websocket.create_connection(
            url, timeout=timeout, header=[f"Authorization: token {lab.token}"]
        )
        first = json.loads(chat._socket.recv())
        assert first.get("action") == "connection", first
        chat.frames.append(first)
        chat._socket.settimeout(None)
        chat._reader = threading.Thread(target=chat._read_frames, daemon=True)
        chat._reader.start()
        return chat

    def _read_frames(self) -> None:
        while True:
            try:
                raw = self._socket.recv()
            except (OSError, websocket.WebSocketException):  # closed, by us or by the server
                return
            if not raw:
                return
            self.frames.append(json.loads(raw))

    def close(self) -> None:
        """Disconnect (the person closes the chat's tab)."""
        if self._socket is not None:
            self._socket.close()
            self._reader.join(timeout=10)
            self._socket = None

    def __enter__(self) -> Chat:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def writing(self) -> str | None:
        """The persona's current status ("is typing..."), or None when it shows none."""
        for frame in reversed(list(self.frames)):
            if frame.get("action") == "writing" and frame["user"]["username"] == PERSONA_ID:
                return frame.get("typingIndicator") if frame.get("state") else None
        return None

    @property
    def file(self) -> Path:
        return self.lab.root / self.path

    def read(self) -> dict[str, Any]:
        """The chat file's content; an empty chat while the server has not written it yet."""
        # jupyterlab-chat rewrites the file in place on every change (truncate, then write): a
        # read can land in between and find it empty or cut. Read again until it is whole.
        text = ""
        for _ in range(40):
            text = self.file.read_text(encoding="utf-8")
            try:
                if text.strip():
                    content: dict[str, Any] = json.loads(text)
                    return content
            except json.JSONDecodeError:
                pass
            time.sleep(0.05)
        if text.strip():
            raise AssertionError(f"{self.file.name} never held whole JSON: {text[:200]!r}")
        return _empty()

    def messages(self) -> list[dict[str, Any]]:
        return list(self.read().get("messages", []))

    # -- the person's side ----------------------------------------------------------------------

    def post(self, body: str, to: str | None = PERSONA_ID, timeout: float = 30) -> str:
        """Send ``body`` as the person, addressed to persona ``to`` (what the chat input's
        persona picker puts in the message's metadata); return the message id once the
        server has it."""
        message_id = str(uuid.uuid4())
        metadata: dict[str, Any] = {}
        mentions: list[str] = []
        if to is not None:
            metadata["to_persona"] = to
            if f"@{PERSONA_NAME}" in body:
                mentions.append(to)
        assert self._socket is not None, "the chat is closed"
        frame = {
            "type": "client",
            "action": "send",
            "id": message_id,
            "body": body,
            "mentions": mentions,
            "metadata": metadata,
        }
        self._socket.send(json.dumps(frame))
        self.wait(lambda chat: any(m.get("id") == message_id for m in chat.messages()), timeout)
        return message_id

    def answer(self, call: dict[str, Any], option_id: str = "allow") -> None:
        """Click a permission button ("allow", "allow_always" or "reject") of a tool call,
        through the ACP client's permission route, as the chat's buttons do."""
        self.lab.api(
            "POST",
            "ai/acp/permissions",
            {
                "session_id": call["session_id"],
                "tool_call_id": call["tool_call_id"],
                "option_id": option_id,
            },
        )

    def stop(self) -> None:
        """Press the chat's stop button (cancel the personas' responses)."""
        chat_id = self.read().get("metadata", {}).get("id")
        query = urllib.parse.urlencode({"chat_id": chat_id})
        self.lab.api("POST", f"api/ai/personas/cancel?{query}", {})

    # -- waiting for the persona ----------------------------------------------------------------

    def wait(self, ready: Callable[[Chat], Any], timeout: float = 60) -> Any:
        """Poll until ``ready(self)`` is truthy and return it; fail with the chat and the lab
        log's tail if it never is."""
        deadline = time.monotonic() + timeout
        while True:
            result = ready(self)
            if result:
                return result
            if time.monotonic() > deadline:
                log = (self.lab.root.parent / "lab.log").read_text(errors="replace")[-4000:]
                dump = json.dumps(self.messages(), indent=1)[-4000:]
                raise AssertionError(f"chat not ready in {timeout} s:\n{dump}\n--- lab log\n{log}")
            time.sleep(0.2)

    def wait_for_reply(self, after: str | None = None, timeout: float = 60) -> dict[str, Any]:
        """The persona's final text reply (after message id ``after``, if given)."""

        def reply(chat: Chat) -> dict[str, Any] | None:
            messages = chat.messages()
            if after is not None:
                ids = [m.get("id") for m in messages]
                messages = messages[ids.index(after) + 1 :] if after in ids else []
            return next((m for m in reversed(messages) if is_reply(m)), None)

        found: dict[str, Any] = self.wait(reply, timeout)
        return found

    def wait_for_permission(self, timeout: float = 60) -> dict[str, Any]:
        """The first tool call waiting for the person's permission."""

        def pending(chat: Chat) -> dict[str, Any] | None:
            return next(
                (
                    call
                    for message in chat.messages()
                    for call in tool_calls(message)
                    if call.get("permission_status") == "pending"
                ),
                None,
            )

        found: dict[str, Any] = self.wait(pending, timeout)
        return found

    def calls(self) -> list[dict[str, Any]]:
        """Every tool call of the chat, in order."""
        return [call for message in self.messages() for call in tool_calls(message)]


@dataclass
class RtcChat(Chat):
    """A ``.chat`` file open the way the browser opens it with real-time collaboration on: a Y
    document synchronised over jupyter-collaboration's room WebSocket (tests/yroom.py).

    The document has jupyterlab-chat's layout (``YChat``): a ``messages`` array of maps,
    ``users``, ``attachments`` and ``metadata`` maps. :meth:`post` appends a message map as the
    front end's ``addMessage`` does, with the person registered in ``users``; the server stamps
    its time. :meth:`read` is the live document; :meth:`saved` is the ``.chat`` file, which the
    room writes only when it saves. :meth:`answer` and :meth:`stop` use the same REST routes as
    without collaboration.
    """

    _room: Any = field(default=None, repr=False)
    user: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, lab: LabServer, path: str, timeout: float = 30) -> Self:
        """Join the chat's collaboration room and wait until the document has loaded."""
        from pycrdt import Array, Doc, Map
        from yroom import YRoomClient

        doc: Any = Doc()
        for name, kind in (
            ("state", Map),
            ("messages", Array),
            ("users", Map),
            ("attachments", Map),
            ("metadata", Map),
        ):
            doc[name] = kind()
        chat = cls(lab, path)
        chat._room = YRoomClient(lab, path, "text", "chat", doc)
        chat._socket = chat._room  # open: what Chat's methods check
        # The room loads the file after the first sync; YChat gives a chat without an id one.
        chat.wait(lambda c: c.read()["metadata"].get("id"), timeout)
        identity = lab.api("GET", "api/me")["identity"]
        chat.user = {
            key: identity.get(key)
            for key in ("username", "name", "display_name", "initials", "color", "avatar_url")
        }
        return chat

    @property
    def _doc(self) -> Any:
        return self._room.doc

    @property
    def _lock(self) -> Any:
        return self._room.lock

    def _change(self, change: Callable[[Any], None]) -> None:
        self._room.change(change)

    def __enter__(self) -> RtcChat:
        return self

    def close(self) -> None:
        """Leave the room (the person closes the chat's tab)."""
        if self._room is not None:
            self._room.close()
            self._socket = None

    def read(self) -> dict[str, Any]:
        """The live document, as the ``.chat`` file will hold it once saved."""
        with self._lock:
            return {
                name: self._doc[name].to_py() or ({} if name != "messages" else [])
                for name in ("messages", "users", "attachments", "metadata")
            }

    def saved(self) -> dict[str, Any]:
        """The ``.chat`` file on disk (what the room last saved)."""
        return Chat.read(self)

    def save(self, timeout: float = 30) -> str:
        """Ask the room to save the document now (the front end's save command); its status."""
        return str(self._room.save(lambda check, _: self.wait(check, timeout)))

    def writing(self) -> str | None:
        """The persona's status, which the server publishes in the room's awareness."""
        with self._lock:
            states = list(self._room.awareness.states.values())
        for state in states:
            for writer in state.get("writers") or []:
                if writer.get("user", {}).get("username") == PERSONA_ID:
                    return str(writer.get("typingIndicator", ""))
        return None

    def post(self, body: str, to: str | None = PERSONA_ID, timeout: float = 30) -> str:
        """Send ``body`` as the person, as the chat's front end does under collaboration: the
        person in ``users``, a new map at the end of ``messages`` with the browser's clock
        (``raw_time``, which the server replaces with its own). Return the message id once the
        server has stamped it."""
        from pycrdt import Map

        message_id = str(uuid.uuid4())
        message: dict[str, Any] = {
            "type": "msg",
            "id": message_id,
            "body": body,
            "time": time.time(),
            "sender": self.user["username"],
            "raw_time": True,
        }
        if to is not None:
            message["metadata"] = {"to_persona": to}
            if f"@{PERSONA_NAME}" in body:
                message["mentions"] = [to]

        def append(doc: Any) -> None:
            users = doc["users"]
            if self.user["username"] not in users:
                users[self.user["username"]] = dict(self.user)
            doc["messages"].append(Map(message))

        assert self._socket is not None, "the chat is closed"
        self._change(append)
        self.wait(
            lambda chat: any(
                m.get("id") == message_id and m.get("raw_time") is False for m in chat.messages()
            ),
            timeout,
        )
        return message_id


class Events:
    """The server's Jupyter Events as the browser receives them (``/api/events/subscribe``),
    collected from :meth:`open` until :meth:`close`: the persona manager's ``personas`` and
    ``persona_state`` events (model, usage, processing), the chats' room events."""

    PERSONA_STATE = "https://schema.jupyter.org/jupyter_ai_persona_manager/persona_state/v1"

    def __init__(self, lab: LabServer, timeout: float = 30) -> None:
        url = lab.url.replace("http", "ws", 1) + "api/events/subscribe"
        self.received: list[dict[str, Any]] = []
        self._socket = websocket.create_connection(
            url, timeout=timeout, header=[f"Authorization: token {lab.token}"]
        )
        self._socket.settimeout(None)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                raw = self._socket.recv()
            except (OSError, websocket.WebSocketException):
                return
            if not raw:
                return
            self.received.append(json.loads(raw))

    def persona_state(self) -> dict[str, Any]:
        """The test persona's state so far: the latest value of each field its events set."""
        state: dict[str, Any] = {}
        for event in list(self.received):
            if (
                event.get("schema_id") == self.PERSONA_STATE
                and event.get("persona_id") == PERSONA_ID
            ):
                state.update({k: v for k, v in event.items() if k != "schema_id"})
        return state

    def close(self) -> None:
        self._socket.close()
        self._reader.join(timeout=10)

    def __enter__(self) -> Events:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _empty() -> dict[str, Any]:
    return {"messages": [], "users": {}, "attachments": {}, "metadata": {}}


def _quote(path: str) -> str:
    return urllib.parse.quote(path)


# -- writing a chat file directly ----------------------------------------------------------------


@dataclass
class Call:
    """A tool call for :func:`write_chat`: a ToolCallState of jupyter-ai-acp-client."""

    title: str
    kind: str | None = "other"
    status: str | None = "completed"
    raw_input: Any = None
    raw_output: Any = None
    locations: Sequence[str] | None = None
    diffs: Sequence[dict[str, Any]] | None = None
    permission: str | None = None  # "pending" or "resolved": the call asked permission
    selected_option_id: str | None = None
    tool_call_id: str = field(default_factory=lambda: "toolu_01" + uuid.uuid4().hex[:22])

    def state(self, session_id: str) -> dict[str, Any]:
        """The dict the ACP client flushes into the message (``model_dump(exclude_none=True)``)."""
        from acp.schema import PermissionOption
        from jupyter_ai_acp_client.tool_call_renderer import ToolCallDiff, ToolCallState

        asked = self.permission is not None
        state = ToolCallState(
            tool_call_id=self.tool_call_id,
            title=self.title,
            kind=self.kind,
            status=self.status,
            raw_input=self.raw_input,
            raw_output=self.raw_output,
            locations=list(self.locations) if self.locations is not None else None,
            diffs=[ToolCallDiff(**d) for d in self.diffs] if self.diffs is not None else None,
            permission_options=[
                PermissionOption(option_id=option, name=name, kind=kind)
                for option, name, kind in PERMISSION_OPTIONS
            ]
            if asked
            else None,
            permission_status=self.permission,
            selected_option_id=self.selected_option_id,
            session_id=session_id if asked else None,
        )
        dumped: dict[str, Any] = state.model_dump(exclude_none=True)
        return dumped


#: The permission buttons the scripted agent offers (as Claude Code does).
PERMISSION_OPTIONS: tuple[tuple[str, str, PermissionOptionKind], ...] = (
    ("allow_always", "Always Allow", "allow_always"),
    ("allow", "Allow", "allow_once"),
    ("reject", "Reject", "reject_once"),
)

#: A turn for :func:`write_chat`: the person's prompt, then what the persona left, in order:
#: strings are text messages, lists of :class:`Call` are tool-call messages (consecutive calls
#: share one message, as the ACP client groups them).
Turn = tuple[str, Sequence[str | Sequence[Call]]]


def write_chat(
    path: Path,
    turns: Sequence[Turn],
    *,
    person: str = "person",
    start: float | None = None,
    step: float = 2.0,
    chat_id: str | None = None,
    session_id: str | None = None,
) -> dict[str, Any]:
    """Write a ``.chat`` file as jupyterlab-chat's WebSocket model saves it after the test
    persona's turns (``WsChatModel.save``: ``{messages, users, attachments, metadata}``,
    two-space indent) and return the content. Message times start at ``start`` (default: now
    minus the turns' length) and advance by ``step`` seconds."""
    from dataclasses import asdict

    from jupyterlab_chat.models import Message, User, message_asdict_factory

    session_id = session_id or str(uuid.uuid4())
    count = sum(1 + len(parts) for _, parts in turns)
    clock = start if start is not None else time.time() - count * step
    messages: list[dict[str, Any]] = []

    def tick() -> float:
        nonlocal clock
        clock += step
        return clock - step

    for prompt, parts in turns:
        # A person's message, as the WebSocket handler stores it.
        message: dict[str, Any] = {
            "id": str(uuid.uuid4()),
            "body": prompt,
            "time": tick(),
            "sender": person,
            "type": "msg",
            "raw_time": False,
        }
        if f"@{PERSONA_NAME}" in prompt:
            message["mentions"] = [PERSONA_ID]
        message["metadata"] = {"to_persona": PERSONA_ID}
        messages.append(message)
        for part in parts:
            # The persona's messages, as ``add_message``/``update_message`` store them.
            if isinstance(part, str):
                reply = Message(
                    body=part, id=str(uuid.uuid4()), time=tick(), sender=PERSONA_ID, raw_time=False
                )
            else:
                reply = Message(
                    body="",
                    id=str(uuid.uuid4()),
                    time=tick(),
                    sender=PERSONA_ID,
                    metadata={"tool_calls": [call.state(session_id) for call in part]},
                )
            messages.append(asdict(reply, dict_factory=message_asdict_factory))
    users = [
        User(  # type: ignore[no-untyped-call]
            username=person,
            name=person,
            display_name=person,
            initials=person[:1].upper(),
            avatar_url=None,
            color=None,
        ),
        User(  # type: ignore[no-untyped-call]
            username=SYSTEM_USER, name="System", display_name="System", bot=True
        ),
        User(  # type: ignore[no-untyped-call]
            username=PERSONA_ID,
            name=PERSONA_NAME,
            display_name=PERSONA_NAME,
            avatar_url=f"/api/ai/avatars/{urllib.parse.quote(PERSONA_ID, safe='')}",
            bot=True,
        ),
    ]
    content = {
        "messages": messages,
        "users": {user.username: asdict(user) for user in users},
        "attachments": {},
        "metadata": {
            "id": chat_id or uuid.uuid4().hex,
            "acp_session_ids": {PERSONA_ID: session_id},
        },
    }
    path.write_text(json.dumps(content, indent=2), encoding="utf-8")
    return content
