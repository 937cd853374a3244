"""What capturing agent frameworks costs, measured in one run; prints Markdown tables.

    .venv/bin/python benchmarks/bench_capture.py            # full run (about a minute)
    .venv/bin/python benchmarks/bench_capture.py --quick    # smaller N, for a smoke check

1. Recording overhead per ordinary cell with every capture source installed (each framework
   imported, an OpenTelemetry SDK provider set), as a ratio against the same shell without the
   extension, and with the extension but ``Recap.capture = []`` — all three interleaved in every
   round, medians.
2. Capture cost per agent step: agents whose model answers instantly (LangChain/LangGraph with an
   in-process chat model, pydantic-ai with its FunctionModel) run N tool steps with capture on
   and off in the same shell; the difference per step in µs and as a share of a step.
3. The context of one 30-step SDK agent session: its characters and which key facts survive
   (the prompt, the model, every tool, the failing tool's error, the answer).
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "tests")]

os.environ.setdefault("JUPYTER_RECAP_LOG", "0")
os.environ["JUPYTER_RECAP_AUTO"] = "0"
os.environ["JUPYTER_RECAP_MODEL"] = "offline"
os.environ["OPENAI_API_KEY"] = "sk-bench-not-used"
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

from bench_foundation import _shell  # noqa: E402
from figurelib import figure  # noqa: E402

# -- the frameworks, imported as a person would --------------------------------------------


def import_every_framework() -> list[str]:
    """Import each framework a source watches (so every source installs); returns their names."""
    import agents
    import langchain_core  # noqa: F401
    import langgraph  # noqa: F401
    import pydantic_ai  # noqa: F401
    import smolagents  # noqa: F401
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    agents.set_trace_processors([])  # the SDK's own exporter would try to reach its servers
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(TracerProvider())
    return ["openai-agents", "pydantic-ai", "langchain", "smolagents", "opentelemetry"]


def load(shell: Any) -> None:
    shell.run_line_magic("load_ext", "jupyter_recap")


def unload(shell: Any) -> None:
    shell.run_line_magic("unload_ext", "jupyter_recap")


def cell_overhead(shell: Any, cells: int, rounds: int) -> tuple[float, float, float, list[float]]:
    """Median seconds per trivial cell: no extension, extension with capture, without it; and
    each round's ratio with capture on (their spread is the run's own noise).

    The three are interleaved in every round, so drift in the machine's load hits all alike.
    """
    from jupyter_recap.record import transcript

    def batch() -> float:
        start = time.perf_counter()
        for _ in range(cells):
            shell.run_cell("x = 1", store_history=True)
        return (time.perf_counter() - start) / cells

    batch()  # warm up caches and the compiler
    plain, on, off = [], [], []
    for _ in range(rounds):
        plain.append(batch())
        load(shell)
        on.append(batch())
        shell.run_line_magic("config", "Recap.capture = []")
        off.append(batch())
        unload(shell)
        transcript.current().clear()
    ratios = [with_ / without for without, with_ in zip(plain, on, strict=True)]
    return statistics.median(plain), statistics.median(on), statistics.median(off), ratios


def active_sources(shell: Any) -> list[str]:
    from jupyter_recap.ipython.extension import extension_for

    load(shell)
    ext = extension_for(shell)
    names = [n for n, s in ext.capture.sources.items() if s.state == "active"]  # type: ignore[union-attr]
    unload(shell)
    return names


# -- instant agents ------------------------------------------------------------------------


def langgraph_agent(steps: int, fail_on: int | None = None) -> Callable[[], Any]:
    """A LangGraph ReAct agent whose chat model answers at once: ``steps`` tool calls, then text.

    The tool raises on row ``fail_on`` (LangGraph returns the error to the model).
    """
    from langchain_core.callbacks import CallbackManagerForLLMRun
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent

    class Instant(BaseChatModel):
        model_name: str = "gpt-4o-mini"

        @property
        def _llm_type(self) -> str:
            return "instant"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(
            self,
            messages: list[BaseMessage],
            stop: list[str] | None = None,
            run_manager: CallbackManagerForLLMRun | None = None,
            **kwargs: Any,
        ) -> ChatResult:
            done = sum(isinstance(m, ToolMessage) for m in messages)
            if done < steps:
                call = {"name": "lookup", "args": {"row": done}, "id": f"c{done}"}
                message = AIMessage(content="", tool_calls=[call])
            else:
                message = AIMessage(content=f"Looked up {steps} rows.")
            return ChatResult(generations=[ChatGeneration(message=message)])

    @tool
    def lookup(row: int) -> str:
        """Look up one row."""
        if row == fail_on:
            raise PermissionError(f"row {row} is locked")
        return f"row {row}: ok"

    graph = create_react_agent(Instant(), [lookup])
    return lambda: graph.invoke(
        {"messages": [("user", "look up the rows")]}, {"recursion_limit": 4 * steps + 10}
    )


def pydantic_agent(steps: int) -> Callable[[], Any]:
    """A pydantic-ai agent on its FunctionModel: ``steps`` tool calls, then text."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        done = sum(
            isinstance(part, ToolReturnPart) for m in messages for part in getattr(m, "parts", [])
        )
        if done < steps:
            return ModelResponse(parts=[ToolCallPart("lookup", {"row": done})])
        return ModelResponse(parts=[TextPart(f"Looked up {steps} rows.")])

    def lookup(row: int) -> str:
        """Look up one row."""
        return f"row {row}: ok"

    agent = Agent(FunctionModel(model), tools=[lookup])
    return lambda: agent.run_sync("look up the rows")


