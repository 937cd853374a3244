"""Notebook changes made through MCP servers, attributed to the server or the agent behind it.

Three places show which agent drove a notebook through MCP tools, each reported to
:meth:`RecapServer.notebook_touched <jupyter_recap.server.RecapServer.notebook_touched>`:

- **jupyter-mcp-server as an extension of this server** (``jupyter_mcp_server``): its tools
  report every call to a hook registry in this process (``HookRegistry``: ``before_tool_call`` /
  ``after_tool_call`` around each tool, ``before_execute`` / ``after_execute`` around each run
  in a kernel). A handler registered there learns the notebook of each call (the tool's
  ``notebook_name``, or the notebook the server has active, read from its notebook manager)
  and notes the cells the call edited, inserted or deleted and the runs it made, a run whose
  outputs hold an error as failed. Named "jupyter-mcp-server": the extension does not keep
  which MCP client called.
- **jupyter-mcp-server as its own process** (launched by the agent, talking to this server over
  HTTP): its hooks are in that process. Its OpenTelemetry exporter writes one JSON line per span
  to ``JUPYTER_MCP_OTEL_FILE`` when the person sets it, and this server tails that file
  (``c.RecapServer.mcp_otel_file``, else the same variable in this server's environment): every
  :data:`POLL_SECONDS`, only when the file's size or time changed, from its end as found at
  start, at most :data:`READ_BYTES` a time. The spans carry no notebook path: a run names its
  kernel (``execute``: the notebook of that kernel's session in this server), and
  ``kernel_lifecycle`` names the kernel and the name the agent gave the notebook when it
  started using it (``use_notebook``), which is taken as the notebook active from then on
  when it is a notebook under the server's root (``churn`` or ``churn.ipynb``). Edits
  (``tool_call:insert_cell``, …) go to that active notebook; those made while none is known
  are not attributed. Several processes may write one file: each exporter names itself (its
  resource's ``service.instance.id``), and each one's active notebook is its own. A file the
  jupyter-mcp-server extension of this server writes is not read (its hooks tell already).
- **jupyter_server_mcp** (the MCP server Jupyter AI runs inside this server; every persona's
  notebook tools and every CLI agent pointed at its port pass there): a FastMCP middleware
  added to its server once it has started notes each tool call whose arguments name a notebook
  (``file_path``, ``notebook_path``, …), by what the tool's name says it does (add, edit,
  delete…; run, execute). Who: the persona behind Jupyter AI's identity headers
  (``Claude via churn.chat``), else the name the MCP client gave when it connected, else
  "an MCP client via jupyter_server_mcp".

None of this raises into an MCP server: what cannot be read is logged at debug level and
left out. Paths outside the server's root are never noted.
"""

from __future__ import annotations

import contextvars
import importlib
import logging
import os
import re
import stat
import sys
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from tornado.ioloop import PeriodicCallback

from .. import untrusted
from ..errors import RefusedFile

log = logging.getLogger(__name__)

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

_MCP_EXTENSION = "jupyter_mcp_server"
_SERVER_MCP_EXTENSION = "jupyter_server_mcp"
_CALL_KEY = "jupyter_recap"
"""Where the handler keeps its record of a call in the hooks' per-call context."""

