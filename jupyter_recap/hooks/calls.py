"""A CLI agent's tool call in one line: what it names, what it did, what it answered.

The readers of ``tool_input`` and ``tool_response`` for Claude Code's, Codex's and VS Code's
tools (and MCP servers' tools), after a call (``PostToolUse``: :func:`tool_fields`) and while
one waits for the person's approval (``PermissionRequest``: :func:`approval_fields`). Every
text is bounded, printable and redacted (:mod:`.reading`); nothing raises on any JSON. On the
hook command's path: the standard library's light modules only.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

from .. import fields
from ..fields import or_default
from ..redact import Redactor
from .reading import NAME_CHARS, clean_line, first_string, notebook_path, resolve

SUMMARY_CHARS = 300
"""A tool call described in one line."""
OUTPUT_CHARS = 600
"""A tool's output kept, as one line."""
ERROR_CHARS = 300

_DETAIL_KEYS = ("url", "query", "pattern", "plan", "description", "prompt")
"""What a call waiting for approval is about, when it runs no command and names no file (a
``WebFetch``'s URL, an ``ExitPlanMode``'s plan)."""
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


def tool_fields(
    payload: Mapping[str, Any], cwd: str | None, redact: Redactor, *, failed: bool
) -> dict[str, Any] | None:
    """A ``PostToolUse`` (``failed``: ``PostToolUseFailure``) as the fields of its event: the
    tool, the call in one line, the notebook it names and what it did to it (``edit``,
    ``run``), its output and error; None without a tool's name. Paths are read against
    ``cwd``."""
    raw_name = payload.get("tool_name")
    if not isinstance(raw_name, str) or not raw_name.strip():
        return None
    raw_name = raw_name[: 4 * NAME_CHARS]
    tool = clean_line(redact, short_tool_name(raw_name), NAME_CHARS) or "tool"
    inputs = or_default(None, fields.obj, payload, "tool_input") or {}
    named = [path for raw in named_paths(inputs) if (path := resolve(raw, cwd))]
    notebook = next((path for path in named if notebook_path(path)), None)
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
    return {
        "notebook": notebook,
        "touch": touch,
        "tool": tool,
        "text": _summary(tool, inputs, notebook, named, redact, old),
        "output": "" if touch == "edit" else _output(response, redact),
        "error": error,
    }


def short_tool_name(name: str) -> str:
    """``mcp__jupyter__insert_cell`` → ``insert_cell``; other names as they are."""
    if name.startswith("mcp__") and name.count("__") >= 2:
        return name.rsplit("__", 1)[1] or name
    return name


def named_paths(inputs: Mapping[str, Any]) -> list[str]:
    """The file paths a tool's input names, in the order of :data:`_PATH_KEYS` (at most 16)."""
    found = [value for key in _PATH_KEYS if isinstance(value := inputs.get(key), str) and value]
    for key in _PATH_LIST_KEYS:
        value = inputs.get(key)
        if isinstance(value, list):
            found += [item for item in value[:16] if isinstance(item, str) and item]
    command = first_string(inputs, _COMMAND_KEYS)
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
    command = first_string(inputs, _COMMAND_KEYS)
    if command and "*** Begin Patch" in command[:4096]:
        files = [
            f"{m.group(1).lower()} {os.path.basename(m.group(2))}"
            for m in _PATCH_FILE.finditer(command, 0, 1 << 16)
        ]
        return clean_line(redact, "patch: " + ", ".join(files[:4]), SUMMARY_CHARS) or tool
    if command:
        return clean_line(redact, command, SUMMARY_CHARS) or tool
    words: list[str] = []
    mode = first_string(inputs, _MODE_KEYS)
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
    source = first_string(inputs, _SOURCE_KEYS)
    if source and mode != "delete":
        first = changed_line(source, old)
        line = f"{line}: {first}" if line else first
    return clean_line(redact, line, SUMMARY_CHARS) or tool


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
    if not isinstance(response, dict) or first_string(inputs, _MODE_KEYS) == "insert":
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
        return clean_line(redact, response, OUTPUT_CHARS)
    if isinstance(response, dict):
        text = first_string(response, _OUTPUT_KEYS)
        if text:
            return clean_line(redact, text, OUTPUT_CHARS)
    if isinstance(response, (dict, list)):
        try:
            compact = json.dumps(_bounded(response, 0), ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError):
            return ""
        return clean_line(redact, compact, OUTPUT_CHARS)
    return ""


