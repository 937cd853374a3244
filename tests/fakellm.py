"""A fake LLM server for tests: real HTTP on 127.0.0.1, the three wire formats, scripted failures.

::

    with FakeLLM(text="<recap>…</recap>") as fake:
        fake.respond(status(429), hang())    # the first call gets 429, the second never an answer
        ...
        path, headers, body = fake.requests[0]

The wire format of an answer follows the path hit: ``…/chat/completions`` (OpenAI chat),
``…/responses`` (the OpenAI Responses API), ``…/v1/messages`` (Anthropic), ``…/api/chat``
(Ollama). Once the scripted behaviours are used up, every call gets a normal answer. Leaving the
``with`` block stops the server promptly, also while a handler is still hanging or dripping.

Real clients and agent frameworks can be pointed at it (``base_url=fake.url + "/v1"`` for
``openai``, ``base_url=fake.url`` for ``anthropic``, always with a dummy key)::

    fake.respond(tool_calls(("get_weather", {"city": "Oslo"})), answer("It is sunny."))
    ...
    assert fake.bodies("/responses")[1]["input"][-1]["type"] == "function_call_output"

Answers (:func:`answer`, :func:`tool_calls`, the default answer) are one neutral :class:`Reply`
rendered for the wire of the path hit: one JSON body (:func:`reply_json`) or, when the request
has ``"stream": true``, that wire's stream (:func:`reply_stream`: server-sent events, or
newline-delimited JSON for Ollama). :func:`drip`, :func:`huge` and :func:`raw` never stream.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import select
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple, cast

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
    if path.endswith("/responses"):
        return "responses"
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


class ToolCall(NamedTuple):
    """One tool call of a :class:`Reply`; an empty ``id`` gets the server's next ``call_N``."""

    name: str
    arguments: dict[str, Any]
    id: str = ""


class Reply(NamedTuple):
    """What the fake model says, before it is rendered in a wire format.

    ``text`` is None for a reply that only calls tools (no text block / message item).
    """

    text: str | None
    model: str = ""
    tokens_in: int = 321
    tokens_out: int = 24
    tool_calls: tuple[ToolCall, ...] = ()


CREATED = 1_735_689_600  # 2025-01-01T00:00:00Z, the fake's creation time of every answer


def _arguments(tool: ToolCall) -> str:
    return json.dumps(tool.arguments)


def _responses_usage(reply: Reply) -> dict[str, Any]:
    return {
        "input_tokens": reply.tokens_in,
        "output_tokens": reply.tokens_out,
        "total_tokens": reply.tokens_in + reply.tokens_out,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }


def _responses_message(text: str | None, status: str = "completed") -> dict[str, Any]:
    """A message output item: one output_text part with ``text``, none for None."""
    content = [] if text is None else [{"type": "output_text", "text": text, "annotations": []}]
    return {
        "type": "message",
        "id": "msg_fake",
        "status": status,
        "role": "assistant",
        "content": content,
    }


def _responses_function_call(tool: ToolCall, arguments: str, status: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{tool.id}",
        "call_id": tool.id,
        "name": tool.name,
        "arguments": arguments,
        "status": status,
    }


def _responses_object(
    reply: Reply, output: list[dict[str, Any]], status: str = "completed"
) -> dict[str, Any]:
    return {
        "id": "resp_fake",
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "model": reply.model,
        "output": output,
        "usage": _responses_usage(reply) if status == "completed" else None,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "parallel_tool_calls": True,
        "temperature": 1.0,
        "top_p": 1.0,
        "tool_choice": "auto",
        "tools": [],
        "text": {"format": {"type": "text"}},
        "reasoning": {"effort": None, "summary": None},
        "truncation": "disabled",
        "store": False,
        "previous_response_id": None,
        "max_output_tokens": None,
    }


def _responses_output(reply: Reply) -> list[dict[str, Any]]:
    output = [] if reply.text is None else [_responses_message(reply.text)]
    output.extend(
        _responses_function_call(tool, _arguments(tool), "completed") for tool in reply.tool_calls
    )
    return output


