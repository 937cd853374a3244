"""What MCP servers leave behind, read into notebook touches: pure, no server in it.

jupyter-mcp-server and jupyter_server_mcp let an agent edit and run notebooks through tools. Three
server adapters hear their calls (:mod:`jupyter_recap.server.outside`): jupyter-mcp-server's hooks
in this process, its OpenTelemetry span file when it runs as its own process, and a middleware in
jupyter_server_mcp. What they hear is read here into :class:`Touch` records — which notebook, how
many cells edited and runs made, which of them failed:

- **tools** by what they do: jupyter-mcp-server's by name (:data:`EDIT_TOOLS`, :data:`RUN_TOOLS`),
  any other server's by the words of its name (:func:`plan_tool_call`);
- **spans** of jupyter-mcp-server's exporter (:class:`SpanReader`): a run names its kernel, a
  ``kernel_lifecycle`` span the notebook the agent started using, and edits go to that notebook;
  several processes may write one file, each with its own active notebook;
- **the span file** itself (:class:`SpanTail`), read from where the last read stopped, at most
  :data:`READ_BYTES` a time, the one safe way (:mod:`jupyter_recap.untrusted`);
- **failures**: a traceback or an error output in a run's text or outputs.

Paths outside the server's root are never noted (:func:`notebook_path`).
"""

from __future__ import annotations

import os
import re
import stat
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from .. import untrusted
from ..errors import RefusedFile

JUPYTER_MCP = "jupyter-mcp-server"
"""How a change line names jupyter-mcp-server."""
SERVER_MCP_CLIENT = "an MCP client via jupyter_server_mcp"
"""How it names a client of jupyter_server_mcp that said nothing of itself."""
OTEL_ENV = "JUPYTER_MCP_OTEL_FILE"
"""jupyter-mcp-server's variable naming its span file (this server reads the same one)."""
POLL_SECONDS = 2.0
READ_BYTES = 256 * 1024
"""Most of the span file read per poll (a burst is read over the next polls)."""
LINE_BYTES = 64 * 1024
"""A longer span line is skipped (jupyter-mcp-server's are a few hundred bytes)."""
MAX_KERNELS = 256
"""Kernels whose notebook is remembered (the oldest is forgotten)."""
MAX_WRITERS = 16
"""jupyter-mcp-server processes whose spans are told apart in one file (the oldest heard from is
forgotten): each exporter names itself (its resource's ``service.instance.id``)."""
MAX_PATH_CHARS = 4096


# jupyter-mcp-server's tools by what they do to a notebook (1.3 and 2.2 name them alike).
EDIT_TOOLS = frozenset(
    {
        "insert_cell",
        "overwrite_cell_source",
        "edit_cell_source",
        "delete_cell",
        "clear_cell_output",
        "move_cell",
        "insert_execute_code_cell",
    }
)
RUN_TOOLS = frozenset({"execute_cell", "insert_execute_code_cell", "execute_code"})
"""``execute_code`` runs code in the notebook's kernel without a cell: the kernel's state, which
the notebook's next run sees, changed all the same."""

# jupyter_server_mcp serves whatever tools are registered: the words of a tool's name say what it
# does. Reads (read, get, list, select, open…) are not changes.
EDIT_WORDS = frozenset(
    {
        "add",
        "append",
        "clear",
        "create",
        "delete",
        "edit",
        "insert",
        "modify",
        "move",
        "overwrite",
        "remove",
        "replace",
        "update",
        "write",
    }
)
RUN_WORDS = frozenset({"run", "execute", "exec"})
PATH_ARGUMENTS = ("file_path", "notebook_path", "notebookPath", "path", "notebook", "file")
CELL_LIST_ARGUMENTS = ("cell_ids", "cell_indices")
GENERIC_CLIENTS = frozenset({"", "mcp", "fastmcp", "unknown"})
"""Client names the MCP libraries send by default: they say nothing of the agent."""
PERSONA_HEADER = "x-jupyterai-persona-id"
CHAT_HEADER = "x-jupyter-chat-id"

ERROR_MARKS = ("Traceback (most recent call last)", "[ERROR:", "[TIMEOUT ERROR")
ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b.*")
"""The last line of a Python traceback as text (``ZeroDivisionError: division by zero``)."""


