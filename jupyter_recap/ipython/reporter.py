"""The kernel's agent state, sent to the server's agents panel as it changes.

:class:`StateReporter` runs on the extension's shared worker thread (not a thread of its own,
as the feed's long poll needs): a report is a short PUT, latest wins. It talks to the server
through the kernel's :class:`~.link.ServerLink` (:mod:`.link`), the one the focus feed made.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

from ..debuglog import get_logger
from ..errors import Cancelled, LinkError
from ..pipeline.providers.base import CancelToken
from .link import Backoff, ServerLink
from .worker import Job, Worker

#: The deadline of one state report (or banner) request. The reports share the worker thread
#: with the trigger timers: a server that hangs holds a due timer up for at most this long (a
#: report is a small PUT to a local server; a slow one is retried with a backoff).
REPORT_TIMEOUT = 2.0


class StateReporter:
    """Sends the kernel's agent state to the server (``PUT kernels/{id}/agent``), latest wins,
    and tells it which banner widget this kernel shows (``PUT kernels/{id}/banner``).

    :meth:`poke` only sets a flag and times a job, so it is safe on a cell's path and from any
    thread; the report is built and sent on ``worker`` (the extension's shared
    :class:`~.worker.Worker`; one of its own when none is given). Urgent changes (a turn
    started or ended, a recap, the task list) go out at once; mere activity (a tool call) at
    most once per ``min_gap`` seconds. A failed send is retried after a backoff — scheduled,
    never slept, since the worker's thread runs other jobs too; a 404 or 403 (not our
    server's kernel, no extension there) stops the reporter.
    """

    def __init__(
        self,
        routes: ServerLink,
        build: Callable[[], Mapping[str, object]],
        *,
        min_gap: float = 1.0,
        worker: Worker | None = None,
    ) -> None:
        self.routes = routes
        self._build = build
        self.min_gap = min_gap
        self._own_worker = worker is None
        self._worker = worker if worker is not None else Worker("jupyter-recap-report")
        self._lock = threading.Lock()
        self._dirty = True  # the first report goes out when the reporter starts
        self._urgent = True
        self._started = False
        self._stopped = False
        self._last = 0.0
        self._retry_at = 0.0
        """No request before this (monotonic): a backoff after a failure."""
        self._job: Job | None = None
        self._cancel = CancelToken()
        self._backoff = Backoff(self._cancel)
        self._previous: Mapping[str, object] | None = None
        self._banner: str | None = None
        """The banner model id to announce, while it is not sent."""
        self._banner_sent: str | None = None
        """The banner model id the server has."""
        self.sent = 0
        """Reports the server accepted."""
        self.last_error: str | None = None
        self.stopped_because: str | None = None

    def start(self) -> None:
        with self._lock:
            self._started = True
            self._arm()

    def stop(self) -> None:
        """Stop (a request in flight is aborted) and take the banner back off the server.

        The banner is cleared here, on the stopping thread, and waited for (at most 1.5 s):
        a later ``%load_ext`` then announces its new banner after it, never before.
        """
        with self._lock:
            self._stopped = True
            if self._job is not None:
                self._job.cancel()
                self._job = None
            banner = self._banner_sent
            self._banner_sent = self._banner = None
        self._cancel.cancel()
        if self._own_worker:
            self._worker.stop()
        if banner is not None and self.stopped_because is None:
            try:
                self.routes.request("PUT", "/banner", {"model_id": None}, 1.5, CancelToken())
            except LinkError as error:
                get_logger().info("agent state: the banner was not cleared (%s)", error)

    def poke(self, urgent: bool = True) -> None:
        """The state changed; ``urgent`` changes skip the activity rate limit."""
        with self._lock:
            self._dirty = True
            self._urgent = self._urgent or urgent
            self._arm()

    def banner(self, model_id: str) -> None:
        """Tell the server this kernel's banner widget (so that its pages can mount it)."""
        with self._lock:
            self._banner = model_id
            self._dirty = self._urgent = True
            self._arm()

    def _arm(self) -> None:
        """Time the send job (under the lock): now for urgent news, else after the gap."""
        if self._stopped or not self._started or not self._dirty:
            return
        now = time.monotonic()
        when = max(now, self._retry_at)
        if not self._urgent:
            when = max(when, self._last + self.min_gap)
        job = self._job
        if job is not None and not job.cancelled and job.when <= when:
            return
        if job is not None:
            job.cancel()
        self._job = self._worker.call_at(when, self._send)

    def _send(self) -> None:
        """On the worker: send the banner if it is new, then the report if it changed."""
        with self._lock:
            self._job = None
            if self._stopped or not self._dirty:
                return
            self._dirty = self._urgent = False
            banner = self._banner
        try:
            if banner is not None:
                self.routes.request(
                    "PUT", "/banner", {"model_id": banner}, REPORT_TIMEOUT, self._cancel
                )
                with self._lock:
                    self._banner_sent = banner
                    if self._banner == banner:
                        self._banner = None
            try:
                body = self._build()
            except Exception:  # noqa: BLE001 - a broken report must not end the reports
                get_logger().exception("agent state: building the report failed")
                return
            if body != self._previous:
                self.routes.request("PUT", "/agent", dict(body), REPORT_TIMEOUT, self._cancel)
                self._previous = body
                self.sent += 1
                self._last = time.monotonic()
        except Cancelled:
            return
        except LinkError as error:
            if error.final:
                self.stopped_because = str(error)
                get_logger().info("agent state reports stopped: %s", error)
                with self._lock:
                    self._stopped = True
                return
            self.last_error = str(error)
            with self._lock:  # the report stays pending
                self._dirty = self._urgent = True
                self._retry_at = time.monotonic() + self._backoff.delay(error)
                self._arm()
            return
        self.last_error = None
        self._backoff.reset()
