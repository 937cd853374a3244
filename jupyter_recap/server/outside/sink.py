"""The server's side of the outside-source contract: one :class:`ServerSink` per source.

A source holds its sink, never the server: the sink forwards exactly the calls of
:class:`~jupyter_recap.outside.source.OutsideSink` to the parts of the server that own them (the
touches, the focus hub, the agents board, the drafts pool, the session manager).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from ...focus.board import AgentBoard
from ...focus.hub import FocusHub
from ...wire import OutsideActivity, OutsideEntry

log = logging.getLogger(__name__)

_T = TypeVar("_T")


class EventBus(Protocol):
    """jupyter_server's event logger (jupyter_events), as the sources listen to it."""

    def add_listener(
        self,
        *,
        schema_id: str | None = None,
        listener: Callable[..., Awaitable[None]] | None = None,
    ) -> None: ...

    def remove_listener(
        self,
        *,
        schema_id: str | None = None,
        listener: Callable[..., Awaitable[None]] | None = None,
    ) -> None: ...


class ServerParts(Protocol):
    """The parts of the server (``RecapServer``) a sink forwards to."""

    serverapp: Any
    hub: FocusHub
    board: AgentBoard

    def notebook_touched(
        self,
        path: str,
        who: str,
        at: float | None = None,
        *,
        edited: int = 0,
        ran: int = 0,
        failed: int = 0,
    ) -> None: ...

    def publish_outside(self, source: str, lines: dict[str, OutsideActivity]) -> None: ...

    async def in_pool(self, function: Callable[[], _T]) -> _T: ...


class ServerSink:
    """What one outside source, ``name``, may do in ``server`` (an
    :class:`~jupyter_recap.outside.source.OutsideSink`)."""

    def __init__(self, server: ServerParts, name: str) -> None:
        self._server = server
        self.name = name

    @property
    def root_dir(self) -> str:
        return os.path.abspath(os.path.expanduser(str(self._server.serverapp.root_dir)))

    def touched(
        self,
        path: str,
        who: str,
        at: float | None = None,
        *,
        edited: int = 0,
        ran: int = 0,
        failed: int = 0,
    ) -> None:
        now = time.time()
        # A time from the future (a clock elsewhere, a forged span) counts as now.
        when = now if at is None or not 0 < at <= now + 60 else at
        failed = min(failed, ran) if ran else 0
        self._server.notebook_touched(path, who, when, edited=edited, ran=ran, failed=failed)

    def add_entries(
        self, kernel_id: str, entries: list[OutsideEntry], *, latest_cell: bool = False
    ) -> None:
        self._server.hub.outside(kernel_id, entries, latest_cell=latest_cell)

    def publish_lines(self, lines: Mapping[str, OutsideActivity]) -> None:
        self._server.publish_outside(self.name, dict(lines))

    def kernels_of(self, path: str) -> list[str]:
        # The notebook rows of the agents panel: a kernel there has jupyter_recap loaded and
        # reports to this server.
        return [
            row["kernel_id"]
            for row in self._server.board.rows()
            if row["kind"] == "notebook" and row["kernel_id"] and row["path"] == path
        ]

    async def notebook_of(self, kernel_id: str) -> str | None:
        manager = getattr(self._server.serverapp, "session_manager", None)
        if manager is None or not kernel_id:
            return None
        try:
            sessions = await manager.list_sessions()
        except Exception:
            log.debug("jupyter_recap: sessions unreadable", exc_info=True)
            return None
        for session in sessions:
            kernel = session.get("kernel") if isinstance(session, dict) else None
            if isinstance(kernel, dict) and kernel.get("id") == kernel_id:
                path = session.get("path")
                return path if isinstance(path, str) else None
        return None

    async def in_pool(self, function: Callable[[], _T]) -> _T:
        return await self._server.in_pool(function)

    def extension_enabled(self, name: str) -> bool:
        try:
            extension = self._server.serverapp.extension_manager.extensions.get(name)
            return extension is not None and bool(extension.enabled)
        except AttributeError:  # a server without extensions (a test's stand-in)
            return False

    def extension_apps(self, name: str) -> Sequence[object]:
        if not self.extension_enabled(name):
            return ()
        manager: Any = self._server.serverapp.extension_manager
        return tuple(manager.extension_apps.get(name, ()))

    def server_setting(self, key: str) -> object:
        try:
            settings: Any = self._server.serverapp.web_app.settings
            return settings.get(key)
        except AttributeError:
            return None
