"""pydantic-ai runs started from plain cells become agent turns (real kernel, fake LLM server).

The source gives ``Agent.instrument_all`` a private tracer provider whose processor reads the
GenAI spans pydantic-ai emits (``invoke_agent``, ``chat``, ``execute_tool``).
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import needs
import pytest
from capturekit import (
    GLOSSED_REPLY,
    ORDER,
    REFUND_ASK,
    REFUND_ERROR,
    brief,
    capture_warnings,
    entries,
    errors,
    execute,
    failed_refund,
    kernel_env,
    new_entries,
    peek,
    recap_request,
    refund_calls,
    run,
    start_agent_kernel,
    status,
    turns_recorded,
)
from fakellm import FakeLLM, answer, hang, tool_calls
from kernelutil import stop, stream_text

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(autouse=True, scope="module")
def _installed() -> None:
    needs.modules("pydantic_ai")


SETUP = """
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(base_url={url!r}, api_key="sk-x"))
agent = Agent(model, name="weather_agent", instructions="Be brief.")

@agent.tool_plain
def get_weather(city: str) -> str:
    if city == "Oslo":
        raise ValueError("no data for Oslo")
    return f"sunny in {{city}}"

researcher = Agent(model, name="researcher")

@researcher.tool_plain
def search(query: str) -> str:
    return f"found {{query}}"

@agent.tool_plain
async def ask_researcher(question: str) -> str:
    return (await researcher.run(question)).output

# The kernel's event loop is running: run_sync works from a worker thread (or nest_asyncio).
from concurrent.futures import ThreadPoolExecutor

def run_sync(agent, prompt):
    return ThreadPoolExecutor(1).submit(agent.run_sync, prompt).result()
