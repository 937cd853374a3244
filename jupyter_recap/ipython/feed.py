"""The kernel's end of the focus feed: find our server, long-poll its events, report them.

The server extension collects focus reports from every browser tab and keeps a per-kernel event
feed (see docs/focus-protocol.md). A kernel consumes it here, in a background thread of its own
(its blocking long poll), because the shell channel is blocked while a cell runs and focus
changes must arrive even then.
No server (terminal IPython, VS Code, a bare kernel) means no feed: the idle fallback stays.

The kernel authenticates with :func:`~jupyter_recap.wire.kernel_proof`: an HMAC keyed by its own
ZMQ connection key (which the server that started it also holds) over its kernel id. It opens that
kernel's routes and no other's, and it is never in the environment, which every subprocess of a
kernel inherits.

Both clients of the server here (the feed and the state reporter, which runs on the extension's
shared worker thread) talk to it through one :class:`ServerLink` (the standard library's
``http.client``), whose errors say what failed (:class:`LinkError` and its subclasses), and wait
after failures with one :class:`Backoff`.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import json
import os
import random
import re
import select
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from ..debuglog import get_logger
from ..errors import Cancelled
from ..pipeline.providers.base import CancelToken, error_message
from ..textutil import printable, shorten
from ..wire import KERNEL_HEADER, kernel_proof
from .worker import Job, Worker

#: Seconds the server may hold one long poll open (it allows up to 300). Each renewal of an
#: idle kernel's poll is a request the server handles for nothing, about 2 ms of its CPU: at 70
#: kernels a 55 s poll still made idle kernels cost the server 1.3x its own idle CPU. The poll
#: goes straight to the kernel's own server over loopback, never through a proxy whose idle
#: time-out (often 60 s) would cut it, and news or a hang-up answers it at once whatever its
#: length.
POLL_SECONDS = 290.0

#: The deadline of one state report (or banner) request. The reports share the worker thread
#: with the trigger timers: a server that hangs holds a due timer up for at most this long (a
#: report is a small PUT to a local server; a slow one is retried with a backoff).
REPORT_TIMEOUT = 2.0
#: First wait before a reconnection attempt; it doubles on each failure in a row.
MIN_BACKOFF = 1.0
#: Longest wait between reconnection attempts.
MAX_BACKOFF = 30.0
#: Least wait after the server said it holds too many polls (its ``Retry-After``, 10 s).
RATE_LIMITED_WAIT = 10.0

#: Largest answer of the server read (a feed answer holds at most 100 events).
MAX_ANSWER_BYTES = 1_000_000
#: Longest excerpt of the server's error message quoted in a link error.
_EXCERPT_CHARS = 120


@functools.cache
def _kernel_file() -> re.Pattern[str]:
    return re.compile(r"^kernel-(?P<id>[0-9A-Za-z][0-9A-Za-z\-]*)\.json$")


@dataclass(frozen=True)
class ServerInfo:
    """Where our Jupyter server is and how a kernel authenticates to it."""

    url: str
    """The server's URL including its base URL, ending with "/"."""
    headers: Mapping[str, str]
    how: str
    """"environment" or "runtime file": how the server was found (for status)."""


