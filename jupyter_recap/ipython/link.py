"""The kernel's HTTP link to the Jupyter server that started it: finding that server, one
request at a time over a kept connection, the errors that say what failed, and the wait after
failures.

Both of the kernel's clients of the server (the focus feed, :mod:`.feed`, and the state
reporter, :mod:`.reporter`) talk to it through one :class:`ServerLink`; they differ in what
they ask and when, not in how a request is made, so the transport is here once. Its errors are
:class:`~jupyter_recap.errors.LinkError` and its subclasses (in the package's one exception
tree); after a failure a client waits as one :class:`Backoff` says.

The kernel authenticates with :func:`~jupyter_recap.wire.kernel_proof`: an HMAC keyed by its own
ZMQ connection key (which the server that started it also holds) over its kernel id. It opens that
kernel's routes and no other's, and it is never in the environment, which every subprocess of a
kernel inherits.
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
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from ..errors import (
    Cancelled,
    LinkBadAnswer,
    LinkBusy,
    LinkError,
    LinkNotFound,
    LinkRefused,
    LinkUnreachable,
)
from ..pipeline.providers.base import CancelToken, error_message
from ..textutil import printable, shorten
from ..wire import KERNEL_HEADER, kernel_proof

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


class ServerLink:
    """This kernel's routes on its Jupyter server, with its credentials: one JSON request at a
    time, and every failure as a :class:`~jupyter_recap.errors.LinkError` (shared by the feed
    and the reporter).

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

        Raises a :class:`~jupyter_recap.errors.LinkError`, or
        :class:`~jupyter_recap.errors.Cancelled` when ``cancel`` fires.
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