"""


@pytest.fixture(scope="module")
def kernel(fake: FakeLLM) -> Iterator[tuple[Any, Any]]:
    """(km, kc) of a kernel with jupyter_recap loaded and the agents defined."""
    km, kc = start_agent_kernel(fake)
    try:
        run(kc, SETUP.format(url=fake.url + "/v1"))
        yield km, kc
    finally:
        stop(km, kc)


def raised(messages: list[dict[str, Any]], text: str) -> bool:
    """Whether the cell failed with ``text`` (IPython sometimes prints a plain traceback for
    exceptions raised in pydantic-ai's worker threads instead of sending an error message)."""
    return any(text in found for found in errors(messages)) or text in stream_text(
        messages, "stderr"
    )


def test_run_sync_with_a_tool_is_one_turn(kernel: tuple[Any, Any], fake: FakeLLM) -> None:
    _, kc = kernel
    before, turns = len(entries(kc)), turns_recorded(kc, "pydantic-ai")
    fake.respond(tool_calls(("get_weather", {"city": "Paris"})), answer("It is sunny in Paris."))
    out = stream_text(run(kc, "print(run_sync(agent, 'What is the weather in Paris?').output)"))
    assert out == "It is sunny in Paris.\n"
    assert brief(new_entries(kc, before)) == [
        ("user", "openai:gpt-4o-mini", "What is the weather in Paris?", None, None),
        ("tool_call", "get_weather", "city='Paris'", None, None),
        ("tool_result", "get_weather", "sunny in Paris", None, None),
        ("assistant", None, "It is sunny in Paris.", None, None),
        ("outcome", None, None, None, "ok"),
    ]
    assert peek(kc, "__import__('jupyter_recap').current().active_model") == ("openai:gpt-4o-mini")
    sent = recap_request(kc, fake)
    for text in ("What is the weather in Paris?", "get_weather", "sunny in Paris", "Paris."):
        assert text in sent
    assert turns_recorded(kc, "pydantic-ai") == turns + 1


def test_async_run_and_stream_are_turns(kernel: tuple[Any, Any], fake: FakeLLM) -> None:
    _, kc = kernel
    before = len(entries(kc))
    fake.respond(tool_calls(("get_weather", {"city": "Rome"})), answer("Rome is warm."))
    run(kc, "result = await agent.run('Weather in Rome?')\nprint(result.output)")
    fake.respond(answer("Streamed hello."))
    code = (
        "async with agent.run_stream('Say hello') as streamed:\n"
        "    parts = [p async for p in streamed.stream_text()]\n"
        "print(parts[-1])"
    )
    assert stream_text(run(kc, code)) == "Streamed hello.\n"
    assert brief(new_entries(kc, before)) == [
        ("user", "openai:gpt-4o-mini", "Weather in Rome?", None, None),
        ("tool_call", "get_weather", "city='Rome'", None, None),
        ("tool_result", "get_weather", "sunny in Rome", None, None),
        ("assistant", None, "Rome is warm.", None, None),
        ("outcome", None, None, None, "ok"),
        ("user", "openai:gpt-4o-mini", "Say hello", None, None),
        ("assistant", None, "Streamed hello.", None, None),
        ("outcome", None, None, None, "ok"),
    ]


def test_nested_agent_is_one_turn_and_two_runs_two(kernel: tuple[Any, Any], fake: FakeLLM) -> None:
    _, kc = kernel
    before = len(entries(kc))
    fake.respond(
        tool_calls(("ask_researcher", {"question": "cats"})),
        tool_calls(("search", {"query": "cats"})),
        answer("Cats are nice."),
        answer("The researcher says cats are nice."),
        answer("First."),
        answer("Second."),
    )
    run(kc, "run_sync(agent, 'Tell me about cats')")
    run(kc, "a = run_sync(agent, 'one').output\nb = run_sync(agent, 'two').output")
    assert brief(new_entries(kc, before)) == [
        ("user", "openai:gpt-4o-mini", "Tell me about cats", None, None),
        ("tool_call", "ask_researcher", "question='cats'", None, None),
        ("tool_call", "researcher", "cats", None, None),
        ("tool_call", "researcher.search", "query='cats'", None, None),
        ("tool_result", "researcher.search", "found cats", None, None),
        ("tool_result", "researcher", "Cats are nice.", None, None),
        ("tool_result", "ask_researcher", "Cats are nice.", None, None),
        ("assistant", None, "The researcher says cats are nice.", None, None),
        ("outcome", None, None, None, "ok"),
        ("user", "openai:gpt-4o-mini", "one", None, None),
        ("assistant", None, "First.", None, None),
        ("outcome", None, None, None, "ok"),
        ("user", "openai:gpt-4o-mini", "two", None, None),
        ("assistant", None, "Second.", None, None),
        ("outcome", None, None, None, "ok"),
    ]


def test_failing_tool_and_failing_agent_are_errored(kernel: tuple[Any, Any], fake: FakeLLM) -> None:
    _, kc = kernel
    before = len(entries(kc))
    fake.respond(tool_calls(("get_weather", {"city": "Oslo"})))
    messages = execute(kc, "run_sync(agent, 'Weather in Oslo?')")
    assert raised(messages, "ValueError: no data for Oslo")
    turn = new_entries(kc, before)
    assert brief(turn) == [
        ("user", "openai:gpt-4o-mini", "Weather in Oslo?", None, None),
        ("tool_call", "get_weather", "city='Oslo'", None, None),
        ("tool_result", "get_weather", None, "ValueError: no data for Oslo", None),
        ("outcome", None, None, "ValueError: no data for Oslo", "errored"),
    ]
    # the model call itself fails: the agent raises
    before = len(entries(kc))
    from fakellm import status as http_status

    fake.respond(http_status(400, "bad request"))
    assert raised(execute(kc, "run_sync(agent, 'Will fail')"), "bad request")
    turn = new_entries(kc, before)
    assert [e["kind"] for e in turn] == ["user", "outcome"]
    assert turn[-1]["outcome"] == "errored" and "bad request" in turn[-1]["error"]


CLERK = f"""
from pydantic_ai import ModelRetry

clerk = Agent(model, name="clerk")

@clerk.tool_plain
def lookup_order(order_id: str) -> str:
    return {ORDER!r}

@clerk.tool_plain
def issue_refund(order_id: str, amount: int) -> str:
    # pydantic-ai's way to tell the model a tool failed and let it go on
    raise ModelRetry({REFUND_ERROR!r})
"""


def test_glossed_over_tool_failure_is_in_the_transcript(
    kernel: tuple[Any, Any], fake: FakeLLM
) -> None:
    _, kc = kernel
    run(kc, CLERK)
    before = len(entries(kc))
    fake.respond(*refund_calls(), answer(GLOSSED_REPLY))
    out = stream_text(run(kc, f"print(run_sync(clerk, {REFUND_ASK!r}).output)"))
    assert out == GLOSSED_REPLY + "\n"
    turn = new_entries(kc, before)
    assert failed_refund(turn)["name"] == "issue_refund"
    assert brief(turn[-2:]) == [
        ("assistant", None, GLOSSED_REPLY, None, None),
        ("outcome", None, None, None, "ok"),
    ]


def test_interrupted_run_is_aborted(kernel: tuple[Any, Any], fake: FakeLLM) -> None:
    km, kc = kernel
    before = len(entries(kc))
    fake.respond(hang())
    seen = len(fake.requests)
    msg_id = kc.execute("run_sync(agent, 'This will hang')")
    assert fake.wait_for_requests(seen + 1, timeout=30)
    time.sleep(0.3)
    km.interrupt_kernel()
    reply = kc.get_shell_msg(timeout=30)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=30)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    turn = new_entries(kc, before)
    # The prompt is on the model span only once the model answered: an interrupt before that
    # leaves the run's placeholder (the agent's name).
    assert turn[0]["kind"] == "user" and turn[0]["text"] in (
        "This will hang",
        "(weather_agent run)",
    )
    assert turn[-1]["kind"] == "outcome" and turn[-1]["outcome"] == "aborted", turn


