"""openai-agents runs from plain cells become agent turns (tracing processor source).

Real kernels and the real SDK against the fake LLM server; the SDK's own exporter is removed
(``set_trace_processors([])``) before the extension loads, so nothing leaves the machine.
The in-process tests at the end check the span conversion and the failure paths quickly.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import queue
import time
import warnings
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from capturekit import (
    GLOSSED_REPLY,
    ORDER,
    REFUND_ASK,
    REFUND_ERROR,
    entries,
    failed_refund,
    peek,
    recap_request,
    refund_calls,
    run,
    start_agent_kernel,
    status,
)
from fakellm import Behaviour, Call, FakeLLM, answer, tool_calls
from fakellm import status as http_status
from kernelutil import stop, stream_text

pytestmark = pytest.mark.timeout(180)

SETUP = """
from agents import set_trace_processors
set_trace_processors([])  # the SDK's exporter would try to reach OpenAI
"""

AGENTS = """
import asyncio
from agents import Agent, Runner, function_tool, set_default_openai_api, set_default_openai_client
from openai import AsyncOpenAI

set_default_openai_client(AsyncOpenAI(max_retries=0))  # OPENAI_BASE_URL: the fake server

@function_tool
def get_weather(city: str) -> str:
    \"\"\"The weather in a city.\"\"\"
    return f"sunny in {city}"

@function_tool
def flaky_lookup(city: str) -> str:
    \"\"\"A lookup that fails.\"\"\"
    raise ValueError(f"no station near {city}")

helper = Agent(name="Helper", instructions="Answer briefly.", tools=[get_weather],
               model="gpt-4o-mini")
refunds = Agent(name="Refunds", instructions="Handle refunds.", tools=[get_weather],
                model="gpt-4o-mini")
main = Agent(
    name="Main",
    instructions="Be helpful.",
    tools=[get_weather, flaky_lookup,
           helper.as_tool(tool_name="ask_helper", tool_description="Ask the helper.")],
    handoffs=[refunds],
    model="gpt-4o-mini",
)
"""

SHOW = "print(repr(result.final_output), len(result.new_items), type(result).__name__)"


class Kernel:
    """A kernel (with its manager, for interrupts) set up for openai-agents."""

    def __init__(self, km: Any, kc: Any, fake: FakeLLM) -> None:
        self.km, self.kc, self.fake = km, kc, fake


def start_kernel(fake: FakeLLM, *, load: bool = True, setup: bool = True) -> Any:
    """A kernel (and its manager) whose model clients reach only ``fake``."""
    km, kc = start_agent_kernel(fake, load=False)
    if setup:
        run(kc, SETUP)
        if load:
            run(kc, "%load_ext jupyter_recap")
        run(kc, AGENTS)
    return km, kc


@pytest.fixture(autouse=True)
def fresh_script(fake: FakeLLM) -> Iterator[None]:
    """No test inherits answers a failed test left queued."""
    fake.reset()
    yield


@pytest.fixture(scope="module")
def kernel(fake: FakeLLM) -> Iterator[Kernel]:
    km, kc = start_kernel(fake)
    try:
        yield Kernel(km, kc, fake)
    finally:
        stop(km, kc)


def turns(kc: Any) -> list[list[dict[str, Any]]]:
    """The agent turns of the transcript, each from its prompt to its outcome."""
    found: list[list[dict[str, Any]]] = []
    for entry in entries(kc):
        if entry["kind"] == "user":
            found.append([entry])
        elif entry["kind"] != "code" and found:
            found[-1].append(entry)
    return found


def turn_for(kc: Any, prompt: str) -> list[dict[str, Any]]:
    matching = [t for t in turns(kc) if t[0]["text"] == prompt]
    assert len(matching) == 1, (prompt, turns(kc))
    return matching[0]


def lines(turn: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(kind, name, text) of a turn's steps, the prompt and outcome left out."""
    return [(e["kind"], e.get("name") or "", e.get("text") or "") for e in turn[1:-1]]


