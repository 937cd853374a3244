"""jupyter-mcp-server as an extension of this server: its tool calls heard through its hooks.

Its tools report every call to a hook registry in this process (``HookRegistry``:
``before_tool_call`` / ``after_tool_call`` around each tool, ``before_execute`` /
``after_execute`` around each run in a kernel). The handler registered there learns the notebook
of each call (the tool's ``notebook_name``, or the notebook the server has active, read from its
notebook manager) and notes the cells the call edited, inserted or deleted and the runs it made,
a run whose outputs hold an error as failed. Named "jupyter-mcp-server": the extension does not
keep which MCP client called. Nothing raises into jupyter-mcp-server: what cannot be read is
logged at debug level and left out.
"""

from __future__ import annotations

import contextvars
import importlib
import logging
import sys
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ...outside.mcp import (
    EDIT_TOOLS,
    JUPYTER_MCP,
    RUN_TOOLS,
    count_cells,
    notebook_path,
    outputs_failed,
    remember_kernel,
)
from ...outside.source import API_VERSION, OutsideSink, SourceContext

log = logging.getLogger(__name__)

EXTENSION = "jupyter_mcp_server"
_CALL_KEY = "jupyter_recap"
"""Where the handler keeps its record of a call in the hooks' per-call context."""


@dataclass
class _Call:
    """One jupyter-mcp-server tool call, from ``before_tool_call`` to ``after_tool_call``."""

    tool: str
    path: str | None
    outer: _Call | None
    ran: int = 0
    failed: int = 0


_CURRENT_CALL: contextvars.ContextVar[_Call | None] = contextvars.ContextVar(
    "jupyter_recap_mcp_call", default=None
)
"""The tool call running in this task: its runs are counted into it (the hooks around a run are
fired inside the tool's own call, in the same task)."""


class McpHookSource:
    """The outside source of jupyter-mcp-server's in-process tool calls."""

    name = "mcp-hooks"
    line_precedence = 0
    api_version = API_VERSION

    def __init__(self, sink: OutsideSink) -> None:
        self.sink = sink
        self.hooked = False
        """Whether the handler is registered with jupyter-mcp-server's hooks."""
        self._registry: Any = None
        self._handler: _HookHandler | None = None
        self._kernels: OrderedDict[str, str] = OrderedDict()
        """Kernel id → notebook path, as the calls named them."""
        self._used: dict[str, str] = {}
        """jupyter-mcp-server's notebook names → paths, from its ``use_notebook`` calls (for
        when its notebook manager cannot be read)."""
        self._active_name: str | None = None
        self.stopped = False

    def start(self) -> None:
        self.stopped = False
        if not self.sink.extension_enabled(EXTENSION):
            return
        # Untyped, and loaded already by the extension that runs here.
        hooks: Any = importlib.import_module("jupyter_mcp_server.hooks")
        self._registry = hooks.HookRegistry.get_instance()
        self._handler = _HookHandler(self)
        self._registry.register(self._handler)
        self.hooked = True
        log.info("jupyter_recap: attributing jupyter-mcp-server's tool calls")

    def stop(self) -> None:
        self.stopped = True
        if self._registry is not None and self._handler is not None:
            try:
                self._registry.unregister(self._handler)
            except Exception:  # already gone (the registry was reset)
                log.debug("jupyter_recap: hook handler already unregistered", exc_info=True)
        self._registry = self._handler = None
        self.hooked = False

    def hook_event(self, event: str, data: dict[str, Any]) -> None:
        """One event of jupyter-mcp-server's hook registry (its keyword arguments)."""
        context = data.get("context")
        if not isinstance(context, dict):
            return
        tool = str(data.get("tool_name", ""))
        if event == "before_tool_call":
            self._call_started(tool, _arguments(data), context)
        elif event == "after_tool_call":
            self._call_ended(tool, _arguments(data), data.get("result"), data.get("error"), context)
        elif event == "after_execute":
            failed = data.get("error") is not None or outputs_failed(data.get("outputs"))
            call = _CURRENT_CALL.get()
            if call is not None:
                call.ran += 1
                call.failed += int(failed)
                return
            # A run outside any tool call: its kernel's notebook, if a call named it.
            kernel_id = data.get("kernel_id")
            path = self._kernels.get(kernel_id) if isinstance(kernel_id, str) else None
            if path is not None:
                self._touched(path, edited=0, ran=1, failed=int(failed))

    def _touched(self, path: str, *, edited: int, ran: int, failed: int) -> None:
        if not self.stopped:
            self.sink.touched(path, JUPYTER_MCP, edited=edited, ran=ran, failed=failed)

    def _call_started(self, tool: str, arguments: dict[str, Any], context: dict[str, Any]) -> None:
        call = _Call(tool, self._call_path(tool, arguments), _CURRENT_CALL.get())
        context[_CALL_KEY] = call
        _CURRENT_CALL.set(call)

    def _call_path(self, tool: str, arguments: dict[str, Any]) -> str | None:
        root = self.sink.root_dir
        if tool == "use_notebook":
            return notebook_path(root, arguments.get("notebook_path"))
        name = arguments.get("notebook_name")
        name = name if isinstance(name, str) and name else None
        manager = _notebook_manager()
        if manager is not None:
            try:
                name = name or manager.get_current_notebook()
                if not name:
                    return None
                path = notebook_path(root, manager.get_notebook_path(name))
                kernel_id = manager.get_kernel_id(name)
                if path is not None and isinstance(kernel_id, str):
                    remember_kernel(self._kernels, kernel_id, path)
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
                edited = count_cells(arguments.get("cell_indices"))
            elif tool in EDIT_TOOLS or created:
                edited = 1
        ran, failed = call.ran, call.failed
        if tool in RUN_TOOLS and not ran and error is None and result:
            # A version that fires no execution hooks: the tool's outputs say how it went.
            ran, failed = 1, int(outputs_failed(result))
        if edited or ran:
            self._touched(call.path, edited=edited, ran=ran, failed=failed)


class _HookHandler:
    """The handler jupyter-mcp-server's ``HookRegistry`` calls (its ``HookHandler`` protocol)."""

    propagate_errors = False
    """Its registry then swallows what escapes; nothing should."""

    def __init__(self, owner: McpHookSource) -> None:
        self.owner = owner

    async def on_event(self, event: Any, **kwargs: Any) -> None:
        try:
            self.owner.hook_event(str(getattr(event, "value", event)), kwargs)
        except Exception:
            log.debug("jupyter_recap: a jupyter-mcp-server hook event unread", exc_info=True)


def _notebook_manager() -> Any:
    """jupyter-mcp-server's notebook manager (which notebook each name is, which is active),
    when its server module is loaded."""
    module = sys.modules.get("jupyter_mcp_server.server")
    return getattr(module, "notebook_manager", None)


def _arguments(data: dict[str, Any]) -> dict[str, Any]:
    arguments = data.get("arguments")
    return arguments if isinstance(arguments, dict) else {}


def make_source(context: SourceContext) -> McpHookSource:
    """The entry point's factory."""
    return McpHookSource(context.sink)
