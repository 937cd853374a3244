"""One hook event of a CLI agent, read from the JSON the agent hands its hook command.

Claude Code, Codex and VS Code's agent hooks run a command at points of the agent's loop and
give it one JSON object on stdin. The three agree on most of it (``session_id``, ``cwd``,
``tool_name``, ``tool_input``, ``tool_response``; VS Code spells the event ``hookEventName``
and the session ``sessionId``); the events read here are:

- ``UserPromptSubmit``: the person's ``prompt`` → a ``prompt`` event;
- ``PostToolUse`` (``PostToolUseFailure``, with its ``error``): a tool call → a ``tool``
  event, with the notebook it names (Claude Code's ``NotebookEdit`` ``notebook_path``, an
  ``Edit`` or ``Write`` of a ``.ipynb``, the files of Codex's ``apply_patch``, an MCP tool's
  path) and whether it edited or ran that notebook;
- ``Stop`` (``StopFailure``, with its ``error``): the turn ended → a ``stop`` event with the
  final answer when the payload carries one (``last_assistant_message``);
- ``SessionEnd`` → an ``end`` event;
- ``PermissionRequest`` (Claude Code, and Codex for its shell, exec and network approvals): a
  tool call waits for the person's approval → an ``approval`` event, with the call in one line
  (``Bash rm -rf build/``) and the notebook it names. A call the agent's rules allow runs with
  no such event;
- ``PermissionDenied`` (a call refused by a rule or Claude Code's auto mode) → ``denied``;
- ``Notification``: Claude Code's ``permission_prompt`` ("Claude needs your permission to use
  Bash", a few seconds after the dialog opened) → a ``permission`` event, the fallback when no
  ``PermissionRequest`` came (it names the tool, not the call); its ``idle_prompt`` ("Claude is
  waiting for your input", sent a minute after a turn, with the agent back at its prompt) →
  ``idle``, which says no approval waits any more. Other notifications are no event.

The payloads' fields, as documented: Claude Code's hooks reference
(https://code.claude.com/docs/en/hooks: ``PermissionRequest`` with ``tool_name``,
``tool_input``, ``permission_suggestions``; ``PermissionDenied`` with ``tool_name``,
``tool_input``, ``tool_use_id``, ``reason``; ``Notification`` with ``message``, ``title``,
``notification_type``), and Codex's (https://github.com/openai/codex/pull/17563 and its
``codex-rs/hooks/schema/generated/permission-request.command.input.schema.json``: the same
``tool_name`` — ``Bash`` for shell, exec and network approvals — and ``tool_input`` with
``command`` and ``description``, plus ``turn_id``).

Anything else (a ``PreToolUse``, a payload that is not an object) is no event. Every text kept
is bounded, made printable and redacted here, once, before it is written anywhere: the spool
holds nothing the transcript would not. Nothing here raises on any JSON: a hook must never
break the agent that runs it.

A tool call's input and answer are read by :mod:`.calls`, texts and paths by :mod:`.reading`.
These modules are on the hook command's path, which runs on every tool call of the agent: they
import only the standard library's light modules and the redaction, text and field helpers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from .. import fields
from ..fields import or_default
from ..redact import Redactor
from ..textutil import printable, shorten
from .calls import ERROR_CHARS as ERROR_CHARS
from .calls import OUTPUT_CHARS as OUTPUT_CHARS
from .calls import SUMMARY_CHARS as SUMMARY_CHARS
from .calls import approval_fields, tool_fields, tool_name
from .calls import changed_line as changed_line
from .calls import short_tool_name as short_tool_name
from .reading import NAME_CHARS as NAME_CHARS
from .reading import PATH_CHARS as PATH_CHARS
from .reading import (
    absolute,
    clean_block,
    clean_line,
    first_text,
    notebook_path,
    spool_block,
    spool_line,
)

CLAUDE_CODE = "Claude Code"
CODEX = "Codex"
VSCODE = "VS Code agent"
UNKNOWN_AGENT = "a CLI agent"
"""Who the event is from when neither ``--agent`` nor the payload's shape says."""

KINDS = frozenset({"prompt", "tool", "stop", "end", "approval", "permission", "denied", "idle"})
WAITS = frozenset({"approval", "permission"})
"""The kinds that say a tool call waits for the person's approval."""
TOUCHES = frozenset({"edit", "run"})
"""What a tool call did to the notebook it names."""
PROMPT_CHARS = 4000
"""A prompt or a final answer kept (the transcript cuts it again, head and tail)."""
SESSION_CHARS = 128