# -- agents on the local fake model server (real HTTP, instant answers) ----------------------


def _script(fake: Any, steps: int) -> None:
    from fakellm import answer, tool_calls

    fake.respond(
        *(tool_calls(("lookup", {"row": n})) for n in range(steps)),
        answer(f"Looked up {steps} rows."),
    )


def http_langgraph(fake: Any, steps: int) -> Callable[[], Any]:
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent
    from pydantic import SecretStr

    @tool
    def lookup(row: int) -> str:
        """Look up one row."""
        return f"row {row}: ok"

    llm = ChatOpenAI(base_url=fake.url + "/v1", api_key=SecretStr("sk-bench"), model="gpt-4o-mini")
    graph = create_react_agent(llm, [lookup])

    def run() -> Any:
        _script(fake, steps)
        return graph.invoke(
            {"messages": [("user", "look up the rows")]}, {"recursion_limit": 4 * steps + 10}
        )

    return run


def http_pydantic_ai(fake: Any, steps: int) -> Callable[[], Any]:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(base_url=fake.url + "/v1", api_key="sk-bench")

    def lookup(row: int) -> str:
        """Look up one row."""
        return f"row {row}: ok"

    agent = Agent(OpenAIChatModel("gpt-4o-mini", provider=provider), tools=[lookup])

    def run() -> Any:
        _script(fake, steps)
        return agent.run_sync("look up the rows")

    return run


def http_openai_agents(fake: Any, steps: int) -> Callable[[], Any]:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
    from openai import AsyncOpenAI

    @function_tool
    def lookup(row: int) -> str:
        """Look up one row."""
        return f"row {row}: ok"

    client = AsyncOpenAI(base_url=fake.url + "/v1", api_key="sk-bench")
    model = OpenAIChatCompletionsModel("gpt-4o-mini", openai_client=client)
    agent = Agent(name="looker", model=model, tools=[lookup])

    def run() -> Any:
        _script(fake, steps)
        return Runner.run_sync(agent, "look up the rows", max_turns=steps + 5)

    return run


def http_smolagents(fake: Any, steps: int) -> Callable[[], Any]:
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool
    from smolagents.monitoring import LogLevel

    def lookup(row: int) -> str:
        """Look up one row.

        Args:
            row: which row.
        """
        return f"row {row}: ok"

    model = OpenAIServerModel("gpt-4o-mini", api_base=fake.url + "/v1", api_key="sk-bench")
    agent = ToolCallingAgent(
        tools=[tool(lookup)], model=model, max_steps=steps + 5, verbosity_level=LogLevel.OFF
    )

    def run() -> Any:
        from fakellm import tool_calls

        fake.respond(
            *(tool_calls(("lookup", {"row": n})) for n in range(steps)),
            tool_calls(("final_answer", {"answer": f"Looked up {steps} rows."})),
        )
        return agent.run("look up the rows")

    return run