def later(seconds: float, behaviour: Behaviour) -> Behaviour:
    """``behaviour`` after ``seconds`` (so a run outlives the cell that started it)."""

    def run_later(call: Call) -> None:
        if not call.stop.wait(seconds):
            behaviour(call)

    return run_later


def wait_for(kc: Any, prompt: str, timeout: float = 20) -> list[dict[str, Any]]:
    """The turn of ``prompt`` once it has its outcome."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for turn in turns(kc):
            if turn[0]["text"] == prompt and turn[-1]["kind"] == "outcome":
                return turn
        time.sleep(0.2)
    raise AssertionError(f"no finished turn for {prompt!r}: {turns(kc)}")


def drain(kc: Any) -> None:
    """Read the IOPub messages still pending (those of an interrupted cell)."""
    while True:
        try:
            kc.get_iopub_msg(timeout=0.5)
        except queue.Empty:
            return


# -- real kernel ------------------------------------------------------------------------------


def test_a_responses_api_run_is_a_turn_with_tools_reply_and_model(kernel: Kernel) -> None:
    kc, fake = kernel.kc, kernel.fake
    before = len(fake.bodies("/responses"))
    fake.respond(tool_calls(("get_weather", {"city": "Paris"})), answer("It is sunny in Paris."))
    shown = run(kc, f"result = await Runner.run(main, 'What is the weather in Paris?')\n{SHOW}")
    assert "'It is sunny in Paris.'" in stream_text(shown)
    assert len(fake.bodies("/responses")) == before + 2  # the default API: Responses
    turn = turn_for(kc, "What is the weather in Paris?")
    assert turn[0]["name"] == "openai:gpt-4o-mini"
    assert lines(turn) == [
        ("tool_call", "get_weather", "city='Paris'"),
        ("tool_result", "get_weather", "sunny in Paris"),
        ("assistant", "", "It is sunny in Paris."),
    ]
    assert turn[-1]["outcome"] == "ok"
    assert peek(kc, "__import__('jupyter_recap').current().active_model") == "openai:gpt-4o-mini"
    sent = recap_request(kc, fake)
    for text in ("What is the weather in Paris?", "get_weather", "sunny in Paris"):
        assert text in sent
    assert "It is sunny in Paris." in sent  # the model id is not part of the recap prompt
    assert f"openai-agents {importlib.metadata.version('openai-agents')}" in status(kc)


def test_a_chat_completions_run_sync_is_a_turn(kernel: Kernel) -> None:
    kc, fake = kernel.kc, kernel.fake
    before = len(fake.bodies("/chat/completions"))
    fake.respond(tool_calls(("get_weather", {"city": "Oslo"})), answer("Oslo is sunny."))
    code = (
        "set_default_openai_api('chat_completions')\n"
        "try:\n"
        "    result = await asyncio.to_thread(Runner.run_sync, main, 'Weather in Oslo?')\n"
        "finally:\n"
        "    set_default_openai_api('responses')\n" + SHOW
    )
    assert "'Oslo is sunny.'" in stream_text(run(kc, code))
    assert len(fake.bodies("/chat/completions")) == before + 2
    turn = turn_for(kc, "Weather in Oslo?")
    assert turn[0]["name"] == "openai:gpt-4o-mini"
    assert lines(turn) == [
        ("tool_call", "get_weather", "city='Oslo'"),
        ("tool_result", "get_weather", "sunny in Oslo"),
        ("assistant", "", "Oslo is sunny."),
    ]
    assert turn[-1]["outcome"] == "ok"


def test_a_streamed_run_is_recorded_when_it_ends(kernel: Kernel) -> None:
    kc, fake = kernel.kc, kernel.fake
    fake.respond(tool_calls(("get_weather", {"city": "Rome"})), answer("Rome: sunny."))
    code = (
        "result = Runner.run_streamed(main, 'Stream Rome weather')\n"
        "kinds = [event.type async for event in result.stream_events()]\n"
        "print('raw_response_event' in kinds)\n" + SHOW
    )
    shown = stream_text(run(kc, code))
    assert "True" in shown and "'Rome: sunny.'" in shown
    assert all(body.get("stream") for body in fake.bodies("/responses")[-2:])
    turn = turn_for(kc, "Stream Rome weather")
    assert lines(turn) == [
        ("tool_call", "get_weather", "city='Rome'"),
        ("tool_result", "get_weather", "sunny in Rome"),
        ("assistant", "", "Rome: sunny."),
    ]
    assert turn[-1]["outcome"] == "ok"


def test_an_agent_as_tool_and_a_handoff_are_one_turn_named_by_agent(kernel: Kernel) -> None:
    kc, fake = kernel.kc, kernel.fake
    fake.respond(
        tool_calls(("ask_helper", {"input": "Weather in Lima?"})),
        tool_calls(("get_weather", {"city": "Lima"})),
        answer("Lima is sunny."),
        tool_calls(("transfer_to_refunds", {})),
        tool_calls(("get_weather", {"city": "Bern"})),
        answer("Refund sent, and Bern is sunny."),
    )
    run(kc, f"result = await Runner.run(main, 'Ask around, then refund')\n{SHOW}")
    turn = turn_for(kc, "Ask around, then refund")
    assert lines(turn) == [
        ("tool_call", "ask_helper", "input='Weather in Lima?'"),
        ("tool_call", "Helper.get_weather", "city='Lima'"),
        ("tool_result", "Helper.get_weather", "sunny in Lima"),
        ("tool_result", "ask_helper", "Lima is sunny."),
        ("tool_call", "handoff", "to='Refunds'"),
        ("tool_result", "handoff", "Refunds takes over"),
        ("tool_call", "Refunds.get_weather", "city='Bern'"),
        ("tool_result", "Refunds.get_weather", "sunny in Bern"),
        ("assistant", "", "Refund sent, and Bern is sunny."),
    ]
    assert turn[-1]["outcome"] == "ok"
    assert not [t for t in turns(kc) if t[0]["text"] == "Weather in Lima?"]  # no turn of its own


def test_a_tool_that_raises_is_an_errored_tool_line(kernel: Kernel) -> None:
    kc, fake = kernel.kc, kernel.fake
    fake.respond(tool_calls(("flaky_lookup", {"city": "Quito"})), answer("No data for Quito."))
    run(kc, "result = await Runner.run(main, 'Look up Quito')")
    turn = turn_for(kc, "Look up Quito")
    call, result = turn[1], turn[2]
    assert (call["kind"], call["name"], call["text"]) == (
        "tool_call",
        "flaky_lookup",
        "city='Quito'",
    )
    assert result["kind"] == "tool_result" and result["name"] == "flaky_lookup"
    assert "no station near Quito" in str(result["error"])
    assert turn[-2]["text"] == "No data for Quito." and turn[-1]["outcome"] == "ok"


CLERK = f"""
@function_tool
def lookup_order(order_id: str) -> str:
    \"\"\"Look an order up.\"\"\"
    return {ORDER!r}