def reply_json(wire: str, reply: Reply) -> dict[str, Any]:
    """``reply`` as one (non-streamed) JSON answer in ``wire`` format."""
    tools = reply.tool_calls
    if wire == "openai":
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if tools:
            message["tool_calls"] = [
                {
                    "id": tool.id,
                    "type": "function",
                    "function": {"name": tool.name, "arguments": _arguments(tool)},
                }
                for tool in tools
            ]
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": CREATED,
            "model": reply.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if tools else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": reply.tokens_in,
                "completion_tokens": reply.tokens_out,
                "total_tokens": reply.tokens_in + reply.tokens_out,
            },
        }
    if wire == "responses":
        return _responses_object(reply, _responses_output(reply))
    if wire == "anthropic":
        content: list[dict[str, Any]] = []
        if reply.text is not None:
            content.append({"type": "text", "text": reply.text})
        content.extend(
            {"type": "tool_use", "id": tool.id, "name": tool.name, "input": tool.arguments}
            for tool in tools
        )
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": reply.model,
            "content": content,
            "stop_reason": "tool_use" if tools else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": reply.tokens_in, "output_tokens": reply.tokens_out},
        }
    ollama_message: dict[str, Any] = {"role": "assistant", "content": reply.text or ""}
    if tools:
        ollama_message["tool_calls"] = [
            {"function": {"name": tool.name, "arguments": tool.arguments}} for tool in tools
        ]
    return {
        "model": reply.model,
        "created_at": "2025-01-01T00:00:00Z",
        "message": ollama_message,
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": reply.tokens_in,
        "eval_count": reply.tokens_out,
    }