def http_otel_loop(fake: Any, steps: int) -> Callable[[], Any]:
    """The plain ``openai`` client, instrumented, in a hand-written tool loop."""
    import json

    from openai import OpenAI
    from openai.types.chat import ChatCompletionToolParam
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "span_only"
    OpenAIInstrumentor().instrument()  # type: ignore[no-untyped-call]  # an unannotated __init__
    client = OpenAI(base_url=fake.url + "/v1", api_key="sk-bench")
    tools: list[ChatCompletionToolParam] = [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "parameters": {"type": "object", "properties": {"row": {"type": "integer"}}},
            },
        }
    ]

    def run() -> Any:
        _script(fake, steps)
        messages: list[Any] = [{"role": "user", "content": "look up the rows"}]
        while True:
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=tools
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                return message.content
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                assert call.type == "function"  # the fake model calls functions only
                row = json.loads(call.function.arguments)["row"]
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": f"row {row}: ok"}
                )

    return run


class CallbackClock:
    """CPU time spent inside the capture sources' framework callbacks.

    Every callback a framework makes into a source goes through ``Source.guarded``; timing
    there measures what capture itself costs, which a difference of two wall-clock runs
    (each several milliseconds of HTTP and framework work) can only estimate. It is the
    thread's CPU time: waiting for the GIL while the fake server's threads run is not capture's
    cost (and the clock's own two calls per callback are counted against us).
    """

    seconds = 0.0

    @classmethod
    def install(cls) -> None:
        from jupyter_recap.capture.sources import Source

        original = Source.guarded

        def guarded(self: Any, function: Any) -> Any:
            inner = original(self, function)

            def timed(*args: Any, **kwargs: Any) -> Any:
                if self.state != "active":
                    return inner(*args, **kwargs)  # a source switched off: not capture's work
                start = time.thread_time()
                try:
                    return inner(*args, **kwargs)
                finally:
                    cls.seconds += time.thread_time() - start

            return timed

        Source.guarded = guarded  # type: ignore[method-assign]


def step_cost(
    shell: Any, make: Callable[[int], Callable[[], Any]], steps: int, rounds: int
) -> tuple[float, float, float]:
    """Medians per step: seconds with capture off, with it on, and inside its callbacks."""
    run = make(steps)
    run()  # warm up
    off: list[float] = []
    on: list[float] = []
    inside: list[float] = []
    for _ in range(rounds):
        for capture, samples in (("[]", off), ("['all']", on)):
            shell.run_line_magic("config", f"Recap.capture = {capture}")
            CallbackClock.seconds = 0.0
            start = time.perf_counter()
            run()
            samples.append((time.perf_counter() - start) / steps)
            if samples is on:
                inside.append(CallbackClock.seconds / steps)
    return statistics.median(off), statistics.median(on), statistics.median(inside)


# -- the context of a 30-step session ------------------------------------------------------


def thirty_step_session(shell: Any, capture: str) -> dict[str, Any]:
    """A 30-step LangGraph session run from a plain cell; what a recap would be sent.

    The tool fails on row 17 (LangGraph hands the error back to the model, which goes on).
    """
    from jupyter_recap import current
    from jupyter_recap.pipeline.context import build_context

    shell.run_line_magic("config", f"Recap.capture = {capture}")
    current().clear()
    shell.user_ns["make"] = langgraph_agent
    shell.run_cell("agent_run = make(30, fail_on=17)", store_history=True)
    shell.run_cell("result = agent_run()", store_history=True)
    context = build_context(current(), max_chars=12000)
    facts = {
        "prompt": "look up the rows" in context,
        "model": "gpt-4o-mini" in (current().active_model or ""),
        "every tool call": all(f"row={n}" in context for n in range(30)),
        "the failed step": "row 17 is locked" in context,
        "the answer": "Looked up 30 rows." in context,
    }
    return {"chars": len(context), "entries": len(current()), "facts": facts}


HEADER = (
    "| agent | steps × rounds | step, capture off | capture on | difference "
    "| in capture callbacks | share of a step |\n|---|---|---|---|---|---|---|"
)


def step_row(label: str, steps: int, rounds: int, off: float, on: float, inside: float) -> str:
    return (
        f"| {label} | {steps} × {rounds} | {off * 1e6:.0f} µs | {on * 1e6:.0f} µs "
        f"| {(on - off) * 1e6:+.0f} µs | {inside * 1e6:.1f} µs | {inside / on:.2%} |"
    )


