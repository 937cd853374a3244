"""Capture source for the OpenAI Agents SDK (``openai-agents``, imported as ``agents``).

The SDK's public extension point is a *tracing processor* (``agents.add_trace_processor``):
it is told when every trace and span of every run in the process starts and ends. One
``Runner.run`` / ``run_sync`` / ``run_streamed`` is one *task* span (the SDK adds one per run
unless ``TracingConfig(include_task_and_turn_spans=False)``; then the trace is the unit).

How spans become a turn:

* the run starts at its first *agent* span (the agent's name is known there; the span starts
  in the run's own context, so the hub's active run is set where the agent's tools run);
* *response* spans (Responses API) and *generation* spans (chat completions) give the model
  (``openai:<model>``), the prompt (the last user message of the first model call's input)
  and the reply (the text of the latest model output of the outermost agents);
* *function* spans are tool lines (name, input JSON, output, ``span.error``); where the SDK
  keeps a failing tool's error out of its traces (0.24 and later, for tools with the default
  failure handler: "Error details are redacted."), the error is taken from the exception itself,
  which the SDK hands to ``RunConfig.tool_error_formatter`` (see :meth:`OpenAIAgentsSource.
  _hook_tool_errors`);
* a run inside a tool (``agent.as_tool``) and the agent a *handoff* passes to are not turns of
  their own: their tool lines are named by agent (``Helper.get_weather``);
* an agent span's error is the run's failure; the run ends with its task span (or trace).

Nothing here imports the SDK at module import; the processor class is built in ``install``.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import threading
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ..record.transcript import describe_error
from .runs import AgentRun
from .sources import Source

#: What a reply is when the SDK leaves the data out of its spans
#: (``RunConfig(trace_include_sensitive_data=False)`` or its environment variable).
REDACTED_REPLY = "(openai-agents did not trace the answer: trace_include_sensitive_data is off)"

#: How many failing tools' errors are kept waiting for their span to end (a span that never
#: ends, tracing turned off mid-run, must not grow the table for ever).
_MAX_TOOL_ERRORS = 256

#: The public run entry points whose ``run_config`` gets our tool error formatter.
_RUNNER_METHODS = ("run", "run_sync", "run_streamed")

#: Model-name prefixes (LiteLLM style ``provider/model``) mapped to our provider names.
_PROVIDERS = {"anthropic": "anthropic", "openai": "openai"}


@dataclass(eq=False)
class _Run:
    """One top-level Runner run as the processor follows it."""

    trace_id: str
    run: AgentRun | None = None
    agent: str | None = None
    """The starting agent (its tool lines are not prefixed)."""
    failure: str | None = None
    redacted: bool = False
    finished: bool = False


@dataclass(eq=False)
class _Span:
    """What the processor knows about one open span."""

    owner: _Run
    agent: str | None
    nested: bool
    """Inside a run started by a tool of the owner run (``agent.as_tool``)."""
    kind: str = ""
    pending_call: bool = False
    """A function span whose call line is not written yet (written before any child)."""
    span: Any = None
    """The function span itself, while its call line is pending."""


def model_id(model: Any) -> str | None:
    """Our ``provider:model`` form of a model name from a span."""
    if not isinstance(model, str) or not model.strip():
        return None
    name = model.strip()
    if ":" in name.split("/", 1)[0]:
        return name  # already provider:model
    prefix, slash, rest = name.partition("/")
    if slash and prefix.lower() in _PROVIDERS and rest:
        return f"{_PROVIDERS[prefix.lower()]}:{rest}"
    if slash and prefix.lower() == "litellm" and "/" in rest:
        return model_id(rest)
    if name.lower().startswith("claude"):
        return f"anthropic:{name}"
    return f"openai:{name}"


def _get(item: Any, key: str) -> Any:
    if isinstance(item, dict):
        return item.get(key)
    return getattr(item, key, None)


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or a list of text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
                continue
            text = _get(part, "text")
            if isinstance(text, str) and _get(part, "type") in (
                None,
                "text",
                "input_text",
                "output_text",
            ):
                parts.append(text)
        return "\n".join(p for p in parts if p)
    return ""


def last_user_text(messages: Any) -> str:
    """The last user message of a model call's input (a string input is the message)."""
    if isinstance(messages, str):
        return messages
    if not isinstance(messages, (list, tuple)):
        return ""
    for message in reversed(messages):
        if _get(message, "role") == "user":
            text = content_text(_get(message, "content"))
            if text.strip():
                return text
    return ""


