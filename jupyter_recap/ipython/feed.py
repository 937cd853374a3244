"""The kernel's end of the focus feed: find our server, long-poll its events, report them.

The server extension collects focus reports from every browser tab and keeps a per-kernel event
feed (see docs/focus-protocol.md). A kernel consumes it here, in a background thread with httpx,
because the shell channel is blocked while a cell runs and focus changes must arrive even then.
No server (terminal IPython, VS Code, a bare kernel) means no feed: the idle fallback stays.

The kernel authenticates with :func:`kernel_proof`: an HMAC keyed by its own ZMQ connection key
(which the server that started it also holds) over its kernel id. It opens that kernel's routes
and no other's, and it is never in the environment, which every subprocess of a kernel inherits.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..debuglog import get_logger
from ..errors import (
    Cancelled,
    ProviderAuthError,
    ProviderError,
    ProviderHTTPError,
    ProviderRateLimited,
)
from ..pipeline.providers.base import CancelToken

#: Seconds the server may hold one long poll open (the protocol allows up to 30).
POLL_SECONDS = 25.0
#: First wait before a reconnection attempt; it doubles on each failure in a row.
MIN_BACKOFF = 1.0
#: Longest wait between reconnection attempts.
MAX_BACKOFF = 30.0
#: Least wait after the server said it holds too many polls (its ``Retry-After``, 10 s).
RATE_LIMITED_WAIT = 10.0

#: The header that carries :func:`kernel_proof`.
KERNEL_HEADER = "X-Jupyter-Recap-Kernel"
# A fixed label, so the proof can never be mistaken for an HMAC the key signs elsewhere (the
# kernel's messages are signed with the same key).
_PROOF_LABEL = b"jupyter-recap kernel feed v1\x00"

_KERNEL_FILE = re.compile(r"^kernel-(?P<id>[0-9A-Za-z][0-9A-Za-z\-]*)\.json$")


@dataclass(frozen=True)
class ServerInfo:
    """Where our Jupyter server is and how a kernel authenticates to it."""

    url: str
    """The server's URL including its base URL, ending with "/"."""
    headers: Mapping[str, str]
    how: str
    """"environment" or "runtime file": how the server was found (for status)."""