def step_figure(
    kind: str, label: str, steps: int, costs: tuple[float, float, float], target: float | None
) -> None:
    """The README's figure of one agent row: CPU time in capture callbacks per step, and its
    share of the step."""
    _, on, inside = costs
    share = inside / on
    where = "the local fake model server" if kind == "http" else "an in-process instant model"
    figure(
        f"step_{kind}_" + "".join(c if c.isalnum() else "_" for c in label.lower()),
        f"{inside * 1e6:.0f} µs ({share:.2%} of a {on * 1e3:.1f} ms step)",
        unit="",
        label=f"capture CPU time per agent step, {label}, {steps}-step runs against {where}",
        target=None if target is None else f"< {target:.0%} of a step",
        met=None if target is None else share < target,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer rounds")
    args = parser.parse_args()
    cells, rounds = (300, 3) if args.quick else (2000, 7)
    steps, step_rounds = (10, 3) if args.quick else (30, 9)

    CallbackClock.install()
    import_every_framework()
    shell = _shell()
    sources = active_sources(shell)
    plain, on, off, spread = cell_overhead(shell, cells, rounds)
    print("## Recording overhead with every capture source installed\n")
    print(f"Sources active: {', '.join(sources)}.\n")
    print("| cells × rounds | no extension | extension, capture on | capture off | ratios |")
    print("|---|---|---|---|---|")
    print(
        f"| {cells} × {rounds} | {plain * 1e6:.1f} µs/cell | {on * 1e6:.1f} µs/cell "
        f"| {off * 1e6:.1f} µs/cell | {on / plain:.3f} on, {off / plain:.3f} off "
        f"(target ≤ 1.05) |\n"
    )
    for key, ratio, how in (
        ("overhead_on", on / plain, "on"),
        ("overhead_off", off / plain, "off"),
    ):
        figure(
            key,
            round(ratio, 3),
            unit="",
            label=f"recording overhead with every capture source installed, capture {how} "
            f"(`Recap.capture = {'all' if how == 'on' else '[]'}`), ratio with / without the "
            f"extension, {cells:,} cells × {rounds} rounds",
            target="≤ 1.05",
            met=ratio <= 1.05,
        )
    figure(
        "overhead_rounds",
        f"{min(spread):.3f}–{max(spread):.3f}",
        unit="",
        label="… the ratio with capture on in single rounds, lowest–highest (the run's own noise)",
    )
    figure(
        "capture_per_cell",
        f"{(on - off) * 1e6:.1f} µs per cell ({(on - off) / plain:.1%})",
        unit="",
        label="what capture adds to an ordinary cell (capture on − off)",
    )

    print("## Capture cost per agent step (instant model, in-process)\n")
    print(HEADER)
    load(shell)
    for label, make in (
        ("LangGraph ReAct agent", langgraph_agent),
        ("pydantic-ai agent (FunctionModel)", pydantic_agent),
    ):
        costs = step_cost(shell, make, steps, step_rounds)
        print(step_row(label, steps, step_rounds, *costs))
        step_figure("instant", label, steps, costs, target=None)
    shell.run_line_magic("config", "Recap.capture = ['all']")
    print()

    from fakellm import FakeLLM

    print("## Capture cost per agent step (the local fake model server, real HTTP)\n")
    print(HEADER)
    with FakeLLM() as fake:
        for label, http_make in (
            ("OpenAI Agents SDK (chat completions)", http_openai_agents),
            ("pydantic-ai (OpenAIChatModel)", http_pydantic_ai),
            ("LangGraph ReAct agent (ChatOpenAI)", http_langgraph),
            ("smolagents ToolCallingAgent", http_smolagents),
            ("openai client + OpenTelemetry instrumentation", http_otel_loop),
        ):
            costs = step_cost(shell, functools.partial(http_make, fake), steps, step_rounds)
            print(step_row(label, steps, step_rounds, *costs))
            step_figure("http", label, steps, costs, target=0.01)
    shell.run_line_magic("config", "Recap.capture = ['all']")
    print()

    print("## Context of one 30-step SDK agent session (LangGraph, run from a plain cell)\n")
    print("| capture | entries | context chars | key facts kept |")
    print("|---|---|---|---|")
    for label, capture in (("on", "['all']"), ("off (the cell only)", "[]")):
        session = thirty_step_session(shell, capture)
        facts = session["facts"]
        kept = ", ".join(name for name, ok in facts.items() if ok) or "none"
        print(
            f"| {label} | {session['entries']} | {session['chars']:,} "
            f"| {sum(facts.values())} of {len(facts)}: {kept} |"
        )
        figure(
            f"session_{'on' if capture != '[]' else 'off'}",
            f"{session['chars']:,} characters, {sum(facts.values())} of {len(facts)} key facts",
            unit="",
            label=f"context of one 30-step LangGraph session run from a plain cell "
            f"(a tool failing on step 17), capture {label}",
        )
    unload(shell)


if __name__ == "__main__":
    main()
