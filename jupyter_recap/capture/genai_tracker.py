"""OpenTelemetry spans that follow the GenAI semantic conventions, turned into agent runs.

Shared by the ``opentelemetry`` source (a processor on the person's global tracer provider:
any instrumented client or framework) and the ``pydantic-ai`` source (a private provider given to
``Agent.instrument_all``). Nothing here imports OpenTelemetry: :func:`span_processor` and
:func:`log_processor` build the SDK subclasses once the SDK is imported, around a
:class:`GenAITracker` that only reads span attributes.

What a span tells (``gen_ai.operation.name``):

* ``invoke_agent`` — an agent run. The outermost one of a trace is a turn; one inside it (an
  agent used as a tool, a handoff) is a nested run whose steps become tool lines named by agent.
* ``chat`` (or any other model call) — the model (``gen_ai.provider.name``/``gen_ai.system`` and
  ``gen_ai.request.model``), the prompt (the first call's last user message) and the reply (the
  last call's text). Tool calls the model asked for and the results sent back in the next call
  become tool lines unless ``execute_tool`` spans report them.
* ``execute_tool`` — a tool call (``gen_ai.tool.name``, ``gen_ai.tool.call.arguments``,
  ``gen_ai.tool.call.result``; an error status or exception event is the tool's error).

Grouping: a trace whose spans include GenAI ones is one run, from its root span's start to its
end (its root may be any span of the person's). Model calls that are roots themselves (a plain
client loop: call, tool calls, the person runs the tools, call again) belong together while
each call's input continues the previous conversation in the same cell: one turn. A trace
started while another source's run is active here is that source's business and is skipped.

What a message or an attribute holds is decoded in :mod:`.genai_messages`.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .genai_messages import (
    DETAILS_EVENT,
    LEGACY_EVENTS,
    Content,
    Message,
    ToolCall,
    agent_name,
    messages,
    model_id,
    new_messages,
    span_error,
)
from .runs import AgentRun, CellMark, RunHub

#: Model operations (the rest of the GenAI operation names are agents, tools, embeddings…).
MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "completion"})
AGENT_OPERATIONS = frozenset({"invoke_agent"})
TOOL_OPERATIONS = frozenset({"execute_tool"})
#: Operations that are not part of an agent's turn (no prompt, no reply).
IGNORED_OPERATIONS = frozenset({"embeddings", "create_agent", "retrieval"})

#: How many spans / pending log payloads are kept at most (a tracer that never ends its spans
#: must not grow this without bound).
MAX_TRACKED = 10_000


# -- the tracker ----------------------------------------------------------------------------


@dataclass(eq=False)
class _Node:
    """A span the tracker follows; agent spans own a (possibly nested) run."""

    trace: _Trace
    outer: _Node | None
    agent: str | None = None
    run: AgentRun | None = None
    owns_run: bool = False
    pending: dict[str, ToolCall] = field(default_factory=dict)
    """Tool calls a model asked for, waiting for their execute_tool span or their result."""
    tool_spans: bool = False
    """Whether execute_tool spans report this run's tools (then messages are not used)."""
    model: str | None = None
    reply: str = ""
    prompt: str | None = None
    written_call: bool = False

    def owner(self) -> _Node:
        """The node whose run this span's steps go to."""
        node: _Node | None = self
        while node is not None:
            if node.owns_run:
                return node
            node = node.outer
        return self.trace.top


@dataclass(eq=False)
class _Trace:
    trace_id: int
    anchor: int | None = None
    """The span whose end finishes the run (the trace's root, when the tracker saw it start)."""
    skipped: bool = False
    top_node: _Node | None = None

    @property
    def top(self) -> _Node:
        assert self.top_node is not None
        return self.top_node


@dataclass(eq=False)
class _Loop:
    """A plain client loop: root model calls in one cell, each continuing the conversation."""

    run: AgentRun
    cell: CellMark | None
    conversation: list[tuple[Any, ...]]
    pending: dict[str, ToolCall] = field(default_factory=dict)
    """Tool calls the model asked for: the turn goes on while the person answers them."""
    open_spans: int = 0
    idle_cells: int = 0
    """Cells that ended since the loop's last call (a loop nobody continues ends after one)."""
    raw_input: str | None = None
    """The latest call's input messages as the instrumentation wrote them (JSON text)."""


def _key(span: Any) -> tuple[int, int]:
    context = span.context
    return int(context.trace_id), int(context.span_id)


