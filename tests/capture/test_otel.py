"""GenAI spans on the person's global OpenTelemetry tracer provider become agent turns.

A real kernel, the plain ``openai`` client instrumented by opentelemetry-instrumentation-openai-v2
(content on span attributes: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only``),
and a tool loop written by hand against the fake LLM server.
"""

from __future__ import annotations

import json
import re
import time
import warnings
from collections.abc import Iterator
from types import ModuleType, SimpleNamespace
from typing import Any

import needs
import pytest
from capturekit import (
    OTEL_SETUP,
    brief,
    entries,
    errors,
    execute,
    new_entries,
    peek,
    recap_request,
    run,
    start_agent_kernel,
    status,
    turns_recorded,
)
from fakellm import FakeLLM, answer, hang, tool_calls
from fakellm import status as http_status
from kernelutil import stop, stream_text

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(autouse=True, scope="module")
def _installed() -> None:
    """The versions pyproject pins; another one is a failure that says so, not a skip."""
    needs.modules("opentelemetry.sdk.trace", "opentelemetry.instrumentation.openai_v2.package")
    needs.modules(
        "opentelemetry.util.genai.instruments",
        why="opentelemetry-instrumentation-openai-v2 2.4b0 needs opentelemetry-util-genai<1.2, "
        "which renamed it",
    )
    needs.modules("pydantic_ai")


LOOP = """
import json
import openai

client = openai.OpenAI(base_url={url!r}, api_key="sk-x")
aclient = openai.AsyncOpenAI(base_url={url!r}, api_key="sk-x")
TOOLS = [{{"type": "function", "function": {{"name": "get_weather", "parameters": {{
    "type": "object", "properties": {{"city": {{"type": "string"}}}}}}}}}}]

def get_weather(city):
    if city == "Oslo":
        raise ValueError("no data for Oslo")
    return f"sunny in {{city}}"

def ask(question, stream=False):
    messages = [{{"role": "user", "content": question}}]
    while True:
        if stream:
            chunks = client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=TOOLS, stream=True)
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            return text
        response = client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=TOOLS)
        message = response.choices[0].message
        if not message.tool_calls:
            return message.content
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            result = get_weather(**json.loads(call.function.arguments))
            messages.append({{"role": "tool", "tool_call_id": call.id, "content": result}})

async def aask(question):
    messages = [{{"role": "user", "content": question}}]
    while True:
        response = await aclient.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=TOOLS)
        message = response.choices[0].message
        if not message.tool_calls:
            return message.content
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            result = get_weather(**json.loads(call.function.arguments))
            messages.append({{"role": "tool", "tool_call_id": call.id, "content": result}})
"""


def start_kernel(fake: FakeLLM, extra: dict[str, str] | None = None) -> tuple[Any, Any]:
    env = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only", **(extra or {})}
    return start_agent_kernel(fake, env, load=False)


@pytest.fixture(scope="module")
def kernel(fake: FakeLLM) -> Iterator[tuple[Any, Any]]:
    """(km, kc): jupyter_recap loaded first, then the person's provider, then their loop."""
    km, kc = start_kernel(fake)
    try:
        run(kc, "%load_ext jupyter_recap")
        run(kc, OTEL_SETUP)
        run(kc, LOOP.format(url=fake.url + "/v1"))
        yield km, kc
    finally:
        stop(km, kc)


def weather_turn(question: str, city: str, reply: str) -> list[tuple[Any, ...]]:
    return [
        ("user", "openai:gpt-4o-mini", question, None, None),
        ("tool_call", "get_weather", f"city={city!r}", None, None),
        ("tool_result", "get_weather", f"sunny in {city}", None, None),
        ("assistant", None, reply, None, None),
        ("outcome", None, None, None, "ok"),
    ]


def test_hand_written_tool_loop_is_one_turn(kernel: tuple[Any, Any], fake: FakeLLM) -> None:
    _, kc = kernel
    before, turns = len(entries(kc)), turns_recorded(kc, "opentelemetry")
    fake.respond(tool_calls(("get_weather", {"city": "Paris"})), answer("It is sunny in Paris."))
    assert stream_text(run(kc, "print(ask('Weather in Paris?'))")) == "It is sunny in Paris.\n"
    assert brief(new_entries(kc, before)) == weather_turn(
        "Weather in Paris?", "Paris", "It is sunny in Paris."
    )
    assert peek(kc, "__import__('jupyter_recap').current().active_model") == ("openai:gpt-4o-mini")
    sent = recap_request(kc, fake)
    for text in ("Weather in Paris?", "get_weather", "sunny in Paris", "It is sunny in Paris."):
        assert text in sent
    assert turns_recorded(kc, "opentelemetry") == turns + 1


