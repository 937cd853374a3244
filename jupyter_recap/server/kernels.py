"""The routes of one kernel, ``kernels/{id}…`` (docs/focus-protocol.md): ``GET kernels/{id}``
(its focus, banner and execution state, for a page), and the three a kernel calls with its proof
of identity (:class:`~.handlers.KernelRouteHandler`): ``PUT kernels/{id}/banner``,
``PUT kernels/{id}/agent`` (its row of the agents panel) and ``GET kernels/{id}/events`` (its
feed, a long poll).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from .. import fields
from ..fields import FieldError
from ..focus.validate import ID_CHARS, ReportError, parse_report
from .handlers import (
    RETRY_AFTER_SECONDS,
    KernelRouteHandler,
    RecapHandler,
    reading_fields,
    shown,
)
from .polls import Poll, PollsFull

DEFAULT_POLL_TIMEOUT = 25.0
"""How long ``GET kernels/{id}/events`` waits for news when the kernel names no ``timeout``."""


class KernelHandler(RecapHandler):
    """``GET kernels/{id}``: the kernel's focus, banner and execution state."""

    @web.authenticated
    @authorized
    def get(self, kernel_id: str) -> None:
        self.require_kernel(kernel_id)
        self.reply(self.hub.snapshot(kernel_id).to_json())


class BannerHandler(KernelRouteHandler):
    """``PUT kernels/{id}/banner``: the kernel's banner widget model id (null clears it)."""

    @web.authenticated
    @authorized
    def put(self, kernel_id: str) -> None:
        body = self.json_body()
        with reading_fields():
            fields.require(body, "model_id")
            model_id = fields.text(body, "model_id", ID_CHARS)
        self.require_kernel(kernel_id)
        self.hub.set_banner(kernel_id, model_id)
        self.reply({})


class AgentReportHandler(KernelRouteHandler):
    """``PUT kernels/{id}/agent``: the kernel's agent state, for the agents panel."""

    @web.authenticated
    @authorized
    async def put(self, kernel_id: str) -> None:
        body = self.json_body()
        self.require_kernel(kernel_id)
        try:
            report = parse_report(body)
        except ReportError as error:
            raise web.HTTPError(400, "%s", str(error)) from None
        if report.ignored:
            # Once per report, every dropped field in one line: the server's log, which the
            # person sees; the kernel gets the same lines in the answer.
            line = "; ".join(report.ignored)
            self.log.warning(
                "jupyter_recap: kernel %s reported bad fields, ignored: %s", shown(kernel_id), line
            )
        board = self.recap.board
        board.report(kernel_id, report)
        if not board.path(kernel_id):
            board.set_path(kernel_id, await self._session_path(kernel_id))
        self.reply({"agents_version": board.version, "ignored": list(report.ignored)})

    async def _session_path(self, kernel_id: str) -> str:
        """The notebook of the kernel's session, until a browser reports which one it is."""
        try:
            manager: Any = self.session_manager  # untyped in jupyter_server
            session = await manager.get_session(kernel_id=kernel_id)
        except Exception:  # noqa: BLE001 - no session (a kernel started on its own): no path
            return ""
        path = session.get("path") if isinstance(session, dict) else None
        return path if isinstance(path, str) else ""


class EventsHandler(KernelRouteHandler):
    """``GET kernels/{id}/events?since=&timeout=``: the kernel's feed, as a long poll."""

    _gone = False
    _poll: Poll | None = None

    @web.authenticated
    @authorized
    async def get(self, kernel_id: str) -> None:
        self.require_kernel(kernel_id)
        # Pages keep the focus of this kernel's notebooks up to date from now on.
        self.hub.feed_polled(kernel_id)
        since = self.number_argument("since", 0)
        if since != int(since):
            raise web.HTTPError(400, "%s", str(FieldError("since", "must be an integer")))
        timeout = min(
            self.number_argument("timeout", DEFAULT_POLL_TIMEOUT), self.recap.max_poll_timeout
        )
        feed = self.hub.events_since(kernel_id, int(since))
        if feed.events or feed.restarted or timeout <= 0:
            self.reply(feed.to_json())  # no wait, so no slot: the state is always readable
            return
        polls = self.recap.polls
        try:
            poll = self._poll = polls.enter(kernel_id)
        except PollsFull:
            message = (
                f"this server already holds its limit of {polls.total} waiting polls; "
                f"retry in {RETRY_AFTER_SECONDS} s"
            )
            raise web.HTTPError(429, "%s", message) from None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            while True:
                # Cleared right before reading the feed, with no await between: no notify
                # can slip by unseen.
                poll.event.clear()
                feed = self.hub.events_since(kernel_id, int(since))
                remaining = deadline - loop.time()
                if feed.events or feed.restarted or remaining <= 0 or poll.evicted or self._gone:
                    break
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(poll.event.wait(), remaining)
                self.require_kernel(kernel_id)  # shut down meanwhile: 404
        finally:
            polls.leave(poll)
        if not self._gone:
            self.reply(feed.to_json())

    def on_connection_close(self) -> None:
        # The kernel hung up (extension unloaded, kernel shutting down, network gone): stop
        # waiting for it and give its slot back now, not at its timeout.
        self._gone = True
        if self._poll is not None:
            self.recap.polls.leave(self._poll)
            self._poll.event.set()
        super().on_connection_close()