class GenAITracker:
    """Turns GenAI spans into hub runs; called by the SDK processors (see module docstring)."""

    def __init__(self, hub: RunHub, source: str) -> None:
        self.hub = hub
        self.source = source
        self._lock = threading.RLock()
        self._traces: dict[int, _Trace] = {}
        self._nodes: dict[int, _Node] = {}
        self._roots: dict[int, int] = {}  # root span id -> trace id (every root seen)
        self._logs: dict[int, Content] = {}  # span id -> content from log records
        self._loop: _Loop | None = None
        self._loop_spans: dict[int, _Loop] = {}
        self._dead: set[int] = set()
        """Spans left open by a run that ended with its cell (an interrupt skips their end, and
        an instrumentation may leave one current: what starts under it is a new root)."""

    # -- spans ------------------------------------------------------------------------------

    def on_start(self, span: Any) -> None:
        trace_id, span_id = _key(span)
        parent = getattr(span, "parent", None)
        is_root = (
            parent is None
            or bool(getattr(parent, "is_remote", False))
            or int(parent.span_id) in self._dead
        )
        attributes = getattr(span, "attributes", None) or {}
        operation = attributes.get("gen_ai.operation.name")
        with self._lock:
            trace = self._traces.get(trace_id)
            if is_root and trace is None:
                if len(self._roots) >= MAX_TRACKED:
                    return
                self._roots[span_id] = trace_id
                trace = self._traces[trace_id] = _Trace(trace_id, anchor=span_id)
            if trace is not None and trace.skipped:
                return
            outer = self._nodes.get(int(parent.span_id)) if parent is not None else None
            if operation is None or operation in IGNORED_OPERATIONS:
                if trace is not None and trace.top_node is not None:
                    self._nodes[span_id] = _Node(trace, outer)
                return
            operation = str(operation)
            if trace is None:  # its root started before we were installed
                trace = self._traces[trace_id] = _Trace(trace_id, anchor=span_id)
            if trace.top_node is None:
                active = self.hub.active()
                if active is not None and active.source != self.source:
                    trace.skipped = True  # that source records this run already
                    return
                if is_root and operation in MODEL_OPERATIONS:
                    self._loop_start(span_id)
                    return
                self._start_top(trace, operation, attributes)
                self._nodes[span_id] = trace.top
                return
            node = _Node(trace, outer)
            self._nodes[span_id] = node
            if operation in AGENT_OPERATIONS:
                node.owns_run = True
                node.agent = agent_name(attributes) or "agent"
                node.model = model_id(attributes, attributes.get("model_name"), bare=False)
            elif operation in TOOL_OPERATIONS:
                owner = node.owner()
                owner.tool_spans = True
                if "gen_ai.tool.call.arguments" in attributes:
                    name = str(attributes.get("gen_ai.tool.name") or span.name or "tool")
                    owner.pending.pop(str(attributes.get("gen_ai.tool.call.id") or ""), None)
                    self._run_of(owner).tool_call(name, attributes["gen_ai.tool.call.arguments"])
                    node.written_call = True

    def on_end(self, span: Any) -> None:
        trace_id, span_id = _key(span)
        attributes = getattr(span, "attributes", None) or {}
        operation = attributes.get("gen_ai.operation.name")
        with self._lock:
            logged = self._logs.pop(span_id, None)
            if span_id in self._loop_spans:
                self._loop_end(span_id, span, attributes, logged)
                self._forget_root(span_id, trace_id)
                return
            node = self._nodes.pop(span_id, None)
            trace = self._traces.get(trace_id)
            if node is not None and trace is not None and not trace.skipped:
                if operation in MODEL_OPERATIONS:
                    self._model_end(node, span, attributes, logged)
                elif operation in TOOL_OPERATIONS:
                    self._tool_end(node, span, attributes)
                elif operation in AGENT_OPERATIONS and node is trace.top_node:
                    node.reply = self._agent_reply(node, attributes)  # under a span of theirs
                elif operation in AGENT_OPERATIONS and node.owns_run:
                    self._agent_end(node, span, attributes)
            if trace is not None and trace.anchor == span_id:
                if trace.top_node is not None and not trace.skipped:
                    self._agent_end(trace.top, span, attributes)
                self._traces.pop(trace_id, None)
            self._forget_root(span_id, trace_id)

    def on_log(self, record: Any) -> None:
        """A log record: content events of a model span (kept until that span ends)."""
        record = getattr(record, "log_record", record)
        name = getattr(record, "event_name", None) or ""
        attributes = getattr(record, "attributes", None) or {}
        if not name:
            name = str(attributes.get("event.name") or "")
        if name != DETAILS_EVENT and name not in LEGACY_EVENTS:
            return
        span_id = int(getattr(record, "span_id", 0) or 0)
        if not span_id:
            return
        with self._lock:
            content = self._logs.get(span_id)
            if content is None:
                if len(self._logs) >= MAX_TRACKED:
                    return
                content = self._logs[span_id] = Content()
            content.add_event(name, attributes, getattr(record, "body", None))

    # -- runs -------------------------------------------------------------------------------

    def _start_top(self, trace: _Trace, operation: str, attributes: Mapping[str, Any]) -> None:
        agent = agent_name(attributes) if operation in AGENT_OPERATIONS else None
        model = model_id(attributes, attributes.get("model_name"), bare=False)
        run = self.hub.start(self.source, model=model, agent=agent)
        node = _Node(trace, None, agent=agent, run=run, owns_run=True)
        trace.top_node = node

    def _run_of(self, node: _Node) -> AgentRun:
        """The run of an owning node (a nested agent's run starts with its first step)."""
        if node.run is None:
            outer = node.outer.owner() if node.outer is not None else node.trace.top
            node.run = self.hub.start(
                self.source,
                prompt=node.prompt,
                model=node.model,
                agent=node.agent,
                parent=self._run_of(outer),
                activate=False,
            )
        return node.run

    def _model_end(
        self, node: _Node, span: Any, attributes: Mapping[str, Any], logged: Content | None
    ) -> None:
        owner = node.owner()
        # Each model span carries the whole conversation so far. Once the prompt is known and
        # the tools report their own spans, only the answer is new: reading the history again
        # at every step would make a long run cost quadratic time.
        known = owner.prompt or (owner.run.prompt if owner.run is not None else None)
        content = self._content(span, attributes, logged, inputs=not (known and owner.tool_spans))
        if owner.run is None and content.prompt:
            owner.prompt = content.prompt
        run = self._run_of(owner)
        model = model_id(attributes)
        if model:
            run.set_model(model)
        if content.prompt and owner is owner.trace.top_node:
            run.set_prompt(content.prompt)
        self._settle_calls(run, owner.pending, content.input, owner.tool_spans)
        for call in content.calls:
            owner.pending[call.id or call.name] = call
        if content.reply:
            owner.reply = content.reply
            run.reply(content.reply)

    def _settle_calls(
        self,
        run: AgentRun,
        pending: dict[str, ToolCall],
        sent: Iterable[Message],
        reported: bool,
    ) -> None:
        """Tool calls the model asked for, with the results sent back in ``sent``."""
        if reported or not pending:
            pending.clear()
            return
        results = {result.id or result.name: result for item in sent for result in item.results}
        for key, call in list(pending.items()):
            result = results.get(key)
            if result is None:
                continue
            run.tool_call(call.name, call.arguments)
            run.tool_result(call.name, result.result)
            del pending[key]

    def _flush_calls(
        self, run: AgentRun, pending: dict[str, ToolCall], reported: bool = False
    ) -> None:
        """Calls nobody answered (the run ended on them): the calls, without results."""
        for call in [] if reported else pending.values():
            run.tool_call(call.name, call.arguments)
        pending.clear()

    def _tool_end(self, node: _Node, span: Any, attributes: Mapping[str, Any]) -> None:
        owner = node.owner()
        run = self._run_of(owner)
        name = str(attributes.get("gen_ai.tool.name") or getattr(span, "name", "") or "tool")
        if not node.written_call:
            owner.pending.pop(str(attributes.get("gen_ai.tool.call.id") or ""), None)
            run.tool_call(name, attributes.get("gen_ai.tool.call.arguments"))
        error = span_error(span)
        result = attributes.get("gen_ai.tool.call.result", "")
        if error is not None:
            run.tool_result(name, result, error=error)
        else:
            run.tool_result(name, result)

    def _agent_reply(self, node: _Node, attributes: Mapping[str, Any]) -> str:
        for key in ("final_result", "gen_ai.output.messages"):
            if key in attributes:
                value = attributes[key]
                if key == "gen_ai.output.messages":
                    value = "\n".join(m.text for m in messages(value) if m.text.strip())
                if value not in (None, ""):
                    return value if isinstance(value, str) else json.dumps(value, default=str)
        return node.reply

    def _agent_end(self, node: _Node, span: Any, attributes: Mapping[str, Any]) -> None:
        """An agent span ended (the turn's own, or a nested agent's): its answer and outcome."""
        run = self._run_of(node)
        self._flush_calls(run, node.pending, node.tool_spans)
        reply = self._agent_reply(node, attributes)
        if reply:
            run.reply(reply)
        run.finish(span_error(span))

    def _content(
        self,
        span: Any,
        attributes: Mapping[str, Any],
        logged: Content | None,
        *,
        inputs: bool = True,
    ) -> Content:
        content = logged if logged is not None else Content()
        content.add_attributes(attributes, inputs=inputs)
        for event in getattr(span, "events", ()) or ():
            name = getattr(event, "name", "")
            if name == DETAILS_EVENT or name in LEGACY_EVENTS or name.startswith("gen_ai.content."):
                content.add_event(name, getattr(event, "attributes", None) or {})
        return content

    # -- plain client loops -----------------------------------------------------------------

    def _loop_start(self, span_id: int) -> None:
        cell = self.hub.current_cell()
        loop = self._loop
        if loop is None or loop.cell is not cell or loop.run.done:
            if loop is not None:
                self._end_loop(loop, None)  # left waiting for tool results: a new turn now
            loop = self._loop = _Loop(self.hub.start(self.source, activate=False), cell, [])
        loop.open_spans += 1
        loop.idle_cells = 0
        self._loop_spans[span_id] = loop

    def _loop_end(
        self, span_id: int, span: Any, attributes: Mapping[str, Any], logged: Content | None
    ) -> None:
        loop = self._loop_spans.pop(span_id)
        loop.open_spans -= 1
        loop.idle_cells = 0
        raw = attributes.get("gen_ai.input.messages")
        tail = new_messages(loop.raw_input, raw) if logged is None else None
        loop.raw_input = raw if isinstance(raw, str) else None
        if tail is not None:
            # Each call of a loop resends the whole conversation: when its text continues the
            # previous call's, only the new messages are read (a long loop stays linear).
            self._loop_step(loop, span, attributes, tail)
            return
        content = self._content(span, attributes, logged)
        keys = [item.key() for item in content.input]
        if loop.conversation and keys[: len(loop.conversation)] != loop.conversation:
            # Not a continuation: the earlier conversation ended on its tool calls.
            self._end_loop(loop, None)
            loop = self._loop = _Loop(self.hub.start(self.source, activate=False), loop.cell, [])
        run = loop.run
        model = model_id(attributes)
        if model:
            run.set_model(model)
        if content.prompt:
            run.set_prompt(content.prompt)
        self._settle_calls(run, loop.pending, content.input, False)
        for call in content.calls:
            loop.pending[call.id or call.name] = call
        loop.conversation = keys + [item.key() for item in content.output]
        if content.reply:
            run.reply(content.reply)
        error = span_error(span)
        if error is not None or not loop.pending:
            self._end_loop(loop, error)  # an answer (or a failure) ends the turn

    def _loop_step(self, loop: _Loop, span: Any, attributes: Mapping[str, Any], new: str) -> None:
        """A call that continues the loop's conversation, of which ``new`` holds the new part."""
        content = Content(input=messages(new))
        content.add_attributes(attributes, inputs=False)
        run = loop.run
        self._settle_calls(run, loop.pending, content.input, False)
        for call in content.calls:
            loop.pending[call.id or call.name] = call
        # The key list is only needed when a call's text does not continue the previous one.
        loop.conversation = []
        if content.reply:
            run.reply(content.reply)
        error = span_error(span)
        if error is not None or not loop.pending:
            self._end_loop(loop, error)

    def _end_loop(self, loop: _Loop, error: str | BaseException | None) -> None:
        self._flush_calls(loop.run, loop.pending)
        loop.run.finish(error)
        if self._loop is loop:
            self._loop = None
        for span_id in [k for k, v in self._loop_spans.items() if v is loop]:
            del self._loop_spans[span_id]  # a call still open (interrupted) ends with it
            self._abandon(span_id)

    def _abandon(self, span_id: int) -> None:
        """A span that will not end (as far as we care): forget it, and treat it as gone."""
        if len(self._dead) >= MAX_TRACKED:
            self._dead.clear()
        self._dead.add(span_id)
        self._nodes.pop(span_id, None)
        trace_id = self._roots.pop(span_id, None)
        if trace_id is not None:
            self._traces.pop(trace_id, None)

    def after_cell(self) -> None:
        """A cell ended: runs it left open end with it if it failed (an interrupt: aborted).

        Runs whose cell ended normally are background runs: they end with their spans. A plain
        client loop left waiting for tool results ends once another cell ended without
        continuing it.
        """
        if self._loop is None and not self._traces:
            return  # the usual case, after every ordinary cell: nothing open
        with self._lock:
            loop = self._loop
            if loop is not None and loop.open_spans == 0 and loop.cell is not None:
                if not loop.cell.running:
                    loop.idle_cells += 1
                if loop.cell.error is not None or loop.idle_cells >= 2:
                    self._end_loop(loop, loop.cell.error)
            elif loop is not None and loop.cell is not None and loop.cell.error is not None:
                self._end_loop(loop, loop.cell.error)
            for trace_id, trace in list(self._traces.items()):
                node = trace.top_node
                run = node.run if node is not None else None
                if run is None or run.done or run.cell is None or run.cell.running:
                    continue
                if run.cell.error is None:
                    continue
                self._flush_calls(run, node.pending, node.tool_spans)  # type: ignore[union-attr]
                run.finish(run.cell.error)
                del self._traces[trace_id]
                if trace.anchor is not None:
                    self._abandon(trace.anchor)
                for span_id in [k for k, v in self._nodes.items() if v.trace is trace]:
                    self._abandon(span_id)

    def close_all(self, reason: str = "capture stopped during this run") -> None:
        """End every run still open (the source is turning off); never raises."""
        with self._lock:
            runs = [t.top_node.run for t in self._traces.values() if t.top_node is not None]
            runs.extend(loop.run for loop in self._loop_spans.values())
            if self._loop is not None:
                runs.append(self._loop.run)
            self._traces.clear()
            self._nodes.clear()
            self._roots.clear()
            self._logs.clear()
            self._loop_spans.clear()
            self._loop = None
        for run in runs:
            if run is not None and not run.done:
                run.finish(reason if not run.reply_text else None)

    def _forget_root(self, span_id: int, trace_id: int) -> None:
        if self._roots.pop(span_id, None) is not None:
            self._traces.pop(trace_id, None)


