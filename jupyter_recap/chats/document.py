"""Reading a Jupyter AI chat: the ``.chat`` document as turns of a persona.

A chat (jupyterlab-chat) is ``{messages, users, attachments, metadata}``. Users with
``bot: true`` are personas (Jupyternaut, or an ACP agent such as Claude Code or Codex). A
human message to a persona starts a turn; the persona's messages until the next human message
are that turn: text replies, and messages whose ``metadata.tool_calls`` list the agent's tool
calls as the ACP client writes them (title, kind, status, raw input and output, locations,
permission state). The file holds each message's latest state (a tool call's updates rewrite
its message), so one read gives the whole picture.

Everything read here is bounded (the latest :data:`MAX_MESSAGES` messages, each text cut),
made printable and redacted once, so what the board shows, the recap sees and the page renders
is the same clean text. Nothing here does I/O: the caller hands in the parsed JSON (from the
file or from the live chat model).
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .. import fields
from ..fields import or_default
from ..redact import Redactor
from ..textutil import printable, printable_line, shorten

MAX_MESSAGES = 400
"""Messages read from the end of a chat; older turns do not change what the person sees now."""
MAX_TOOL_CALLS = 64
"""Tool calls read per message."""
BODY_CHARS = 4000
"""A prompt's or reply's text kept (the transcript cuts it again, head and tail)."""
FIELD_CHARS = 600
"""A tool call's input or output kept, as one line."""
LINE_CHARS = 200
"""A tool call described in one line (an approval, a failure)."""
NAME_CHARS = 80
"""A persona's or a tool's name."""

ChatState = Literal["running", "waiting", "finished", "errored", "idle"]
Status = Literal["pending", "in_progress", "completed", "failed"]
_STATUSES: frozenset[Status] = frozenset({"pending", "in_progress", "completed", "failed"})
_PATH_KEYS = ("path", "notebook_path", "file_path", "notebook", "filename")
_CELL_KEYS = ("cell_id", "cellId", "id")
_COMMAND_KEYS = ("command", "cmd")
_CODE_KEYS = ("code", "source", "query")
"""What a call that runs something runs (for an edit, the same keys hold the new source)."""
_MENTIONS = re.compile(r"^(?:\s*@[\w.\-]+[,:]?)+\s+")
_ERROR_KEYS = ("error", "stderr", "message", "ename", "evalue", "text", "output", "content")


@dataclass(slots=True)
class ToolStep:
    """One tool call of a persona, as its latest update left it."""

    call_id: str
    title: str
    """The tool's name or title, e.g. ``edit_cell`` (an MCP prefix removed) or ``Bash``."""
    kind: str
    status: Status
    summary: str
    """What the call does, in one line: its command, or its title and key arguments."""
    input: str
    output: str
    error: str | None
    """What a failed call said (its output's error text), None unless it failed."""
    waiting: bool
    """The agent waits for the person to allow this call."""
    paths: tuple[str, ...]
    """Files the call names (its ``locations`` and its input's path)."""
    cell_id: str | None
    at: float


@dataclass(slots=True)
class ChatTurn:
    """A human message to a persona and everything the persona did after it."""

    prompt: str
    """The person's message (empty for a persona that spoke first)."""
    at: float
    persona: str
    """The persona's user name (``jupyter-ai-personas::…``); empty until one answers."""
    items: list[ToolStep | str] = field(default_factory=list)
    """The persona's tool calls and text replies, in the order it wrote them."""
    last_at: float = 0.0
    """When the persona last wrote in this turn (or the prompt's time)."""

    @property
    def steps(self) -> list[ToolStep]:
        return [item for item in self.items if isinstance(item, ToolStep)]

    @property
    def replies(self) -> list[str]:
        return [item for item in self.items if isinstance(item, str)]

    @property
    def waiting(self) -> ToolStep | None:
        """The tool call waiting for the person's approval, if any (the latest)."""
        return next((step for step in reversed(self.steps) if step.waiting), None)

    @property
    def running(self) -> bool:
        return any(step.status in ("pending", "in_progress") for step in self.steps)

    @property
    def failed(self) -> ToolStep | None:
        """The latest failed tool call."""
        return next((step for step in reversed(self.steps) if step.status == "failed"), None)