def find_server(env: Mapping[str, str], runtime_dir: str | None = None) -> ServerInfo | None:
    """The server that started this kernel: from the environment it handed us, else its file.

    The environment names the server only; the kernel authenticates with its proof.
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
    match = _kernel_file().match(os.path.basename(path))
    return match.group("id") if match else None


def _slash(url: str) -> str:
    return url if url.endswith("/") else url + "/"


class LinkError(Exception):
    """A request to our Jupyter server failed; ``str(error)`` is one line saying why.

    ::

        LinkError              the request failed
        ├── LinkRefused        HTTP 401 / 403: this kernel may not use the route      (final)
        ├── LinkNotFound       HTTP 404: not this server's kernel, or no jupyter_recap (final)
        ├── LinkUnreachable    no answer: connection refused, DNS, timeout
        ├── LinkBusy           HTTP 429: the server holds all it will; come back later
        └── LinkBadAnswer      another status, or an answer that is not a JSON object

    A ``final`` error ends a client: asking again would be refused again. The others are
    retried after a :class:`Backoff`.
    """

    final = False

    def __init__(self, message: str, *, status: int = 0) -> None:
        super().__init__(message)
        self.status = status
        """The HTTP status, or 0 when no answer arrived."""


class LinkRefused(LinkError):
    """HTTP 401 or 403: the server does not let this kernel in."""

    final = True


class LinkNotFound(LinkError):
    """HTTP 404: not a kernel of this server, or a server without jupyter_recap."""

    final = True


class LinkUnreachable(LinkError):
    """No answer: the connection was refused or failed, or the deadline passed."""


class LinkBusy(LinkError):
    """HTTP 429: the server holds all the long polls it will."""


class LinkBadAnswer(LinkError):
    """Any other status, or an answer that is not a JSON object (or far too large)."""


class ServerLink:
    """This kernel's routes on its Jupyter server, with its credentials: one JSON request at a
    time, and every failure as a :class:`LinkError` (shared by the feed and the reporter).

    Over the standard library's ``http.client``, not httpx: this is a loopback link to the
    server that started the kernel, and importing httpx (which pulls in rich, click and
    pygments through its command-line module when they are installed) cost every kernel
    ~6 MB and ~60 ms at ``%load_ext``. httpx stays for the model providers, which load only
    when a model is called.

    Each thread that asks (the feed's long poll, the worker's reports) keeps one connection
    open and reuses it: a new one every 25 s per kernel left hundreds of sockets closing at a
    time with many kernels. Every request has a total deadline (``timeout``), a size cap on
    the answer, and a ``cancel`` that aborts it mid-wait by shutting its socket down (closing
    a socket does not wake a thread blocked reading it; shutting it down does).
    """

    def __init__(self, server: ServerInfo, kernel_id: str, key: bytes = b"") -> None:
        self.server = server
        self.kernel_id = kernel_id
        self.headers = dict(server.headers)
        if key:
            self.headers[KERNEL_HEADER] = kernel_proof(key, kernel_id)
        parts = urlsplit(server.url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port
        self._prefix = parts.path or "/"
        self._local = threading.local()
        self._connections: list[http.client.HTTPConnection] = []
        self._connections_lock = threading.Lock()
        self.connections = 0
        """Connections made (one per asking thread, and one more after each failed request)."""

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
        """The JSON object the server answers to ``method`` on ``path`` (below :attr:`base`).

        Raises a :class:`LinkError`, or :class:`~jupyter_recap.errors.Cancelled` when
        ``cancel`` fires.
        """
        cancel.raise_if_cancelled()
        timeout = max(timeout, 0.001)
        target = f"{self._prefix}jupyter-recap/api/kernels/{quote(self.kernel_id)}{path}"
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        # identity: a compressed answer could expand far past the cap between two checks
        headers = {"Accept": "*/*", "Accept-Encoding": "identity", **self.headers}
        if data is not None:
            headers["Content-Type"] = "application/json"
        deadline = time.monotonic() + timeout
        connection = self._connection(timeout)
        unregister = cancel.on_cancel(functools.partial(_shut_down, connection))
        try:
            status, raw = self._exchange(
                connection, method, target, data, headers, deadline, cancel
            )
        except Cancelled:
            self._drop(connection)
            raise
        except (OSError, http.client.HTTPException) as error:
            self._drop(connection)  # a server that restarted is reached on a new one
            if cancel.cancelled:
                raise Cancelled("the request was cancelled") from None
            if isinstance(error, TimeoutError) or time.monotonic() >= deadline:
                raise LinkUnreachable(
                    f"the Jupyter server sent no answer within {timeout:g} s"
                ) from None
            raise LinkUnreachable(self._unreachable(error)) from None
        finally:
            unregister()
        if cancel.cancelled:
            self._drop(connection)
            raise Cancelled("the request was cancelled")
        if not 200 <= status < 300:
            excerpt = shorten(printable(error_message(raw or b"")), _EXCERPT_CHARS)
            raise _status_error(status, excerpt)
        if raw is None:
            raise LinkBadAnswer(f"the server sent more than {MAX_ANSWER_BYTES:,} bytes")
        try:
            answer = json.loads(raw)
        except (ValueError, RecursionError):
            raise LinkBadAnswer("the server sent an answer that is not JSON") from None
        if not isinstance(answer, dict):
            raise LinkBadAnswer("the server sent JSON that is not an object")
        return answer

    def _exchange(
        self,
        connection: http.client.HTTPConnection,
        method: str,
        target: str,
        data: bytes | None,
        headers: dict[str, str],
        deadline: float,
        cancel: CancelToken,
    ) -> tuple[int, bytes | None]:
        """Send one request on ``connection`` and read its answer, capped, by ``deadline``.

        The socket's timeout is set to what is left of the deadline before each phase, so no
        single read outlives it; the body is read in pieces, checking the deadline between.
        """
        if connection.sock is None:
            connection.timeout = _left(deadline)
            connection.connect()
            # A cancel that came while connecting found no socket to shut down.
            cancel.raise_if_cancelled()
        _set_timeout(connection, deadline)
        connection.request(method, target, body=data, headers=headers)
        _set_timeout(connection, deadline)
        response = connection.getresponse()
        limit = MAX_ANSWER_BYTES if 200 <= response.status < 300 else _ERROR_BODY_LIMIT
        declared = response.getheader("content-length", "")
        complete = True
        raw: bytes | None
        if declared.isdigit() and int(declared) > limit:
            raw, complete = None, False
        else:
            buffer = bytearray()
            while True:
                _set_timeout(connection, deadline)
                chunk = response.read(65536)
                if not chunk:
                    break
                buffer += chunk
                if len(buffer) > limit:
                    complete = False
                    break
            raw = bytes(buffer) if complete else None
        if not complete or response.will_close:
            self._drop(connection)  # unread bytes left on it, or the server closes it
        return response.status, raw

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        """This thread's kept connection, or a new one when it has none."""
        connection: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
        if connection is not None and connection.sock is not None:
            if not _readable(connection.sock):
                return connection
            # Readable while idle: the server closed it (or sent what nobody asked for). As
            # httpcore does, it is not reused; a request on it would fail for nothing.
            connection.close()
        if connection is None:
            if self._https:
                import ssl

                connection = http.client.HTTPSConnection(
                    self._host, self._port, timeout=timeout, context=ssl.create_default_context()
                )
            else:
                connection = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
            self._local.connection = connection
        with self._connections_lock:
            if connection not in self._connections:  # (again, after close())
                self._connections.append(connection)
            self.connections += 1
        return connection

    def _drop(self, connection: http.client.HTTPConnection) -> None:
        """Close ``connection``: the next request of its thread connects again."""
        connection.close()

    def _unreachable(self, error: BaseException) -> str:
        detail = re.sub(r"^\[Errno -?\d+\]\s*", "", str(error)) or type(error).__name__
        where = f"{self._host}:{self._port}" if self._port else self._host
        return f"cannot reach {where} ({shorten(printable(detail), _EXCERPT_CHARS)})"

    def close(self) -> None:
        """Close every thread's connection (the feed and the reporter stopped)."""
        with self._connections_lock:
            connections, self._connections = self._connections, []
        for connection in connections:
            connection.close()


