"""LangChain / LangGraph runs from plain cells become agent turns (real kernel, fake LLM)."""

from __future__ import annotations

import json
import time
import warnings
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
import asyncio, warnings
warnings.simplefilter("ignore", DeprecationWarning)
warnings.simplefilter("ignore", PendingDeprecationWarning)
from langchain_openai import ChatOpenAI
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent

@tool
def get_weather(city: str) -> str:
    \"\"\"The weather in a city.\"\"\"
    return f"sunny in {city}"

@tool
def explode(city: str) -> str:
    \"\"\"A tool that always fails.\"\"\"
    raise ValueError(f"no data for {city}")

llm = ChatOpenAI(base_url=URL + "/v1", api_key="sk-test", model="gpt-4o-mini", max_retries=0)
agent = create_react_agent(llm, [get_weather, explode])
researcher = create_react_agent(llm, [get_weather], name="researcher")

@tool
def ask_researcher(question: str) -> str:
    \"\"\"Ask the researcher agent.\"\"\"
    return researcher.invoke({"messages": [("user", question)]})["messages"][-1].content

boss = create_react_agent(llm, [ask_researcher], name="boss")
"""

WEATHER = (tool_calls(("get_weather", {"city": "Paris"})), answer("It is sunny in Paris."))
INVOKE = (
    'result = agent.invoke({"messages": [("user", "weather in Paris?")]})\n'
    'print(result["messages"][-1].content, [type(m).__name__ for m in result["messages"]])'
)


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


def test_invoke_is_one_turn_with_tools_reply_and_model(kc: Any, fake: FakeLLM) -> None:
    fake.respond(*WEATHER)
    before, turns = len(entries(kc)), turns_recorded(kc, "langchain")
    out = stream_text(run(kc, INVOKE))
    assert out.startswith("It is sunny in Paris.")
    assert brief(new_entries(kc, before)) == [
        ("user", "openai:gpt-4o-mini", "weather in Paris?", None, None),
        ("tool_call", "get_weather", "city='Paris'", None, None),
        ("tool_result", "get_weather", "sunny in Paris", None, None),
        ("assistant", None, "It is sunny in Paris.", None, None),
        ("outcome", None, None, None, "ok"),
    ]
    assert all(e["kind"] != "code" for e in entries(kc)[before:])  # no duplicate code entry
    assert peek(kc, "__import__('jupyter_recap').current().active_model") == "openai:gpt-4o-mini"
    request = recap_request(kc, fake)
    for text in ("weather in Paris?", "get_weather", "Paris", "sunny in Paris", "It is sunny"):
        assert text in request
    assert turns_recorded(kc, "langchain") == turns + 1


def test_ainvoke_and_stream_values(kc: Any, fake: FakeLLM) -> None:
    fake.respond(*WEATHER)
    before = len(entries(kc))
    run(kc, 'result = await agent.ainvoke({"messages": [("user", "async Paris?")]})')
    found = brief(new_entries(kc, before))
    assert found[0][:3] == ("user", "openai:gpt-4o-mini", "async Paris?")
    assert ("tool_call", "get_weather", "city='Paris'", None, None) in found
    assert found[-2:] == [
        ("assistant", None, "It is sunny in Paris.", None, None),
        ("outcome", None, None, None, "ok"),
    ]
    fake.respond(*WEATHER)
    before = len(entries(kc))
    run(
        kc,
        'for chunk in agent.stream({"messages": [("user", "streamed Paris?")]},'
        ' stream_mode="values"):\n    last = chunk',
    )
    found = brief(new_entries(kc, before))
    assert found[0][:3] == ("user", "openai:gpt-4o-mini", "streamed Paris?")
    assert ("tool_result", "get_weather", "sunny in Paris", None, None) in found
    assert found[-1][4] == "ok" and found[-2][2] == "It is sunny in Paris."


def test_two_runs_in_one_cell_are_two_turns_and_plain_chains_are_not(
    kc: Any, fake: FakeLLM
) -> None:
    fake.respond(answer("first"), answer("second"))
    before = len(entries(kc))
    run(
        kc,
        "from langchain_core.runnables import RunnableLambda\n"
        "RunnableLambda(lambda x: x + 1).invoke(1)\n"
        'a = agent.invoke({"messages": [("user", "one?")]})\n'
        'b = agent.invoke({"messages": [("user", "two?")]})',
    )
    found = brief(new_entries(kc, before))
    assert [e[0] for e in found] == ["user", "assistant", "outcome"] * 2
    assert [found[0][2], found[1][2], found[3][2], found[4][2]] == [
        "one?",
        "first",
        "two?",
        "second",
    ]


def test_agent_as_tool_is_one_turn_with_inner_lines(kc: Any, fake: FakeLLM) -> None:
    fake.respond(
        tool_calls(("ask_researcher", {"question": "Paris?"})),
        tool_calls(("get_weather", {"city": "Paris"})),
        answer("inner: sunny."),
        answer("Boss: sunny."),
    )
    before = len(entries(kc))
    run(kc, 'r = boss.invoke({"messages": [("user", "ask about Paris")]})')
    assert brief(new_entries(kc, before)) == [
        ("user", "openai:gpt-4o-mini", "ask about Paris", None, None),
        ("tool_call", "ask_researcher", "question='Paris?'", None, None),
        ("tool_call", "researcher", "Paris?", None, None),
        ("tool_call", "researcher.get_weather", "city='Paris'", None, None),
        ("tool_result", "researcher.get_weather", "sunny in Paris", None, None),
        ("tool_result", "researcher", "inner: sunny.", None, None),
        ("tool_result", "ask_researcher", "inner: sunny.", None, None),
        ("assistant", None, "Boss: sunny.", None, None),
        ("outcome", None, None, None, "ok"),
    ]


def test_tool_that_raises(kc: Any, fake: FakeLLM) -> None:
    fake.respond(tool_calls(("explode", {"city": "Oslo"})), answer("Sorry."))
    before = len(entries(kc))
    messages = execute(kc, 'r = agent.invoke({"messages": [("user", "Oslo?")]})')
    found = entries(kc)[before:]
    results = [e for e in found if e["kind"] == "tool_result"]
    assert results and results[0]["name"] == "explode"
    assert "no data for Oslo" in results[0]["error"]
    outcome = [e for e in found if e["kind"] == "outcome"]
    if reraises_tool_errors():  # the cell fails, and the turn with it
        assert errors(messages)
        assert outcome[-1]["outcome"] == "errored"
        assert "no data for Oslo" in outcome[-1]["error"]
    else:  # the model was told, answered, and the turn ended
        assert not errors(messages)
        assert outcome[-1]["outcome"] == "ok"
        assert found[-2]["kind"] == "assistant" and found[-2]["text"] == "Sorry."


def reraises_tool_errors() -> bool:
    """Whether the installed prebuilt ToolNode re-raises a tool's own exception: 1.0 answers
    the model with every error; later releases (1.1 here) answer only invalid calls, through
    ``_default_handle_tool_errors``, and re-raise the rest. Read from the package, not from
    what the test saw, so the test cannot accept either outcome."""
    with warnings.catch_warnings():  # its deprecation notices are the kernel's business
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import tool_node

    return hasattr(tool_node, "_default_handle_tool_errors")


CLERK = f"""
from langgraph.prebuilt import ToolNode