def test_two_conversations_in_a_cell_are_two_turns(kernel: tuple[Any, Any], fake: FakeLLM) -> None:
    _, kc = kernel
    before = len(entries(kc))
    fake.respond(
        tool_calls(("get_weather", {"city": "Rome"})),
        answer("Rome is warm."),
        answer("Hello there."),
    )
    run(kc, "a = ask('Weather in Rome?')\nb = ask('Just say hello')")
    assert brief(new_entries(kc, before)) == [
        *weather_turn("Weather in Rome?", "Rome", "Rome is warm."),
        ("user", "openai:gpt-4o-mini", "Just say hello", None, None),
        ("assistant", None, "Hello there.", None, None),
        ("outcome", None, None, None, "ok"),
    ]


def test_calls_under_a_span_of_theirs_and_streams(kernel: tuple[Any, Any], fake: FakeLLM) -> None:
    _, kc = kernel
    before = len(entries(kc))
    fake.respond(tool_calls(("get_weather", {"city": "Lima"})), answer("Lima is grey."))
    code = (
        "with trace.get_tracer('notebook').start_as_current_span('my pipeline'):\n"
        "    first = ask('Weather in Lima?')\n"
        "    second = ask('Now stream', stream=True)\n"
        "print(first, second)"
    )
    fake.respond(answer("Streamed."))
    run(kc, code)
    assert brief(new_entries(kc, before)) == [
        ("user", "openai:gpt-4o-mini", "Weather in Lima?", None, None),
        ("tool_call", "get_weather", "city='Lima'", None, None),
        ("tool_result", "get_weather", "sunny in Lima", None, None),
        ("assistant", None, "Streamed.", None, None),
        ("outcome", None, None, None, "ok"),
    ]


def test_failing_tool_and_failing_call_are_errored(kernel: tuple[Any, Any], fake: FakeLLM) -> None:
    _, kc = kernel
    before = len(entries(kc))
    fake.respond(tool_calls(("get_weather", {"city": "Oslo"})))
    run(kc, "ask('Weather in Oslo?')", expect_error=True)
    assert brief(new_entries(kc, before)) == [
        ("user", "openai:gpt-4o-mini", "Weather in Oslo?", None, None),
        ("tool_call", "get_weather", "city='Oslo'", None, None),
        ("outcome", None, None, "ValueError: no data for Oslo", "errored"),
    ]
    before = len(entries(kc))
    fake.respond(http_status(400, "bad request"))
    run(kc, "ask('Will fail')", expect_error=True)
    turn = new_entries(kc, before)
    assert [e["kind"] for e in turn] == ["user", "outcome"]
    assert turn[-1]["outcome"] == "errored" and "bad request" in turn[-1]["error"]


def test_interrupted_call_is_aborted(kernel: tuple[Any, Any], fake: FakeLLM) -> None:
    km, kc = kernel
    before = len(entries(kc))
    fake.respond(tool_calls(("get_weather", {"city": "Bern"})), hang())
    seen = len(fake.requests)
    msg_id = kc.execute("ask('Weather in Bern?')")
    assert fake.wait_for_requests(seen + 2, timeout=30)
    time.sleep(0.3)
    km.interrupt_kernel()
    reply = kc.get_shell_msg(timeout=30)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=30)
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    assert brief(new_entries(kc, before)) == [
        ("user", "openai:gpt-4o-mini", "Weather in Bern?", None, None),
        ("tool_call", "get_weather", "city='Bern'", None, None),
        ("outcome", None, None, None, "aborted"),
    ]  # the result was sent in the call that never ended: not known


def test_background_loop_is_one_turn(kernel: tuple[Any, Any], fake: FakeLLM) -> None:
    _, kc = kernel
    before = len(entries(kc))
    fake.respond(tool_calls(("get_weather", {"city": "Kyiv"})), answer("Kyiv is cold."))
    run(kc, "import asyncio\ntask = asyncio.ensure_future(aask('Weather in Kyiv?'))")
    run(kc, "print(await task)")
    assert brief(new_entries(kc, before)) == weather_turn(
        "Weather in Kyiv?", "Kyiv", "Kyiv is cold."
    )


