"""A fake LLM server for tests: real HTTP on 127.0.0.1, the three wire formats, scripted failures.

::

    with FakeLLM(text="<recap>…</recap>") as fake:
        fake.respond(status(429), hang())    # the first call gets 429, the second never an answer
        ...
        path, headers, body = fake.requests[0]

The wire format of an answer follows the path hit: ``…/chat/completions`` (OpenAI),
``…/v1/messages`` (Anthropic), ``…/api/chat`` (Ollama). Once the scripted behaviours are used up,
every call gets a normal answer. Leaving the ``with`` block stops the server promptly, also
while a handler is still hanging or dripping.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple

import pytest

DEFAULT_TEXT = "<recap>You are fixing the flaky CSV loader. Next: rerun the tests.</recap>"


class Recorded(NamedTuple):
    """One request the server received (headers with lower-case names)."""

    path: str
    headers: dict[str, str]
    body: Any


class Call(NamedTuple):
    """What a behaviour gets: the handler to write to, the wire format, the request body."""

    handler: BaseHTTPRequestHandler
    wire: str
    body: Any
    stop: threading.Event
    text: str


Behaviour = Callable[[Call], None]


def _wire(path: str) -> str | None:
    path = path.split("?", 1)[0]
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/v1/messages"):
        return "anthropic"
    if path.endswith("/api/chat"):
        return "ollama"
    return None


def _send(
    call: Call, code: int, payload: bytes, content_type: str = "application/json", **headers: str
) -> None:
    handler = call.handler
    handler.send_response(code)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(payload)))
    for name, value in headers.items():
        handler.send_header(name.replace("_", "-"), value)
    handler.end_headers()
    handler.wfile.write(payload)


def answer_json(
    wire: str, text: str, model: str, tokens_in: int, tokens_out: int
) -> dict[str, Any]:
    """A successful answer in ``wire`` format."""
    if wire == "openai":
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": tokens_in,
                "completion_tokens": tokens_out,
                "total_tokens": tokens_in + tokens_out,
            },
        }
    if wire == "anthropic":
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out},
        }
    return {
        "model": model,
        "created_at": "2025-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": text},
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": tokens_in,
        "eval_count": tokens_out,
    }


def answer(text: str | None = None, *, tokens_in: int = 321, tokens_out: int = 24) -> Behaviour:
    """A normal answer (the server's default text unless ``text`` is given)."""

    def run(call: Call) -> None:
        model = call.body.get("model", "") if isinstance(call.body, dict) else ""
        data = answer_json(
            call.wire, call.text if text is None else text, model, tokens_in, tokens_out
        )
        _send(call, 200, json.dumps(data).encode())

    return run


def status(
    code: int, message: str = "something went wrong", *, body: bytes | None = None
) -> Behaviour:
    """An error status with the wire format's error body (or ``body`` as given)."""

    def run(call: Call) -> None:
        if body is not None:
            _send(call, code, body)
            return
        if call.wire == "anthropic":
            data: dict[str, Any] = {
                "type": "error",
                "error": {"type": "api_error", "message": message},
            }
        elif call.wire == "ollama":
            data = {"error": message}
        else:
            data = {"error": {"message": message, "type": "server_error"}}
        _send(call, code, json.dumps(data).encode())

    return run


def raw(
    payload: bytes, *, code: int = 200, content_type: str = "application/json", **headers: str
) -> Behaviour:
    """Exactly ``payload`` (e.g. malformed JSON) with the given status and headers."""
    return lambda call: _send(call, code, payload, content_type, **headers)


def empty_choices() -> Behaviour:
    """A well-formed answer without any text: no choices / no content blocks / empty message."""
    shapes = {
        "openai": {"choices": [], "usage": {}},
        "anthropic": {"type": "message", "content": [], "stop_reason": "max_tokens"},
        "ollama": {"message": {"role": "assistant", "content": ""}, "done": True},
    }
    return lambda call: _send(call, 200, json.dumps(shapes[call.wire]).encode())


def empty_content() -> Behaviour:
    """An answer whose text is empty (OpenAI: a choice whose content is null)."""

    def run(call: Call) -> None:
        data = answer_json(call.wire, "", "m", 1, 0)
        if call.wire == "openai":
            data["choices"][0]["message"]["content"] = None
            data["choices"][0]["finish_reason"] = "length"
        _send(call, 200, json.dumps(data).encode())

    return run


def hang() -> Behaviour:
    """Never answer (until the server stops)."""
    return lambda call: call.stop.wait(60)


def slow(seconds: float) -> Behaviour:
    """Answer normally after ``seconds``, unless the client hangs up first.

    A hang-up is recorded in ``FakeLLM.disconnects`` (the time it was noticed), so tests can
    prove that a cancelled draft really dropped its connection.
    """

    def run(call: Call) -> None:
        sock = call.handler.connection
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not call.stop.is_set():
            readable, _, _ = select.select([sock], [], [], 0.02)
            if readable and not sock.recv(1, socket.MSG_PEEK):
                call.handler.server.fake.disconnects.append(time.monotonic())
                return
        answer()(call)

    return run


def huge(size: int = 10_000_000, *, declare_length: bool = False) -> Behaviour:
    """A 200 answer of ``size`` bytes, written in chunks until the client goes away."""

    def run(call: Call) -> None:
        handler = call.handler
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        if declare_length:
            handler.send_header("Content-Length", str(size))
        handler.end_headers()  # without a length, HTTP/1.0: the body ends when we close
        chunk = b" " * 65536
        sent = 0
        while sent < size and not call.stop.is_set():
            handler.wfile.write(chunk[: size - sent])
            sent += len(chunk)

    return run


def drip(interval: float = 0.05) -> Behaviour:
    """A normal answer sent one byte every ``interval`` seconds."""

    def run(call: Call) -> None:
        model = call.body.get("model", "") if isinstance(call.body, dict) else ""
        payload = json.dumps(answer_json(call.wire, call.text, model, 1, 1)).encode()
        handler = call.handler
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.flush()
        for index in range(len(payload)):
            if call.stop.wait(interval):
                return
            handler.wfile.write(payload[index : index + 1])
            handler.wfile.flush()

    return run


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a hanging handler must never keep the test process alive
    fake: FakeLLM

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks up the host's FQDN, which can stall on a sandbox's DNS
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that hang up mid-answer are the point of several tests


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(length)
        try:
            body: Any = json.loads(data)
        except ValueError:
            body = None
        headers = {name.lower(): value for name, value in self.headers.items()}
        fake.requests.append(Recorded(self.path, headers, body))
        wire = _wire(self.path)
        call = Call(self, wire or "openai", body, fake.stop, fake.text)
        if wire is None:
            status(404, f"no route {self.path}")(call)
            return
        with contextlib.suppress(OSError):  # the client hung up (timeout, cancel, size cap)
            fake.next_behaviour()(call)


class FakeLLM:
    """A fake LLM HTTP server on 127.0.0.1 (random port) in a background thread."""

    def __init__(self, text: str = DEFAULT_TEXT) -> None:
        self.text = text
        self.requests: list[Recorded] = []
        self.disconnects: list[float] = []
        self.stop = threading.Event()
        self._queue: list[Behaviour] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:43125`` (no trailing slash)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def respond(self, *behaviours: Behaviour) -> None:
        """Queue behaviours for the next calls, one each, in order."""
        with self._lock:
            self._queue.extend(behaviours)

    def next_behaviour(self) -> Behaviour:
        """The next queued behaviour, or a normal answer."""
        with self._lock:
            return self._queue.pop(0) if self._queue else answer()

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> bool:
        """Block until ``count`` requests arrived (for tests that act mid-request)."""
        deadline = time.monotonic() + timeout
        while len(self.requests) < count:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def start(self) -> FakeLLM:
        """Start serving (``with FakeLLM() as fake`` does this)."""
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving; wakes hanging and dripping handlers."""
        self.stop.set()
        if self._thread.is_alive():  # shutdown() would wait forever for a loop never started
            self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A running :class:`FakeLLM`, stopped after the test."""
    with FakeLLM() as fake:
        yield fake