_PROMPT_EVENTS = frozenset({"userpromptsubmit", "userpromptsubmitted"})
_TOOL_EVENTS = frozenset({"posttooluse"})
_TOOL_FAILED = frozenset({"posttoolusefailure"})
_STOP_EVENTS = frozenset({"stop"})
_STOP_FAILED = frozenset({"stopfailure"})
_END_EVENTS = frozenset({"sessionend"})
_APPROVAL_EVENTS = frozenset({"permissionrequest"})
_DENIED_EVENTS = frozenset({"permissiondenied"})
_NOTIFICATION_EVENTS = frozenset({"notification"})
# Claude Code's fixed texts, for a Notification of a version that sends no notification_type.
_PERMISSION_MESSAGE = re.compile(r"needs your permission to use (\S.*)$")
_IDLE_MESSAGE = "waiting for your input"
MESSAGE_CHARS = 1000
"""A notification's message read (Claude Code's are one short line)."""


class HookEvent(NamedTuple):
    """One event of an agent's session, as the spool keeps it.

    A NamedTuple rather than a dataclass: immutable all the same, and the hook command, which
    runs on every tool call of the agent, is spared the dataclasses module's import.
    """

    agent: str
    """Who: ``Claude Code``, ``Codex``, ``VS Code agent`` or the name ``--agent`` gave."""
    session: str
    """The agent's session id (its cwd when it sends none)."""
    kind: str
    """``prompt``, ``tool``, ``stop``, ``end``, ``approval``, ``permission``, ``denied`` or
    ``idle`` (see :data:`KINDS`)."""
    at: float
    """When the hook ran (UNIX time)."""
    cwd: str | None = None
    notebook: str | None = None
    """The absolute path of the notebook a tool call names, if it names one."""
    touch: str | None = None
    """``edit`` or ``run`` when the tool call changed or ran a notebook (the one it names, or
    for a tool that names none, the one the session last named)."""
    tool: str | None = None
    text: str = ""
    """The prompt, the tool call in one line (for ``approval``: with its tool's name, ``Bash
    rm -rf build/``; for ``permission``: the tool's name alone), or the final answer."""
    output: str = ""
    """What the tool answered, in one line."""
    error: str | None = None
    """What a failed tool call or turn said."""

    def to_json(self) -> dict[str, Any]:
        """The spool's line for this event (a JSON object)."""
        return {"v": 1, **self._asdict()}


def event_from_json(data: object) -> HookEvent | None:
    """The event a spool line holds (parsed JSON); None when it is not one.

    Every field is checked and bounded again: the spool is the person's own file, but a torn or
    hand-edited line must never reach a kernel's record as anything but a clean event.
    """
    if not isinstance(data, dict) or data.get("v") != 1:
        return None
    kind = or_default(None, fields.one_of, data, "kind", KINDS)
    at = or_default(None, fields.timestamp, data, "at")
    if kind is None or at is None:
        return None
    agent, session = (
        spool_line(data.get("agent"), NAME_CHARS),
        spool_line(data.get("session"), SESSION_CHARS),
    )
    if not agent:
        return None
    return HookEvent(
        agent=agent,
        session=session,
        kind=kind,
        at=at,
        cwd=absolute(data.get("cwd")),
        notebook=notebook_path(absolute(data.get("notebook"))),
        touch=or_default(None, fields.one_of, data, "touch", TOUCHES),
        tool=spool_line(data.get("tool"), NAME_CHARS) or None,
        text=spool_block(data.get("text"), PROMPT_CHARS),
        output=spool_line(data.get("output"), OUTPUT_CHARS),
        error=spool_line(data.get("error"), ERROR_CHARS) or None,
    )