@function_tool
def issue_refund(order_id: str, amount: int) -> str:
    \"\"\"Refund an order.\"\"\"
    raise RuntimeError({REFUND_ERROR!r})

clerk = Agent(name="Clerk", instructions="Handle refunds.", tools=[lookup_order, issue_refund],
              model="gpt-4o-mini")
"""


def test_a_glossed_over_tool_failure_keeps_its_error(kernel: Kernel) -> None:
    # The SDK catches the tool's exception and tells the model only that the tool failed; from
    # 0.24 on its traces say "Error details are redacted." The transcript has the real error.
    kc, fake = kernel.kc, kernel.fake
    run(kc, CLERK)
    fake.respond(*refund_calls(), answer(GLOSSED_REPLY))
    run(kc, f"result = await Runner.run(clerk, {REFUND_ASK!r})\nprint(result.final_output)")
    turn = turn_for(kc, REFUND_ASK)
    assert failed_refund(turn)["name"] == "issue_refund"
    assert turn[-2]["text"] == GLOSSED_REPLY and turn[-1]["outcome"] == "ok"
    assert REFUND_ERROR in recap_request(kc, fake)


def test_an_agent_that_raises_is_an_errored_turn(kernel: Kernel) -> None:
    kc, fake = kernel.kc, kernel.fake
    fake.respond(tool_calls(("get_weather", {"city": "Kyiv"})), http_status(500, "the model broke"))
    run(kc, "result = await Runner.run(main, 'Weather in Kyiv?')", expect_error=True)
    turn = turn_for(kc, "Weather in Kyiv?")
    assert turn[0]["name"] == "openai:gpt-4o-mini"
    assert lines(turn)[:2] == [
        ("tool_call", "get_weather", "city='Kyiv'"),
        ("tool_result", "get_weather", "sunny in Kyiv"),
    ]
    assert turn[-1]["outcome"] == "errored"
    # the SDK's account of the failure (the agent span's error) is the outcome's text
    assert "500" in turn[-1]["error"] and "the model broke" in turn[-1]["error"]


def stall(seconds: float) -> Behaviour:
    """Like ``hang()``, but hang up without an answer after ``seconds``.

    ipykernel 7 turns an interrupt of an ``await`` cell into a cancellation that only lands
    when the event loop next wakes up; the hang-up is that wake-up (``hang()`` would keep the
    cell for 60 s). The cancellation wins: the cell ends with CancelledError.
    """

    def behaviour(call: Call) -> None:
        call.stop.wait(seconds)

    return behaviour


def test_an_interrupted_run_is_aborted(kernel: Kernel) -> None:
    kc, km, fake = kernel.kc, kernel.km, kernel.fake
    fake.respond(tool_calls(("get_weather", {"city": "Lagos"})), stall(3))
    count = len(fake.requests)
    msg_id = kc.execute("result = await Runner.run(main, 'Weather in Lagos?')")
    assert fake.wait_for_requests(count + 2, timeout=20)
    km.interrupt_kernel()
    reply = kc.get_shell_msg(timeout=30)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=30)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] in ("CancelledError", "KeyboardInterrupt")
    drain(kc)
    turn = wait_for(kc, "Weather in Lagos?")
    assert lines(turn) == [
        ("tool_call", "get_weather", "city='Lagos'"),
        ("tool_result", "get_weather", "sunny in Lagos"),
    ]
    assert turn[-1]["outcome"] == "aborted"


def test_a_run_left_in_the_background_is_one_turn_when_it_ends(kernel: Kernel) -> None:
    kc, fake = kernel.kc, kernel.fake
    fake.respond(
        tool_calls(("get_weather", {"city": "Cairo"})), later(1.5, answer("Cairo is hot."))
    )
    run(kc, "task = asyncio.ensure_future(Runner.run(main, 'Background Cairo'))\nprint('started')")
    turn = wait_for(kc, "Background Cairo")
    assert lines(turn) == [
        ("tool_call", "get_weather", "city='Cairo'"),
        ("tool_result", "get_weather", "sunny in Cairo"),
        ("assistant", "", "Cairo is hot."),
    ]
    assert turn[-1]["outcome"] == "ok"
    assert peek(kc, "task.result().final_output") == "Cairo is hot."


def test_two_runs_in_one_cell_are_two_turns(kernel: Kernel) -> None:
    kc, fake = kernel.kc, kernel.fake
    fake.respond(answer("First answer."), answer("Second answer."))
    run(
        kc,
        "from agents import trace\n"
        "with trace('two questions'):\n"
        "    a = await Runner.run(main, 'First question')\n"
        "    b = await Runner.run(main, 'Second question')",
    )
    first, second = turn_for(kc, "First question"), turn_for(kc, "Second question")
    assert lines(first) == [("assistant", "", "First answer.")]
    assert lines(second) == [("assistant", "", "Second answer.")]
    assert first[-1]["outcome"] == second[-1]["outcome"] == "ok"
    assert "turns recorded" in status(kc)


def test_a_failing_callback_never_breaks_the_run(kernel: Kernel) -> None:
    kc, fake = kernel.kc, kernel.fake
    # A second source on the same hub whose every run start fails: it turns itself off with
    # one warning; the run, its output and the first source's turn are untouched.
    code = """
