"""smolagents runs from plain cells become agent turns (real kernel, fake LLM)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from capturekit import (
    GLOSSED_REPLY,
    ORDER,
    OTEL_SETUP,
    REFUND_ASK,
    REFUND_ERROR,
    agent_kernel,
    brief,
    capture_warnings,
    entries,
    errors,
    execute,
    failed_refund,
    new_entries,
    peek,
    recap_request,
    refund_calls,
    refuses_unknown_api,
    run,
    start_agent_kernel,
    status,
    turns_recorded,
    wait_idle,
    wait_outcome,
)
from fakellm import FakeLLM, answer, hang, slow, tool_calls
from fakellm import status as http_status
from kernelutil import stop, stream_text

pytestmark = pytest.mark.timeout(180)


SETUP = """
import threading
from smolagents import ToolCallingAgent, OpenAIServerModel, tool

@tool
def get_weather(city: str) -> str:
    \"\"\"The weather in a city.

    Args:
        city: the city
    \"\"\"
    if city == "Oslo":
        raise ValueError("no data for Oslo")
    return f"sunny in {city}"

model = OpenAIServerModel(
    model_id="gpt-4o-mini", api_base=URL + "/v1", api_key="sk-test",
    client_kwargs={"max_retries": 0},
)
agent = ToolCallingAgent(tools=[get_weather], model=model)
researcher = ToolCallingAgent(
    tools=[get_weather], model=model, name="researcher", description="Finds the weather."
)
boss = ToolCallingAgent(tools=[], model=model, managed_agents=[researcher])
"""


def final(text: str) -> Any:
    return tool_calls(("final_answer", {"answer": text}))


WEATHER = (tool_calls(("get_weather", {"city": "Paris"})), final("It is sunny in Paris."))
RUN = 'result = agent.run("weather in Paris?")\nprint("RESULT", result)'


@pytest.fixture(scope="module")
def kernel(fake: FakeLLM) -> Iterator[tuple[Any, Any]]:
    km, kc = start_agent_kernel(fake)
    try:
        run(kc, f"URL = {fake.url!r}\n" + SETUP)
        yield km, kc
    finally:
        stop(km, kc)


@pytest.fixture
def kc(kernel: tuple[Any, Any], fake: FakeLLM) -> Any:
    fake.reset()
    return kernel[1]


@pytest.fixture
def own_kc(fake: FakeLLM) -> Iterator[Any]:
    """A kernel of its own, for a test that turns the capture source off for good (on the
    module's kernel, every test after it would see ordinary cells)."""
    with agent_kernel(fake) as kc:
        run(kc, f"URL = {fake.url!r}\n" + SETUP)
        fake.reset()
        yield kc


def test_run_is_one_turn_with_tools_reply_and_model(kc: Any, fake: FakeLLM) -> None:
    fake.respond(*WEATHER)
    before, turns = len(entries(kc)), turns_recorded(kc, "smolagents")
    out = stream_text(run(kc, RUN))
    assert "RESULT It is sunny in Paris." in out
    assert brief(entries(kc)[before:]) == [
        ("user", "openai:gpt-4o-mini", "weather in Paris?", None, None),
        ("tool_call", "get_weather", "city='Paris'", None, None),
        ("tool_result", "get_weather", "sunny in Paris", None, None),
        ("assistant", None, "It is sunny in Paris.", None, None),
        ("outcome", None, None, None, "ok"),
    ]
    assert peek(kc, "__import__('jupyter_recap').current().active_model") == "openai:gpt-4o-mini"
    request = recap_request(kc, fake)
    for text in ("weather in Paris?", "get_weather", "Paris", "sunny in Paris", "It is sunny"):
        assert text in request
    assert turns_recorded(kc, "smolagents") == turns + 1


def test_stream_and_two_runs_in_one_cell(kc: Any, fake: FakeLLM) -> None:
    fake.respond(*WEATHER, final("Second."))
    before = len(entries(kc))
    run(
        kc,
        'steps = list(agent.run("streamed Paris?", stream=True))\n'
        'second = agent.run("just answer")',
    )
    found = brief(entries(kc)[before:])
    assert [e[0] for e in found] == [
        "user",
        "tool_call",
        "tool_result",
        "assistant",
        "outcome",
        "user",
        "assistant",
        "outcome",
    ]
    assert found[0][2] == "streamed Paris?" and found[3][2] == "It is sunny in Paris."
    assert found[5][2] == "just answer" and found[6][2] == "Second."
    assert found[4][4] == found[7][4] == "ok"


def test_closed_stream_still_ends_the_turn(kc: Any, fake: FakeLLM) -> None:
    fake.respond(*WEATHER)
    before = len(entries(kc))
    run(
        kc,
        'gen = agent.run("partial?", stream=True)\n'
        "for step in gen:\n"
        "    if type(step).__name__ == 'ActionStep':\n"
        "        break\n"
        "gen.close()",
    )
    found = brief(entries(kc)[before:])
    assert found[0][:3] == ("user", "openai:gpt-4o-mini", "partial?")
    assert ("tool_result", "get_weather", "sunny in Paris", None, None) in found
    assert found[-1][3:] == ("the stream was closed before the agent answered", "errored")
    assert [e[0] for e in found].count("outcome") == 1


def test_managed_agent_is_one_turn_with_inner_lines(kc: Any, fake: FakeLLM) -> None:
    fake.respond(
        tool_calls(("researcher", {"task": "Paris weather"})),
        tool_calls(("get_weather", {"city": "Paris"})),
        final("sunny"),
        final("Boss: sunny."),
    )
    before = len(entries(kc))
    run(kc, 'r = boss.run("ask the researcher")')
    found = brief(entries(kc)[before:])
    assert found[:4] == [
        ("user", "openai:gpt-4o-mini", "ask the researcher", None, None),
        ("tool_call", "researcher", "Paris weather", None, None),
        ("tool_call", "researcher.get_weather", "city='Paris'", None, None),
        ("tool_result", "researcher.get_weather", "sunny in Paris", None, None),
    ]
    assert found[4][:2] == ("tool_result", "researcher") and "sunny" in found[4][2]
    assert found[5:] == [
        ("assistant", None, "Boss: sunny.", None, None),
        ("outcome", None, None, None, "ok"),
    ]


def test_code_agent_steps_are_tool_lines(kc: Any, fake: FakeLLM) -> None:
    fake.respond(
        answer("Thought: look.\n<code>\nw = get_weather(city='Paris')\nprint(w)\n</code>"),
        answer("Thought: done.\n<code>\nfinal_answer('Sunny in Paris.')\n</code>"),
    )
    before = len(entries(kc))
    run(
        kc,
        "from smolagents import CodeAgent\n"
        "r = CodeAgent(tools=[get_weather], model=model).run('code Paris?')",
    )
    found = brief(entries(kc)[before:])
    assert found[0][:3] == ("user", "openai:gpt-4o-mini", "code Paris?")
    assert found[1][:3] == (
        "tool_call",
        "python_interpreter",
        "w = get_weather(city='Paris')\nprint(w)",
    )
    assert found[2][:2] == ("tool_result", "python_interpreter") and "sunny in Paris" in found[2][2]
    assert found[-2:] == [
        ("assistant", None, "Sunny in Paris.", None, None),
        ("outcome", None, None, None, "ok"),
    ]


def test_tool_that_raises(kc: Any, fake: FakeLLM) -> None:
    fake.respond(tool_calls(("get_weather", {"city": "Oslo"})), final("No data."))
    before = len(entries(kc))
    run(kc, 'r = agent.run("Oslo?")')
    found = brief(entries(kc)[before:])
    assert found[1] == ("tool_call", "get_weather", "city='Oslo'", None, None)
    assert found[2][:2] == ("tool_result", "get_weather") and "no data for Oslo" in found[2][3]
    assert found[-2:] == [
        ("assistant", None, "No data.", None, None),
        ("outcome", None, None, None, "ok"),
    ]


CLERK = f"""
from smolagents import ChatMessage, Model
from smolagents.models import ChatMessageToolCall, ChatMessageToolCallFunction

@tool
def lookup_order(order_id: str) -> str:
    \"\"\"Look an order up.

    Args:
        order_id: the order
    \"\"\"
    return {ORDER!r}

@tool
def issue_refund(order_id: str, amount: int) -> str:
    \"\"\"Refund an order.

    Args:
        order_id: the order
        amount: how much, in EUR
    \"\"\"
    raise RuntimeError({REFUND_ERROR!r})

class ScriptedModel(Model):
    \"\"\"A model of the notebook's own: it answers from a script, no provider behind it.\"\"\"

    def __init__(self, script, **kwargs):
        super().__init__(**kwargs)
        self.script = list(script)

    def generate(self, messages, stop_sequences=None, response_format=None,
                 tools_to_call_from=None, **kwargs):
        name, arguments = self.script.pop(0)
        call = ChatMessageToolCall(
            id=f"call_{{len(self.script)}}", type="function",
            function=ChatMessageToolCallFunction(name=name, arguments=arguments),
        )
        return ChatMessage(role="assistant", content=None, tool_calls=[call])

SCRIPT = [
    ("lookup_order", {{"order_id": "A-1001"}}),
    ("issue_refund", {{"order_id": "A-1001", "amount": 398}}),
    ("final_answer", {{"answer": {GLOSSED_REPLY!r}}}),
]
"""


def test_glossed_over_tool_failure_is_in_the_transcript(kc: Any, fake: FakeLLM) -> None:
    run(kc, CLERK)
    fake.respond(*refund_calls(), final(GLOSSED_REPLY))
    before = len(entries(kc))
    run(
        kc,
        f"clerk = ToolCallingAgent(tools=[lookup_order, issue_refund], model=model)\n"
        f"r = clerk.run({REFUND_ASK!r})",
    )
    turn = entries(kc)[before:]
    assert failed_refund(turn)["name"] == "issue_refund"
    assert brief(turn[-2:]) == [
        ("assistant", None, GLOSSED_REPLY, None, None),
        ("outcome", None, None, None, "ok"),
    ]


def test_custom_model_is_named_by_its_class_not_as_a_provider(kc: Any, fake: FakeLLM) -> None:
    run(kc, CLERK)
    before = len(entries(kc))
    run(
        kc,
        "scripted = ToolCallingAgent(tools=[lookup_order, issue_refund],\n"
        "    model=ScriptedModel(SCRIPT, model_id='scripted-smol'))\n"
        f"r = scripted.run({REFUND_ASK!r})",
    )
    turn = entries(kc)[before:]
    assert turn[0]["kind"] == "user" and turn[0]["name"] == "ScriptedModel (scripted-smol)"
    assert failed_refund(turn)["name"] == "issue_refund"
    active = peek(kc, "__import__('jupyter_recap').current().active_model")
    assert active == "ScriptedModel (scripted-smol)"
    # Recaps look for a model of their own: the custom model is no provider, not an unsupported one
    from jupyter_recap.pipeline.models import resolve_models

    why = resolve_models("auto", active_model=active, env={}).why
    assert "not supported" not in why and "scripted:" not in why


def test_agent_that_raises(kc: Any, fake: FakeLLM) -> None:
    fake.respond(http_status(500, "model exploded"))
    before = len(entries(kc))
    messages = execute(kc, 'r = agent.run("fail please")')
    assert errors(messages)
    found = brief(entries(kc)[before:])
    assert found[0][:3] == ("user", "openai:gpt-4o-mini", "fail please")
    # The source's account wins over the cell's wrapper ("Error while generating output:"):
    # the model server's own error is what the person needs to read.
    assert found[-1][4] == "errored" and "model exploded" in found[-1][3]
    assert not any(e[0] == "code" for e in found)


def test_interrupted_run_is_aborted(kernel: tuple[Any, Any], fake: FakeLLM) -> None:
    km, kc = kernel
    fake.reset()
    fake.respond(hang())
    before = len(entries(kc))
    count = len(fake.requests)
    msg_id = kc.execute('r = agent.run("never answered")')
    assert fake.wait_for_requests(count + 1, timeout=20)
    time.sleep(0.3)
    km.interrupt_kernel()
    wait_idle(kc, msg_id)
    found = brief(entries(kc)[before:])
    assert found[0][:3] == ("user", "openai:gpt-4o-mini", "never answered")
    assert found[-1][4] == "aborted"


def test_background_run_is_one_turn(kc: Any, fake: FakeLLM) -> None:
    fake.respond(tool_calls(("get_weather", {"city": "Rome"})), slow(1.5))
    before = len(entries(kc))
    run(
        kc,
        'worker = threading.Thread(target=agent.run, args=("later Rome?",))\nworker.start()',
    )
    found = brief(wait_outcome(kc, before))
    turn = [e for e in found if e[0] != "code"]
    assert turn[0][:3] == ("user", "openai:gpt-4o-mini", "later Rome?")
    assert ("tool_call", "get_weather", "city='Rome'", None, None) in turn
    assert [e[0] for e in turn].count("user") == 1
    assert turn[-1][4] == "ok"


_DURATION = re.compile(r"\d+(\.\d+)? ?(seconds|s)\b")


def test_output_unchanged_by_capture(kc: Any, fake: FakeLLM) -> None:
    fake.respond(*WEATHER)
    with_ext = run(kc, RUN)
    run(kc, "%unload_ext jupyter_recap")
    try:
        fake.respond(*WEATHER)
        without = run(kc, RUN)
    finally:
        run(kc, "%load_ext jupyter_recap")
    text_with, text_without = _outputs(with_ext), _outputs(without)
    assert "Calling tool" in text_with  # smolagents' own panels are there
    assert "RESULT It is sunny in Paris." in text_with
    assert _DURATION.sub("T", text_with) == _DURATION.sub("T", text_without)


def _outputs(messages: list[dict[str, Any]]) -> str:
    """Everything the cell showed: streams and the text of displayed data (rich's panels)."""
    parts = []
    for m in messages:
        if m["msg_type"] == "stream":
            parts.append(f"{m['content']['name']}: {m['content']['text']}")
        elif m["msg_type"] in ("display_data", "execute_result"):
            parts.append(str(m["content"]["data"].get("text/plain", "")))
    return "\n".join(parts)


def test_model_client_traced_by_opentelemetry_is_not_a_second_turn(kc: Any, fake: FakeLLM) -> None:
    run(kc, OTEL_SETUP)  # the opentelemetry source finds the provider before the next cell
    fake.respond(*WEATHER)
    before = len(entries(kc))
    run(kc, 'r = agent.run("traced Paris?")')
    found = new_entries(kc, before)
    assert [e["kind"] for e in found].count("user") == 1
    assert found[0]["text"] == "traced Paris?"
    assert [e["kind"] for e in found].count("outcome") == 1
    run(kc, "OpenAIInstrumentor().uninstrument()")


def test_failing_callback_never_breaks_the_run(own_kc: Any, fake: FakeLLM) -> None:
    kc = own_kc
    run(
        kc,
        "from jupyter_recap.ipython.extension import extension_for\n"
        "_src = extension_for(get_ipython()).capture.sources['smolagents']\n"
        "def _boom(*a, **k): raise RuntimeError('callback bug')\n"
        "_src._on_action = _boom\n"
        "_fresh = ToolCallingAgent(tools=[get_weather], model=model)",
    )
    fake.respond(*WEATHER)
    messages = run(kc, 'result = _fresh.run("weather in Paris?")\nprint("RESULT", result)')
    assert "RESULT It is sunny in Paris." in stream_text(messages)
    warning = capture_warnings(messages)
    assert len(warning) == 1 and "smolagents" in warning[0] and "callback bug" in warning[0]
    assert peek(kc, "_src.state") == "failed"
    assert "callback bug" in status(kc)
    assert entries(kc)[-1]["kind"] == "outcome"  # the open turn was closed
    assert peek(kc, "type(ToolCallingAgent.run).__name__") == "function"  # unwrapped
    fake.respond(*WEATHER)
    again = run(kc, RUN)
    assert "RESULT It is sunny in Paris." in stream_text(again)
    assert entries(kc)[-1]["kind"] == "code"


def test_unknown_api_turns_the_source_off_with_one_warning(fake: FakeLLM) -> None:
    warning, line = refuses_unknown_api(fake, "smolagents", "smolagents")
    assert "capture of smolagents" in warning and "does not understand" in warning
    assert "smolagents" in line and "off (does not understand" in line


def test_model_ids_in_process() -> None:
    from jupyter_recap.capture.smolagents import model_id

    class OpenAIServerModel:
        model_id = "gpt-4o-mini"

    class LiteLLMModel:
        model_id = "anthropic/claude-3-5-haiku"

    class InferenceClientModel:
        model_id = "Qwen/Qwen2.5-Coder-32B-Instruct"

    class MyLocalModel:
        model_id = "tiny"

    assert model_id(OpenAIServerModel()) == "openai:gpt-4o-mini"
    assert model_id(LiteLLMModel()) == "anthropic:claude-3-5-haiku"
    assert model_id(InferenceClientModel()) == "huggingface:Qwen/Qwen2.5-Coder-32B-Instruct"
    assert model_id(MyLocalModel()) == "MyLocalModel (tiny)"
    assert model_id(None) is None

    from smolagents import Model
    from smolagents import OpenAIServerModel as RealOpenAIServerModel

    class ScriptedModel(Model):  # type: ignore[misc]
        pass

    class MyOpenAI(RealOpenAIServerModel):  # type: ignore[misc]  # still talks to OpenAI
        pass

    assert model_id(ScriptedModel(model_id="scripted-smol")) == "ScriptedModel (scripted-smol)"
    assert model_id(ScriptedModel()) == "ScriptedModel"
    assert model_id(MyOpenAI(model_id="gpt-4o", api_key="sk-x")) == "openai:gpt-4o"
