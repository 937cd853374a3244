"""The server adapters of the outside sources, and the one list of them the server runs.

Each source hears one kind of agent outside the person's kernel and talks to the server only
through its :class:`~.sink.ServerSink` (the contract: :mod:`jupyter_recap.outside.source`):

- ``hooks`` (:mod:`.hooks`): CLI agents' hook events read from the hook spool;
- ``oneshot`` (:mod:`.oneshot`): the tool calls of the personas a kernel's ``%%ai`` cell asks;
- ``mcp-hooks``, ``mcp-spans``, ``server-mcp`` (:mod:`.mcp_hooks`, :mod:`.mcp_spans`,
  :mod:`.mcp_tools`): notebook changes made through MCP servers;
- ``chats`` and ``changes`` (``server/chats.py``, ``server/changes.py``): Jupyter AI's chats and
  what changed in a notebook while the person was away.

:class:`SourceList` starts them in order (one that raises is turned off with one warning and
the others go on), stops them, and merges their lines of what happened in notebooks by each
source's declared precedence. A new source goes into :func:`make_sources`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Protocol

from ...outside.source import API_VERSION, OutsideSource, merge_lines
from ...wire import OutsideActivity
from .hooks import HookIntake
from .mcp_hooks import McpHookSource
from .mcp_spans import McpSpanSource
from .mcp_tools import ServerMcpSource
from .oneshot import OneShotTurns
from .sink import ServerParts, ServerSink

log = logging.getLogger(__name__)


class SourceList:
    """The outside sources of one server, in start order, by name."""

    def __init__(self, sources: list[OutsideSource]) -> None:
        self._sources = {source.name: source for source in sources}
        self._lines: dict[str, dict[str, OutsideActivity]] = {}
        self.running: list[str] = []
        """The names of the sources started and not failed."""

    def __iter__(self) -> Iterator[OutsideSource]:
        return iter(self._sources.values())

    def __getitem__(self, name: str) -> OutsideSource:
        return self._sources[name]

    def start(self) -> None:
        """Start every source; one that is for another API version or raises stays off."""
        for source in self:
            if source.api_version != API_VERSION:
                log.warning(
                    "jupyter_recap: outside source %s is for API version %s, not %s: not started",
                    source.name,
                    source.api_version,
                    API_VERSION,
                )
                continue
            try:
                source.start()
            except Exception:  # an extra: the rest of the extension works without it
                log.warning(
                    "jupyter_recap: outside source %s did not start", source.name, exc_info=True
                )
                continue
            self.running.append(source.name)

    def stop(self) -> None:
        for source in self:
            try:
                source.stop()
            except Exception:  # the next one is stopped all the same
                log.warning(
                    "jupyter_recap: outside source %s did not stop", source.name, exc_info=True
                )
        self.running.clear()

    def publish(self, name: str, lines: dict[str, OutsideActivity]) -> dict[str, OutsideActivity]:
        """Source ``name``'s lines replace its earlier ones; returns every source's lines
        merged, one per notebook, the higher precedence winning."""
        self._lines[name] = lines
        precedence = {source.name: source.line_precedence for source in self}
        return merge_lines(self._lines, precedence)


class Watcher(Protocol):
    @property
    def persona_cells(self) -> dict[str, tuple[str, float]]: ...


class SourceHost(ServerParts, Protocol):
    """What :func:`make_sources` reads of the server (``RecapServer``): its parts, the
    settings of its sources, and the two sources it drives itself."""

    @property
    def watcher(self) -> Watcher: ...
    @property
    def hook_silence_seconds(self) -> float: ...
    @property
    def mcp_otel_file(self) -> str: ...
    @property
    def changes(self) -> OutsideSource: ...
    @property
    def chats(self) -> OutsideSource: ...


def make_sources(server: SourceHost) -> list[OutsideSource]:
    """The project's own outside sources, each with its sink, in start order."""
    hooks = McpHookSource(ServerSink(server, McpHookSource.name))
    return [
        OneShotTurns(ServerSink(server, OneShotTurns.name), lambda: server.watcher.persona_cells),
        HookIntake(ServerSink(server, HookIntake.name), server.hook_silence_seconds),
        hooks,
        McpSpanSource(
            ServerSink(server, McpSpanSource.name), server.mcp_otel_file, lambda: hooks.hooked
        ),
        ServerMcpSource(ServerSink(server, ServerMcpSource.name)),
        server.changes,
        server.chats,
    ]
