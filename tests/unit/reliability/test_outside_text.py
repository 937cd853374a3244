"""Names and texts from outside agents reach nothing stored or shown with a control in them.

An attack found two ways around the rule that text from outside is made printable once, where it
comes in: a chat persona named only by its sender id (no display name) kept its terminal escapes
and bidi controls, which then showed in the chat's row, its notification, the notebook's change
line and the kernel's record; and an MCP client's own name for itself (``clientInfo.name`` or
``title``, or the persona id of Jupyter AI's identity header) reached the change line with ESC,
BEL, NUL and RLO in it, since the attribution only collapsed its whitespace.

The properties below generate hostile names and texts (every C0 and C1 control, DEL, the bidi
marks, whole escape sequences whose payload is a word of its own) and send them down each path
that takes outside text: a chat document, an MCP tool call, a CLI agent's hook payload through
the spool's JSON and the session that delivers it, and the touches every source reports to.
Nothing of them may reach what comes out: no unsafe character, and no escape's payload.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from types import SimpleNamespace
from typing import Any
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st
from outsidekit import FakeSink

from jupyter_recap.changes.touches import Touches
from jupyter_recap.chats.document import ToolStep, chat_name, read_chat
from jupyter_recap.chats.notebooks import outside_activity
from jupyter_recap.chats.recap import waiting_line
from jupyter_recap.hooks.events import event_from_json, normalise
from jupyter_recap.hooks.sessions import HookSessions
from jupyter_recap.server.outside.mcp_tools import ServerMcpSource
from jupyter_recap.textutil import UNSAFE_CHARS

PAYLOAD = "pwned"
"""The payload of every generated escape sequence: it must never show."""
ESCAPES = [
    f"\x1b]0;{PAYLOAD}\x07",  # OSC: retitles a terminal
    f"\x1b]52;c;{PAYLOAD}\x1b\\",  # OSC 52: writes the clipboard
    f"\x1b]8;;http://{PAYLOAD}/\x1b\\",  # a hyperlink
    "\x1b[31m",
    "\x1b[2J\x1b[H",
    "\x1b[8m",  # hidden text
    "\x1bc",  # reset
    "\x1b7",
]
UNSAFE = sorted(UNSAFE_CHARS)
PLAIN = st.text(alphabet="abcdefghijklmnqrstuvxyzABCXYZ0123456789 ._-:/", max_size=6)
HOSTILE = st.lists(
    st.one_of(st.sampled_from(UNSAFE), st.sampled_from(ESCAPES), PLAIN), min_size=1, max_size=16
).map("".join)
"""A name or a text: plain words, controls and escape sequences, in any order."""
PERSONA = "jupyter-ai-personas::"


def unsafe(texts: Iterable[str]) -> list[str]:
    """The texts that hold an unsafe character or the payload of an escape."""
    return [t for t in texts if PAYLOAD in t or any(c in UNSAFE_CHARS for c in t)]


def strings(value: object) -> Iterator[str]:
    """Every string in ``value`` (a dataclass, a dict, a list, a tuple: recursively)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings(key)
            yield from strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from strings(item)
    elif hasattr(value, "__dataclass_fields__"):
        for name in value.__dataclass_fields__:
            yield from strings(getattr(value, name))


# -- a chat ------------------------------------------------------------------------------------


@given(
    sender=HOSTILE,
    display=st.one_of(st.none(), HOSTILE),
    title=HOSTILE,
    body=HOSTILE,
    path=HOSTILE,
    chat=HOSTILE,
)
def test_a_chat_s_persona_names_and_texts_come_out_printable(
    sender: str, display: str | None, title: str, body: str, path: str, chat: str
) -> None:
    persona = PERSONA + sender
    users: dict[str, Any] = {"ada": {"username": "ada", "name": "Ada"}}
    users[persona] = {"bot": True, **({"display_name": display} if display is not None else {})}
    call = {
        "tool_call_id": sender,
        "title": title,
        "kind": body,
        "status": "completed",
        "raw_input": {"notebook_path": "work/churn.ipynb", "cell_id": body, "code": body},
        "raw_output": {"text": body},
        "locations": [{"path": "work/churn.ipynb"}],
    }
    waiting = {**call, "tool_call_id": "w", "status": "pending", "permission_status": "pending"}
    document = {
        "messages": [
            {"sender": "ada", "body": f"@{sender} {body}", "time": 1.0, "id": "1"},
            # A persona that is not in the users at all: named by its sender id alone.
            {"sender": PERSONA + body, "body": body, "time": 2.0, "id": "2"},
            {"sender": "ada", "body": body or "go", "time": 3.0, "id": "3"},
            {
                "sender": persona,
                "body": "",
                "time": 4.0,
                "id": "4",
                "metadata": {"tool_calls": [call]},
            },
            {"sender": persona, "body": body, "time": 5.0, "id": "5"},
            {
                "sender": persona,
                "body": "",
                "time": 6.0,
                "id": "6",
                "metadata": {"tool_calls": [waiting]},
            },
        ],
        "users": users,
        "metadata": {"id": chat},
    }
    view = read_chat(document, env={})
    shown = [
        *view.personas.values(),
        view.chat_id,
        chat_name(path),
        *(view.persona_name(turn) for turn in view.turns),
        *(text for turn in view.turns for text in [turn.prompt, *strings(turn.items)]),
    ]
    # The chat's row and notification (its agent), the kernel's record of an approval, and the
    # change line of the notebook the persona worked on.
    step = view.turns[-1].waiting
    assert isinstance(step, ToolStep)
    shown.append(waiting_line(view, step))
    lines = outside_activity(
        view, chat_name(path), root="/srv/work", since=lambda _: 0.0, label=lambda *_: None
    )
    shown += [line["text"] for line in lines.values()]
    touches = Touches()
    touches.note("churn.ipynb", f"{view.persona_name()} via {chat_name(path)}", 7.0, ran=1)
    shown += touches.who_since("churn.ipynb", 0.0)
    assert unsafe(shown) == []