def normalise(
    payload: object,
    *,
    at: float,
    agent: str | None = None,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
) -> HookEvent | None:
    """The event of one hook ``payload`` (the agent's parsed JSON), or None when it is none.

    ``agent`` names who sent it when the payload's shape does not say (``--agent``); ``cwd`` is
    the working directory relative paths are read against when the payload gives none (the hook
    command's own); ``env`` is the environment whose secret-looking values are redacted
    (default: this process's, which the agent's hooks inherit from the agent).
    """
    if not isinstance(payload, dict):
        return None
    name = _event_name(payload)
    notified: tuple[str, str | None] | None = None
    if name in _PROMPT_EVENTS:
        kind = "prompt"
    elif name in _TOOL_EVENTS or name in _TOOL_FAILED:
        kind = "tool"
    elif name in _STOP_EVENTS or name in _STOP_FAILED:
        kind = "stop"
    elif name in _END_EVENTS:
        kind = "end"
    elif name in _APPROVAL_EVENTS:
        kind = "approval"
    elif name in _DENIED_EVENTS:
        kind = "denied"
    elif name in _NOTIFICATION_EVENTS and (notified := _notification(payload)) is not None:
        kind = notified[0]
    else:
        return None
    redact = Redactor(env)
    where = absolute(payload.get("cwd")) or absolute(cwd)
    session = first_text(payload, ("session_id", "sessionId", "conversation_id"), SESSION_CHARS)
    event = HookEvent(
        agent=_agent(payload, agent),
        session=session or (where or ""),
        kind=kind,
        at=at,
        cwd=where,
    )
    if kind == "prompt":
        prompt = clean_block(redact, payload.get("prompt"), PROMPT_CHARS)
        return event._replace(text=prompt) if prompt else None
    if kind == "stop":
        answer = clean_block(redact, payload.get("last_assistant_message"), PROMPT_CHARS)
        error = None
        if name in _STOP_FAILED:
            why = " — ".join(
                part
                for part in (payload.get("error"), payload.get("error_details"))
                if isinstance(part, str) and part
            )
            error = clean_line(redact, why, ERROR_CHARS) or "the turn failed"
        return event._replace(text=answer, error=error)
    if kind == "tool":
        found = tool_fields(payload, where, redact, failed=name in _TOOL_FAILED)
        return None if found is None else event._replace(**found)
    if kind == "approval":
        return event._replace(**approval_fields(payload, where, redact))
    if kind == "denied":
        reason = or_default(None, fields.text, payload, "reason", 4 * ERROR_CHARS)
        return event._replace(
            tool=tool_name(payload, redact), error=clean_line(redact, reason, ERROR_CHARS) or None
        )
    if kind == "permission" and notified is not None and notified[1]:
        named = clean_line(redact, short_tool_name(notified[1]), NAME_CHARS)
        return event._replace(tool=named or None, text=named)
    return event


# -- approvals ----------------------------------------------------------------------------------


def _notification(payload: Mapping[str, Any]) -> tuple[str, str | None] | None:
    """What a ``Notification`` says: (``permission``, the tool named or None) when a tool call
    waits for approval, (``idle``, None) when the agent waits at its prompt; None otherwise
    (a login, an MCP server's question, a message of another shape)."""
    kind = or_default(None, fields.text, payload, "notification_type", NAME_CHARS)
    message = or_default(None, fields.text, payload, "message", MESSAGE_CHARS) or ""
    asked = _PERMISSION_MESSAGE.search(message.strip())
    tool = asked.group(1).strip() if asked else None
    if kind == "permission_prompt" or (kind is None and asked):
        return "permission", tool
    if kind == "idle_prompt" or (kind is None and _IDLE_MESSAGE in message):
        return "idle", None
    return None


# -- who ----------------------------------------------------------------------------------------


def _event_name(payload: Mapping[str, Any]) -> str:
    """The event's name, lower case, letters only (``PostToolUse`` → ``posttooluse``)."""
    name = payload.get("hook_event_name", payload.get("hookEventName"))
    if not isinstance(name, str):
        return ""
    return "".join(c for c in name[:64].lower() if c.isalpha())


def _agent(payload: Mapping[str, Any], given: str | None) -> str:
    """Who sent the payload: ``given`` (``--agent``), else what its shape says."""
    if given is not None:
        name = shorten(printable(given), NAME_CHARS)
        if name:
            return name
    if "hookEventName" in payload or "sessionId" in payload:
        return VSCODE  # VS Code's common fields are camelCase
    if "turn_id" in payload:
        return CODEX
    transcript = payload.get("transcript_path")
    transcript = transcript.replace("\\", "/") if isinstance(transcript, str) else ""
    if "/.codex/" in transcript:
        return CODEX
    if "/.claude/" in transcript or "permission_mode" in payload:
        return CLAUDE_CODE
    return UNKNOWN_AGENT