def response_output_text(response: Any) -> str:
    """The text of a Responses API answer's message items."""
    texts = []
    for item in _get(response, "output") or ():
        if _get(item, "type") == "message":
            text = content_text(_get(item, "content"))
            if text:
                texts.append(text)
    return "\n".join(texts)


def generation_output_text(output: Any) -> str:
    """The text of a chat-completions answer as a generation span holds it."""
    texts = []
    for message in output or ():
        text = content_text(_get(message, "content"))
        if text:
            texts.append(text)
    return "\n".join(texts)


def error_text(error: Any) -> str | None:
    """The text of a span's error (``{"message": ..., "data": {"error": ...}}``)."""
    if not error:
        return None
    data = _get(error, "data")
    detail = _get(data, "error") if data else None
    message = _get(error, "message")
    if detail:
        return str(detail)
    return str(message) if message else "failed"


class OpenAIAgentsSource(Source):
    """Records openai-agents runs as agent turns, through a tracing processor."""

    name = "openai-agents"
    module = "agents"
    distribution = "openai-agents"

    def __init__(self, hub: Any) -> None:
        super().__init__(hub)
        self.processor: Any = None
        self._spans: dict[str, _Span] = {}
        self._tasks: dict[str, _Run] = {}
        """Runs by the span id of their task span."""
        self._traces: dict[str, _Run] = {}
        """Runs without a task span (task spans turned off), by trace id."""
        self._state_lock = threading.RLock()
        self._tool_errors: dict[str, str] = {}
        """The real error of a failing tool, by the span id of its function span."""
        self._patched: list[tuple[type, str, Any]] = []
        self._current_span: Any = lambda: None

    # -- installing -----------------------------------------------------------------------

    def install(self, module: ModuleType) -> None:
        add = getattr(module, "add_trace_processor", None)
        base = getattr(module, "TracingProcessor", None)
        if not callable(add) or not isinstance(base, type):
            raise AttributeError("agents.add_trace_processor / TracingProcessor not found")
        for method in ("on_trace_start", "on_trace_end", "on_span_start", "on_span_end"):
            if not hasattr(base, method):
                raise AttributeError(f"TracingProcessor.{method} not found")
        # Added again after a reload: the SDK can neither remove a processor nor say whether
        # the person's set_trace_processors() dropped ours; an old one is a guarded no-op.
        self.processor = _processor_class(base)(self)
        add(self.processor)
        self._hook_tool_errors(module)

    def uninstall(self) -> None:
        # The SDK has no public way to remove one processor; ours stays registered and does
        # nothing once the source is off (every callback is guarded). Open runs are let go.
        for owner, attribute, original in reversed(self._patched):
            current = owner.__dict__.get(attribute)
            if getattr(current, "__wrapped__", None) is original:
                setattr(owner, attribute, original)
        self._patched.clear()
        with self._state_lock:
            self._spans.clear()
            self._tasks.clear()
            self._traces.clear()
            self._tool_errors.clear()

    def _hook_tool_errors(self, module: ModuleType) -> None:
        """Learn a failing tool's real error where the SDK no longer traces it.

        From 0.24 on, a function tool with the SDK's default failure handler fails with
        "Error details are redacted." in its span and a generic "An error occurred while
        running the tool" for the model; the exception itself reaches only the run's
        ``RunConfig.tool_error_formatter`` (``ToolErrorFormatterArgs.error``), the SDK's public
        way to read it. So the public ``Runner.run`` / ``run_sync`` / ``run_streamed`` are
        wrapped (``wrapt``; unwrapped when capture stops) to give each run a formatter that
        notes the error for the tool's span and returns what the person's own formatter
        returns, or None: the SDK then sends its own default message, so the agent sees what
        it would have seen. Older SDKs trace the error themselves: nothing is wrapped there.
        """
        args_class = getattr(module, "ToolErrorFormatterArgs", None)
        runner = getattr(module, "Runner", None)
        config_class = getattr(module, "RunConfig", None)
        if not (
            dataclasses.is_dataclass(args_class)
            and "error" in {f.name for f in dataclasses.fields(args_class)}
            and dataclasses.is_dataclass(config_class)
            and "tool_error_formatter" in {f.name for f in dataclasses.fields(config_class)}
            and isinstance(runner, type)
        ):
            return
        current_span = getattr(module, "get_current_span", None)
        if not callable(current_span):
            return
        import wrapt

        self._current_span = current_span
        for attribute in _RUNNER_METHODS:
            original: Any = runner.__dict__.get(attribute)
            function = getattr(original, "__func__", None)
            if function is None:
                continue  # not the classmethod this source knows: its runs keep the trace's text
            parameters = list(inspect.signature(function).parameters)[1:]  # after cls
            position = parameters.index("run_config") if "run_config" in parameters else None
            wrapper = _with_formatter(self, position)
            setattr(runner, attribute, wrapt.FunctionWrapper(original, wrapper))
            self._patched.append((runner, attribute, original))

    def tool_error(self, args: Any) -> Any:
        """Our ``tool_error_formatter``: note the exception of a failing tool (never raises)."""
        if self.on and getattr(args, "kind", None) == "tool_exception":
            error = getattr(args, "error", None)
            try:
                span = self._current_span()
                span_id = getattr(span, "span_id", None) if span is not None else None
                if isinstance(error, BaseException) and span_id:
                    with self._state_lock:
                        if len(self._tool_errors) >= _MAX_TOOL_ERRORS:
                            self._tool_errors.pop(next(iter(self._tool_errors)))
                        self._tool_errors[str(span_id)] = describe_error(error)
            except Exception:  # noqa: BLE001 - the tool's failure must reach the model as is
                pass
        return None

    # -- callbacks (each wrapped by ``guarded`` in the processor) ----------------------------

    def trace_end(self, trace: Any) -> None:
        trace_id = str(_get(trace, "trace_id"))
        with self._state_lock:
            fallback = self._traces.pop(trace_id, None)
            leftovers = [run for run in self._tasks.values() if run.trace_id == trace_id]
            for key in [k for k, run in self._tasks.items() if run.trace_id == trace_id]:
                del self._tasks[key]
            for key in [k for k, s in self._spans.items() if s.owner.trace_id == trace_id]:
                del self._spans[key]
        for run in [*leftovers, *([fallback] if fallback is not None else [])]:
            self._finish(run)

    def span_start(self, span: Any) -> None:
        data = span.span_data
        kind = str(getattr(data, "type", ""))
        span_id = str(span.span_id)
        parent_id = span.parent_id
        with self._state_lock:
            parent = self._spans.get(str(parent_id)) if parent_id else None
        if parent is not None and parent.pending_call:
            self._write_call(parent)
        if kind == "task":
            if parent is None:
                owner = _Run(str(span.trace_id))
                with self._state_lock:
                    self._tasks[span_id] = owner
                    self._spans[span_id] = _Span(owner, None, False, kind)
            else:  # a run inside a tool of ours: part of that turn
                self._remember(span_id, _Span(parent.owner, parent.agent, True, kind))
            return
        if kind == "agent":
            name = str(getattr(data, "name", "") or "agent")
            if parent is None:
                owner = self._trace_run(str(span.trace_id))
                nested = False
            else:
                owner, nested = parent.owner, parent.nested
            if owner.run is None:
                owner.agent = name
                owner.run = self.hub.start(self.name, agent=name)
            self._remember(span_id, _Span(owner, name, nested, kind))
            return
        if parent is None:
            return  # a span outside any run we follow (a custom span of the person's)
        function = kind == "function"
        self._remember(
            span_id,
            _Span(
                parent.owner,
                parent.agent,
                parent.nested,
                kind,
                pending_call=function,
                span=span if function else None,
            ),
        )

    def span_end(self, span: Any) -> None:
        span_id = str(span.span_id)
        with self._state_lock:
            info = self._spans.pop(span_id, None)
            task_run = self._tasks.pop(span_id, None)
        if info is None:
            return
        data = span.span_data
        owner = info.owner
        run = owner.run
        if task_run is not None:
            self._finish(task_run)
            return
        if run is None:
            return
        kind = info.kind
        if kind == "function":
            self._tool(info, span, run)
        elif kind == "response":
            self._model_call(
                info,
                span,
                model=_get(data.response, "model") if data.response is not None else None,
                messages=data.input,
                reply=response_output_text(data.response) if data.response is not None else "",
                redacted=data.response is None and data.usage is not None,
            )
        elif kind == "generation":
            self._model_call(
                info,
                span,
                model=data.model,
                messages=data.input,
                reply=generation_output_text(data.output),
                redacted=data.output is None and data.input is None and data.usage is not None,
            )
        elif kind == "handoff":
            target = getattr(data, "to_agent", None)
            if target:
                agent = self._agent_label(info, getattr(data, "from_agent", None))
                run.tool_call("handoff", {"to": target}, agent=agent)
                if span.error:
                    run.tool_result("handoff", "", error=error_text(span.error), agent=agent)
                else:
                    run.tool_result("handoff", f"{target} takes over", agent=agent)
        elif kind == "agent" and span.error and not info.nested:
            owner.failure = error_text(span.error)

    # -- internals --------------------------------------------------------------------------

    def _remember(self, span_id: str, info: _Span) -> None:
        with self._state_lock:
            self._spans[span_id] = info

    def _trace_run(self, trace_id: str) -> _Run:
        """The run of a trace without task spans (one run per trace, handoffs included)."""
        with self._state_lock:
            owner = self._traces.get(trace_id)
            if owner is None:
                owner = self._traces[trace_id] = _Run(trace_id)
            return owner

    def _agent_label(self, info: _Span, agent: Any = None) -> str | None:
        """The agent a tool line is named by: none for the starting agent's own steps."""
        name = agent if isinstance(agent, str) and agent else info.agent
        if not info.nested and name == info.owner.agent:
            return None
        return name

    def _write_call(self, info: _Span) -> None:
        """Write a function span's call line (its input is set by the time a child starts)."""
        info.pending_call = False
        run, span, info.span = info.owner.run, info.span, None
        if run is None or span is None:
            return
        data = span.span_data
        run.tool_call(str(data.name), data.input, agent=self._agent_label(info))

    def _tool(self, info: _Span, span: Any, run: AgentRun) -> None:
        data = span.span_data
        if info.pending_call:
            info.pending_call, info.span = False, None
            run.tool_call(str(data.name), data.input, agent=self._agent_label(info))
        with self._state_lock:
            real = self._tool_errors.pop(str(span.span_id), None)
        error = error_text(span.error)
        run.tool_result(
            str(data.name),
            data.output,
            # The exception's own text, where the trace only says the details are redacted.
            error=real if error is not None and real else error,
            agent=self._agent_label(info),
        )

    def _model_call(
        self,
        info: _Span,
        span: Any,
        *,
        model: Any,
        messages: Any,
        reply: str,
        redacted: bool,
    ) -> None:
        """A model call ended; ``redacted``: it succeeded but the SDK left its data out."""
        run = info.owner.run
        if run is None:
            return
        name = model_id(model)
        if name:
            run.set_model(name)
        if info.nested:
            return  # an inner agent's answer reaches the turn as its tool's result
        if run.prompt is None:  # the first call's input; later calls resend the whole history
            prompt = last_user_text(messages)
            if prompt:
                run.set_prompt(prompt)
        if span.error:
            return
        if reply.strip():
            run.reply(reply)
        elif redacted:
            info.owner.redacted = True

    def _finish(self, owner: _Run) -> None:
        with self._state_lock:
            if owner.finished:
                return
            owner.finished = True
        run = owner.run
        if run is None:
            return
        if owner.failure is not None:
            run.finish(owner.failure)
        elif not run.reply_text and owner.redacted:
            run.finish(reply=REDACTED_REPLY)
        else:
            run.finish()


