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
    "code",
    "source",
    "command",
    "cmd",
)
#: Arguments that hold a query: it names the table it writes or reads.
_QUERY_KEYS = frozenset({"query", "sql"})
#: Arguments that hold code or a command: it names the file it works on, else its first line
#: does (a rerun of the same code is the same thing; code fixed before it ran again usually
#: keeps its first line, and always the file it writes).
_SOURCE_KEYS = frozenset({"code", "source", "command", "cmd"})
#: Arguments whose target is something a tool can change (a file, a table, a cell).
_THING_KEYS = frozenset(TARGET_KEYS) - _QUERY_KEYS - _SOURCE_KEYS
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
        inside = _quoted_spans(head)
        for match in _argument().finditer(head):
            if _within(inside, match.start("key")):
                continue  # ``index=[…]`` inside a code argument is no argument of the call
            value = match.group("single") or match.group("double") or match.group("bare") or ""
            found.setdefault(match.group("key"), value)
    # A cell of a notebook is more precisely what a call works on than the notebook.
    keys = (*sorted(CELL_KEYS & found.keys(), key=TARGET_KEYS.index), *TARGET_KEYS)
    for key in keys:
        value = found.get(key)
        if value is None or not value.strip():
            continue
        if key in _QUERY_KEYS:
            table = _sql_target().search(value)
            return key, table.group(1)[:TARGET_CHARS] if table else ""
        if key in _SOURCE_KEYS:
            return key, _source_target(value)
        return key, shorten(value, TARGET_CHARS)
    return "", ""


def is_path(target: str) -> bool:
    """Whether a target read from code is a file it names (not its first line)."""
    return _path_in_code().fullmatch(f"'{target}'") is not None


def names_code_only(argument: str, target: str) -> bool:
    """Whether a target read from ``argument`` is code known only by its first line (not a
    file it names, a table, an id)."""
    return argument in _SOURCE_KEYS and not is_path(target)


def names_a_thing(argument: str) -> bool:
    """Whether a target read from ``argument`` is a thing a tool changes (a file, a table, a
    cell), not a query or code."""
    return argument in _THING_KEYS


@functools.cache
def _path_in_code() -> re.Pattern[str]:
    return re.compile(r"""['"](?P<path>[^'"\s]*[\w-]\.[A-Za-z][\w]{0,7})['"]""")


def _source_target(code: str) -> str:
    """What code works on: the first file it names in quotes, else its first line."""
    code = code.strip("'\" ").replace("\\n", "\n")
    path = _path_in_code().search(code[:_ARGS_CHARS])
    if path is not None:
        return shorten(path.group("path"), TARGET_CHARS)
    for line in code.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            return shorten(line, TARGET_CHARS)
    return ""


@functools.cache
def _quoted() -> re.Pattern[str]:
    return re.compile(r"""'(?:[^'\\]|\\.)*(?:'|$)|"(?:[^"\\]|\\.)*(?:"|$)""")


def _quoted_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text``'s quoted strings are (start, end), for arguments ``k='…'`` as recorded."""
    return [match.span() for match in _quoted().finditer(text)]


def _within(spans: list[tuple[int, int]], index: int) -> bool:
    return any(start < index < end for start, end in spans)


@functools.cache
def _exception() -> re.Pattern[str]:
    return re.compile(
        r"(?<![\w.])(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Fault"
        r"|Violation|Timeout)\b(?=:|\s*$|\s*\()"
    )


@functools.cache
def _qualified_exception() -> re.Pattern[str]:
    return re.compile(r"(?m)^[ \t]*(?P<line>(?:[a-z_]\w*\.)+[A-Z]\w*:[^\n]*)")


def error_text(error: str) -> str:
    """The line of a recorded error that says what went wrong, from the exception it names.

    smolagents words a tool failure as "Error executing tool 'issue_refund' with arguments
    {'order_id': 'A-1001', …}: RuntimeError: refund service unavailable": the exception is the
    first one named outside the brackets and quotes of the arguments, and the line runs from
    it. Without a named exception, the line that says error (:func:`error_line`)."""
    line = error_line(error) or first_line(error)
    if _exception().search(line) is None:
        # A driver's exception named by its module ("psycopg.errors.UndefinedTable: …"), with
        # the query it ran after it.
        qualified = _qualified_exception().search(error)
        if qualified is not None:
            line = qualified.group("line")
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
