"""jupyter_server_mcp: the tool calls of the MCP server Jupyter AI runs inside this server.

Every persona's notebook tools and every CLI agent pointed at its port pass there. A FastMCP
middleware, added to its server once it has started (and again to a new one if the extension
makes another; checked every :data:`~jupyter_recap.outside.mcp.POLL_SECONDS`), notes each tool
call whose arguments name a notebook, by what the tool's name says it does
(:func:`~jupyter_recap.outside.mcp.plan_tool_call`). Who: the persona behind Jupyter AI's
identity headers (``Claude via churn.chat``), else the name the MCP client gave when it
connected, else "an MCP client via jupyter_server_mcp". Nothing raises into the MCP server.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from tornado.ioloop import PeriodicCallback

from ...outside.mcp import (
    CHAT_HEADER,
    GENERIC_CLIENTS,
    PERSONA_HEADER,
    POLL_SECONDS,
    SERVER_MCP_CLIENT,
    plan_tool_call,
    result_failed,
)
from ...outside.source import API_VERSION, OutsideSink, SourceContext

log = logging.getLogger(__name__)

EXTENSION = "jupyter_server_mcp"


@dataclass(frozen=True)
class ToolCall:
    """A jupyter_server_mcp tool call that names a notebook, until it returns."""

    path: str
    who: str
    edited: int
    ran: int
    runs: bool


class ServerMcpSource:
    """The outside source of jupyter_server_mcp's tool calls."""

    name = "server-mcp"
    line_precedence = 0
    api_version = API_VERSION

    def __init__(self, sink: OutsideSink) -> None:
        self.sink = sink
        self.attached: Any = None
        """The FastMCP server the middleware was added to."""
        self._middleware: Any = None
        self._periodic: PeriodicCallback | None = None
        self.stopped = False

    def start(self) -> None:
        self.stopped = False
        if not self.sink.extension_enabled(EXTENSION):
            return
        self.attach()
        self._periodic = PeriodicCallback(self._poll, POLL_SECONDS * 1000)
        self._periodic.start()

    def stop(self) -> None:
        self.stopped = True
        if self._periodic is not None:
            self._periodic.stop()
            self._periodic = None
        self._detach()

    def _poll(self) -> None:
        if self.stopped:
            return
        try:
            self.attach()
        except Exception:  # the next poll tries again
            log.debug("jupyter_recap: jupyter_server_mcp not reachable", exc_info=True)

    def attach(self) -> None:
        """Add the middleware to jupyter_server_mcp's FastMCP server, once there is one (the
        extension makes it when the server starts its extensions, after ours loaded), and to
        a new one if the extension made another."""
        mcp = self._fastmcp()
        if mcp is None or mcp is self.attached:
            return
        self._detach()
        middleware = _tool_call_middleware(self)
        mcp.add_middleware(middleware)
        self.attached, self._middleware = mcp, middleware
        log.info("jupyter_recap: attributing the tool calls of jupyter_server_mcp")

    def _detach(self) -> None:
        mcp, middleware = self.attached, self._middleware
        self.attached = self._middleware = None
        chain = getattr(mcp, "middleware", None)
        if isinstance(chain, list) and middleware in chain:
            chain.remove(middleware)

    def _fastmcp(self) -> Any:
        """jupyter_server_mcp's FastMCP server in this process, once it has made one."""
        for app in self.sink.extension_apps(EXTENSION):
            instance = getattr(app, "mcp_server_instance", None)
            mcp = getattr(instance, "mcp", None)
            if mcp is not None and callable(getattr(mcp, "add_middleware", None)):
                return mcp
        return None

    def tool_call_started(self, context: Any) -> ToolCall | None:
        """What a tool call is about to do, read while its request is current (its headers and
        session); None when it names no notebook or changes none."""
        try:
            message = context.message
            tool = str(getattr(message, "name", "") or "")
            arguments = getattr(message, "arguments", None) or {}
            if not isinstance(arguments, dict):
                return None
            plan = plan_tool_call(tool, arguments, self.sink.root_dir)
            if plan is None:
                return None
            who = self._client_name(context)
            return ToolCall(plan.path, who, plan.edited, plan.ran, plan.runs)
        except Exception:
            log.debug("jupyter_recap: a jupyter_server_mcp tool call unread", exc_info=True)
            return None

    def tool_call_ended(self, call: ToolCall | None, result: object, raised: bool) -> None:
        if call is None or self.stopped:
            return
        try:
            if raised and not call.runs:
                return  # an edit that raised changed nothing we can count on
            failed = int(call.ran > 0 and (raised or result_failed(result)))
            self.sink.touched(call.path, call.who, edited=call.edited, ran=call.ran, failed=failed)
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
        persona_id = headers.get(PERSONA_HEADER, "")
        if persona_id:
            return self._persona_name(persona_id, headers.get(CHAT_HEADER, ""))
        try:
            params = context.fastmcp_context.session.client_params
            info = getattr(params, "clientInfo", None)
            name = str(getattr(info, "title", None) or getattr(info, "name", None) or "")
        except Exception:  # no session (a call from inside the server)
            log.debug("jupyter_recap: no MCP session", exc_info=True)
            name = ""
        return name if name.strip().lower() not in GENERIC_CLIENTS else SERVER_MCP_CLIENT

    def _persona_name(self, persona_id: str, chat_id: str) -> str:
        """``Claude via churn.chat``: the persona's name and its chat, as the server has them;
        the persona id's class name when the persona manager does not know it."""
        fallback = persona_id.rsplit("::", 1)[-1] or SERVER_MCP_CLIENT
        try:
            jupyter_ai: Any = self.sink.server_setting("jupyter-ai") or {}
            manager = jupyter_ai.get("persona-managers", {}).get(chat_id)
            persona = manager.personas.get(persona_id) if manager is not None else None
            if persona is None:
                return fallback
            name = str(persona.name)
            chat = os.path.basename(str(manager.get_chat_path(relative=True)))
            return f"{name} via {chat}" if chat else name
        except Exception:
            log.debug("jupyter_recap: persona %s unknown", persona_id, exc_info=True)
            return fallback


def _tool_call_middleware(owner: ServerMcpSource) -> Any:
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


def make_source(context: SourceContext) -> ServerMcpSource:
    """The entry point's factory."""
    return ServerMcpSource(context.sink)