def pieces(text: str, count: int = 3) -> list[str]:
    """``text`` cut into ``count`` (fewer for a shorter text, none for "") consecutive pieces."""
    count = min(count, len(text))
    bounds = [len(text) * index // count for index in range(count + 1)] if count else [0]
    return [text[bounds[index] : bounds[index + 1]] for index in range(count)]


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    body = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {body}\n\n".encode()


def _openai_stream(reply: Reply, include_usage: bool) -> Iterator[bytes]:
    def chunk(choices: list[dict[str, Any]], **usage: Any) -> bytes:
        data: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": reply.model,
            "choices": choices,
        }
        if include_usage:  # as OpenAI does: null in every chunk but the last
            data["usage"] = usage or None
        return _sse(data)

    def delta(fields: dict[str, Any], finish: str | None = None) -> bytes:
        return chunk([{"index": 0, "delta": fields, "logprobs": None, "finish_reason": finish}])

    yield delta({"role": "assistant", "content": None if reply.text is None else ""})
    for piece in pieces(reply.text or ""):
        yield delta({"content": piece})
    for index, tool in enumerate(reply.tool_calls):
        function = {"name": tool.name, "arguments": ""}
        start = {"index": index, "id": tool.id, "type": "function", "function": function}
        yield delta({"tool_calls": [start]})
        for piece in pieces(_arguments(tool), 2):  # no id/name again: the SDK would append them
            yield delta({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield delta({}, "tool_calls" if reply.tool_calls else "stop")
    if include_usage:
        yield chunk([], **reply_json("openai", reply)["usage"])
    yield _sse("[DONE]")


def _responses_stream(reply: Reply) -> Iterator[bytes]:
    numbers = itertools.count()

    def event(kind: str, /, **fields: Any) -> bytes:  # a function call event has a "name"
        return _sse({"type": kind, "sequence_number": next(numbers), **fields}, kind)

    yield event("response.created", response=_responses_object(reply, [], "in_progress"))
    yield event("response.in_progress", response=_responses_object(reply, [], "in_progress"))
    index = 0
    if reply.text is not None:
        where = {"item_id": "msg_fake", "output_index": index}
        item = _responses_message(None, "in_progress")
        yield event("response.output_item.added", output_index=index, item=item)
        part = {"type": "output_text", "text": "", "annotations": []}
        yield event("response.content_part.added", **where, content_index=0, part=part)
        for piece in pieces(reply.text):
            yield event(
                "response.output_text.delta", **where, content_index=0, delta=piece, logprobs=[]
            )
        yield event(
            "response.output_text.done", **where, content_index=0, text=reply.text, logprobs=[]
        )
        part = {**part, "text": reply.text}
        yield event("response.content_part.done", **where, content_index=0, part=part)
        yield event(
            "response.output_item.done", output_index=index, item=_responses_message(reply.text)
        )
        index += 1
    for tool in reply.tool_calls:
        arguments = _arguments(tool)
        where = {"item_id": f"fc_{tool.id}", "output_index": index}
        item = _responses_function_call(tool, "", "in_progress")
        yield event("response.output_item.added", output_index=index, item=item)
        for piece in pieces(arguments, 2):
            yield event("response.function_call_arguments.delta", **where, delta=piece)
        yield event(
            "response.function_call_arguments.done", **where, name=tool.name, arguments=arguments
        )
        item = _responses_function_call(tool, arguments, "completed")
        yield event("response.output_item.done", output_index=index, item=item)
        index += 1
    yield event("response.completed", response=reply_json("responses", reply))


def _anthropic_stream(reply: Reply) -> Iterator[bytes]:
    def event(kind: str, /, **fields: Any) -> bytes:
        return _sse({"type": kind, **fields}, kind)

    message = reply_json("anthropic", reply)
    start = {**message, "content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": reply.tokens_in, "output_tokens": 1}
    yield event("message_start", message=start)
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield event(
                "content_block_start", index=index, content_block={"type": "text", "text": ""}
            )
            for piece in pieces(block["text"]):
                yield event(
                    "content_block_delta", index=index, delta={"type": "text_delta", "text": piece}
                )
        else:
            empty = {**block, "input": {}}
            yield event("content_block_start", index=index, content_block=empty)
            for piece in pieces(json.dumps(block["input"]), 2):
                delta = {"type": "input_json_delta", "partial_json": piece}
                yield event("content_block_delta", index=index, delta=delta)
        yield event("content_block_stop", index=index)
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    yield event("message_delta", delta=stop, usage={"output_tokens": reply.tokens_out})
    yield event("message_stop")


def _ollama_stream(reply: Reply) -> Iterator[bytes]:
    def line(data: dict[str, Any]) -> bytes:
        return json.dumps(data).encode() + b"\n"

    final = reply_json("ollama", reply)
    head = {"model": reply.model, "created_at": final["created_at"]}
    for piece in pieces(reply.text or ""):
        yield line({**head, "message": {"role": "assistant", "content": piece}, "done": False})
    if reply.tool_calls:
        message = {**final["message"], "content": ""}
        yield line({**head, "message": message, "done": False})
    yield line({**final, "message": {"role": "assistant", "content": ""}})


def reply_stream(wire: str, reply: Reply, *, include_usage: bool = False) -> Iterator[bytes]:
    """``reply`` as ``wire``'s stream, one piece of the body (an event, a line) at a time.

    ``include_usage`` (OpenAI chat: the request's ``stream_options.include_usage``) adds the
    last chunk with the token counts.
    """
    if wire == "openai":
        return _openai_stream(reply, include_usage)
    if wire == "responses":
        return _responses_stream(reply)
    if wire == "anthropic":
        return _anthropic_stream(reply)
    return _ollama_stream(reply)


def wants_stream(body: Any) -> bool:
    """Whether a request body asks for a streamed answer (``"stream": true``)."""
    return isinstance(body, dict) and body.get("stream") is True


def _send_stream(call: Call, content_type: str, chunks: Iterable[bytes]) -> None:
    handler = call.handler
    handler.send_response(200)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Cache-Control", "no-cache")
    handler.end_headers()  # without a length, HTTP/1.0: the body ends when we close
    for chunk in chunks:
        if call.stop.is_set():
            return
        handler.wfile.write(chunk)
        handler.wfile.flush()


def send_reply(call: Call, reply: Reply) -> None:
    """Answer ``call`` with ``reply``: streamed if the request asked for it, else one JSON body.

    Tool calls without an id get the server's next ``call_N`` here.
    """
    fake = cast(_Server, call.handler.server).fake
    tools = tuple(
        tool if tool.id else tool._replace(id=fake.next_call_id()) for tool in reply.tool_calls
    )
    reply = reply._replace(tool_calls=tools)
    if not wants_stream(call.body):
        _send(call, 200, json.dumps(reply_json(call.wire, reply)).encode())
        return
    options = call.body.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    content_type = "application/x-ndjson" if call.wire == "ollama" else "text/event-stream"
    _send_stream(call, content_type, reply_stream(call.wire, reply, include_usage=include_usage))


def _model(call: Call) -> Any:
    return call.body.get("model", "") if isinstance(call.body, dict) else ""


def answer_json(
    wire: str, text: str, model: str, tokens_in: int, tokens_out: int
) -> dict[str, Any]:
    """A successful answer in ``wire`` format."""
    return reply_json(wire, Reply(text, model, tokens_in, tokens_out))


def answer(text: str | None = None, *, tokens_in: int = 321, tokens_out: int = 24) -> Behaviour:
    """A normal answer (the server's default text unless ``text`` is given).

    Streamed in the wire's format when the request has ``"stream": true``.
    """

    def run(call: Call) -> None:
        reply = Reply(call.text if text is None else text, _model(call), tokens_in, tokens_out)
        send_reply(call, reply)

    return run


def _tool_call(spec: Any) -> ToolCall:
    """``(name, arguments)`` or ``(name, arguments, id)`` as a :class:`ToolCall`, checked."""
    if (
        not isinstance(spec, tuple)
        or len(spec) not in (2, 3)
        or not isinstance(spec[0], str)
        or not isinstance(spec[1], dict)
        or not isinstance(spec[-1] if len(spec) == 3 else "", str)
    ):
        raise TypeError(f"a tool call is (name, arguments dict[, id str]), not {spec!r}")
    return ToolCall(*spec)


ToolCallSpec = tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], str]