@tool
def lookup_order(order_id: str) -> str:
    \"\"\"Look an order up.\"\"\"
    return {ORDER!r}

@tool
def issue_refund(order_id: str, amount: int) -> str:
    \"\"\"Refund an order.\"\"\"
    raise RuntimeError({REFUND_ERROR!r})

# handle_tool_errors: the failure goes back to the model, which answers (and glosses over it)
clerk = create_react_agent(
    llm, ToolNode([lookup_order, issue_refund], handle_tool_errors=True), name="clerk"
)
"""


def test_glossed_over_tool_failure_is_in_the_transcript(kc: Any, fake: FakeLLM) -> None:
    run(kc, CLERK)
    fake.respond(*refund_calls(), answer(GLOSSED_REPLY))
    before = len(entries(kc))
    run(kc, f'r = clerk.invoke({{"messages": [("user", {REFUND_ASK!r})]}})')
    turn = entries(kc)[before:]
    assert failed_refund(turn)["name"] == "issue_refund"
    assert brief(turn[-2:]) == [
        ("assistant", None, GLOSSED_REPLY, None, None),
        ("outcome", None, None, None, "ok"),
    ]


def test_agent_that_raises(kc: Any, fake: FakeLLM) -> None:
    fake.respond(http_status(500, "model exploded"))
    before = len(entries(kc))
    messages = execute(kc, 'r = agent.invoke({"messages": [("user", "fail please")]})')
    assert errors(messages)
    found = brief(new_entries(kc, before))
    assert found[0][:3] == ("user", "openai:gpt-4o-mini", "fail please")
    assert found[-1][4] == "errored" and "model exploded" in found[-1][3]
    # the failed cell is not noted a second time as an ordinary cell
    assert not any(e["kind"] == "code" for e in entries(kc)[before:])


def test_interrupted_run_is_aborted(kernel: tuple[Any, Any], fake: FakeLLM) -> None:
    km, kc = kernel
    # The next request must hang: drop what an earlier test queued and left unused (with the
    # newest langchain, test_tool_that_raises leaves one), or this run gets it and ends "ok".
    fake.reset()
    fake.respond(hang())
    before = len(entries(kc))
    count = len(fake.requests)
    msg_id = kc.execute('r = agent.invoke({"messages": [("user", "never answered")]})')
    assert fake.wait_for_requests(count + 1, timeout=20)
    time.sleep(0.3)
    km.interrupt_kernel()
    wait_idle(kc, msg_id)
    found = brief(new_entries(kc, before))
    assert found[0][:3] == ("user", "openai:gpt-4o-mini", "never answered")
    assert found[-1][4] == "aborted"


def test_background_run_is_one_turn(kc: Any, fake: FakeLLM) -> None:
    fake.respond(tool_calls(("get_weather", {"city": "Rome"})), slow(1.5))
    before = len(entries(kc))
    run(
        kc,
        'task = asyncio.ensure_future(agent.ainvoke({"messages": [("user", "later Rome?")]}))',
    )
    found = brief(e for e in wait_outcome(kc, before) if e["kind"] != "code")
    assert found[0][:3] == ("user", "openai:gpt-4o-mini", "later Rome?")
    assert ("tool_call", "get_weather", "city='Rome'", None, None) in found
    assert [e[0] for e in found].count("user") == 1
    assert found[-1][4] == "ok"


def test_output_unchanged_by_capture(kc: Any, fake: FakeLLM) -> None:
    fake.respond(*WEATHER)
    with_ext = run(kc, INVOKE)
    run(kc, "%unload_ext jupyter_recap")
    try:
        fake.respond(*WEATHER)
        without = run(kc, INVOKE)
    finally:
        run(kc, "%load_ext jupyter_recap")
    assert stream_text(with_ext) == stream_text(without)
    assert stream_text(with_ext, "stderr") == stream_text(without, "stderr") == ""


def test_model_client_traced_by_opentelemetry_is_not_a_second_turn(kc: Any, fake: FakeLLM) -> None:
    run(kc, OTEL_SETUP)  # the opentelemetry source finds the provider before the next cell
    fake.respond(*WEATHER)
    before = len(entries(kc))
    run(kc, 'r = agent.invoke({"messages": [("user", "traced Paris?")]})')
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
        "_src = extension_for(get_ipython()).capture.sources['langchain']\n"
        "def _boom(*a, **k): raise RuntimeError('callback bug')\n"
        "_src.events['tool_start'] = _src.guarded(_boom)",  # as if _tool_start had the bug
    )
    fake.respond(*WEATHER)
    messages = run(kc, INVOKE)
    assert stream_text(messages).startswith("It is sunny in Paris.")
    warning = capture_warnings(messages)
    assert len(warning) == 1 and "langchain" in warning[0] and "callback bug" in warning[0]
    assert peek(kc, "_src.state") == "failed"
    assert "langchain" in status(kc) and "callback bug" in status(kc)
    found = entries(kc)
    assert found[-1]["kind"] == "outcome"  # the turn left open was closed, not dangling
    fake.respond(*WEATHER)
    again = run(kc, INVOKE)  # off now: the run is an ordinary cell
    assert stream_text(again).startswith("It is sunny in Paris.")
    assert not stream_text(again, "stderr")
    assert entries(kc)[-1]["kind"] == "code"


def test_unknown_api_turns_the_source_off_with_one_warning(fake: FakeLLM) -> None:
    warning, line = refuses_unknown_api(fake, "langchain", "langchain_core")
    assert "capture of langchain" in warning and "does not understand" in warning
    assert "langchain" in line and "off (does not understand" in line


def test_conversions_in_process() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from jupyter_recap.capture import langchain as lc

    assert lc.prompt_text({"messages": [("user", "hi"), ("assistant", "x")]}) == "hi"
    assert lc.prompt_text({"messages": [{"role": "user", "content": "dict hi"}]}) == "dict hi"
    assert lc.prompt_text({"messages": [HumanMessage("msg hi")]}) == "msg hi"
    assert lc.prompt_text([[HumanMessage("nested")]]) == "nested"
    assert lc.prompt_text({"input": "question"}) == "question"
    assert lc.final_text({"messages": [HumanMessage("q"), AIMessage("a")]}) == "a"
    assert lc.final_text(AIMessage([{"type": "text", "text": "blocks"}])) == "blocks"
    assert lc.tool_output(ToolMessage("out", tool_call_id="1")) == "out"
    assert (
        lc.model_id(None, {"ls_provider": "anthropic", "ls_model_name": "claude-x"}, {})
        == "anthropic:claude-x"
    )
    assert lc.model_id(None, {}, {"model": "m", "_type": "openai-chat"}) == "openai:m"
    assert json.dumps(lc.model_id(None, {}, {})) == "null"