def test_provider_set_before_load_and_output_unchanged() -> None:
    """The person's own provider wins (set before %load_ext too); output is unchanged."""
    with FakeLLM() as fake:
        outputs = []
        for load in (False, True):
            km, kc = start_kernel(fake)
            try:
                run(kc, OTEL_SETUP + LOOP.format(url=fake.url + "/v1"))
                if load:
                    run(kc, "%load_ext jupyter_recap")
                fake.respond(tool_calls(("get_weather", {"city": "Paris"})), answer("Sunny."))
                outputs.append(stream_text(run(kc, "r = ask('Weather in Paris?')\nprint(r)")))
                if load:
                    assert [e["kind"] for e in entries(kc)][-5:] == [
                        "user",
                        "tool_call",
                        "tool_result",
                        "assistant",
                        "outcome",
                    ]
            finally:
                stop(km, kc)
        assert outputs == ["Sunny.\n", "Sunny.\n"]


# -- version drift and failing callbacks ----------------------------------------------------


def test_unknown_api_turns_the_source_off_with_one_warning() -> None:
    from jupyter_recap.capture.otel import OpenTelemetrySource
    from jupyter_recap.capture.runs import RunHub
    from jupyter_recap.capture.sources import CaptureWarning
    from jupyter_recap.record.transcript import Transcript

    source = OpenTelemetrySource(RunHub(Transcript))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        source.activate(ModuleType("opentelemetry.sdk.trace"))
    assert source.state == "failed"
    assert [w.category for w in caught] == [CaptureWarning]
    assert "TracerProvider" in str(caught[0].message)


def test_version_drift_and_failing_callback_in_the_kernel(fake: FakeLLM) -> None:
    km, kc = start_kernel(fake)
    try:
        run(kc, "%load_ext jupyter_recap")
        run(kc, OTEL_SETUP + LOOP.format(url=fake.url + "/v1"))
        find = (
            "src = [s for s in __import__('gc').get_objects()"
            " if type(s).__name__ == 'OpenTelemetrySource'][0]\n"
        )
        # a callback that raises: the call goes on, the source turns off with one warning
        boom = "def boom(*a, **k):\n    raise RuntimeError('boom')\n"
        run(kc, find + boom + "src.tracker._loop_end = boom")
        fake.respond(tool_calls(("get_weather", {"city": "Paris"})), answer("Sunny."))
        messages = execute(kc, "print(ask('Weather in Paris?'))")
        assert not errors(messages)
        assert stream_text(messages) == "Sunny.\n"
        assert stream_text(messages, "stderr").count("capture of opentelemetry") == 1
        assert "off (a callback failed (RuntimeError: boom))" in status(kc)
        # an SDK without the extension point: off, one warning, said in %recap status
        messages = execute(
            kc,
            find + "import types\nsrc.state = 'waiting'\nsrc.activate(types.ModuleType('x'))",
        )
        assert stream_text(messages, "stderr").count("capture of opentelemetry") == 1
        assert "off (does not understand this version" in status(kc)
    finally:
        stop(km, kc)


# -- in-process: the conversion itself ------------------------------------------------------


class _Ctx:
    def __init__(self, trace_id: int, span_id: int) -> None:
        self.trace_id, self.span_id, self.is_remote = trace_id, span_id, False


class _Span:
    """The parts of an SDK ReadableSpan the tracker reads."""

    def __init__(
        self, span_id: int, parent: int | None, attributes: dict[str, Any], trace_id: int = 7
    ) -> None:
        self.context = _Ctx(trace_id, span_id)
        self.parent = _Ctx(trace_id, parent) if parent is not None else None
        self.attributes = attributes
        self.events: list[Any] = []
        self.status = None
        self.name = str(attributes.get("gen_ai.operation.name", "span"))


def _tracker() -> tuple[Any, Any, Any]:
    from jupyter_recap.capture.genai_tracker import GenAITracker
    from jupyter_recap.capture.runs import RunHub
    from jupyter_recap.record.transcript import Transcript

    transcript = Transcript()
    hub = RunHub(lambda: transcript)
    return GenAITracker(hub, "opentelemetry"), hub, transcript


def _kinds(transcript: Any) -> list[tuple[Any, ...]]:
    return [(e["kind"], e.get("name"), e.get("text")) for e in transcript.to_list()]


def test_legacy_indexed_attributes_and_events_are_read() -> None:
    from jupyter_recap.capture.genai_messages import Content

    content = Content()
    content.add_attributes(
        {
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "Weather?",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.tool_calls.0.name": "get_weather",
            "gen_ai.completion.0.tool_calls.0.arguments": '{"city": "Paris"}',
        }
    )
    assert content.prompt == "Weather?"
    assert [(c.name, c.arguments) for c in content.calls] == [("get_weather", '{"city": "Paris"}')]
    events = Content()
    events.add_event("gen_ai.user.message", {}, {"content": "Hi there"})
    events.add_event("gen_ai.choice", {}, {"message": {"content": "Hello!"}, "index": 0})
    assert (events.prompt, events.reply) == ("Hi there", "Hello!")
    openai_style = Content()
    openai_style.add_attributes(
        {"gen_ai.prompt": '[{"role": "user", "content": [{"type": "text", "text": "Yo"}]}]'}
    )
    assert openai_style.prompt == "Yo"