@dataclass(slots=True)
class ChatView:
    """A chat as turns, with its personas' names."""

    chat_id: str
    personas: dict[str, str]
    """Persona user name → the name to show ("Claude")."""
    turns: list[ChatTurn]
    human: str = ""
    """The latest person who wrote (a user name)."""

    @property
    def latest(self) -> ChatTurn | None:
        return self.turns[-1] if self.turns else None

    @property
    def has_persona(self) -> bool:
        """Whether an agent persona is part of this chat (it answered, or was asked)."""
        return any(turn.persona for turn in self.turns)

    def persona_name(self, turn: ChatTurn | None = None) -> str:
        """The name of the persona of ``turn`` (default: the latest), "the agent" if unknown."""
        turn = turn if turn is not None else self.latest
        if turn is None or not turn.persona:
            return "the agent"
        return self.personas.get(turn.persona) or _name_from_id(turn.persona)

    def state(self, processing: bool = False) -> ChatState:
        """Where the latest turn stands. ``processing``: the persona says it is still at work
        (the persona manager's event), which a reply written so far cannot tell."""
        turn = self.latest
        if turn is None or not turn.persona:
            return "idle"
        if turn.waiting is not None:
            return "waiting"
        if processing or turn.running:
            return "running"
        if not turn.items:
            return "idle"  # asked, and no answer yet: nothing to say about it
        if turn.failed is not None and not turn.replies:
            return "errored"
        return "finished"


def read_chat(data: object, *, env: Mapping[str, str] | None = None) -> ChatView:
    """The chat document ``data`` (parsed JSON) as turns; anything malformed is skipped.

    Raises ``ValueError`` only when ``data`` is not a chat document at all.
    """
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise ValueError("not a chat document: no messages list")
    clean = _Cleaner(Redactor(env))
    users = or_default(None, fields.obj, data, "users") or {}
    personas, humans = _people(users, clean)
    metadata = or_default(None, fields.obj, data, "metadata") or {}
    chat_id = metadata.get("id")
    chat_id = chat_id if isinstance(chat_id, str) else ""
    view = ChatView(chat_id=printable_line(chat_id, NAME_CHARS), personas=personas, turns=[])
    messages = [m for m in data["messages"][-MAX_MESSAGES:] if isinstance(m, dict)]
    for message in messages:
        if or_default(False, fields.flag, message, "deleted"):
            continue
        sender = message.get("sender")
        sender = sender if isinstance(sender, str) else ""
        at = or_default(None, fields.timestamp, message, "time") or 0.0
        if _is_persona(sender, personas, humans):
            _persona_wrote(view, sender, message, at, clean)
        else:
            # "@Claude fix …": the mention says whom, the rest is the ask.
            body = _MENTIONS.sub("", clean.block(message.get("body"), BODY_CHARS))
            if not body:
                continue
            view.human = sender
            mentioned = [m for m in _strings(message.get("mentions")) if m in personas]
            # The chat input's persona picker names the persona in the message's metadata.
            picker = or_default(None, fields.obj, message, "metadata") or {}
            picked = or_default(None, fields.one_of, picker, "metadata.to_persona", personas)
            if picked is not None:
                mentioned.insert(0, picked)
            persona = mentioned[0] if mentioned else ""
            view.turns.append(ChatTurn(prompt=body, at=at, persona=persona, last_at=at))
    return view


def _people(users: Mapping[Any, Any], clean: _Cleaner) -> tuple[dict[str, str], set[str]]:
    personas: dict[str, str] = {}
    humans: set[str] = set()
    for key, user in list(users.items())[:256]:
        if not isinstance(key, str) or not isinstance(user, dict):
            continue
        if or_default(False, fields.flag, user, "bot") or key.startswith("jupyter-ai-personas::"):
            name = user.get("display_name") or user.get("name") or _name_from_id(key)
            personas[key] = clean.text(name, NAME_CHARS) or _name_from_id(key)
        else:
            humans.add(key)
    return personas, humans