# jupyter-mcp-server's tools by what they do to a notebook (1.3 and 2.2 name them alike).
_EDIT_TOOLS = frozenset(
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
_RUN_TOOLS = frozenset({"execute_cell", "insert_execute_code_cell", "execute_code"})
"""``execute_code`` runs code in the notebook's kernel without a cell: the kernel's state, which
the notebook's next run sees, changed all the same."""

# jupyter_server_mcp serves whatever tools are registered: the words of a tool's name say what it
# does. Reads (read, get, list, select, open…) are not changes.
_EDIT_WORDS = frozenset(
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
_RUN_WORDS = frozenset({"run", "execute", "exec"})
_PATH_ARGUMENTS = ("file_path", "notebook_path", "notebookPath", "path", "notebook", "file")
_CELL_LIST_ARGUMENTS = ("cell_ids", "cell_indices")
_GENERIC_CLIENTS = frozenset({"", "mcp", "fastmcp", "unknown"})
"""Client names the MCP libraries send by default: they say nothing of the agent."""
_PERSONA_HEADER = "x-jupyterai-persona-id"
_CHAT_HEADER = "x-jupyter-chat-id"

_ERROR_MARKS = ("Traceback (most recent call last)", "[ERROR:", "[TIMEOUT ERROR")
_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b.*")
"""The last line of a Python traceback as text (``ZeroDivisionError: division by zero``)."""

_CURRENT_CALL: contextvars.ContextVar[_Call | None] = contextvars.ContextVar(
    "jupyter_recap_mcp_call", default=None
)
"""The jupyter-mcp-server tool call running in this task: its runs are counted into it (the
hooks around a run are fired inside the tool's own call, in the same task)."""


@dataclass
class _Call:
    """One jupyter-mcp-server tool call, from ``before_tool_call`` to ``after_tool_call``."""

    tool: str
    path: str | None
    outer: _Call | None
    ran: int = 0
    failed: int = 0


@dataclass
class _Tail:
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

        The file is opened the one safe way (:mod:`...untrusted`): a span file replaced by a
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
class _Pending:
    """An ``execute`` span, until the tool call that made it ends."""

    kernel_id: str
    failed: bool


@dataclass
class _SpanState:
    """What the span file told so far of the process writing it."""

    active: str | None = None
    """The notebook its tools act on when a call names none (the one it last started using)."""
    kernels: OrderedDict[str, str] = field(default_factory=OrderedDict)
    """Kernel id → notebook path."""
    pending: _Pending | None = None


class McpAttribution:
    """Attributes the notebook changes made through MCP servers (see the module's docstring)."""

    def __init__(self, recap: Any) -> None:
        self.recap = recap
        self.hooked = False
        """Whether the handler is registered with jupyter-mcp-server's hooks (in this process)."""
        self._registry: Any = None
        self._handler: _HookHandler | None = None
        self._kernels: OrderedDict[str, str] = OrderedDict()
        """Kernel id → notebook path, as jupyter-mcp-server's calls named them."""
        self._used: dict[str, str] = {}
        """jupyter-mcp-server's notebook names → paths, from its ``use_notebook`` calls (for
        when its notebook manager cannot be read)."""
        self._active_name: str | None = None
        self.otel_file: str | None = None
        self._tail: _Tail | None = None
        self._writers: OrderedDict[str, _SpanState] = OrderedDict()
        """What the span file said of each process writing it."""
        self._server_mcp_enabled = False
        self._server_mcp: Any = None
        """The FastMCP server of jupyter_server_mcp the middleware was added to."""
        self._middleware: Any = None
        self._periodic: PeriodicCallback | None = None
        self._polling = False
        self.stopped = False

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Register with what runs in this server; tail the span file if one is named."""
        self.stopped = False
        for part in (self._start_hooks, self._start_otel, self._start_server_mcp):
            try:
                part()
            except Exception:  # each source is independent of the others
                log.debug("jupyter_recap: an MCP attribution source did not start", exc_info=True)
        if self._tail is not None or self._server_mcp_enabled:
            self._periodic = PeriodicCallback(self._poll, POLL_SECONDS * 1000)
            self._periodic.start()

    def stop(self) -> None:
        """Unregister and stop tailing. Safe to call twice."""
        self.stopped = True
        if self._periodic is not None:
            self._periodic.stop()
            self._periodic = None
        if self._registry is not None and self._handler is not None:
            try:
                self._registry.unregister(self._handler)
            except Exception:  # already gone (the registry was reset)
                log.debug("jupyter_recap: hook handler already unregistered", exc_info=True)
        self._registry = self._handler = None
        self.hooked = False
        self._detach_server_mcp()
        self._tail = None

    async def _poll(self) -> None:
        if self._polling or self.stopped:
            return
        self._polling = True
        try:
            if self._server_mcp_enabled:
                self._attach_server_mcp()
            if self._tail is not None:
                await self._read_spans()
        except Exception:  # the next poll tries again
            log.debug("jupyter_recap: MCP attribution poll failed", exc_info=True)
        finally:
            self._polling = False

    # -- shared ------------------------------------------------------------------------------

    @property
    def root(self) -> str:
        return os.path.abspath(os.path.expanduser(str(self.recap.serverapp.root_dir)))

    def notebook_path(self, raw: object) -> str | None:
        """``raw`` (relative to the root, or absolute) as the server names the notebook; None
        for what is not a notebook under the server's root."""
        if not isinstance(raw, str):
            return None
        raw = raw.strip()
        if not raw or len(raw) > MAX_PATH_CHARS or "\x00" in raw:
            return None
        if not raw.lower().endswith(".ipynb"):
            return None
        root = self.root
        full = os.path.normpath(raw if os.path.isabs(raw) else os.path.join(root, raw))
        relative = _inside(full, root)
        if relative is None and os.path.isabs(raw):
            # The root named through a symbolic link, or the other way round.
            relative = _inside(os.path.realpath(full), os.path.realpath(root))
        return None if relative is None else relative.replace(os.sep, "/")

    def touched(
        self, path: str, who: str, at: float | None = None, *, edited: int, ran: int, failed: int
    ) -> None:
        if self.stopped:
            return
        now = time.time()
        when = now if at is None or not 0 < at <= now + 60 else at
        self.recap.notebook_touched(
            path, who, when, edited=edited, ran=ran, failed=min(failed, ran) if ran else 0
        )

    def _remember_kernel(self, kernels: OrderedDict[str, str], kernel_id: str, path: str) -> None:
        kernels.pop(kernel_id, None)
        kernels[kernel_id] = path
        while len(kernels) > MAX_KERNELS:
            kernels.popitem(last=False)

    def _extension_enabled(self, name: str) -> bool:
        try:
            extension = self.recap.serverapp.extension_manager.extensions.get(name)
            return extension is not None and bool(extension.enabled)
        except AttributeError:
            return False

    # -- (a) jupyter-mcp-server's hooks, in this process ------------------------------------

    def _start_hooks(self) -> None:
        if not self._extension_enabled(_MCP_EXTENSION):
            return
        # Untyped, and loaded already by the extension that runs here.
        hooks: Any = importlib.import_module("jupyter_mcp_server.hooks")
        self._registry = hooks.HookRegistry.get_instance()
        self._handler = _HookHandler(self)
        self._registry.register(self._handler)
        self.hooked = True
        log.info("jupyter_recap: attributing jupyter-mcp-server's tool calls")

    def hook_event(self, event: str, data: dict[str, Any]) -> None:
        """One event of jupyter-mcp-server's hook registry (its keyword arguments)."""
        context = data.get("context")
        if not isinstance(context, dict):
            return
        if event == "before_tool_call":
            self._call_started(str(data.get("tool_name", "")), _arguments(data), context)
        elif event == "after_tool_call":
            self._call_ended(
                str(data.get("tool_name", "")),
                _arguments(data),
                data.get("result"),
                data.get("error"),
                context,
            )
        elif event == "after_execute":
            failed = data.get("error") is not None or _outputs_failed(data.get("outputs"))
            call = _CURRENT_CALL.get()
            if call is not None:
                call.ran += 1
                call.failed += int(failed)
                return
            # A run outside any tool call: its kernel's notebook, if a call named it.
            kernel_id = data.get("kernel_id")
            path = self._kernels.get(kernel_id) if isinstance(kernel_id, str) else None
            if path is not None:
                self.touched(path, JUPYTER_MCP, edited=0, ran=1, failed=int(failed))

    def _call_started(self, tool: str, arguments: dict[str, Any], context: dict[str, Any]) -> None:
        call = _Call(tool, self._call_path(tool, arguments), _CURRENT_CALL.get())
        context[_CALL_KEY] = call
        _CURRENT_CALL.set(call)

    def _call_path(self, tool: str, arguments: dict[str, Any]) -> str | None:
        if tool == "use_notebook":
            return self.notebook_path(arguments.get("notebook_path"))
        name = arguments.get("notebook_name")
        name = name if isinstance(name, str) and name else None
        manager = _notebook_manager()
        if manager is not None:
            try:
                name = name or manager.get_current_notebook()
                if not name:
                    return None
                path = self.notebook_path(manager.get_notebook_path(name))
                kernel_id = manager.get_kernel_id(name)
                if path is not None and isinstance(kernel_id, str):
                    self._remember_kernel(self._kernels, kernel_id, path)
                return path
            except Exception:  # another version's manager: fall back to what the calls said
                log.debug("jupyter_recap: jupyter-mcp-server's notebooks unreadable", exc_info=True)
        name = name or self._active_name
        return self._used.get(name) if name else None

    def _call_ended(
        self,
        tool: str,
        arguments: dict[str, Any],
        result: object,
        error: object,
        context: dict[str, Any],
    ) -> None:
        call = context.get(_CALL_KEY)
        if not isinstance(call, _Call):
            return
        if _CURRENT_CALL.get() is call:
            _CURRENT_CALL.set(call.outer)
        if tool == "use_notebook" and error is None:
            name = arguments.get("notebook_name")
            if isinstance(name, str) and call.path is not None and len(self._used) < 256:
                self._used[name] = call.path
                self._active_name = name
        if call.path is None:
            return
        edited = 0
        if error is None:
            created = tool == "use_notebook" and arguments.get("mode") == "create"
            if tool == "delete_cell":
                edited = _count(arguments.get("cell_indices"))
            elif tool in _EDIT_TOOLS or created:
                edited = 1
        ran, failed = call.ran, call.failed
        if tool in _RUN_TOOLS and not ran and error is None and result:
            # A version that fires no execution hooks: the tool's outputs say how it went.
            ran, failed = 1, int(_outputs_failed(result))
        if edited or ran:
            self.touched(call.path, JUPYTER_MCP, edited=edited, ran=ran, failed=failed)

    # -- (b) jupyter-mcp-server's span file, written by its own process ---------------------

    def _start_otel(self) -> None:
        configured = str(getattr(self.recap, "mcp_otel_file", "") or "")
        name = configured or os.environ.get(OTEL_ENV, "")
        if not name.strip():
            return
        path = os.path.abspath(os.path.expanduser(name.strip()))
        if self.hooked and path in self._in_process_span_files():
            # The extension in this process writes it: its calls are heard through the hooks.
            log.info("jupyter_recap: %s is this server's own jupyter-mcp-server's", path)
            return
        self.otel_file = path
        self._tail = _Tail(path)
        self._tail.start_at_end()
        log.info("jupyter_recap: attributing the jupyter-mcp-server spans written to %s", path)

    def _in_process_span_files(self) -> set[str]:
        files = {os.environ.get(OTEL_ENV, "")}
        try:
            apps = self.recap.serverapp.extension_manager.extension_apps.get(_MCP_EXTENSION, ())
            files |= {str(getattr(app, "otel_file", "") or "") for app in apps}
        except AttributeError:
            pass
        return {os.path.abspath(os.path.expanduser(f)) for f in files if f.strip()}

    async def _read_spans(self) -> None:
        tail = self._tail
        if tail is None:
            return
        for line in tail.read_lines():
            try:
                span = untrusted.parse_json(line, shown="a span")
            except RefusedFile:  # not JSON, or nested too deep
                continue
            if isinstance(span, dict):
                await self.span(span)

    async def span(self, span: dict[str, Any]) -> None:
        """One span of jupyter-mcp-server's OpenTelemetry exporter (its JSON)."""
        name = span.get("name")
        attributes = span.get("attributes")
        if not isinstance(name, str) or not isinstance(attributes, dict):
            return
        state = self._writer(span)
        at = _span_time(span.get("end_time"))
        error = bool(attributes.get("error"))
        if name == "execute":
            kernel_id = attributes.get("kernel.id")
            state.pending = _Pending(kernel_id if isinstance(kernel_id, str) else "", error)
        elif name == "kernel_lifecycle":
            await self._kernel_span(state, attributes)
        elif name.startswith("tool_call:"):
            tool = name[len("tool_call:") :]
            pending, state.pending = state.pending, None
            summary = attributes.get("result.summary")
            failed = error or (isinstance(summary, str) and _text_failed(summary))
            ran = failed_runs = 0
            path = state.active
            if tool in _RUN_TOOLS and (pending is not None or not error):
                ran = 1
                failed_runs = int(failed or (pending is not None and pending.failed))
                if pending is not None:
                    path = state.kernels.get(pending.kernel_id) or await self._session_path(
                        pending.kernel_id
                    )
                    path = path or state.active
            edited = int(tool in _EDIT_TOOLS and not error)
            if path is not None and (edited or ran):
                self.touched(path, JUPYTER_MCP, at, edited=edited, ran=ran, failed=failed_runs)

    def _writer(self, span: dict[str, Any]) -> _SpanState:
        """The state of the process that wrote ``span`` (one file may hold several's)."""
        resource = span.get("resource")
        attributes = resource.get("attributes") if isinstance(resource, dict) else None
        writer = attributes.get("service.instance.id") if isinstance(attributes, dict) else None
        key = writer if isinstance(writer, str) else ""
        state = self._writers.pop(key, None) or _SpanState()
        self._writers[key] = state
        while len(self._writers) > MAX_WRITERS:
            self._writers.popitem(last=False)
        return state

    async def _kernel_span(self, state: _SpanState, attributes: dict[str, Any]) -> None:
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
            self._remember_kernel(state.kernels, kernel_id, path)

    def _named(self, attributes: dict[str, Any]) -> str | None:
        """The notebook the agent's name for it names, when that is a notebook here."""
        name = attributes.get("kernel.name")
        if not isinstance(name, str) or not name.strip():
            return None
        name = name.strip()
        candidates = (name,) if name.lower().endswith(".ipynb") else (f"{name}.ipynb",)
        for candidate in candidates:
            path = self.notebook_path(candidate)
            if path is not None and os.path.isfile(os.path.join(self.root, path)):
                return path
        return None

    async def _session_path(self, kernel_id: str) -> str | None:
        """The notebook of the session in this server that runs ``kernel_id``."""
        if not kernel_id:
            return None
        manager = getattr(self.recap.serverapp, "session_manager", None)
        if manager is None:
            return None
        try:
            sessions = await manager.list_sessions()
        except Exception:
            log.debug("jupyter_recap: sessions unreadable", exc_info=True)
            return None
        for session in sessions:
            kernel = session.get("kernel") if isinstance(session, dict) else None
            if isinstance(kernel, dict) and kernel.get("id") == kernel_id:
                return self.notebook_path(session.get("path"))
        return None

    # -- (c) jupyter_server_mcp's tools ------------------------------------------------------

    def _start_server_mcp(self) -> None:
        self._server_mcp_enabled = self._extension_enabled(_SERVER_MCP_EXTENSION)
        if self._server_mcp_enabled:
            self._attach_server_mcp()

    def _attach_server_mcp(self) -> None:
        """Add the middleware to jupyter_server_mcp's FastMCP server, once there is one (the
        extension makes it when the server starts its extensions, after ours loaded), and to
        a new one if the extension made another."""
        mcp = _server_mcp_fastmcp(self.recap.serverapp)
        if mcp is None or mcp is self._server_mcp:
            return
        self._detach_server_mcp()
        middleware = _tool_call_middleware(self)
        mcp.add_middleware(middleware)
        self._server_mcp, self._middleware = mcp, middleware
        log.info("jupyter_recap: attributing the tool calls of jupyter_server_mcp")

    def _detach_server_mcp(self) -> None:
        mcp, middleware = self._server_mcp, self._middleware
        self._server_mcp = self._middleware = None
        chain = getattr(mcp, "middleware", None)
        if isinstance(chain, list) and middleware in chain:
            chain.remove(middleware)

    def tool_call_started(self, context: Any) -> _ToolCall | None:
        """What a jupyter_server_mcp tool call is about to do, read while its request is
        current (its headers and session); None when it names no notebook or changes none."""
        try:
            message = context.message
            tool = str(getattr(message, "name", "") or "")
            arguments = getattr(message, "arguments", None) or {}
            if not isinstance(arguments, dict):
                return None
            words = set(re.split(r"[^a-z0-9]+", tool.lower()))
            runs = bool(words & _RUN_WORDS)
            edits = bool(words & _EDIT_WORDS)
            if not runs and not edits:
                return None
            path = next(
                (p for key in _PATH_ARGUMENTS if (p := self.notebook_path(arguments.get(key)))),
                None,
            )
            if path is None:
                return None
            edited = 0
            if edits and not runs:
                lists = [arguments.get(key) for key in _CELL_LIST_ARGUMENTS]
                edited = max([_count(cells) for cells in lists if isinstance(cells, list)] or [1])
            # "run all" runs an unknown number of cells: the notebook is attributed, uncounted.
            ran = int(runs and "all" not in words)
            return _ToolCall(path, self._client_name(context), edited, ran, runs)
        except Exception:
            log.debug("jupyter_recap: a jupyter_server_mcp tool call unread", exc_info=True)
            return None

    def tool_call_ended(self, call: _ToolCall | None, result: object, raised: bool) -> None:
        if call is None:
            return
        try:
            if raised and not call.runs:
                return  # an edit that raised changed nothing we can count on
            failed = int(call.ran > 0 and (raised or _result_failed(result)))
            self.touched(call.path, call.who, edited=call.edited, ran=call.ran, failed=failed)
        except Exception:
            log.debug("jupyter_recap: a jupyter_server_mcp tool call unnoted", exc_info=True)

    def _client_name(self, context: Any) -> str:
        """Who made the call: Jupyter AI's persona (its identity headers), else the MCP
        client's own name for itself, else nobody in particular."""
        try:
            from fastmcp.server.dependencies import get_http_headers

            headers = get_http_headers()
        except Exception:  # never raises, says FastMCP; an older one might
            log.debug("jupyter_recap: no request headers", exc_info=True)
            headers = {}
        persona_id = headers.get(_PERSONA_HEADER, "")
        if persona_id:
            return self._persona_name(persona_id, headers.get(_CHAT_HEADER, ""))
        try:
            params = context.fastmcp_context.session.client_params
            info = getattr(params, "clientInfo", None)
            name = str(getattr(info, "title", None) or getattr(info, "name", None) or "")
        except Exception:  # no session (a call from inside the server)
            log.debug("jupyter_recap: no MCP session", exc_info=True)
            name = ""
        return name if name.strip().lower() not in _GENERIC_CLIENTS else SERVER_MCP_CLIENT

    def _persona_name(self, persona_id: str, chat_id: str) -> str:
        """``Claude via churn.chat``: the persona's name and its chat, as the server has them;
        the persona id's class name when the persona manager does not know it."""
        fallback = persona_id.rsplit("::", 1)[-1] or SERVER_MCP_CLIENT
        try:
            settings = self.recap.serverapp.web_app.settings
            manager = settings.get("jupyter-ai", {}).get("persona-managers", {}).get(chat_id)
            persona = manager.personas.get(persona_id) if manager is not None else None
            if persona is None:
                return fallback
            name = str(persona.name)
            chat = os.path.basename(str(manager.get_chat_path(relative=True)))
            return f"{name} via {chat}" if chat else name
        except Exception:
            log.debug("jupyter_recap: persona %s unknown", persona_id, exc_info=True)
            return fallback


@dataclass(frozen=True)
class _ToolCall:
    """A jupyter_server_mcp tool call that names a notebook, until it returns."""

    path: str
    who: str
    edited: int
    ran: int
    runs: bool


class _HookHandler:
    """The handler jupyter-mcp-server's ``HookRegistry`` calls (its ``HookHandler`` protocol)."""

    propagate_errors = False
    """Its registry then swallows what escapes; nothing should."""

    def __init__(self, owner: McpAttribution) -> None:
        self.owner = owner

    async def on_event(self, event: Any, **kwargs: Any) -> None:
        try:
            self.owner.hook_event(str(getattr(event, "value", event)), kwargs)
        except Exception:
            log.debug("jupyter_recap: a jupyter-mcp-server hook event unread", exc_info=True)


def _tool_call_middleware(owner: McpAttribution) -> Any:
    """A FastMCP middleware that tells ``owner`` of every tool call (FastMCP is imported only
    when jupyter_server_mcp runs)."""
    from fastmcp.server.middleware import Middleware

    class RecapToolCalls(Middleware):
        async def on_call_tool(
            self, context: Any, call_next: Callable[[Any], Awaitable[Any]]
        ) -> Any:
            call = owner.tool_call_started(context)
            try:
                result = await call_next(context)
            except Exception:
                owner.tool_call_ended(call, None, raised=True)
                raise
            owner.tool_call_ended(call, result, raised=False)
            return result

    return RecapToolCalls()


def _server_mcp_fastmcp(serverapp: Any) -> Any:
    """jupyter_server_mcp's FastMCP server in this process, once it has made one."""
    try:
        apps = serverapp.extension_manager.extension_apps.get(_SERVER_MCP_EXTENSION, ())
    except AttributeError:
        return None
    for app in apps:
        instance = getattr(app, "mcp_server_instance", None)
        mcp = getattr(instance, "mcp", None)
        if mcp is not None and callable(getattr(mcp, "add_middleware", None)):
            return mcp
    return None


def _notebook_manager() -> Any:
    """jupyter-mcp-server's notebook manager (which notebook each name is, which is active),
    when its server module is loaded."""
    module = sys.modules.get("jupyter_mcp_server.server")
    return getattr(module, "notebook_manager", None)


def _arguments(data: dict[str, Any]) -> dict[str, Any]:
    arguments = data.get("arguments")
    return arguments if isinstance(arguments, dict) else {}


def _count(value: object) -> int:
    """Cells a list argument names (one when it is not a list)."""
    return max(1, min(len(value), 10_000)) if isinstance(value, list) else 1


def _inside(full: str, root: str) -> str | None:
    try:
        relative = os.path.relpath(full, root)
    except ValueError:  # another drive
        return None
    if relative == os.curdir or relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return None
    return relative


def _text_failed(text: str) -> bool:
    if any(mark in text for mark in _ERROR_MARKS):
        return True
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return bool(lines) and _ERROR_LINE.match(lines[-1].strip()) is not None


def _outputs_failed(outputs: object) -> bool:
    """Whether a run's outputs (jupyter-mcp-server's text of each) hold an error."""
    if isinstance(outputs, str):
        return _text_failed(outputs)
    if not isinstance(outputs, (list, tuple)):
        return False
    for output in list(outputs)[:256]:
        if isinstance(output, dict):
            if output.get("output_type") == "error":
                return True
        elif isinstance(output, str) and _text_failed(output):
            return True
    return False


def _result_failed(result: object) -> bool:
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
        return any(isinstance(text, str) and _text_failed(text[:65536]) for text in texts)
    return False


def _span_time(value: object) -> float | None:
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