# -- cells and the SDK classes ------------------------------------------------------------


def watch_cells(
    hub: RunHub, after_cell: Callable[[], Any], before_cell: Callable[[], Any] | None = None
) -> Callable[[], None]:
    """Call ``after_cell`` as each recorded cell ends (``before_cell`` as one starts).

    The hooks hang on the hub, which the recorder tells about cells; returns a function that
    removes them. The callbacks must be cheap and must not raise.
    """
    hub.after_cell.append(after_cell)
    if before_cell is not None:
        hub.before_cell.append(before_cell)

    def cancel() -> None:
        for hooks, callback in ((hub.after_cell, after_cell), (hub.before_cell, before_cell)):
            with contextlib.suppress(ValueError):
                hooks.remove(callback)  # type: ignore[arg-type]

    return cancel


def span_processor(tracker: GenAITracker, guard: Callable[[Any], Any]) -> Any:
    """An SDK ``SpanProcessor`` feeding ``tracker``; ``guard`` wraps each callback."""
    from opentelemetry.sdk.trace import SpanProcessor

    class GenAISpanProcessor(SpanProcessor):
        """jupyter_recap: GenAI spans become agent turns (never raises)."""

        def feed(self, tracker: GenAITracker, guard: Callable[[Any], Any]) -> None:
            """Hand the spans to ``tracker`` from now on (a provider keeps its processors)."""
            self._on_start = guard(tracker.on_start)
            self._on_end = guard(tracker.on_end)

        def on_start(self, span: Any, parent_context: Any = None) -> None:
            self._on_start(span)

        def on_end(self, span: Any) -> None:
            self._on_end(span)

        def shutdown(self) -> None:
            pass

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return True

    processor = GenAISpanProcessor()
    processor.feed(tracker, guard)
    return processor


def log_processor(tracker: GenAITracker, guard: Callable[[Any], Any]) -> Any:
    """An SDK ``LogRecordProcessor`` feeding GenAI content events to ``tracker``."""
    from opentelemetry.sdk._logs import LogRecordProcessor

    class GenAILogProcessor(LogRecordProcessor):
        """jupyter_recap: GenAI content events, matched to their spans (never raises)."""

        def feed(self, tracker: GenAITracker, guard: Callable[[Any], Any]) -> None:
            """Hand the events to ``tracker`` from now on (a provider keeps its processors)."""
            self._on_log = guard(tracker.on_log)

        def on_emit(self, log_record: Any) -> None:
            self._on_log(log_record)

        emit = on_emit  # older SDKs

        def shutdown(self) -> None:
            pass

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return True

    processor = GenAILogProcessor()
    processor.feed(tracker, guard)
    return processor