def test_content_from_log_events_joins_its_span() -> None:
    tracker, hub, transcript = _tracker()
    mark = hub.cell_started("c1")
    span = _Span(1, None, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m1"})
    span.attributes["gen_ai.provider.name"] = "anthropic"
    tracker.on_start(span)

    text_part = {"type": "text", "content": "Q"}
    record = SimpleNamespace(
        event_name="gen_ai.client.inference.operation.details",
        span_id=1,
        body=None,
        attributes={
            "gen_ai.input.messages": ({"role": "user", "parts": (text_part,)},),
            "gen_ai.output.messages": (
                {"role": "assistant", "parts": ({"type": "text", "content": "A"},)},
            ),
        },
    )
    tracker.on_log(record)
    tracker.on_end(span)
    hub.cell_ended(mark, None)
    assert _kinds(transcript) == [
        ("user", "anthropic:m1", "Q"),
        ("assistant", None, "A"),
        ("outcome", None, None),
    ]


def test_spans_of_a_run_another_source_records_are_skipped() -> None:
    tracker, hub, transcript = _tracker()
    hub.cell_started("c1")
    other = hub.start("openai-agents", prompt="outer", model="openai:gpt-4o")
    span = _Span(1, None, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"})
    tracker.on_start(span)
    span.attributes["gen_ai.output.messages"] = '[{"role": "assistant", "content": "inner"}]'
    tracker.on_end(span)
    other.finish(reply="done")
    assert [k for k, _, _ in _kinds(transcript)] == ["user", "assistant", "outcome"]
    assert hub.turns == {"openai-agents": 1}


def test_a_non_genai_root_groups_its_model_calls() -> None:
    tracker, hub, transcript = _tracker()
    mark = hub.cell_started("c1")
    root = _Span(1, None, {})
    tracker.on_start(root)
    for span_id, output in ((2, "first"), (3, "second")):
        chat = _Span(span_id, 1, {"gen_ai.operation.name": "chat", "gen_ai.system": "openai"})
        chat.attributes["gen_ai.request.model"] = "gpt-4o-mini"
        tracker.on_start(chat)
        sent = [{"role": "user", "content": f"q{span_id}"}]
        chat.attributes["gen_ai.input.messages"] = json.dumps(sent)
        said = [{"role": "assistant", "content": output}]
        chat.attributes["gen_ai.output.messages"] = json.dumps(said)
        tracker.on_end(chat)
    tracker.on_end(root)
    hub.cell_ended(mark, None)
    assert _kinds(transcript) == [
        ("user", "openai:gpt-4o-mini", "q2"),
        ("assistant", None, "second"),
        ("outcome", None, None),
    ]


def test_pydantic_ai_runs_are_not_recorded_twice(fake: FakeLLM) -> None:
    """pydantic-ai's own source records its run; the instrumented client's spans are skipped."""
    setup = (
        "from pydantic_ai import Agent\n"
        "from pydantic_ai.models.openai import OpenAIChatModel\n"
        "from pydantic_ai.providers.openai import OpenAIProvider\n"
        f"provider = OpenAIProvider(base_url={fake.url + '/v1'!r}, api_key='sk-x')\n"
        "agent = Agent(OpenAIChatModel('gpt-4o-mini', provider=provider))\n"
        "@agent.tool_plain\n"
        "def get_weather(city: str) -> str:\n"
        "    return f'sunny in {city}'\n"
    )
    km, kc = start_kernel(fake)
    try:
        run(kc, "%load_ext jupyter_recap")
        run(kc, OTEL_SETUP)
        run(kc, setup)
        before = len(entries(kc))
        fake.respond(tool_calls(("get_weather", {"city": "Kyiv"})), answer("Kyiv is cold."))
        run(kc, "print((await agent.run('Weather in Kyiv?')).output)")
        assert brief(new_entries(kc, before)) == weather_turn(
            "Weather in Kyiv?", "Kyiv", "Kyiv is cold."
        )
        lines = status(kc)
        assert re.search(r"pydantic-ai [\d.]+: on, 1 turn recorded", lines), lines
        assert re.search(r"opentelemetry [\d.]+: on, 0 turns recorded", lines), lines
    finally:
        stop(km, kc)