def kernel_proof(key: bytes, kernel_id: str) -> str:
    """What kernel ``kernel_id`` sends to prove it is that kernel: HMAC-SHA256 with its key.

    Both ends know the key (the kernel from its connection file, the server that started it
    from its kernel manager) and nobody else needs to; it stays the same across restarts.
    """
    message = _PROOF_LABEL + kernel_id.encode("utf-8", "surrogatepass")
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def find_server(env: Mapping[str, str], runtime_dir: str | None = None) -> ServerInfo | None:
    """The server that started this kernel: from the environment it handed us, else its file.

    The environment names the server only; the kernel authenticates with :func:`kernel_proof`.
    The runtime file (kernels the extension did not see start) also gives the server's token.
    """
    url = env.get("JUPYTER_RECAP_SERVER_URL", "").strip()
    if url:
        return ServerInfo(_slash(url), {}, "environment")
    parent = env.get("JPY_PARENT_PID", "").strip()
    if not parent.isdigit():
        return None
    if runtime_dir is None:
        from jupyter_core.paths import jupyter_runtime_dir

        runtime_dir = jupyter_runtime_dir()
    try:
        info = json.loads((Path(runtime_dir) / f"jpserver-{parent}.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("url"), str):
        return None
    token = info.get("token") or ""
    headers = {"Authorization": f"token {token}"} if token else {}
    return ServerInfo(_slash(info["url"]), headers, "runtime file")


def kernel_id_from_connection_file(path: str) -> str | None:
    """The kernel id in a server-started kernel's connection file name (kernel-<id>.json)."""
    match = _KERNEL_FILE.match(os.path.basename(path))
    return match.group("id") if match else None


def _slash(url: str) -> str:
    return url if url.endswith("/") else url + "/"


class KernelRoutes:
    """The server routes of one kernel, with that kernel's credentials (shared by the feed and
    the state reporter)."""

    def __init__(self, server: ServerInfo, kernel_id: str, key: bytes = b"") -> None:
        self.server = server
        self.kernel_id = kernel_id
        self.headers = dict(server.headers)
        if key:
            self.headers[KERNEL_HEADER] = kernel_proof(key, kernel_id)

    @property
    def base(self) -> str:
        return f"{self.server.url}jupyter-recap/api/kernels/{quote(self.kernel_id)}"

    def request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None,
        timeout: float,
        cancel: CancelToken,
    ) -> dict[str, Any]:
        from ..pipeline.providers.transport import request_json

        return request_json(
            method,
            self.base + path,
            headers=dict(self.headers),
            body=body,
            timeout=timeout,
            cancel=cancel,
            provider_id="jupyter server",
            secret_headers=(KERNEL_HEADER,),
        )


class FocusFeed:
    """Long-polls the server's event feed for one kernel and calls back on each event.

    ``on_focus(focused, at)`` gets the server's UNIX time of the change; ``on_input()`` runs when
    the person typed in the notebook; ``on_kernel(what, at)`` hears what the server saw happen
    to this kernel (``restarted``, ``crashed``, ``died``) — also the history of it on each
    (re)connection, since a restarted kernel learns of its restart only that way. All run on
    the feed's thread. ``key`` is the kernel's connection key, for :func:`kernel_proof`;
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
        banner_model_id: str | None = None,
        key: bytes = b"",
    ) -> None:
        self.server = server
        self.kernel_id = kernel_id
        self.routes = KernelRoutes(server, kernel_id, key)
        self._on_focus = on_focus
        self._on_input = on_input
        self._on_kernel = on_kernel
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
        """Stop at once: the poll in progress is aborted, not waited for."""
        self._cancel.cancel()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)
        self._thread = None

    # -- the thread ------------------------------------------------------------------------

    def _run(self) -> None:
        log = get_logger()
        seq, backoff, banner_sent = 0, MIN_BACKOFF, False
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
            except (ProviderAuthError, ProviderHTTPError) as error:
                if isinstance(error, ProviderAuthError) or error.status == 404:
                    # Not our server's kernel, no extension there, or not allowed: no feed.
                    self.stopped_because = str(error)
                    log.info("focus feed stopped: %s", error)
                    break
                backoff = self._retry(error, backoff)
                seq, fresh = 0, True  # the server may have restarted and renumbered
                continue
            except ProviderError as error:
                backoff = self._retry(error, backoff)
                seq, fresh = 0, True
                continue
            if not self.connected:
                log.info("focus feed connected to %s", self.server.url)
                self.connects += 1
            self.connected, self.last_error, backoff = True, None, MIN_BACKOFF
            seq, fresh = self._handle(data, seq, fresh), False
        self.connected = False
        if banner_sent:
            self._clear_banner()

    def _clear_banner(self) -> None:
        """Tell the server the banner is gone (the extension was unloaded): it would otherwise
        keep pointing the page at a widget that no longer exists. Best effort, and quick:
        :meth:`stop` waits for it at most two seconds."""
        try:
            self.routes.request("PUT", "/banner", {"model_id": None}, 1.5, CancelToken())
        except ProviderError as error:
            get_logger().info("focus feed: the banner was not cleared (%s)", error)

    def _retry(self, error: ProviderError, backoff: float) -> float:
        """Wait before the next attempt; the backoff for the one after."""
        if self.connected or self.last_error is None:
            get_logger().info("focus feed lost (%s); retrying", error)
        self.connected, self.last_error = False, str(error)
        wait = backoff
        if isinstance(error, ProviderRateLimited):
            # The server holds all the polls it will: come back after its Retry-After, spread
            # out so that the kernels it refused together do not return together.
            wait = max(backoff, RATE_LIMITED_WAIT) * random.uniform(1.0, 1.5)
        self._cancel.wait(wait)
        return min(backoff * 2, MAX_BACKOFF)

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
        return new_seq

    def _kernel_event(self, event: dict[str, Any]) -> None:
        what = event.get("what")
        if self._on_kernel is not None and isinstance(what, str):
            self._on_kernel(what, _when(event))


def _when(event: dict[str, Any]) -> float:
    at = event.get("at")
    return float(at) if isinstance(at, (int, float)) else time.time()


class StateReporter:
    """Sends the kernel's agent state to the server (``PUT kernels/{id}/agent``), latest wins.

    :meth:`poke` only sets a flag, so it is safe on a cell's path and from any thread; the
    report is built and sent on this reporter's own thread. Urgent changes (a turn started or
    ended, a recap, the task list) go out at once; mere activity (a tool call) at most once per
    ``min_gap`` seconds. A failed send is retried with a backoff; a 404 or 403 (not our
    server's kernel, no extension there) stops the reporter.
    """

    def __init__(
        self,
        routes: KernelRoutes,
        build: Callable[[], Mapping[str, object]],
        *,
        min_gap: float = 1.0,
    ) -> None:
        self.routes = routes
        self._build = build
        self.min_gap = min_gap
        self._cond = threading.Condition()
        self._dirty = True  # the first report goes out when the thread starts
        self._urgent = True
        self._stopped = False
        self._last = 0.0
        self._cancel = CancelToken()
        self._thread: threading.Thread | None = None
        self.sent = 0
        """Reports the server accepted."""
        self.last_error: str | None = None
        self.stopped_because: str | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="jupyter-recap-report", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        self._cancel.cancel()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)
        self._thread = None

    def poke(self, urgent: bool = True) -> None:
        """The state changed; ``urgent`` changes skip the activity rate limit."""
        with self._cond:
            self._dirty = True
            self._urgent = self._urgent or urgent
            self._cond.notify()

    def _run(self) -> None:
        backoff, previous = MIN_BACKOFF, None
        while True:
            with self._cond:
                while not self._dirty and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    return
                if not self._urgent:
                    remaining = self._last + self.min_gap - time.monotonic()
                    if remaining > 0:
                        self._cond.wait(remaining)  # an urgent poke or the gap, then look again
                        continue
                self._dirty = self._urgent = False
            try:
                body = self._build()
            except Exception:  # noqa: BLE001 - a broken report must not end the thread
                get_logger().exception("agent state: building the report failed")
                continue
            if body == previous:
                continue
            try:
                self.routes.request("PUT", "/agent", dict(body), 10.0, self._cancel)
            except Cancelled:
                return
            except (ProviderAuthError, ProviderHTTPError) as error:
                if isinstance(error, ProviderAuthError) or error.status == 404:
                    self.stopped_because = str(error)
                    get_logger().info("agent state reports stopped: %s", error)
                    return
                backoff = self._failed(error, backoff)
                continue
            except ProviderError as error:
                backoff = self._failed(error, backoff)
                continue
            previous, backoff, self.last_error = body, MIN_BACKOFF, None
            self._last = time.monotonic()
            self.sent += 1

    def _failed(self, error: ProviderError, backoff: float) -> float:
        """Keep the report pending and wait before trying again."""
        self.last_error = str(error)
        with self._cond:
            self._dirty = self._urgent = True
        self._cancel.wait(backoff)
        return min(backoff * 2, MAX_BACKOFF)