def _is_persona(sender: str, personas: Mapping[str, str], humans: set[str]) -> bool:
    if sender in personas:
        return True
    return sender.startswith("jupyter-ai-personas::") and sender not in humans


def _persona_wrote(
    view: ChatView, sender: str, message: dict[str, Any], at: float, clean: _Cleaner
) -> None:
    turn = view.latest
    if turn is None or (turn.persona and turn.persona != sender and turn.replies):
        # A persona speaking first, or a second persona after the first one answered.
        turn = ChatTurn(prompt="", at=at, persona=sender, last_at=at)
        view.turns.append(turn)
    if not turn.persona:
        turn.persona = sender
    turn.last_at = max(turn.last_at, at)
    metadata = or_default(None, fields.obj, message, "metadata") or {}
    calls = metadata.get("tool_calls")
    if isinstance(calls, list) and calls:
        for call in calls[:MAX_TOOL_CALLS]:
            step = _step(call, at, clean)
            if step is not None:
                _merge(turn.items, step)
        return
    body = clean.block(message.get("body"), BODY_CHARS)
    if body:
        turn.items.append(body)


def _merge(steps: list[ToolStep | str], step: ToolStep) -> None:
    """A call already seen (grouped messages repeat it) is replaced by its latest state."""
    for index, seen in enumerate(steps):
        if isinstance(seen, ToolStep) and step.call_id and seen.call_id == step.call_id:
            steps[index] = step
            return
    steps.append(step)


def _step(call: object, at: float, clean: _Cleaner) -> ToolStep | None:
    if not isinstance(call, dict):
        return None
    raw_title = call.get("title") if isinstance(call.get("title"), str) else ""
    title = clean.text(_tool_name(raw_title or str(call.get("kind") or "tool")), NAME_CHARS)
    given = or_default(None, fields.one_of, call, "status", _STATUSES)
    status: Status = given or "completed"
    raw_input = call.get("raw_input")
    raw_output = call.get("raw_output")
    inputs = or_default(None, fields.obj, call, "raw_input") or {}
    waiting = call.get("permission_status") == "pending" and status not in (
        "completed",
        "failed",
    )
    error = None
    if status == "failed":
        error = clean.block(_error_text(raw_output), FIELD_CHARS) or "failed"
    paths = tuple(
        dict.fromkeys(
            clean.text(path, FIELD_CHARS)
            for path in [*_locations(call.get("locations")), *_input_paths(inputs)]
        )
    )
    cell = next((inputs[k] for k in _CELL_KEYS if isinstance(inputs.get(k), str)), None)
    call_id = call.get("tool_call_id")
    return ToolStep(
        call_id=printable(call_id[:NAME_CHARS]) if isinstance(call_id, str) else "",
        title=title or "tool",
        kind=clean.text(call.get("kind"), NAME_CHARS) or "other",
        status=status,
        summary=clean.text(_summary(title, call.get("kind"), inputs), LINE_CHARS) or title,
        input=clean.text(_compact(raw_input), FIELD_CHARS),
        output=clean.text(_compact(raw_output), FIELD_CHARS),
        error=error,
        waiting=waiting,
        paths=tuple(path for path in paths if path),
        cell_id=clean.text(cell, NAME_CHARS) or None,
        at=at,
    )


def _tool_name(title: str) -> str:
    """``mcp__Jupyter_MCP_Server__edit_cell`` → ``edit_cell``; other titles as they are."""
    if title.startswith("mcp__") and title.count("__") >= 2:
        return title.rsplit("__", 1)[1]
    return title


