"""The kernel's end of the focus feed: long-poll the server's events for this kernel, report them.

The server extension collects focus reports from every browser tab and keeps a per-kernel event
feed (see docs/focus-protocol.md). A kernel consumes it here, in a background thread of its own
(its blocking long poll), because the shell channel is blocked while a cell runs and focus
changes must arrive even then.
No server (terminal IPython, VS Code, a bare kernel) means no feed: the idle fallback stays.

The requests go through the kernel's :class:`~.link.ServerLink` (:mod:`.link`), which the feed
makes and shares with the state reporter (:mod:`.reporter`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ..debuglog import get_logger
from ..errors import Cancelled, LinkError
from ..pipeline.providers.base import CancelToken
from .link import Backoff, ServerInfo, ServerLink

#: Seconds the server may hold one long poll open (it allows up to 300). Each renewal of an
#: idle kernel's poll is a request the server handles for nothing, about 2 ms of its CPU: at 70
#: kernels a 55 s poll still made idle kernels cost the server 1.3x its own idle CPU. The poll
#: goes straight to the kernel's own server over loopback, never through a proxy whose idle
#: time-out (often 60 s) would cut it, and news or a hang-up answers it at once whatever its
#: length.
POLL_SECONDS = 290.0


class FocusFeed:
    """Long-polls the server's event feed for one kernel and calls back on each event.

    ``on_focus(focused, at)`` gets the server's UNIX time of the change; ``on_input()`` runs when
    the person typed in the notebook; ``on_kernel(what, at)`` hears what the server saw happen
    to this kernel (``restarted``, ``crashed``, ``died``) — also the history of it on each
    (re)connection, since a restarted kernel learns of its restart only that way;
    ``on_outside(entries, latest_cell)`` gets entries for the record written outside the kernel
    (:class:`~jupyter_recap.wire.OutsideEntry`, not checked yet). ``on_ready()`` runs once,
    after the first answer was taken in (the focus and the restarts the server knew then are
    known), or when the feed stops for good before any answer. All run on
    the feed's thread. ``key`` is the kernel's connection key, for the kernel's proof;
    without one only the server's headers are sent.
    """

    def __init__(
        self,
        server: ServerInfo,
        kernel_id: str,
        *,
        on_focus: Callable[[bool, float], None],
        on_input: Callable[[], None],
        on_kernel: Callable[[str, float], None] | None = None,
        on_outside: Callable[[list[Any], bool], None] | None = None,
        on_ready: Callable[[], None] | None = None,
        banner_model_id: str | None = None,
        key: bytes = b"",
    ) -> None:
        self.server = server
        self.kernel_id = kernel_id
        self.routes = ServerLink(server, kernel_id, key)
        self._on_focus = on_focus
        self._on_input = on_input
        self._on_kernel = on_kernel
        self._on_outside = on_outside
        self._on_ready = on_ready
        self._banner = banner_model_id
        self._cancel = CancelToken()
        self._thread: threading.Thread | None = None
        self.connected = False
        self.connects = 0
        """How many times the feed (re)connected."""
        self.last_error: str | None = None
        self.state: dict[str, Any] = {}
        """The latest ``focused``, ``focus_supported``, ``execution_state``, ``idle_seconds``."""
        self.stopped_because: str | None = None

    @property
    def base(self) -> str:
        return self.routes.base

    def start(self) -> None:
        """Start polling in a daemon thread."""
        self._thread = threading.Thread(target=self._run, name="jupyter-recap-feed", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop at once: the poll in progress is aborted, not waited for; the link's kept
        connections are closed (a reporter sharing the link is stopped before)."""
        self._cancel.cancel()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)
        self._thread = None
        self.routes.close()

    # -- the thread ------------------------------------------------------------------------

    def _run(self) -> None:
        log = get_logger()
        seq, backoff, banner_sent = 0, Backoff(self._cancel), False
        fresh = True  # (re)connecting: ask for the current state, do not wait for news
        while not self._cancel.cancelled:
            try:
                if self._banner and not banner_sent:
                    self._request("PUT", "/banner", {"model_id": self._banner}, 10.0)
                    banner_sent = True
                # Whether to wait is not a matter of seq: a kernel no browser has reported on
                # yet stays at seq 0, and polling it without waiting would spin.
                wait = 0 if fresh else POLL_SECONDS
                data = self._request(
                    "GET", f"/events?since={seq}&timeout={wait:g}", None, wait + 10
                )
            except Cancelled:
                break
            except LinkError as error:
                if error.final:
                    # Not our server's kernel, no extension there, or not allowed: no feed.
                    self.stopped_because = str(error)
                    log.info("focus feed stopped: %s", error)
                    break
                if self.connected or self.last_error is None:
                    log.info("focus feed lost (%s); retrying", error)
                self.connected, self.last_error = False, str(error)
                backoff.wait(error)
                seq, fresh = 0, True  # the server may have restarted and renumbered
                continue
            if not self.connected:
                log.info("focus feed connected to %s", self.server.url)
                self.connects += 1
            self.connected, self.last_error = True, None
            backoff.reset()
            seq, fresh = self._handle(data, seq, fresh), False
            self._ready()
        self.connected = False
        self._ready()  # stopped before any answer: nothing more will come
        if banner_sent:
            self._clear_banner()

    def _ready(self) -> None:
        on_ready, self._on_ready = self._on_ready, None
        if on_ready is not None:
            on_ready()

    def _clear_banner(self) -> None:
        """Tell the server the banner is gone (the extension was unloaded): it would otherwise
        keep pointing the page at a widget that no longer exists. Best effort, and quick:
        :meth:`stop` waits for it at most two seconds."""
        try:
            self.routes.request("PUT", "/banner", {"model_id": None}, 1.5, CancelToken())
        except LinkError as error:
            get_logger().info("focus feed: the banner was not cleared (%s)", error)

    def _request(
        self, method: str, path: str, body: dict[str, Any] | None, timeout: float
    ) -> dict[str, Any]:
        return self.routes.request(method, path, body, timeout, self._cancel)

    def _handle(self, data: dict[str, Any], seq: int, fresh: bool) -> int:
        new_seq = data.get("seq")
        if not isinstance(new_seq, int):
            return seq
        if new_seq < seq:
            fresh = True  # the server restarted and numbers its events afresh
        events = data.get("events")
        events = events if isinstance(events, list) else []
        self.state = {
            key: data.get(key)
            for key in ("focused", "focus_supported", "execution_state", "idle_seconds")
        }
        self.state["received_at"] = time.time()
        if fresh:
            # (Re)connected: old events are history, not news. Take the current state, dated by
            # the last focus change the server saw, so an absence that began earlier still
            # counts from when it began.
            focused = data.get("focused")
            if isinstance(focused, bool):
                changes = [e for e in events if isinstance(e, dict) and e.get("type") == "focus"]
                self._on_focus(focused, _when(changes[-1]) if changes else time.time())
            for event in events:
                if isinstance(event, dict) and event.get("type") == "kernel":
                    self._kernel_event(event)
            return new_seq
        for event in events:
            if not isinstance(event, dict):
                continue
            if event.get("type") == "focus" and isinstance(event.get("focused"), bool):
                self._on_focus(bool(event["focused"]), _when(event))
            elif event.get("type") == "input":
                self._on_input()
            elif event.get("type") == "kernel":
                self._kernel_event(event)
            elif event.get("type") == "outside":
                self._outside_event(event)
        return new_seq

    def _outside_event(self, event: dict[str, Any]) -> None:
        entries = event.get("entries")
        if self._on_outside is not None and isinstance(entries, list):
            self._on_outside(entries, event.get("cell") == "latest")

    def _kernel_event(self, event: dict[str, Any]) -> None:
        what = event.get("what")
        if self._on_kernel is not None and isinstance(what, str):
            self._on_kernel(what, _when(event))


def _when(event: dict[str, Any]) -> float:
    at = event.get("at")
    return float(at) if isinstance(at, (int, float)) else time.time()