def test_background_run_is_one_turn(kernel: tuple[Any, Any], fake: FakeLLM) -> None:
    _, kc = kernel
    before = len(entries(kc))
    fake.respond(tool_calls(("get_weather", {"city": "Lima"})), answer("Lima is grey."))
    run(kc, "import asyncio\ntask = asyncio.ensure_future(agent.run('Weather in Lima?'))")
    run(kc, "await task\nprint(task.result().output)")
    turn = new_entries(kc, before)
    assert brief(turn) == [
        ("user", "openai:gpt-4o-mini", "Weather in Lima?", None, None),
        ("tool_call", "get_weather", "city='Lima'", None, None),
        ("tool_result", "get_weather", "sunny in Lima", None, None),
        ("assistant", None, "Lima is grey.", None, None),
        ("outcome", None, None, None, "ok"),
    ]
    assert len({e.get("cell_id") for e in turn}) == 1


#: A kernel startup file that makes every import of the OpenTelemetry SDK fail as it fails where
#: the SDK is not installed: ``pip install "pydantic-ai-slim[openai]"``, the install pydantic-ai's
#: documentation gives, brings the OpenTelemetry API and no SDK. (A finder at the head of
#: ``sys.meta_path`` rather than an environment of its own: the same proof without installing
#: and keeping a third environment in CI.)
WITHOUT_SDK = """
import importlib.abc, sys

class _NoOpenTelemetrySDK(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry.sdk" or name.startswith("opentelemetry.sdk."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

assert not [m for m in sys.modules if m.startswith("opentelemetry.sdk")]
sys.meta_path.insert(0, _NoOpenTelemetrySDK())
"""


def test_capture_works_without_the_opentelemetry_sdk(fake: FakeLLM, tmp_path: Any) -> None:
    startup = tmp_path / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-without-sdk.py").write_text(WITHOUT_SDK)
    km, kc = start_agent_kernel(fake, {"IPYTHONDIR": str(tmp_path / "ipython")})
    try:
        assert errors(execute(kc, "import opentelemetry.sdk.trace", store_history=False)) == [
            "ModuleNotFoundError: No module named 'opentelemetry.sdk'"
        ]
        # What another kernel shows before pydantic-ai is imported: true, as the run shows.
        line = [ln for ln in status(kc).splitlines() if "pydantic-ai" in ln]
        assert line and line[0].endswith(": on once pydantic_ai is imported"), line
        messages = run(kc, SETUP.format(url=fake.url + "/v1"))
        assert not capture_warnings(messages), stream_text(messages, "stderr")
        fake.respond(tool_calls(("get_weather", {"city": "Paris"})), answer("Sunny in Paris."))
        out = stream_text(run(kc, "print(run_sync(agent, 'What is the weather in Paris?').output)"))
        assert out == "Sunny in Paris.\n"
        assert brief(new_entries(kc, 0)) == [
            ("user", "openai:gpt-4o-mini", "What is the weather in Paris?", None, None),
            ("tool_call", "get_weather", "city='Paris'", None, None),
            ("tool_result", "get_weather", "sunny in Paris", None, None),
            ("assistant", None, "Sunny in Paris.", None, None),
            ("outcome", None, None, None, "ok"),
        ]
        assert turns_recorded(kc, "pydantic-ai") == 1
        assert "What is the weather in Paris?" in recap_request(kc, fake)
        loaded = "[m for m in __import__('sys').modules if m.startswith('opentelemetry.sdk')]"
        assert peek(kc, loaded) == []
    finally:
        stop(km, kc)