def _response_error(response: object, redact: Redactor) -> str | None:
    """What a tool's answer says went wrong: its ``error``, or a command's exit code."""
    if not isinstance(response, dict):
        return None
    error = response.get("error")
    if isinstance(error, str) and error.strip():
        return clean_line(redact, error, ERROR_CHARS) or "failed"
    code = next((response[key] for key in _EXIT_KEYS if key in response), None)
    if isinstance(code, int) and not isinstance(code, bool) and code != 0:
        stderr = response.get("stderr")
        tail = stderr.strip().splitlines()[-1] if isinstance(stderr, str) and stderr.strip() else ""
        return clean_line(redact, f"exit code {code}" + (f": {tail}" if tail else ""), ERROR_CHARS)
    return None


def _tool_error(payload: Mapping[str, Any], response: object, redact: Redactor) -> str | None:
    error = payload.get("error")
    if isinstance(error, str) and error.strip():
        return clean_line(redact, error, ERROR_CHARS)
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


# -- waiting for approval -----------------------------------------------------------------------


def approval_fields(
    payload: Mapping[str, Any], cwd: str | None, redact: Redactor
) -> dict[str, Any]:
    """A ``PermissionRequest`` as the fields of its event: the tool, the call waiting for
    approval in one line, the notebook it names (paths read against ``cwd``)."""
    tool = tool_name(payload, redact)
    inputs = or_default(None, fields.obj, payload, "tool_input") or {}
    named = [path for raw in named_paths(inputs) if (path := resolve(raw, cwd))]
    notebook = next((path for path in named if notebook_path(path)), None)
    text = approval_line(tool, inputs, notebook, named, redact) if tool else ""
    return {"tool": tool, "notebook": notebook, "text": text}


def approval_line(
    tool: str, inputs: Mapping[str, Any], notebook: str | None, named: list[str], redact: Redactor
) -> str:
    """The call waiting for approval in one line, its tool's name first: ``Bash rm -rf
    build/``, ``NotebookEdit replace cell c-2 of churn.ipynb: …``, ``WebFetch https://…``."""
    line = _summary(tool, inputs, notebook, named, redact)
    if line == tool:
        detail = _ask_detail(inputs)
        line = f"{tool} {detail}" if detail else tool
    elif not line.startswith(tool):
        line = f"{tool} {line}"
    return clean_line(redact, line, SUMMARY_CHARS) or tool


def _ask_detail(inputs: Mapping[str, Any]) -> str:
    """What a call that runs no command and names no file is about: its question (Claude
    Code's ``AskUserQuestion``), its URL, query, pattern or plan; the first line of it."""
    questions = inputs.get("questions")
    if isinstance(questions, list) and questions and isinstance(questions[0], dict):
        asked = questions[0].get("question")
        if isinstance(asked, str) and asked.strip():
            return _first_filled(asked[:_SOURCE_SCAN].splitlines())
    detail = first_string(inputs, _DETAIL_KEYS)
    return _first_filled(detail[:_SOURCE_SCAN].splitlines()) if detail else ""


def tool_name(payload: Mapping[str, Any], redact: Redactor) -> str | None:
    """The payload's ``tool_name``, short (an MCP tool's own name), bounded; None if none."""
    raw = or_default(None, fields.text, payload, "tool_name", 1 << 16)
    if raw is None or not raw.strip():
        return None
    return clean_line(redact, short_tool_name(raw[: 4 * NAME_CHARS]), NAME_CHARS) or None