def _with_formatter(source: OpenAIAgentsSource, position: int | None) -> Any:
    """A ``wrapt`` wrapper of a ``Runner`` entry point that adds our tool error formatter.

    The person's ``run_config`` is never changed: a copy carries the formatter. ``None`` becomes
    a dict (the SDK's other accepted form), so the SDK still treats the run as one it configured
    itself (a runner-made config owns, and closes, its model provider). A run that keeps
    sensitive data out of its traces keeps it out of the transcript too: it is left alone.
    """

    def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        if not source.on:
            return wrapped(*args, **kwargs)
        try:
            if position is not None and "run_config" not in kwargs and len(args) > position:
                given = args[position]
                args = (*args[:position], _formatted(source, given), *args[position + 1 :])
            else:
                kwargs = {**kwargs, "run_config": _formatted(source, kwargs.get("run_config"))}
        except Exception:  # noqa: BLE001 - the person's run goes ahead as they wrote it
            return wrapped(*args, **kwargs)
        return wrapped(*args, **kwargs)

    return wrapper


def _formatted(source: OpenAIAgentsSource, config: Any) -> Any:
    """``config`` (a RunConfig, its dict form or None) with our formatter in front of theirs."""
    if config is None:
        return {"tool_error_formatter": source.tool_error}
    if isinstance(config, dict):
        if config.get("trace_include_sensitive_data") is False:
            return config
        theirs = config.get("tool_error_formatter")
        if _is_ours(source, theirs):
            return config
        return {**config, "tool_error_formatter": _chained(source, theirs)}
    if getattr(config, "trace_include_sensitive_data", True) is False:
        return config
    theirs = getattr(config, "tool_error_formatter", None)
    if _is_ours(source, theirs) or not hasattr(config, "tool_error_formatter"):
        return config  # a nested run (an agent used as a tool) passes ours on
    mine = copy.copy(config)
    mine.tool_error_formatter = _chained(source, theirs)
    return mine