def tool_calls(
    *calls: ToolCallSpec, text: str | None = None, tokens_in: int = 321, tokens_out: int = 24
) -> Behaviour:
    """An answer that calls tools: each call ``(name, arguments)`` or ``(name, arguments, id)``.

    Rendered for the wire of the path hit (OpenAI chat ``message.tool_calls``, Responses API
    ``function_call`` items, Anthropic ``tool_use`` blocks, Ollama ``message.tool_calls``),
    after ``text`` when given; streamed when the request has ``"stream": true``. Calls without
    an id get ``call_1``, ``call_2`` … (unique per server).
    """
    tools = tuple(_tool_call(spec) for spec in calls)

    def run(call: Call) -> None:
        send_reply(call, Reply(text, _model(call), tokens_in, tokens_out, tools))

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
        elif call.wire == "responses":
            data = {
                "error": {"message": message, "type": "server_error", "param": None, "code": None}
            }
        else:
            data = {"error": {"message": message, "type": "server_error"}}
        _send(call, code, json.dumps(data).encode())

    return run


def model_not_found(*, openrouter: bool = False) -> Behaviour:
    """The provider's answer to a request naming a model it does not have, in the wire's own
    shape: OpenAI 404 ``model_not_found``, Anthropic 404 ``not_found_error``, Ollama 404;
    ``openrouter``: OpenRouter's 400 "… is not a valid model ID" (its wire is OpenAI's)."""

    def run(call: Call) -> None:
        model = _model(call)
        code = 404
        if openrouter:
            code = 400
            data: dict[str, Any] = {"error": {"message": f"{model} is not a valid model ID"}}
            data["error"]["code"] = 400
        elif call.wire == "anthropic":
            data = {
                "type": "error",
                "error": {"type": "not_found_error", "message": f"model: {model}"},
                "request_id": "req_fake",
            }
        elif call.wire == "ollama":
            data = {"error": f'model "{model}" not found, try pulling it first'}
        else:
            message = f"The model `{model}` does not exist or you do not have access to it."
            data = {
                "error": {
                    "message": message,
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "model_not_found",
                }
            }
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
        "responses": {
            **_responses_object(Reply(None), [], "incomplete"),
            "incomplete_details": {"reason": "max_output_tokens"},
        },
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
        elif call.wire == "responses":
            data["status"] = "incomplete"
            data["incomplete_details"] = {"reason": "max_output_tokens"}
        _send(call, 200, json.dumps(data).encode())

    return run


def hang() -> Behaviour:
    """Never answer (until the server stops).

    With no time limit: a handler that gave up after a while closed the connection, and the
    client of a run the test had interrupted (still going in a thread of a module's shared
    kernel) retried, taking the replies a later test had queued."""

    def run(call: Call) -> None:
        call.stop.wait()

    return run


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
                cast(_Server, call.handler.server).fake.disconnects.append(time.monotonic())
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
    """A fake LLM HTTP server on 127.0.0.1 (or ``host``; random port) in a background thread."""

    def __init__(self, text: str = DEFAULT_TEXT, *, host: str = "127.0.0.1") -> None:
        self.text = text
        self.host = host
        self.requests: list[Recorded] = []
        self.disconnects: list[float] = []
        self.stop = threading.Event()
        self._queue: list[Behaviour] = []
        self._lock = threading.Lock()
        self._call_ids = itertools.count(1)
        self._server = _Server((host, 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:43125`` (no trailing slash)."""
        return f"http://{self.host}:{self.port}"

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def url_as(self, name: str) -> str:
        """The base URL with the host spelled ``name`` (one that resolves to this server)."""
        return f"http://{name}:{self.port}"

    def respond(self, *behaviours: Behaviour) -> None:
        """Queue behaviours for the next calls, one each, in order."""
        with self._lock:
            self._queue.extend(behaviours)

    def reset(self) -> None:
        """Forget the queued behaviours that were not used (a test that stopped half-way)."""
        with self._lock:
            self._queue.clear()

    def next_behaviour(self) -> Behaviour:
        """The next queued behaviour, or a normal answer."""
        with self._lock:
            return self._queue.pop(0) if self._queue else answer()

    def next_call_id(self) -> str:
        """A tool call id not used before by this server: ``call_1``, ``call_2`` …"""
        with self._lock:
            return f"call_{next(self._call_ids)}"

    def bodies(self, path_suffix: str | None = None) -> list[Any]:
        """The recorded request bodies, only those whose path ends with ``path_suffix`` if given.

        The query string is not part of the path here (``/v1/messages?beta=true`` ends with
        ``/messages``).
        """
        return [
            request.body
            for request in list(self.requests)
            if path_suffix is None or request.path.split("?", 1)[0].endswith(path_suffix)
        ]

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


def hosted_name() -> str:
    """This machine's own host name: it resolves to a local address, yet it is no loopback
    name, so jupyter_recap takes a model server there for a hosted one. Bind a FakeLLM to
    :func:`hosted_address` and call it by this name to play a hosted provider, offline."""
    return socket.gethostname()


def hosted_address() -> str:
    return socket.gethostbyname(socket.gethostname())
