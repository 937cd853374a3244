"""What a tool call acts on, and how it failed: read from the call's structure.

A failure is keyed by what failed, so a later success of the same thing closes it. The thing a
tool works on is one of its arguments (:data:`TARGET_KEYS`, the most telling first), read from
the arguments as recorded (``k=v`` pairs or a JSON object); a query names the table it writes or
reads. The error line is the one that names the exception, found outside the brackets and
quotes of the arguments a framework may quote before it.
"""

from __future__ import annotations

import functools
import json
import re

from ..textutil import error_line, first_line, shorten

TARGET_CHARS = 80
"""The longest target kept (a path, a table, an id)."""

#: The arguments that say what a tool works on, most telling first. A call's key is its tool
#: and the first of these it has.
TARGET_KEYS = (
    "path",
    "file_path",
    "filename",
    "file",
    "notebook_path",
    "notebook",
    "table",
    "table_name",
    "order_id",
    "ticket_id",
    "id",
    "url",
    "cell_id",
    "cell",
    "cell_index",
    "index",
    "query",
    "sql",
)
#: Arguments that hold code or a query: fixing one is a retry of the same thing, so it names
#: no target of its own; a query names the table it writes or reads.
_CODE_KEYS = frozenset({"query", "sql"})
CELL_KEYS = frozenset({"cell_id", "cell", "cell_index", "index"})
#: The longest arguments text read for a target (a JSON object past this is not parsed).
_ARGS_CHARS = 4000


@functools.cache
def _argument() -> re.Pattern[str]:
    keys = "|".join(TARGET_KEYS)
    return re.compile(
        rf"""(?:^|[\s,{{(])["']?(?P<key>{keys})["']?\s*[=:]\s*"""
        r"""(?:'(?P<single>(?:[^'\\]|\\.){0,400})'|"(?P<double>(?:[^"\\]|\\.){0,400})\""""
        r"""|(?P<bare>[^,\s)}]{1,200}))"""
    )


@functools.cache
def _sql_target() -> re.Pattern[str]:
    return re.compile(
        r"(?i)\b(?:into|update|table|view|from)\s+(?:if\s+(?:not\s+)?exists\s+)?"
        r"[\"`]?([\w.]+)"
    )


def target_of(arguments: str) -> tuple[str, str]:
    """(argument name, target) of a tool call's arguments: the first of :data:`TARGET_KEYS` it
    has (``order_id='A-1001', amount=398`` → ``("order_id", "A-1001")``), as recorded (``k=v``
    pairs or a JSON object); a query's target is the table it names. ``("", "")`` if none."""
    head = arguments[:_ARGS_CHARS]
    found: dict[str, str] = {}
    if head.startswith("{") and len(arguments) <= _ARGS_CHARS:
        try:
            data = json.loads(head)
        except ValueError:
            data = None
        if isinstance(data, dict):
            found = {
                k: str(v) for k, v in data.items() if k in TARGET_KEYS and isinstance(v, str | int)
            }
    if not found:
        for match in _argument().finditer(head):
            value = match.group("single") or match.group("double") or match.group("bare") or ""
            found.setdefault(match.group("key"), value)
    for key in TARGET_KEYS:
        value = found.get(key)
        if value is None or not value.strip():
            continue
        if key in _CODE_KEYS:
            table = _sql_target().search(value)
            return key, table.group(1)[:TARGET_CHARS] if table else ""
        return key, shorten(value, TARGET_CHARS)
    return "", ""


@functools.cache
def _exception() -> re.Pattern[str]:
    return re.compile(
        r"(?<![\w.])(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Fault"
        r"|Violation|Timeout)\b(?=:|\s*$|\s*\()"
    )


def error_text(error: str) -> str:
    """The line of a recorded error that says what went wrong, from the exception it names.

    smolagents words a tool failure as "Error executing tool 'issue_refund' with arguments
    {'order_id': 'A-1001', …}: RuntimeError: refund service unavailable": the exception is the
    first one named outside the brackets and quotes of the arguments, and the line runs from
    it. Without a named exception, the line that says error (:func:`error_line`)."""
    line = error_line(error) or first_line(error)
    depth = 0
    quote = ""
    starts: set[int] = set()
    for match in _exception().finditer(line):
        starts.add(match.start())
    if not starts:
        return line
    for index, char in enumerate(line):
        if index in starts and depth == 0 and not quote:
            return line[index:]
        if quote:
            if char == quote and line[index - 1 : index] != "\\":
                quote = ""
        elif char in "'\"" and depth > 0:
            quote = char
        elif char in "{[(":
            depth += 1
        elif char in "}])" and depth > 0:
            depth -= 1
    return line


@functools.cache
def _changing_tool() -> re.Pattern[str]:
    return re.compile(
        r"(?i)(?:^|[_\-.\s]|(?<=[a-z])(?=[A-Z]))(?:write|edit|create|save|insert|update|replace"
        r"|patch|append|delete|remove|rename|move|modify|overwrite|notebook_edit|run_cell"
        r"|execute_cell|add_cell|apply)|^(?:Write|Edit|MultiEdit|NotebookEdit)$"
    )


def is_changing(tool: str) -> bool:
    """Whether a tool of this name changes what it works on (``write_file``, ``edit_cell``)."""
    return _changing_tool().search(tool) is not None


def does_step(tool: str, step: str) -> bool:
    """Whether a successful ``tool`` does ``step`` ("close_ticket" does "close the ticket")."""
    words = [w for w in re.split(r"[_\-.\s]+", tool.casefold()) if len(w) > 2]
    said = step.casefold()
    return len(words) >= 2 and all(w in said for w in words)