def _is_ours(source: OpenAIAgentsSource, formatter: Any) -> bool:
    return formatter is source.tool_error or getattr(formatter, "_recap_source", None) is source


def _chained(source: OpenAIAgentsSource, theirs: Any) -> Any:
    """Our formatter, then the person's (whose answer, even an awaitable, is the SDK's)."""
    if theirs is None:
        return source.tool_error

    def formatter(args: Any) -> Any:
        source.tool_error(args)
        return theirs(args)

    formatter._recap_source = source  # type: ignore[attr-defined]
    return formatter


def _processor_class(base: type) -> type:
    """A ``TracingProcessor`` subclass that hands every callback to the source, guarded."""

    class RecapTracingProcessor(base):  # type: ignore[misc]
        """Turns openai-agents traces into jupyter_recap turns (does nothing when off)."""

        def __init__(self, source: OpenAIAgentsSource) -> None:
            self.source = source
            self._span_start = source.guarded(source.span_start)
            self._span_end = source.guarded(source.span_end)
            self._trace_end = source.guarded(source.trace_end)

        def on_trace_start(self, trace: Any) -> None:
            return None

        def on_trace_end(self, trace: Any) -> None:
            self._trace_end(trace)

        def on_span_start(self, span: Any) -> None:
            self._span_start(span)

        def on_span_end(self, span: Any) -> None:
            self._span_end(span)

        def shutdown(self, timeout: float | None = None) -> None:
            return None

        def force_flush(self) -> None:
            return None

    return RecapTracingProcessor