@dataclass
class SpanTail:
    """A file read from where the last read stopped; the unfinished last line kept."""

    path: str
    offset: int = 0
    inode: int | None = None
    seen: tuple[int, int, int] | None = None
    partial: bytes = b""
    skipping: bool = False
    """Inside a line too long to keep: its rest, up to the next newline, is dropped."""

    def start_at_end(self) -> None:
        try:
            info = os.stat(self.path)
        except OSError:
            return  # not there yet: everything it will hold is new
        if stat.S_ISREG(info.st_mode):
            self.offset, self.inode = info.st_size, info.st_ino
            self.seen = (info.st_ino, info.st_size, info.st_mtime_ns)

    def read_lines(self) -> list[bytes]:
        """The complete lines written since the last read (at most :data:`READ_BYTES`).

        The file is opened the one safe way (:mod:`..untrusted`): a span file replaced by a
        FIFO or a device is refused on its descriptor without blocking the server's loop.
        """
        try:
            fd, info = untrusted.open_regular(self.path)
        except (OSError, RefusedFile):
            return []
        try:
            seen = (info.st_ino, info.st_size, info.st_mtime_ns)
            if seen == self.seen and self.offset >= info.st_size:
                return []
            if info.st_ino != self.inode or info.st_size < self.offset:
                # Replaced or truncated: the new content is read from its start.
                self.offset, self.partial, self.skipping = 0, b"", False
            self.inode = info.st_ino
            data = os.pread(fd, READ_BYTES, self.offset)
        except OSError:
            return []
        finally:
            os.close(fd)
        self.offset += len(data)
        self.seen = seen
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        if self.skipping and lines:
            lines.pop(0)  # the end of the line too long to keep
            self.skipping = False
        elif self.skipping:
            self.partial = b""
        if len(self.partial) > LINE_BYTES:
            self.partial, self.skipping = b"", True
        return [line for line in lines if line.strip() and len(line) <= LINE_BYTES]


@dataclass
class PendingRun:
    """An ``execute`` span, until the tool call that made it ends."""

    kernel_id: str
    failed: bool


@dataclass
class SpanWriter:
    """What the span file told so far of the process writing it."""

    active: str | None = None
    """The notebook its tools act on when a call names none (the one it last started using)."""
    kernels: OrderedDict[str, str] = field(default_factory=OrderedDict)
    """Kernel id → notebook path."""
    pending: PendingRun | None = None


def count_cells(value: object) -> int:
    """Cells a list argument names (one when it is not a list)."""
    return max(1, min(len(value), 10_000)) if isinstance(value, list) else 1


def inside(full: str, root: str) -> str | None:
    try:
        relative = os.path.relpath(full, root)
    except ValueError:  # another drive
        return None
    if relative == os.curdir or relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return None
    return relative


def text_failed(text: str) -> bool:
    if any(mark in text for mark in ERROR_MARKS):
        return True
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return bool(lines) and ERROR_LINE.match(lines[-1].strip()) is not None


def outputs_failed(outputs: object) -> bool:
    """Whether a run's outputs (jupyter-mcp-server's text of each) hold an error."""
    if isinstance(outputs, str):
        return text_failed(outputs)
    if not isinstance(outputs, (list, tuple)):
        return False
    for output in list(outputs)[:256]:
        if isinstance(output, dict):
            if output.get("output_type") == "error":
                return True
        elif isinstance(output, str) and text_failed(output):
            return True
    return False


def result_failed(result: object) -> bool:
    """Whether a FastMCP tool result says its run failed (a structured ``success: false`` or
    error status, or a traceback in its text)."""
    structured = getattr(result, "structured_content", None)
    if isinstance(structured, dict):
        inner = structured.get("result")
        for value in (structured, inner):
            if isinstance(value, dict) and (
                value.get("success") is False or value.get("status") in ("error", "failed")
            ):
                return True
    content = getattr(result, "content", None)
    if isinstance(content, list):
        texts = [getattr(item, "text", None) for item in content[:64]]
        return any(isinstance(text, str) and text_failed(text[:65536]) for text in texts)
    return False


