"""One JSON POST to a model server, with every failure translated into the exception tree.

This is the only module that knows about httpx errors. It enforces two limits that httpx alone
does not: a *total* deadline for the whole call (httpx timeouts are per operation, so a server
that drips one byte a second would never time out) and a size cap on the answer. Both, and a
cancel from another thread, abort the exchange by shutting the socket down: closing a socket does
not wake a thread blocked reading it, shutting it down does.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import socket
import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ...errors import (
    Cancelled,
    ProviderAuthError,
    ProviderBadResponse,
    ProviderError,
    ProviderHTTPError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
    RecapError,
)
from ...textutil import shorten
from .base import CancelToken, error_message

if TYPE_CHECKING:
    import ssl

    import httpx

#: Bytes of an error body read for its message; the rest is not worth waiting for.
_ERROR_BODY_LIMIT = 64_000
#: Longest excerpt of a server's error message quoted in one of our messages.
_EXCERPT_CHARS = 120
#: Headers whose values are secrets and must never appear in a message (a caller names its
#: own others with ``secret_headers``).
_SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key"})


class _Abort:
    """Aborts one exchange from another thread (deadline timer or cancel token)."""

    def __init__(self, streams: list[Any] | None = None) -> None:
        self._lock = threading.Lock()
        # A caller's client reuses its connection: its stream, seen connecting on an earlier
        # exchange, is in the list the caller keeps for that client.
        self._streams: list[Any] = streams if streams is not None else []
        self.reason: str | None = None

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore trace hook: remember every network stream so :meth:`fire` can reach it."""
        if event not in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            return
        stream = info.get("return_value")
        with self._lock:
            self._streams.append(stream)
            del self._streams[:-_KEPT_STREAMS]
            fired = self.reason is not None
        if fired:  # aborted while connecting: stop as soon as there is a socket to stop
            _shut_down(stream)

    def fire(self, reason: str) -> None:
        """Abort for ``reason`` ("timeout" or "cancel"); the first reason wins."""
        with self._lock:
            if self.reason is not None:
                return
            self.reason = reason
            streams = list(self._streams)
        for stream in streams:
            _shut_down(stream)


_KEPT_STREAMS = 4
"""Network streams remembered for a reused client (its latest connections)."""


def _shut_down(stream: Any) -> None:
    try:
        sock = stream.get_extra_info("socket")
        if isinstance(sock, socket.socket):
            sock.shutdown(socket.SHUT_RDWR)
    except (OSError, AttributeError):  # already closed, or a stream without a socket
        pass


@functools.lru_cache(maxsize=1)
def ssl_context() -> ssl.SSLContext:
    """Built once: loading the CA bundle costs ~50 ms, a client per call would pay it each time."""
    import httpx

    return httpx.create_ssl_context()


def post_json(
    url: str,
    *,
    headers: dict[str, str],
    body: dict[str, Any],
    timeout: float,
    cancel: CancelToken | None,
    provider_id: str,
    max_bytes: int = 1_000_000,
) -> dict[str, Any]:
    """POST ``body`` as JSON and return the JSON object answered, within ``timeout`` seconds.

    Raises a :class:`~jupyter_recap.errors.ProviderError` subclass (with ``provider=provider_id``)
    for every failure, or :class:`~jupyter_recap.errors.Cancelled` when ``cancel`` fires.
    """
    return request_json(
        "POST",
        url,
        headers=headers,
        body=body,
        timeout=timeout,
        cancel=cancel,
        provider_id=provider_id,
        max_bytes=max_bytes,
    )


def request_json(
    method: str,
    url: str,
    *,
    headers: dict[str, str],
    body: dict[str, Any] | None,
    timeout: float,
    cancel: CancelToken | None,
    provider_id: str,
    max_bytes: int = 1_000_000,
    secret_headers: Iterable[str] = (),
) -> dict[str, Any]:
    """Send one request (``body`` as JSON, if any) and return the JSON object answered.

    The same limits and error mapping as :func:`post_json`, for any method.
    ``secret_headers`` are more header names whose values no message may quote.
    """
    name = provider_id.split(":", 1)[0]
    status, raw = exchange(
        method,
        url,
        headers=headers,
        body=body,
        timeout=timeout,
        cancel=cancel,
        provider_id=provider_id,
        max_bytes=max_bytes,
        secret_headers=secret_headers,
    )
    if not 200 <= status < 300:
        secrets = _secrets(headers, secret_headers)
        raise _from_status(status, raw or b"", name, provider_id, secrets)
    if raw is None:
        raise ProviderBadResponse(
            f"answer too large: {name} sent more than {max_bytes:,} bytes", provider=provider_id
        )
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        message = f"{name} sent an answer that is not JSON"
        raise ProviderBadResponse(message, provider=provider_id) from None
    if not isinstance(data, dict):
        raise ProviderBadResponse(f"{name} sent JSON that is not an object", provider=provider_id)
    return data


