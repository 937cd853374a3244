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
- ``SessionEnd`` → an ``end`` event.

Anything else (a ``PreToolUse``, a ``Notification``, a payload that is not an object) is no
event. Every text kept is bounded, made printable and redacted here, once, before it is
written anywhere: the spool holds nothing the transcript would not. Nothing here raises on any
JSON: a hook must never break the agent that runs it.

This module is on the hook command's path, which runs on every tool call of the agent: it
imports only the standard library's light modules and the redaction, text and field helpers.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from .. import fields
from ..fields import or_default
from ..redact import Redactor
from ..textutil import UNSAFE_CHARS, printable, shorten

CLAUDE_CODE = "Claude Code"
CODEX = "Codex"
VSCODE = "VS Code agent"
UNKNOWN_AGENT = "a CLI agent"
"""Who the event is from when neither ``--agent`` nor the payload's shape says."""

KINDS = frozenset({"prompt", "tool", "stop", "end"})
TOUCHES = frozenset({"edit", "run"})
"""What a tool call did to the notebook it names."""

PROMPT_CHARS = 4000
"""A prompt or a final answer kept (the transcript cuts it again, head and tail)."""
SUMMARY_CHARS = 300
"""A tool call described in one line."""
OUTPUT_CHARS = 600
"""A tool's output kept, as one line."""
ERROR_CHARS = 300
NAME_CHARS = 80
"""An agent's or a tool's name."""
SESSION_CHARS = 128
PATH_CHARS = 4096

_PROMPT_EVENTS = frozenset({"userpromptsubmit", "userpromptsubmitted"})
_TOOL_EVENTS = frozenset({"posttooluse"})
_TOOL_FAILED = frozenset({"posttoolusefailure"})
_STOP_EVENTS = frozenset({"stop"})
_STOP_FAILED = frozenset({"stopfailure"})
_END_EVENTS = frozenset({"sessionend"})