def span_time(value: object) -> float | None:
    """A span's end (OpenTelemetry's ISO 8601 UTC time) as UNIX time."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


@dataclass(frozen=True)
class Touch:
    """An agent's work on one notebook: what :meth:`OutsideSink.touched
    <jupyter_recap.outside.source.OutsideSink.touched>` is told."""

    path: str
    who: str
    at: float | None = None
    edited: int = 0
    ran: int = 0
    failed: int = 0


@dataclass(frozen=True)
class ToolCallPlan:
    """A tool call that names a notebook and changes it, read before it runs."""

    path: str
    edited: int
    ran: int
    runs: bool


def notebook_path(root: str, raw: object) -> str | None:
    """``raw`` (relative to ``root``, or absolute) as the server names the notebook; None for
    what is not a notebook under ``root``."""
    if not isinstance(raw, str):
        return None
    raw = raw.strip()
    if not raw or len(raw) > MAX_PATH_CHARS or "\x00" in raw:
        return None
    if not raw.lower().endswith(".ipynb"):
        return None
    full = os.path.normpath(raw if os.path.isabs(raw) else os.path.join(root, raw))
    relative = inside(full, root)
    if relative is None and os.path.isabs(raw):
        # The root named through a symbolic link, or the other way round.
        relative = inside(os.path.realpath(full), os.path.realpath(root))
    return None if relative is None else relative.replace(os.sep, "/")


def remember_kernel(kernels: OrderedDict[str, str], kernel_id: str, path: str) -> None:
    """Note ``kernel_id`` → ``path``, the newest last, at most :data:`MAX_KERNELS` kept."""
    kernels.pop(kernel_id, None)
    kernels[kernel_id] = path
    while len(kernels) > MAX_KERNELS:
        kernels.popitem(last=False)


def plan_tool_call(tool: str, arguments: dict[str, Any], root: str) -> ToolCallPlan | None:
    """What a tool call of any MCP server is about to do to a notebook, by the words of the
    tool's name; None when it names no notebook under ``root`` or changes none."""
    words = set(re.split(r"[^a-z0-9]+", tool.lower()))
    runs = bool(words & RUN_WORDS)
    edits = bool(words & EDIT_WORDS)
    if not runs and not edits:
        return None
    path = next(
        (p for key in PATH_ARGUMENTS if (p := notebook_path(root, arguments.get(key)))), None
    )
    if path is None:
        return None
    edited = 0
    if edits and not runs:
        lists = [arguments.get(key) for key in CELL_LIST_ARGUMENTS]
        edited = max([count_cells(cells) for cells in lists if isinstance(cells, list)] or [1])
    # "run all" runs an unknown number of cells: the notebook is attributed, uncounted.
    ran = int(runs and "all" not in words)
    return ToolCallPlan(path, edited, ran, runs)


class SpanReader:
    """jupyter-mcp-server's spans (its exporter's JSON, one per line of its span file) read
    into touches. ``notebook_of`` finds the notebook of a kernel's session in this server."""

    def __init__(self, root: str, notebook_of: Callable[[str], Awaitable[str | None]]) -> None:
        self.root = root
        self.notebook_of = notebook_of
        self._writers: OrderedDict[str, SpanWriter] = OrderedDict()
        """What the span file said of each process writing it."""

    async def span(self, span: dict[str, Any]) -> Touch | None:
        """One span: the touch it completes, if any."""
        name = span.get("name")
        attributes = span.get("attributes")
        if not isinstance(name, str) or not isinstance(attributes, dict):
            return None
        state = self._writer(span)
        at = span_time(span.get("end_time"))
        error = bool(attributes.get("error"))
        if name == "execute":
            kernel_id = attributes.get("kernel.id")
            state.pending = PendingRun(kernel_id if isinstance(kernel_id, str) else "", error)
        elif name == "kernel_lifecycle":
            await self._kernel_span(state, attributes)
        elif name.startswith("tool_call:"):
            tool = name[len("tool_call:") :]
            pending, state.pending = state.pending, None
            summary = attributes.get("result.summary")
            failed = error or (isinstance(summary, str) and text_failed(summary))
            ran = failed_runs = 0
            path = state.active
            if tool in RUN_TOOLS and (pending is not None or not error):
                ran = 1
                failed_runs = int(failed or (pending is not None and pending.failed))
                if pending is not None:
                    path = state.kernels.get(pending.kernel_id) or await self._session_path(
                        pending.kernel_id
                    )
                    path = path or state.active
            edited = int(tool in EDIT_TOOLS and not error)
            if path is not None and (edited or ran):
                return Touch(path, JUPYTER_MCP, at, edited=edited, ran=ran, failed=failed_runs)
        return None

    def _writer(self, span: dict[str, Any]) -> SpanWriter:
        """The state of the process that wrote ``span`` (one file may hold several's)."""
        resource = span.get("resource")
        attributes = resource.get("attributes") if isinstance(resource, dict) else None
        writer = attributes.get("service.instance.id") if isinstance(attributes, dict) else None
        key = writer if isinstance(writer, str) else ""
        state = self._writers.pop(key, None) or SpanWriter()
        self._writers[key] = state
        while len(self._writers) > MAX_WRITERS:
            self._writers.popitem(last=False)
        return state

    async def _kernel_span(self, state: SpanWriter, attributes: dict[str, Any]) -> None:
        event = attributes.get("event_type")
        kernel_id = attributes.get("kernel.id")
        kernel_id = kernel_id if isinstance(kernel_id, str) and kernel_id != "unknown" else ""
        if event == "stopped":
            if kernel_id and state.kernels.get(kernel_id) == state.active:
                state.active = None
            return
        if event not in ("started", "restarted"):
            return
        path = state.kernels.get(kernel_id) if kernel_id else None
        path = path or await self._session_path(kernel_id) or self._named(attributes)
        if path is None:
            # The agent now works in a notebook this server cannot name: its edits are not
            # attributed to the one it used before.
            state.active = None
            return
        state.active = path
        if kernel_id:
            remember_kernel(state.kernels, kernel_id, path)

    def _named(self, attributes: dict[str, Any]) -> str | None:
        """The notebook the agent's name for it names, when that is a notebook here."""
        name = attributes.get("kernel.name")
        if not isinstance(name, str) or not name.strip():
            return None
        name = name.strip()
        candidates = (name,) if name.lower().endswith(".ipynb") else (f"{name}.ipynb",)
        for candidate in candidates:
            path = notebook_path(self.root, candidate)
            if path is not None and os.path.isfile(os.path.join(self.root, path)):
                return path
        return None

    async def _session_path(self, kernel_id: str) -> str | None:
        if not kernel_id:
            return None
        found = await self.notebook_of(kernel_id)
        return notebook_path(self.root, found) if found else None