import warnings, agents
from jupyter_recap.capture.openai_agents import OpenAIAgentsSource
from jupyter_recap.capture.runs import RunHub
from jupyter_recap.record.transcript import Transcript
class BrokenHub(RunHub):
    def start(self, *args, **kwargs):
        raise RuntimeError("hub exploded")
broken = OpenAIAgentsSource(BrokenHub(Transcript))
broken.activate(agents)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    result = await Runner.run(main, 'Still works?')
print(repr(result.final_output), broken.state, len(caught))
"""
    fake.respond(answer("Yes, it works."))
    shown = stream_text(run(kc, code))
    assert "'Yes, it works.' failed 1" in shown
    turn = turn_for(kc, "Still works?")
    assert lines(turn) == [("assistant", "", "Yes, it works.")] and turn[-1]["outcome"] == "ok"


def test_output_and_result_are_the_same_without_the_extension(
    kernel: Kernel, fake: FakeLLM
) -> None:
    code = f"result = await Runner.run(main, 'Same output?')\n{SHOW}\nresult.final_output"

    def shown(kc: Any) -> tuple[str, Any]:
        messages = run(kc, code)
        results = [m["content"]["data"] for m in messages if m["msg_type"] == "execute_result"]
        return stream_text(messages), results

    fake.respond(tool_calls(("get_weather", {"city": "Nice"}, "call_x")), answer("Nice."))
    with_recap = shown(kernel.kc)
    km, kc = start_kernel(fake, load=False)
    try:
        fake.respond(tool_calls(("get_weather", {"city": "Nice"}, "call_x")), answer("Nice."))
        without = shown(kc)
    finally:
        stop(km, kc)
    assert with_recap == without
    assert "'Nice.'" in with_recap[0] and "RunResult" in with_recap[0]


def test_an_sdk_without_the_extension_point_turns_the_source_off_once(fake: FakeLLM) -> None:
    km, kc = start_kernel(fake, setup=False)
    try:
        stub = (
            "import sys, types\n"
            "sys.modules['agents'] = types.ModuleType('agents')  # an SDK that moved things"
        )
        run(kc, stub)
        messages = run(kc, "%load_ext jupyter_recap")
        warning_lines = [
            line
            for line in stream_text(messages, "stderr").splitlines()
            if "capture of openai-agents" in line
        ]
        assert len(warning_lines) == 1, stream_text(messages, "stderr")
        assert "does not understand this version" in warning_lines[0]
        line = [x for x in status(kc).splitlines() if "openai-agents" in x]
        assert line and "off (does not understand this version" in line[0]
        state = peek(
            kc,
            "next(iter(__import__('jupyter_recap.ipython.extension', fromlist=['x'])"
            "._instances.values())).capture.sources['openai-agents'].state",
        )
        assert state == "failed"
        run(kc, "print('cells still run')")
    finally:
        stop(km, kc)


# -- in process: the span conversion ------------------------------------------------------------


@pytest.fixture
def local(fake: FakeLLM) -> Iterator[Any]:
    """A RunHub with its own transcript, and the source installed into the real SDK."""
    import agents
    from openai import AsyncOpenAI

    from jupyter_recap.capture.openai_agents import OpenAIAgentsSource
    from jupyter_recap.capture.runs import RunHub
    from jupyter_recap.record.transcript import Transcript

    agents.set_trace_processors([])
    agents.set_default_openai_client(
        AsyncOpenAI(base_url=f"{fake.url}/v1", api_key="sk-test", max_retries=0)
    )
    transcript = Transcript()
    hub = RunHub(lambda: transcript)
    source = OpenAIAgentsSource(hub)
    source.activate(agents)
    assert source.state == "active"
    # The SDK's run_sync and asyncio.run change this thread's current event loop (asyncio.run
    # leaves none); later tests of a server (pytest-jupyter) build theirs on the loop they find,
    # so put back the one there was.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        loop = asyncio.get_event_loop()
    yield source, transcript
    asyncio.set_event_loop(loop)
    source.state = "off"
    source.uninstall()  # the next test's source wraps the runner afresh
    agents.set_trace_processors([])


def local_agent(tools: list[Any] | None = None) -> Any:
    from agents import Agent, function_tool

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    return Agent(name="Local", instructions="x", tools=tools or [get_weather], model="gpt-4o-mini")


def kinds(transcript: Any) -> list[tuple[str, str]]:
    return [(e.kind, e.text) for e in transcript]


def test_model_ids_take_our_provider_form() -> None:
    from jupyter_recap.capture.openai_agents import model_id

    assert model_id("gpt-4o-mini") == "openai:gpt-4o-mini"
    assert model_id("anthropic/claude-3-5-sonnet") == "anthropic:claude-3-5-sonnet"
    assert model_id("litellm/anthropic/claude-3-haiku") == "anthropic:claude-3-haiku"
    assert model_id("claude-3-opus") == "anthropic:claude-3-opus"
    assert model_id("") is None and model_id(None) is None


def test_prompt_and_reply_text_from_both_wire_shapes() -> None:
    from jupyter_recap.capture.openai_agents import (
        error_text,
        generation_output_text,
        last_user_text,
        response_output_text,
    )

    history = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "old question"},
        {"role": "assistant", "content": "old answer"},
        {"role": "user", "content": [{"type": "input_text", "text": "new question"}]},
    ]
    assert last_user_text(history) == "new question" and last_user_text("plain") == "plain"
    response = {"output": [{"type": "message", "content": [{"type": "output_text", "text": "A"}]}]}
    assert response_output_text(response) == "A"
    assert generation_output_text([{"role": "assistant", "content": "B"}]) == "B"
    assert error_text({"message": "Error running tool", "data": {"error": "boom"}}) == "boom"
    assert error_text({"message": "Error in agent run", "data": None}) == "Error in agent run"


def test_the_run_is_active_where_its_tools_run(local: Any, fake: FakeLLM) -> None:
    from agents import Runner, function_tool

    source, transcript = local
    seen: list[Any] = []

    @function_tool
    def who() -> str:
        """Which run is active."""
        active = source.hub.active()
        seen.append(active)
        return "me"

    fake.respond(tool_calls(("who", {})), answer("done"))
    Runner.run_sync(local_agent([who]), "who runs?")
    assert seen and seen[0] is not None and seen[0].agent == "Local"
    assert source.hub.active() is None  # reset when the run ended
    assert kinds(transcript)[0] == ("user", "who runs?")


def test_runs_without_task_spans_end_with_their_trace(local: Any, fake: FakeLLM) -> None:
    from agents import RunConfig, Runner

    _, transcript = local
    fake.respond(tool_calls(("get_weather", {"city": "Bonn"})), answer("Bonn: sunny."))
    config = RunConfig(tracing={"include_task_and_turn_spans": False})
    Runner.run_sync(local_agent(), "Bonn?", run_config=config)
    assert kinds(transcript) == [
        ("user", "Bonn?"),
        ("tool_call", "city='Bonn'"),
        ("tool_result", "sunny in Bonn"),
        ("assistant", "Bonn: sunny."),
        ("outcome", ""),
    ]


def test_runs_without_sensitive_data_still_end_ok(local: Any, fake: FakeLLM) -> None:
    from agents import RunConfig, Runner

    from jupyter_recap.capture.openai_agents import REDACTED_REPLY

    _, transcript = local
    fake.respond(tool_calls(("get_weather", {"city": "Graz"})), answer("Graz: sunny."))
    config = RunConfig(trace_include_sensitive_data=False)
    result = Runner.run_sync(local_agent(), "Graz?", run_config=config)
    assert result.final_output == "Graz: sunny."
    found = list(transcript)
    # Responses API spans then carry neither input nor model: a placeholder prompt
    assert (found[0].kind, found[0].text) == ("user", "(Local run)")
    assert [e.kind for e in found[1:3]] == ["tool_call", "tool_result"]
    assert found[-2].text == REDACTED_REPLY and found[-1].outcome == "ok"


def refund_agent() -> Any:
    from agents import Agent, function_tool

    @function_tool
    def lookup_order(order_id: str) -> str:
        """Look an order up."""
        return ORDER

    @function_tool
    def issue_refund(order_id: str, amount: int) -> str:
        """Refund an order."""
        raise RuntimeError(REFUND_ERROR)

    return Agent(
        name="Local", instructions="x", tools=[lookup_order, issue_refund], model="gpt-4o-mini"
    )


def refund_outputs(fake: FakeLLM) -> list[Any]:
    """What the model was told about each tool call (the function_call_output items)."""
    return [
        item["output"]
        for body in fake.bodies("/responses")
        for item in body["input"]
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


def sdk_hands_tool_errors_to_the_formatter() -> bool:
    import dataclasses

    from agents import ToolErrorFormatterArgs

    return "error" in {f.name for f in dataclasses.fields(ToolErrorFormatterArgs)}


def entry_dicts(transcript: Any) -> list[dict[str, Any]]:
    return [e.to_dict() for e in transcript]


def test_a_failing_tool_has_its_real_error_not_the_redaction(local: Any, fake: FakeLLM) -> None:
    from agents import Runner

    _, transcript = local
    fake.respond(*refund_calls(), answer(GLOSSED_REPLY))
    result = Runner.run_sync(refund_agent(), REFUND_ASK)
    assert result.final_output == GLOSSED_REPLY
    failed = failed_refund(entry_dicts(transcript))
    if sdk_hands_tool_errors_to_the_formatter():  # 0.24 and later: the exception, typed
        assert failed["error"] == f"RuntimeError: {REFUND_ERROR}"
    assert [e.kind for e in transcript][-2:] == ["assistant", "outcome"]


def test_the_model_is_told_what_it_is_told_without_capture(local: Any, fake: FakeLLM) -> None:
    from agents import RunConfig, Runner

    source, transcript = local

    def theirs(args: Any) -> str | None:
        failed = args.kind == "tool_exception"
        return f"the {args.tool_name} tool is unavailable" if failed else None

    told: dict[tuple[str, bool], list[Any]] = {}
    for mode in ("default", "their formatter"):
        for on in (False, True):
            source.state = "active" if on else "off"
            fake.reset()
            fake.requests.clear()
            fake.respond(*refund_calls(), answer(GLOSSED_REPLY))
            config = RunConfig(tool_error_formatter=theirs) if mode != "default" else None
            Runner.run_sync(refund_agent(), REFUND_ASK, run_config=config)
            told[(mode, on)] = refund_outputs(fake)
            if config is not None:
                assert config.tool_error_formatter is theirs  # the person's config is untouched
    source.state = "active"
    assert told[("default", True)] == told[("default", False)]
    assert told[("their formatter", True)] == told[("their formatter", False)]
    if sdk_hands_tool_errors_to_the_formatter():
        assert "the issue_refund tool is unavailable" in told[("their formatter", True)]
    failures = [e for e in transcript if e.kind == "tool_result" and e.name == "issue_refund"]
    assert len(failures) == 2 and all(REFUND_ERROR in str(e.error) for e in failures)


def test_a_streamed_run_with_a_positional_config_keeps_the_error(local: Any, fake: FakeLLM) -> None:
    import asyncio

    from agents import RunConfig, Runner

    _, transcript = local
    fake.respond(*refund_calls(), answer(GLOSSED_REPLY))

    async def stream() -> Any:
        result = Runner.run_streamed(refund_agent(), REFUND_ASK, None, 10, None, RunConfig())
        async for _event in result.stream_events():
            pass
        return result.final_output

    assert asyncio.run(stream()) == GLOSSED_REPLY
    failed_refund(entry_dicts(transcript))


def test_sensitive_data_off_keeps_the_error_out_too(local: Any, fake: FakeLLM) -> None:
    from agents import RunConfig, Runner

    _, transcript = local
    fake.respond(*refund_calls(), answer(GLOSSED_REPLY))
    config = RunConfig(trace_include_sensitive_data=False)
    Runner.run_sync(refund_agent(), REFUND_ASK, run_config=config)
    failed = [e for e in transcript if e.kind == "tool_result" and e.name == "issue_refund"]
    assert failed and failed[0].error  # still a failed tool, by name
    if sdk_hands_tool_errors_to_the_formatter():  # the person asked the SDK to leave it out
        assert REFUND_ERROR not in failed[0].error


def test_capture_stopping_unwraps_the_runner(local: Any) -> None:
    from agents import Runner

    source, _ = local
    wrapped = [name for name in ("run", "run_sync", "run_streamed") if _is_wrapped(Runner, name)]
    assert wrapped == (
        ["run", "run_sync", "run_streamed"] if sdk_hands_tool_errors_to_the_formatter() else []
    )
    source.uninstall()
    assert not any(_is_wrapped(Runner, n) for n in ("run", "run_sync", "run_streamed"))


def _is_wrapped(owner: type, name: str) -> bool:
    return type(owner.__dict__[name]) is not classmethod  # a wrapt wrapper proxies one


def test_tracing_disabled_records_nothing(local: Any, fake: FakeLLM) -> None:
    from agents import RunConfig, Runner

    _, transcript = local
    fake.respond(answer("quiet"))
    Runner.run_sync(local_agent(), "untraced", run_config=RunConfig(tracing_disabled=True))
    assert len(transcript) == 0


def test_a_fake_sdk_module_fails_the_source_with_one_warning() -> None:
    from jupyter_recap.capture.openai_agents import OpenAIAgentsSource
    from jupyter_recap.capture.runs import RunHub
    from jupyter_recap.capture.sources import CaptureWarning
    from jupyter_recap.record.transcript import Transcript

    transcript = Transcript()
    source = OpenAIAgentsSource(RunHub(lambda: transcript))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        source.activate(ModuleType("agents"))
        source.activate(ModuleType("agents"))
    assert [w.category for w in caught] == [CaptureWarning]
    assert source.state == "failed" and "does not understand" in source.describe()


def test_a_failing_callback_fails_once_and_the_run_goes_on(local: Any, fake: FakeLLM) -> None:
    from agents import Runner

    from jupyter_recap.capture.sources import CaptureWarning

    source, transcript = local

    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("hub exploded")

    source.hub.start = explode
    fake.respond(answer("fine"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = Runner.run_sync(local_agent(), "go on")
    assert result.final_output == "fine"
    assert len([w for w in caught if w.category is CaptureWarning]) == 1
    assert source.state == "failed" and len(transcript) == 0
    assert "off (a callback failed (RuntimeError: hub exploded))" in source.describe()