def _summary(title: str, kind: object, inputs: Mapping[str, Any]) -> str:
    """A command when the call runs one, else the title and the names it works on."""
    runs = kind == "execute" or any(word in title.lower() for word in ("run", "exec", "bash"))
    for key in (*_COMMAND_KEYS, *(_CODE_KEYS if runs else ())):
        value = inputs.get(key)
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())
    named = [
        f"{value}"
        for key in (*_PATH_KEYS, *_CELL_KEYS)
        if isinstance(value := inputs.get(key), (str, int)) and not isinstance(value, bool)
    ]
    return " ".join([title, *named[:2]])


def _locations(value: object) -> Iterable[str]:
    if not isinstance(value, list):
        return
    for item in value[:16]:
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict) and isinstance(item.get("path"), str):
            yield item["path"]


def _input_paths(inputs: Mapping[str, Any]) -> Iterable[str]:
    for key in _PATH_KEYS:
        value = inputs.get(key)
        if isinstance(value, str) and value:
            yield value


def _error_text(output: object, depth: int = 0) -> str:
    """What a failed call's output says: its error text, wherever the tool put it."""
    if depth > 4 or output is None:
        return ""
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        for key in _ERROR_KEYS:
            if key in output and (text := _error_text(output[key], depth + 1)):
                if key == "ename" and isinstance(output.get("evalue"), str):
                    return f"{text}: {output['evalue']}"
                return text
        return ""
    if isinstance(output, list):
        for item in output[:8]:
            if text := _error_text(item, depth + 1):
                return text
    return ""


def _compact(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        # Bounded before it is made: a 2 MB output is cut, not serialised whole. Strings are
        # cleaned before they are quoted: JSON would keep an escape as the letters "\u001b".
        kept = bounded(value, chars=FIELD_CHARS * 2, clean=printable)
        return json.dumps(kept, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return ""


def bounded(
    value: object,
    *,
    chars: int,
    items: int = 16,
    depth: int = 4,
    clean: Callable[[str], str] | None = None,
) -> object:
    """JSON-like ``value`` cut to ``items`` entries per list or object, ``depth`` levels and
    ``chars`` characters per string (``clean`` applied to each string kept)."""

    def cut(part: object, level: int) -> object:
        if level > depth:
            return "…"
        if isinstance(part, str):
            text = part[:chars]
            return clean(text) if clean is not None else text
        if isinstance(part, dict):
            entries = list(part.items())[:items]
            return {str(k)[:NAME_CHARS]: cut(v, level + 1) for k, v in entries}
        if isinstance(part, list):
            return [cut(item, level + 1) for item in part[:items]]
        if isinstance(part, (int, float, bool)) or part is None:
            return part
        return str(part)[:NAME_CHARS]

    return cut(value, 0)


def _strings(value: object) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _name_from_id(user: str) -> str:
    """``jupyter-ai-personas::pkg::ClaudeAcpPersona`` → ``ClaudeAcpPersona``.

    The id is the sender's own word, as outside as a display name: made printable like one (it
    is shown in the chat's row, its notification, a change line and the kernel's record).
    """
    return printable_line(user.rsplit("::", 1)[-1], NAME_CHARS) or "the agent"


class _Cleaner:
    """Bounded, printable, redacted text: once, here, for every place that shows it."""

    def __init__(self, redactor: Redactor) -> None:
        self._redact = redactor

    def text(self, value: object, limit: int) -> str:
        """One line of at most ``limit`` characters."""
        return shorten(self.block(value, limit + 64), limit)

    def block(self, value: object, limit: int) -> str:
        """Text that keeps its lines (a reply's "Next:" line matters), at most ``limit``."""
        if not isinstance(value, str) or not value:
            return ""
        # Redacted over a head a little past the cut, never the whole of a 2 MB output, and
        # never cut inside a secret (Redactor.head).
        head, cut = self._redact.head(value, limit)
        text = printable(head).strip()
        if cut or len(text) > limit:
            text = text[:limit].rstrip() + "…"
        return text


def chat_name(path: str) -> str:
    """The chat's file name, as rows and notifications show it (made printable: anyone who can
    write in the folder, an agent included, names its files)."""
    return printable_line(posixpath.basename(path) or path, NAME_CHARS * 4)