_PATH_KEYS = (
    "notebook_path",
    "notebookPath",
    "filePath",
    "file_path",
    "path",
    "notebook",
    "filename",
    "uri",
    "target_file",
)
_PATH_LIST_KEYS = ("files", "paths", "filePaths")
_CELL_KEYS = ("cell_id", "cellId", "cell_index", "cell_number")
_MODE_KEYS = ("edit_mode", "editType", "mode")
_SOURCE_KEYS = ("new_source", "newCode", "new_string", "source", "code", "cell_source")
"""What an edit wrote (a ``Write``'s ``content`` is the whole file: not a line to show)."""
_SOURCE_SCAN = 1 << 16
"""Characters of a cell's new and old source compared for the first line that changed."""
_CELL_INDEX = re.compile(r"^cell-(\d{1,6})$")
"""Claude Code's name for the cell at an index (``cell-3``), for cells without ids."""
_COMMAND_KEYS = ("command", "cmd")
_OUTPUT_KEYS = ("stdout", "output", "result", "content", "message", "text", "stderr")
_EXIT_KEYS = ("exit_code", "exitCode", "returncode")
# Codex's apply_patch names the files it changes on these lines of its patch.
_PATCH_FILE = re.compile(r"^\*\*\* (Update|Add|Delete) File: (.+?)\s*$", re.MULTILINE)
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_EDIT_WORDS = frozenset(
    {"edit", "write", "replace", "insert", "overwrite", "create", "delete", "remove", "update"}
    | {"modify", "patch", "append", "add", "move", "set"}
)
_RUN_WORDS = frozenset({"run", "execute", "exec"})
_NOTEBOOK_WORDS = frozenset({"cell", "cells", "notebook", "notebooks", "ipynb"})
"""A tool named with one of these works on a notebook even when it names none (an MCP
server's ``insert_cell`` acts on the notebook its ``use_notebook`` chose)."""
_UNSAFE_IN_PATH = frozenset(UNSAFE_CHARS) | {"\n", "\t"}


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
    """``prompt``, ``tool``, ``stop`` or ``end`` (see :data:`KINDS`)."""
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
    """The prompt, the tool call in one line, or the final answer."""
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
    agent, session = _text(data.get("agent"), NAME_CHARS), _text(data.get("session"), SESSION_CHARS)
    if not agent:
        return None
    return HookEvent(
        agent=agent,
        session=session,
        kind=kind,
        at=at,
        cwd=_absolute(data.get("cwd")),
        notebook=_notebook(_absolute(data.get("notebook"))),
        touch=or_default(None, fields.one_of, data, "touch", TOUCHES),
        tool=_text(data.get("tool"), NAME_CHARS) or None,
        text=_block(data.get("text"), PROMPT_CHARS),
        output=_text(data.get("output"), OUTPUT_CHARS),
        error=_text(data.get("error"), ERROR_CHARS) or None,
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
    if name in _PROMPT_EVENTS:
        kind = "prompt"
    elif name in _TOOL_EVENTS or name in _TOOL_FAILED:
        kind = "tool"
    elif name in _STOP_EVENTS or name in _STOP_FAILED:
        kind = "stop"
    elif name in _END_EVENTS:
        kind = "end"
    else:
        return None
    redact = Redactor(env)
    where = _absolute(payload.get("cwd")) or _absolute(cwd)
    session = _first_text(payload, ("session_id", "sessionId", "conversation_id"), SESSION_CHARS)
    event = HookEvent(
        agent=_agent(payload, agent),
        session=session or (where or ""),
        kind=kind,
        at=at,
        cwd=where,
    )
    if kind == "prompt":
        prompt = _clean_block(redact, payload.get("prompt"), PROMPT_CHARS)
        return event._replace(text=prompt) if prompt else None
    if kind == "stop":
        answer = _clean_block(redact, payload.get("last_assistant_message"), PROMPT_CHARS)
        error = None
        if name in _STOP_FAILED:
            why = " — ".join(
                part
                for part in (payload.get("error"), payload.get("error_details"))
                if isinstance(part, str) and part
            )
            error = _clean_line(redact, why, ERROR_CHARS) or "the turn failed"
        return event._replace(text=answer, error=error)
    if kind == "tool":
        return _tool_event(event, payload, redact, failed=name in _TOOL_FAILED)
    return event


# -- tool calls ----------------------------------------------------------------------------------


def _tool_event(
    event: HookEvent, payload: Mapping[str, Any], redact: Redactor, *, failed: bool
) -> HookEvent | None:
    raw_name = payload.get("tool_name")
    if not isinstance(raw_name, str) or not raw_name.strip():
        return None
    raw_name = raw_name[: 4 * NAME_CHARS]
    tool = _clean_line(redact, short_tool_name(raw_name), NAME_CHARS) or "tool"
    inputs = or_default(None, fields.obj, payload, "tool_input") or {}
    named = [path for raw in _named_paths(inputs) if (path := _resolve(raw, event.cwd))]
    notebook = next((path for path in named if _notebook(path)), None)
    words = {word.lower() for word in _WORDS.findall(short_tool_name(raw_name))}
    touch = None
    # A tool that names only other files works on them; one that names no file works on a
    # notebook only when its name says it works on cells or notebooks (never a todo list's
    # "TodoWrite").
    if notebook is not None or (not named and words & _NOTEBOOK_WORDS):
        touch = "edit" if words & _EDIT_WORDS else "run" if words & _RUN_WORDS else None
    response = payload.get("tool_response")
    error = _tool_error(payload, response, redact) if failed else _response_error(response, redact)
    if failed and not error:
        error = "failed"
    old = _old_source(inputs, response) if touch == "edit" else None
    return event._replace(
        notebook=notebook,
        touch=touch,
        tool=tool,
        text=_summary(tool, inputs, notebook, named, redact, old),
        output="" if touch == "edit" else _output(response, redact),
        error=error,
    )


def short_tool_name(name: str) -> str:
    """``mcp__jupyter__insert_cell`` → ``insert_cell``; other names as they are."""
    if name.startswith("mcp__") and name.count("__") >= 2:
        return name.rsplit("__", 1)[1] or name
    return name


def _named_paths(inputs: Mapping[str, Any]) -> list[str]:
    """The file paths a tool's input names, in the order of :data:`_PATH_KEYS` (at most 16)."""
    found = [value for key in _PATH_KEYS if isinstance(value := inputs.get(key), str) and value]
    for key in _PATH_LIST_KEYS:
        value = inputs.get(key)
        if isinstance(value, list):
            found += [item for item in value[:16] if isinstance(item, str) and item]
    command = _first(inputs, _COMMAND_KEYS)
    if command and "*** Begin Patch" in command[:4096]:
        found += [match.group(2) for match in _PATCH_FILE.finditer(command, 0, 1 << 16)]
    return found[:16]


def _summary(
    tool: str,
    inputs: Mapping[str, Any],
    notebook: str | None,
    named: list[str],
    redact: Redactor,
    old: str | None = None,
) -> str:
    """The call in one line: the command it ran, or what it did where (``replace cell c-2 of
    churn.ipynb: df = df.dropna()``, with the first line of the cell that changed when its
    ``old`` source is known)."""
    command = _first(inputs, _COMMAND_KEYS)
    if command and "*** Begin Patch" in command[:4096]:
        files = [
            f"{m.group(1).lower()} {os.path.basename(m.group(2))}"
            for m in _PATCH_FILE.finditer(command, 0, 1 << 16)
        ]
        return _clean_line(redact, "patch: " + ", ".join(files[:4]), SUMMARY_CHARS) or tool
    if command:
        return _clean_line(redact, command, SUMMARY_CHARS) or tool
    words: list[str] = []
    mode = _first(inputs, _MODE_KEYS)
    if mode:
        words.append(mode)
    cell = next(
        (
            str(value)
            for key in _CELL_KEYS
            if isinstance(value := inputs.get(key), (str, int)) and not isinstance(value, bool)
        ),
        None,
    )
    target = notebook or (named[0] if named else None)
    if cell is not None:
        words.append(f"cell {cell}" + (f" of {os.path.basename(target)}" if target else ""))
    elif target:
        words.append(os.path.basename(target))
    line = " ".join(words)
    source = _first(inputs, _SOURCE_KEYS)
    if source and mode != "delete":
        first = changed_line(source, old)
        line = f"{line}: {first}" if line else first
    return _clean_line(redact, line, SUMMARY_CHARS) or tool


def changed_line(new: str, old: str | None) -> str:
    """The line of a cell's ``new`` source to show for an edit: the first that changed from
    its ``old`` source (``removed: LINE`` when lines were only taken out), or the first
    non-blank line when the old source is unknown (or nothing changed).

    Lines the two share at the start and at the end are skipped: a new line anywhere, a
    changed one, is then the first of what is left (an edit under an unchanged ``import``
    line is not shown as that ``import``).
    """
    new_lines = new[:_SOURCE_SCAN].splitlines()
    if old is not None:
        old_lines = old[:_SOURCE_SCAN].splitlines()
        start = 0
        while start < min(len(new_lines), len(old_lines)) and (
            new_lines[start] == old_lines[start]
        ):
            start += 1
        new_end, old_end = len(new_lines), len(old_lines)
        while (
            new_end > start and old_end > start and new_lines[new_end - 1] == old_lines[old_end - 1]
        ):
            new_end, old_end = new_end - 1, old_end - 1
        added = _first_filled(new_lines[start:new_end])
        if added:
            return added
        removed = _first_filled(old_lines[start:old_end])
        if removed:
            return f"removed: {removed}"
    return _first_filled(new_lines)


def _first_filled(lines: list[str]) -> str:
    return next((line for line in lines if line.strip()), "")


def _old_source(inputs: Mapping[str, Any], response: object) -> str | None:
    """The source the edited cell had before the edit, when the tool's answer tells it.

    Claude Code's ``NotebookEdit`` answers with ``old_source`` (newer versions), or with the
    whole notebook as it was (``original_file``), where the cell is found by its id (or its
    index, ``cell-3``); an ``Edit`` names the text it replaced (``old_string``). None when
    none of them says (an insert, another agent's tool).
    """
    old = inputs.get("old_string")  # an Edit says what it replaced
    if isinstance(old, str):
        return old
    if not isinstance(response, dict) or _first(inputs, _MODE_KEYS) == "insert":
        return None
    old = response.get("old_source")
    if isinstance(old, str):
        return old
    original = response.get("original_file")
    cell = inputs.get("cell_id", inputs.get("cell_number"))
    if not isinstance(original, str) or not isinstance(cell, (str, int)) or isinstance(cell, bool):
        return None
    try:
        cells = json.loads(original).get("cells")
    except (ValueError, RecursionError, AttributeError):
        return None
    if not isinstance(cells, list):
        return None
    found = next((c for c in cells if isinstance(c, dict) and c.get("id") == cell), None)
    if found is None:
        index = cell if isinstance(cell, int) else None
        match = _CELL_INDEX.match(cell) if isinstance(cell, str) else None
        index = int(match.group(1)) if match else index
        if index is not None and 0 <= index < len(cells) and isinstance(cells[index], dict):
            found = cells[index]
    source = found.get("source") if found is not None else None
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        return "".join(source)
    return source if isinstance(source, str) else None


def _output(response: object, redact: Redactor) -> str:
    """What the tool answered, on one line (its text output when it has one)."""
    if isinstance(response, str):
        return _clean_line(redact, response, OUTPUT_CHARS)
    if isinstance(response, dict):
        text = _first(response, _OUTPUT_KEYS)
        if text:
            return _clean_line(redact, text, OUTPUT_CHARS)
    if isinstance(response, (dict, list)):
        try:
            compact = json.dumps(_bounded(response, 0), ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError):
            return ""
        return _clean_line(redact, compact, OUTPUT_CHARS)
    return ""


def _response_error(response: object, redact: Redactor) -> str | None:
    """What a tool's answer says went wrong: its ``error``, or a command's exit code."""
    if not isinstance(response, dict):
        return None
    error = response.get("error")
    if isinstance(error, str) and error.strip():
        return _clean_line(redact, error, ERROR_CHARS) or "failed"
    code = next((response[key] for key in _EXIT_KEYS if key in response), None)
    if isinstance(code, int) and not isinstance(code, bool) and code != 0:
        stderr = response.get("stderr")
        tail = stderr.strip().splitlines()[-1] if isinstance(stderr, str) and stderr.strip() else ""
        return _clean_line(redact, f"exit code {code}" + (f": {tail}" if tail else ""), ERROR_CHARS)
    return None


def _tool_error(payload: Mapping[str, Any], response: object, redact: Redactor) -> str | None:
    error = payload.get("error")
    if isinstance(error, str) and error.strip():
        return _clean_line(redact, error, ERROR_CHARS)
    return _response_error(response, redact)


def _bounded(value: object, depth: int) -> object:
    """JSON-like ``value`` cut small before it is serialised (a 2 MB answer is not dumped)."""
    if depth > 3:
        return "…"
    if isinstance(value, str):
        return value[:OUTPUT_CHARS]
    if isinstance(value, dict):
        return {str(k)[:NAME_CHARS]: _bounded(v, depth + 1) for k, v in list(value.items())[:16]}
    if isinstance(value, list):
        return [_bounded(item, depth + 1) for item in value[:16]]
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    return str(value)[:NAME_CHARS]


# -- who and where -------------------------------------------------------------------------------


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


def _resolve(raw: str, cwd: str | None) -> str | None:
    """``raw`` (a path or a ``file://`` URI a tool names) as an absolute, normal path; None when
    it cannot be one (relative with no cwd, too long, control characters)."""
    if len(raw) > 3 * PATH_CHARS:
        return None
    if raw.startswith("file://"):
        from urllib.parse import unquote  # only for a URI: the hook's path stays light

        raw = unquote(raw[len("file://") :])
    if len(raw) > PATH_CHARS or any(c in _UNSAFE_IN_PATH for c in raw):
        return None
    if not os.path.isabs(raw):
        if cwd is None:
            return None
        raw = os.path.join(cwd, raw)
    return os.path.normpath(raw)


def _absolute(value: object) -> str | None:
    """An absolute path given as is (a cwd, a spool field), normalised; None if not one."""
    if not isinstance(value, str) or not value or not os.path.isabs(value):
        return None
    return _resolve(value, None)


def _notebook(path: str | None) -> str | None:
    return path if path is not None and path.lower().endswith(".ipynb") else None


# -- text ----------------------------------------------------------------------------------------


def _clean_block(redact: Redactor, value: object, limit: int) -> str:
    """Text that keeps its lines (a reply's "Next:" line matters): redacted over a head a
    little past the cut (never the whole of a 1 MB payload, never cut inside a secret),
    printable, at most ``limit`` characters."""
    if not isinstance(value, str) or not value:
        return ""
    head, cut = redact.head(value, limit)
    # A lone surrogate (JSON lets "\\ud800" through) could be written to no file.
    text = printable(head.encode("utf-8", "replace").decode("utf-8")).strip()
    if cut or len(text) > limit:
        text = text[:limit].rstrip() + "…"
    return text


def _clean_line(redact: Redactor, value: object, limit: int) -> str:
    """One line of at most ``limit`` characters, redacted and printable."""
    return shorten(_clean_block(redact, value, limit + 64), limit)


def _text(value: object, limit: int) -> str:
    """A spool field: one printable line of at most ``limit`` characters (already redacted)."""
    if not isinstance(value, str):
        return ""
    return shorten(printable(value[: limit + 64].encode("utf-8", "replace").decode()), limit)


def _block(value: object, limit: int) -> str:
    if not isinstance(value, str):
        return ""
    return printable(value[:limit].encode("utf-8", "replace").decode()).strip()


def _first(data: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    return next((v for k in keys if isinstance(v := data.get(k), str) and v.strip()), None)


def _first_text(data: Mapping[str, Any], keys: tuple[str, ...], limit: int) -> str:
    value = _first(data, keys)
    return _text(value, limit) if value is not None else ""