def test_output_unchanged_by_the_extension(kernel: tuple[Any, Any], fake: FakeLLM) -> None:
    """The cell's printed result is the same with and without jupyter_recap (with it: the
    module's kernel; without: one that never loads it)."""
    from capturekit import agent_kernel

    code = SETUP.format(url=fake.url + "/v1") + (
        "r = run_sync(agent, 'Weather in Paris?')\n"
        "print(repr(r.output), [type(m).__name__ for m in r.all_messages()])"
    )
    outputs = []
    with agent_kernel(fake, kernel_env(fake), load=False) as plain:
        for kc in (plain, kernel[1]):
            fake.respond(tool_calls(("get_weather", {"city": "Paris"})), answer("Sunny."))
            outputs.append(stream_text(run(kc, code)))
    assert [e["kind"] for e in entries(kernel[1])][-1] == "outcome"
    assert outputs[0] == outputs[1]
    assert "'Sunny.'" in outputs[0]


# -- in-process: version drift and failing callbacks ----------------------------------------


def test_unknown_api_turns_the_source_off_with_one_warning() -> None:
    from jupyter_recap.capture.pydantic_ai import PydanticAISource
    from jupyter_recap.capture.runs import RunHub
    from jupyter_recap.capture.sources import CaptureWarning
    from jupyter_recap.record.transcript import Transcript

    source = PydanticAISource(RunHub(Transcript))
    fake_module = ModuleType("pydantic_ai")
    fake_module.Agent = type("Agent", (), {})  # type: ignore[attr-defined]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        source.activate(fake_module)
    assert source.state == "failed"
    assert [w.category for w in caught] == [CaptureWarning]
    assert "instrument_all" in str(caught[0].message)
    assert source.describe().startswith("pydantic-ai") and "off (" in source.describe()


def test_version_drift_in_the_kernel_shows_in_status(fake: FakeLLM) -> None:
    from capturekit import agent_kernel

    from jupyter_recap.capture.sources import installed_version

    version = installed_version("pydantic-ai-slim")
    with agent_kernel(fake) as kc:
        code = (
            "import types, warnings\n"
            "from jupyter_recap.ipython.extension import extension_for\n"
            # made on first use: pydantic-ai itself is not imported in this kernel
            "src = extension_for(get_ipython()).capture.sources['pydantic-ai']\n"
            "src.state = 'waiting'\n"
            "src.activate(types.SimpleNamespace(Agent=object))\n"
        )
        messages = execute(kc, code)
        # One line, and none of our source under it.
        assert stream_text(messages, "stderr").splitlines() == [
            f"jupyter_recap:0: CaptureWarning: capture of pydantic-ai {version} is off: does not "
            "understand this version (AttributeError: pydantic_ai.Agent.instrument_all is "
            "missing); its runs are recorded as ordinary cells"
        ]
        assert "pydantic-ai" in status(kc) and "off (does not understand" in status(kc)


def test_failing_callback_never_breaks_the_run(fake: FakeLLM) -> None:
    from capturekit import agent_kernel

    with agent_kernel(fake) as kc:
        run(kc, SETUP.format(url=fake.url + "/v1"))
        run(
            kc,
            "src = [s for s in __import__('gc').get_objects()"
            " if type(s).__name__ == 'PydanticAISource'][0]\n"
            "def boom(*a, **k):\n    raise RuntimeError('boom')\n"
            "src.tracker._model_end = boom",
        )
        fake.respond(tool_calls(("get_weather", {"city": "Paris"})), answer("Sunny."))
        messages = execute(kc, "print(run_sync(agent, 'Weather in Paris?').output)")
        assert stream_text(messages) == "Sunny.\n"
        assert not [m for m in messages if m["msg_type"] == "error"]
        assert stream_text(messages, "stderr").count("capture of pydantic-ai") == 1
        assert "off (a callback failed (RuntimeError: boom))" in status(kc)
        json.dumps(entries(kc))  # the transcript is still readable