def test_a_persona_named_by_its_sender_id_alone_is_named_in_plain_words() -> None:
    sender = PERSONA + "pkg::\x1b]0;pwned\x07Cl\u202eaude\x1b[31m\x07\x00"
    document = {
        "messages": [
            {"sender": "ada", "body": "fix it", "time": 1.0},
            {"sender": sender, "body": "Done.", "time": 2.0},
        ],
        "users": {},
    }
    assert read_chat(document, env={}).persona_name() == "Claude"


# -- an MCP client -----------------------------------------------------------------------------


def mcp_call(name: str | None, title: str | None) -> SimpleNamespace:
    """A jupyter_server_mcp tool call's context: an edit of churn.ipynb by a client that names
    itself ``name`` and ``title``."""
    info = SimpleNamespace(name=name, title=title)
    session = SimpleNamespace(client_params=SimpleNamespace(clientInfo=info))
    message = SimpleNamespace(name="insert_cell", arguments={"notebook_path": "churn.ipynb"})
    return SimpleNamespace(message=message, fastmcp_context=SimpleNamespace(session=session))


def attribution() -> tuple[ServerMcpSource, Touches]:
    sink = FakeSink("/srv/work")
    return ServerMcpSource(sink), sink.touches


@given(name=st.one_of(st.none(), HOSTILE), title=st.one_of(st.none(), HOSTILE), persona=HOSTILE)
def test_an_mcp_client_s_name_for_itself_comes_out_printable(
    name: str | None, title: str | None, persona: str
) -> None:
    mcp, touches = attribution()
    headers = "fastmcp.server.dependencies.get_http_headers"
    with mock.patch(headers, return_value={}):
        call = mcp.tool_call_started(mcp_call(name, title))
    mcp.tool_call_ended(call, {"success": True}, False)
    # Jupyter AI's persona, named by its identity header: the persona manager knows no such id.
    with mock.patch(headers, return_value={"x-jupyterai-persona-id": PERSONA + persona}):
        call = mcp.tool_call_started(mcp_call(None, None))
    mcp.tool_call_ended(call, {"success": True}, False)
    who = [touch.who for touch in touches.since("churn.ipynb", 0.0)]
    assert who and unsafe(who) == []


@given(who=HOSTILE)
def test_whoever_reports_a_touch_is_named_in_plain_words(who: str) -> None:
    touches = Touches()
    touches.note("churn.ipynb", who, 1.0, edited=1)
    assert unsafe(t.who for t in touches.since("churn.ipynb", 0.0)) == []


# -- a CLI agent's hooks -----------------------------------------------------------------------


@given(agent=HOSTILE, prompt=HOSTILE, tool=HOSTILE, text=HOSTILE, session=HOSTILE)
def test_a_cli_agent_s_hook_events_come_out_printable(
    agent: str, prompt: str, tool: str, text: str, session: str
) -> None:
    notebook = "work/churn.ipynb"
    payloads: list[dict[str, Any]] = [
        {"hook_event_name": "UserPromptSubmit", "session_id": session, "prompt": prompt or "go"},
        {
            "hook_event_name": "PostToolUse",
            "session_id": session,
            "tool_name": tool or "NotebookEdit",
            "tool_input": {"notebook_path": notebook, "new_source": text, "cell_id": text},
            "tool_response": {"stdout": text, "error": text},
        },
        {
            "hook_event_name": "PostToolUseFailure",
            "session_id": session,
            "tool_name": "NotebookEdit",
            "tool_input": {"notebook_path": notebook},
            "error": text,
        },
        {"hook_event_name": "Stop", "session_id": session, "last_assistant_message": text},
    ]
    sessions = HookSessions()
    touches = Touches()
    shown: list[str] = []
    for at, payload in enumerate(payloads, start=1):
        event = normalise(payload, at=float(at), agent=agent, env={})
        if event is None:
            continue
        # Through the spool: one JSON line written by the hook, read back by the server.
        spooled = event_from_json(json.loads(json.dumps(event.to_json(), ensure_ascii=False)))
        assert spooled is not None
        shown += [s for s in spooled if isinstance(s, str)]
        for delivery in sessions.feed(spooled):
            touches.note("churn.ipynb", delivery.agent, delivery.at, edited=delivery.edited)
            shown.append(delivery.agent)
            shown += strings(list(delivery.entries))
    shown += touches.who_since("churn.ipynb", 0.0)
    assert unsafe(shown) == []
