"""The fake LLM server speaks each wire well enough for the real client libraries.

Every test points a real, installed client (``openai``, ``anthropic``; plain ``httpx`` for
Ollama) at :class:`fakellm.FakeLLM` with a dummy key, so agent frameworks built on them can be
tested against the fake. Nothing here reaches the internet.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, cast

import anthropic
import httpx
import openai
import pytest
from anthropic.types import InputJSONDelta, RawContentBlockDeltaEvent, TextBlock, ToolUseBlock
from fakellm import (
    DEFAULT_TEXT,
    FakeLLM,
    Reply,
    ToolCall,
    answer,
    reply_json,
    reply_stream,
    status,
    tool_calls,
)
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCall,
)
from openai.types.responses import Response, ResponseFunctionToolCall, ResponseStreamEvent
from pydantic import TypeAdapter

WEATHER = {"city": "Oslo", "days": 2, "units": ["C"]}
RESPONSE_EVENT: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
ANTHROPIC_EVENT: TypeAdapter[Any] = TypeAdapter(anthropic.types.RawMessageStreamEvent)


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


@pytest.fixture
def oai(fake: FakeLLM) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        base_url=fake.url + "/v1", api_key="sk-dummy", max_retries=0, timeout=5
    ) as client:
        yield client


@pytest.fixture
def claude(fake: FakeLLM) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(
        base_url=fake.url, api_key="sk-ant-dummy", max_retries=0, timeout=5
    ) as client:
        yield client


def ask(text: str = "hi") -> list[Any]:
    """One user message (``Any``: the SDKs each want their own TypedDict)."""
    return [{"role": "user", "content": text}]


def functions(message: ChatCompletionMessage) -> list[ChatCompletionMessageFunctionToolCall]:
    calls = message.tool_calls or []
    assert all(isinstance(call, ChatCompletionMessageFunctionToolCall) for call in calls)
    return [call for call in calls if isinstance(call, ChatCompletionMessageFunctionToolCall)]


def function_calls(response: Response) -> list[ResponseFunctionToolCall]:
    return [item for item in response.output if isinstance(item, ResponseFunctionToolCall)]


def text_blocks(message: anthropic.types.Message) -> list[str]:
    return [block.text for block in message.content if isinstance(block, TextBlock)]


def tool_uses(message: anthropic.types.Message) -> list[ToolUseBlock]:
    return [block for block in message.content if isinstance(block, ToolUseBlock)]


# OpenAI chat completions


def test_openai_chat_answer(fake: FakeLLM, oai: openai.OpenAI) -> None:
    fake.respond(answer("Hello there.", tokens_in=7, tokens_out=3))
    completion = oai.chat.completions.create(model="gpt-4o-mini", messages=ask())
    choice = completion.choices[0]
    assert choice.message.content == "Hello there."
    assert choice.finish_reason == "stop"
    assert choice.message.tool_calls is None
    assert completion.model == "gpt-4o-mini"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (7, 3)
    assert completion.usage.total_tokens == 10
    assert isinstance(completion.created, int)


def test_openai_chat_default_answer(fake: FakeLLM, oai: openai.OpenAI) -> None:
    completion = oai.chat.completions.create(model="m", messages=ask())
    assert completion.choices[0].message.content == DEFAULT_TEXT


def test_openai_chat_tool_calls(fake: FakeLLM, oai: openai.OpenAI) -> None:
    fake.respond(tool_calls(("get_weather", WEATHER), ("get_time", {})))
    completion = oai.chat.completions.create(model="m", messages=ask())
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    calls = functions(choice.message)
    assert [call.id for call in calls] == ["call_1", "call_2"]
    assert [call.type for call in calls] == ["function", "function"]
    assert [call.function.name for call in calls] == ["get_weather", "get_time"]
    assert json.loads(calls[0].function.arguments) == WEATHER
    assert json.loads(calls[1].function.arguments) == {}


def test_openai_chat_tool_calls_with_text_and_own_id(fake: FakeLLM, oai: openai.OpenAI) -> None:
    fake.respond(tool_calls(("lookup", {"q": "x"}, "call_mine"), text="Let me look."))
    message = oai.chat.completions.create(model="m", messages=ask()).choices[0].message
    assert message.content == "Let me look."
    assert [call.id for call in message.tool_calls or []] == ["call_mine"]


def test_openai_chat_stream(fake: FakeLLM, oai: openai.OpenAI) -> None:
    fake.respond(answer("Streaming works fine.", tokens_in=5, tokens_out=4))
    stream = oai.chat.completions.create(
        model="gpt-4o-mini",
        messages=ask(),
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    deltas = [chunk.choices[0].delta.content for chunk in chunks if chunk.choices]
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(delta or "" for delta in deltas) == "Streaming works fine."
    assert len([delta for delta in deltas if delta]) in (2, 3)
    assert [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices][-1] == "stop"
    last = chunks[-1]
    assert last.choices == []
    assert last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (5, 4)
    assert all(chunk.usage is None for chunk in chunks[:-1])
    assert fake.requests[0].body["stream"] is True


def test_openai_chat_stream_without_usage(fake: FakeLLM, oai: openai.OpenAI) -> None:
    chunks = list(oai.chat.completions.create(model="m", messages=ask(), stream=True))
    assert all(chunk.choices for chunk in chunks)
    assert all(chunk.usage is None for chunk in chunks)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks) == DEFAULT_TEXT


def test_openai_chat_stream_tool_calls(fake: FakeLLM, oai: openai.OpenAI) -> None:
    fake.respond(tool_calls(("get_weather", WEATHER), ("get_time", {"tz": "UTC"}), text="On it."))
    with oai.chat.completions.stream(model="m", messages=ask()) as stream:
        events = [event.type for event in stream]
        completion = stream.get_final_completion()
    assert "tool_calls.function.arguments.done" in events
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "On it."
    calls = functions(choice.message)
    assert [(call.id, call.function.name) for call in calls] == [
        ("call_1", "get_weather"),
        ("call_2", "get_time"),
    ]
    assert json.loads(calls[0].function.arguments) == WEATHER
    assert json.loads(calls[1].function.arguments) == {"tz": "UTC"}


# OpenAI Responses API


def test_responses_answer(fake: FakeLLM, oai: openai.OpenAI) -> None:
    fake.respond(answer("A response.", tokens_in=11, tokens_out=2))
    response = oai.responses.create(model="gpt-4o-mini", input="hi")
    assert response.output_text == "A response."
    assert response.status == "completed"
    assert response.model == "gpt-4o-mini"
    assert response.object == "response"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (11, 2)
    assert response.usage.total_tokens == 13
    assert response.usage.output_tokens_details.reasoning_tokens == 0
    assert fake.requests[0].path == "/v1/responses"


def test_responses_answer_validates_strictly(fake: FakeLLM, oai: openai.OpenAI) -> None:
    """The fake's object passes the SDK's pydantic model with validation, not just construct."""
    raw = oai.responses.with_raw_response.create(model="m", input="hi")
    response = Response.model_validate(json.loads(raw.text))
    assert response.output_text == DEFAULT_TEXT


REPLIES = [
    Reply("Some text", "m"),
    Reply("", "m"),
    Reply(None, "m", tool_calls=(ToolCall("a", WEATHER, "c1"), ToolCall("b", {}, "c2"))),
    Reply("Text first", "m", tool_calls=(ToolCall("a", {"x": 1}, "c1"),)),
]


@pytest.mark.parametrize("reply", REPLIES)
def test_every_shape_validates_strictly(reply: Reply) -> None:
    """Frameworks (pydantic-ai) re-validate what the SDKs only construct: be valid for them too."""
    ChatCompletion.model_validate(reply_json("openai", reply))
    Response.model_validate(reply_json("responses", reply))
    anthropic.types.Message.model_validate(reply_json("anthropic", reply))
    for include_usage in (False, True):
        for chunk in sse_data(reply_stream("openai", reply, include_usage=include_usage)):
            if chunk != "[DONE]":
                ChatCompletionChunk.model_validate_json(chunk)
    for event in sse_data(reply_stream("responses", reply)):
        RESPONSE_EVENT.validate_json(event)
    for event in sse_data(reply_stream("anthropic", reply)):
        ANTHROPIC_EVENT.validate_json(event)


def sse_data(stream: Iterator[bytes]) -> list[str]:
    return [chunk.decode().split("data: ", 1)[1].strip() for chunk in stream]


def test_responses_function_calls(fake: FakeLLM, oai: openai.OpenAI) -> None:
    fake.respond(tool_calls(("get_weather", WEATHER), ("get_time", {}), text="Checking."))
    response = oai.responses.create(model="m", input="hi")
    assert response.output_text == "Checking."
    assert [item.type for item in response.output] == ["message", "function_call", "function_call"]
    calls = function_calls(response)
    assert [(call.call_id, call.name) for call in calls] == [
        ("call_1", "get_weather"),
        ("call_2", "get_time"),
    ]
    assert json.loads(calls[0].arguments) == WEATHER
    assert json.loads(calls[1].arguments) == {}


def test_responses_function_call_only(fake: FakeLLM, oai: openai.OpenAI) -> None:
    fake.respond(tool_calls(("get_time", {"tz": "UTC"})))
    response = oai.responses.create(model="m", input="hi")
    assert response.output_text == ""
    assert [item.type for item in response.output] == ["function_call"]


def test_responses_stream(fake: FakeLLM, oai: openai.OpenAI) -> None:
    fake.respond(answer("Events in order.", tokens_in=3, tokens_out=3))
    with oai.responses.stream(model="m", input="hi") as stream:
        deltas = [event.delta for event in stream if event.type == "response.output_text.delta"]
        response = stream.get_final_response()
    assert "".join(deltas) == "Events in order."
    assert len(deltas) == 3
    assert response.output_text == "Events in order."
    assert response.usage is not None
    assert response.usage.total_tokens == 6


def test_responses_create_stream_events(fake: FakeLLM, oai: openai.OpenAI) -> None:
    events = list(oai.responses.create(model="m", input="hi", stream=True))
    kinds = [event.type for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert "response.output_item.added" in kinds
    assert "response.output_item.done" in kinds
    assert [event.sequence_number for event in events] == list(range(len(events)))
    completed = events[-1]
    assert completed.type == "response.completed"
    assert completed.response.output_text == DEFAULT_TEXT


def test_responses_stream_function_calls(fake: FakeLLM, oai: openai.OpenAI) -> None:
    fake.respond(tool_calls(("get_weather", WEATHER), ("get_time", {}), text="Hm."))
    with oai.responses.stream(model="m", input="hi") as stream:
        done = [
            (event.name, json.loads(event.arguments))
            for event in stream
            if event.type == "response.function_call_arguments.done"
        ]
        response = stream.get_final_response()
    assert done == [("get_weather", WEATHER), ("get_time", {})]
    assert response.output_text == "Hm."
    calls = function_calls(response)
    assert [(call.call_id, call.name) for call in calls] == [
        ("call_1", "get_weather"),
        ("call_2", "get_time"),
    ]
    assert json.loads(calls[0].arguments) == WEATHER


@pytest.mark.parametrize(
    ("code", "error"),
    [(429, openai.RateLimitError), (500, openai.InternalServerError)],
)
def test_responses_errors(
    fake: FakeLLM, oai: openai.OpenAI, code: int, error: type[openai.APIStatusError]
) -> None:
    fake.respond(status(code, "slow down"))
    with pytest.raises(error) as caught:
        oai.responses.create(model="m", input="hi")
    assert caught.value.status_code == code
    assert "slow down" in caught.value.message
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["message"] == "slow down"
    assert caught.value.type == "server_error"


# Anthropic messages


def test_anthropic_answer(fake: FakeLLM, claude: anthropic.Anthropic) -> None:
    fake.respond(answer("Bonjour.", tokens_in=9, tokens_out=2))
    message = claude.messages.create(model="claude-x", max_tokens=64, messages=ask())
    assert [block.type for block in message.content] == ["text"]
    assert text_blocks(message) == ["Bonjour."]
    assert message.stop_reason == "end_turn"
    assert message.model == "claude-x"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (9, 2)


def test_anthropic_tool_use(fake: FakeLLM, claude: anthropic.Anthropic) -> None:
    fake.respond(tool_calls(("get_weather", WEATHER), ("get_time", {}), text="Let me check."))
    message = claude.messages.create(model="m", max_tokens=64, messages=ask())
    assert message.stop_reason == "tool_use"
    assert [block.type for block in message.content] == ["text", "tool_use", "tool_use"]
    assert text_blocks(message) == ["Let me check."]
    uses = tool_uses(message)
    assert [(use.id, use.name) for use in uses] == [
        ("call_1", "get_weather"),
        ("call_2", "get_time"),
    ]
    assert uses[0].input == WEATHER
    assert uses[1].input == {}


def test_anthropic_stream(fake: FakeLLM, claude: anthropic.Anthropic) -> None:
    fake.respond(answer("Streamed words here.", tokens_in=4, tokens_out=6))
    with claude.messages.stream(model="m", max_tokens=64, messages=ask()) as stream:
        pieces = list(stream.text_stream)
        message = stream.get_final_message()
    assert "".join(pieces) == "Streamed words here."
    assert len(pieces) == 3
    assert text_blocks(message) == ["Streamed words here."]
    assert message.stop_reason == "end_turn"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (4, 6)


def test_anthropic_stream_tool_use(fake: FakeLLM, claude: anthropic.Anthropic) -> None:
    fake.respond(tool_calls(("get_weather", WEATHER), text="Checking."))
    with claude.messages.stream(model="m", max_tokens=64, messages=ask()) as stream:
        message = stream.get_final_message()
    assert message.stop_reason == "tool_use"
    assert [block.type for block in message.content] == ["text", "tool_use"]
    assert text_blocks(message) == ["Checking."]
    [use] = tool_uses(message)
    assert (use.id, use.name, use.input) == ("call_1", "get_weather", WEATHER)


def test_anthropic_raw_stream_events(fake: FakeLLM, claude: anthropic.Anthropic) -> None:
    fake.respond(tool_calls(("get_time", {"tz": "UTC"})))
    stream = claude.messages.create(model="m", max_tokens=64, messages=ask(), stream=True)
    events = [event for event in stream]  # not list(stream): mypy types that one wrongly
    assert [event.type for event in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    partial = "".join(
        event.delta.partial_json
        for event in events
        if isinstance(event, RawContentBlockDeltaEvent) and isinstance(event.delta, InputJSONDelta)
    )
    assert json.loads(partial) == {"tz": "UTC"}


def test_anthropic_error(fake: FakeLLM, claude: anthropic.Anthropic) -> None:
    fake.respond(status(529, "overloaded"))
    with pytest.raises(anthropic.APIStatusError) as caught:
        claude.messages.create(model="m", max_tokens=64, messages=ask())
    assert caught.value.status_code == 529
    assert "overloaded" in caught.value.message


# Ollama (plain httpx: it has no client library here)


def ollama(fake: FakeLLM, **body: Any) -> httpx.Response:
    return httpx.post(
        fake.url + "/api/chat", json={"model": "llama3", "messages": ask(), **body}, timeout=5
    )


def test_ollama_answer(fake: FakeLLM) -> None:
    fake.respond(answer("Hej.", tokens_in=8, tokens_out=1))
    data = ollama(fake, stream=False).json()
    assert data["message"] == {"role": "assistant", "content": "Hej."}
    assert data["done"] is True
    assert (data["prompt_eval_count"], data["eval_count"]) == (8, 1)
    assert data["model"] == "llama3"


def test_ollama_tool_calls(fake: FakeLLM) -> None:
    fake.respond(tool_calls(("get_weather", WEATHER), ("get_time", {})))
    message = ollama(fake).json()["message"]
    assert message["content"] == ""
    assert message["tool_calls"] == [
        {"function": {"name": "get_weather", "arguments": WEATHER}},
        {"function": {"name": "get_time", "arguments": {}}},
    ]


def test_ollama_stream(fake: FakeLLM) -> None:
    fake.respond(tool_calls(("get_weather", WEATHER), text="Looking."))
    response = ollama(fake, stream=True)
    assert response.headers["content-type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in response.text.splitlines()]
    assert [line["done"] for line in lines] == [False] * (len(lines) - 1) + [True]
    assert "".join(line["message"]["content"] for line in lines) == "Looking."
    calls = [call for line in lines for call in line["message"].get("tool_calls", [])]
    assert calls == [{"function": {"name": "get_weather", "arguments": WEATHER}}]
    assert lines[-1]["done_reason"] == "stop"
    assert lines[-1]["eval_count"] == 24


# The server's own conveniences


def test_bodies_filter_by_path(fake: FakeLLM, oai: openai.OpenAI) -> None:
    oai.chat.completions.create(model="chat-model", messages=ask("one"))
    oai.responses.create(model="resp-model", input="two")
    ollama(fake)
    assert [body["model"] for body in fake.bodies()] == ["chat-model", "resp-model", "llama3"]
    assert [body["input"] for body in fake.bodies("/responses")] == ["two"]
    assert [body["model"] for body in fake.bodies("/chat/completions")] == ["chat-model"]
    assert fake.bodies("/v1/messages") == []


def test_call_ids_are_unique_per_server(fake: FakeLLM, oai: openai.OpenAI) -> None:
    fake.respond(tool_calls(("a", {})), tool_calls(("b", {}), ("c", {})))
    first = oai.chat.completions.create(model="m", messages=ask()).choices[0].message
    second = oai.responses.create(model="m", input="hi")
    assert [call.id for call in functions(first)] == ["call_1"]
    assert [call.call_id for call in function_calls(second)] == ["call_2", "call_3"]


def test_tool_calls_rejects_bad_calls() -> None:
    with pytest.raises(TypeError):
        tool_calls(cast(Any, ("name", "not a dict")))
    with pytest.raises(TypeError):
        tool_calls(cast(Any, ("name", {}, 7)))