def exchange(
    method: str,
    url: str,
    *,
    headers: dict[str, str],
    body: dict[str, Any] | None,
    timeout: float,
    cancel: CancelToken | None,
    provider_id: str,
    max_bytes: int = 1_000_000,
    secret_headers: Iterable[str] = (),
    client: httpx.Client | None = None,
    streams: list[Any] | None = None,
) -> tuple[int, bytes | None]:
    """One request within the limits: the status and the body (None when longer than
    ``max_bytes``; an error body is read up to 64 kB).

    Whatever the status, it is returned: the caller decides what an answer means (the kernel's
    link to its Jupyter server does, with errors of its own). Only getting no answer raises:
    :class:`~jupyter_recap.errors.ProviderTimeout`, ``ProviderUnavailable`` or
    ``ProviderBadResponse`` (``provider=provider_id``), or ``Cancelled`` when ``cancel`` fires.
    ``client``: a client of the caller's whose connections are kept for its next requests (one
    that asks the same server again and again), with ``streams``, a list the caller keeps for
    that client (its connections, so a cancel can abort a request on a reused one); else one
    client for this request alone.
    """
    import httpx  # lazily: importing jupyter_recap must stay cheap

    if cancel is not None:
        cancel.raise_if_cancelled()
    name = provider_id.split(":", 1)[0]
    secrets = _secrets(headers, secret_headers)
    timeout = max(timeout, 0.001)
    deadline = time.monotonic() + timeout
    abort = _Abort(streams)
    timer = threading.Timer(timeout, abort.fire, args=("timeout",))
    timer.daemon = True
    unregister = cancel.on_cancel(lambda: abort.fire("cancel")) if cancel else (lambda: None)
    timer.start()
    try:
        # identity: a compressed answer could expand far past max_bytes between two checks
        sent = {"accept-encoding": "identity", **headers}
        with contextlib.ExitStack() as stack:
            if client is None:
                client = stack.enter_context(
                    httpx.Client(timeout=httpx.Timeout(timeout), verify=ssl_context())
                )
            response = stack.enter_context(
                client.stream(
                    method,
                    url,
                    json=body,
                    headers=sent,
                    timeout=httpx.Timeout(timeout),
                    extensions={"trace": abort.trace},
                )
            )
            limit = max_bytes if response.is_success else _ERROR_BODY_LIMIT
            raw = _read_capped(response, limit, deadline, abort)
            status = response.status_code
    except Exception as exc:
        if abort.reason is not None:  # whatever broke, it broke because we aborted it
            raise _aborted(abort.reason, name, provider_id, timeout) from None
        if isinstance(exc, (httpx.HTTPError, httpx.StreamError, httpx.InvalidURL)):
            raise _from_httpx(exc, url, name, provider_id, timeout, secrets) from exc
        raise
    finally:
        timer.cancel()
        unregister()
    if abort.reason is not None:  # aborted after the last byte, or a close-delimited body
        raise _aborted(abort.reason, name, provider_id, timeout)
    return status, raw


def _read_capped(
    response: httpx.Response, limit: int, deadline: float, abort: _Abort
) -> bytes | None:
    """The body, or None when it is longer than ``limit`` (stops reading at that point)."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    buffer = bytearray()
    for chunk in response.iter_bytes():
        buffer += chunk
        if len(buffer) > limit:
            return None
        if time.monotonic() > deadline:  # the timer fires too; this just stops sooner
            abort.fire("timeout")
            break
    return bytes(buffer)


def _aborted(reason: str, name: str, provider_id: str, timeout: float) -> RecapError:
    if reason == "cancel":
        return Cancelled("the draft was cancelled")
    return ProviderTimeout(f"{name} sent no answer within {timeout:g} s", provider=provider_id)


def _from_httpx(
    exc: Exception, url: str, name: str, provider_id: str, timeout: float, secrets: list[str]
) -> ProviderError:
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return ProviderTimeout(f"{name} sent no answer within {timeout:g} s", provider=provider_id)
    if isinstance(exc, (httpx.TransportError, httpx.InvalidURL)):
        # connection refused, DNS, TLS, a proxy, an unsupported URL: all "cannot reach"
        detail = _one_line(re.sub(r"^\[Errno -?\d+\]\s*", "", str(exc)), secrets)
        where = _host(url)
        message = f"cannot reach {where}" + (f" ({detail})" if detail else "")
        return ProviderUnavailable(message, provider=provider_id)
    detail = _one_line(str(exc), secrets) or type(exc).__name__
    return ProviderBadResponse(f"{name} answer could not be read ({detail})", provider=provider_id)


def _from_status(
    status: int, raw: bytes, name: str, provider_id: str, secrets: list[str]
) -> ProviderError:
    if status in (401, 403):
        what = "rejected the API key" if secrets else "requires an API key"
        return ProviderAuthError(f"{name} {what} (HTTP {status})", provider=provider_id)
    excerpt = _one_line(error_message(raw), secrets)
    suffix = f": {excerpt}" if excerpt else ""
    if status == 429:
        message = f"{name} is rate limiting requests (HTTP 429){suffix}"
        return ProviderRateLimited(message, provider=provider_id)
    message = f"{name} answered HTTP {status}{suffix}"
    return ProviderHTTPError(message, provider=provider_id, status=status)


def _secrets(headers: dict[str, str], more: Iterable[str] = ()) -> list[str]:
    """Secret header values (and the token inside ``Bearer <token>``) to redact from messages."""
    names = _SECRET_HEADERS | {name.lower() for name in more}
    found: list[str] = []
    for key, value in headers.items():
        if key.lower() in names and value:
            found.append(value)
            token = value.partition(" ")[2]
            if token:
                found.append(token)
    return found


def _one_line(text: str, secrets: list[str]) -> str:
    """``text`` redacted, on one line, at most :data:`_EXCERPT_CHARS` characters."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return shorten(text, _EXCERPT_CHARS)


def _host(url: str) -> str:
    """``host:port`` of ``url`` without any user:password part."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return "the configured URL (invalid)"
    if not host:
        return "the configured URL"
    return f"{host}:{port}" if port else host