def _readable(sock: socket.socket) -> bool:
    """Whether an idle connection's socket has something to read (its end, mostly)."""
    try:
        if hasattr(select, "poll"):  # any descriptor number (select() stops at 1024)
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return bool(poller.poll(0))
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


#: Bytes of an error body read for its message; the rest is not worth waiting for.
_ERROR_BODY_LIMIT = 64_000


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the deadline passed")
    return left


def _set_timeout(connection: http.client.HTTPConnection, deadline: float) -> None:
    sock = connection.sock
    if sock is not None:
        sock.settimeout(_left(deadline))


def _shut_down(connection: http.client.HTTPConnection) -> None:
    """Wake a thread blocked on ``connection`` (from another thread): its read fails at once."""
    sock = connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _status_error(status: int, excerpt: str) -> LinkError:
    """The error of an answer with HTTP ``status`` and the server's message ``excerpt``."""
    said = f": {excerpt}" if excerpt else ""
    if status in (401, 403):
        return LinkRefused(f"the server refused this kernel (HTTP {status}){said}", status=status)
    if status == 404:
        return LinkNotFound(f"the server answered HTTP 404{said}", status=status)
    if status == 429:
        return LinkBusy(f"the server is busy (HTTP 429){said}", status=status)
    return LinkBadAnswer(f"the server answered HTTP {status}{said}", status=status)


class Backoff:
    """The wait before the next attempt after failures in a row: from :data:`MIN_BACKOFF`,
    doubling up to :data:`MAX_BACKOFF`; at least a busy server's ``Retry-After``, spread out
    so that the kernels it refused together do not come back together. ``cancel`` cuts a wait
    short."""

    def __init__(self, cancel: CancelToken) -> None:
        self._cancel = cancel
        self.next = MIN_BACKOFF

    def wait(self, error: LinkError) -> None:
        self._cancel.wait(self.delay(error))

    def delay(self, error: LinkError) -> float:
        """The wait after ``error`` (the next one will be longer), for a caller that schedules
        its retry rather than sleeping."""
        wait = self.next
        if isinstance(error, LinkBusy):
            wait = max(wait, RATE_LIMITED_WAIT) * random.uniform(1.0, 1.5)
        self.next = min(self.next * 2, MAX_BACKOFF)
        return wait

    def reset(self) -> None:
        """A request went through: the next failure waits the least again."""
        self.next = MIN_BACKOFF


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
