"""Capture source for smolagents: each ``agent.run(...)`` becomes a turn.

smolagents has no global hook; its public per-agent extension point is the step callback
registry (``agent.step_callbacks.register(StepClass, fn)``). The public ``MultiStepAgent.run``
method is wrapped (a ``wrapt`` wrapper, removed by :meth:`SmolagentsSource.uninstall`): the
wrapper starts the run, registers our step callback once on the agent's registry, and finishes
the run on return, on an exception, or when a ``stream=True`` generator is exhausted or closed.
``MultiStepAgent.__call__`` (how a manager agent calls a managed one) is wrapped too, only to
know the short task it was given. A managed agent's run is nested: its steps become tool lines
named by that agent.
"""

from __future__ import annotations

import contextvars
import threading
import weakref
from collections.abc import Generator, Iterator
from types import ModuleType
from typing import Any

from .runs import AgentRun
from .sources import Source

#: The smolagents run executing in this context (managed agents nest in it).
_running: contextvars.ContextVar[AgentRun | None] = contextvars.ContextVar(
    "jupyter_recap_smolagents_run", default=None
)
#: The task a manager handed to a managed agent (its ``run`` sees the templated version).
_managed_task: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "jupyter_recap_smolagents_task", default=None
)

#: How a run still going when capture stops ends in the transcript.
STOPPED = "capture of smolagents stopped during this run"

CLOSED = "the stream was closed before the agent answered"

_MODEL_PROVIDERS = {
    "OpenAIServerModel": "openai",
    "OpenAIModel": "openai",
    "AzureOpenAIServerModel": "azure",
    "AzureOpenAIModel": "azure",
    "InferenceClientModel": "huggingface",
    "HfApiModel": "huggingface",
    "TransformersModel": "transformers",
    "MLXModel": "mlx",
    "VLLMModel": "vllm",
    "AmazonBedrockServerModel": "bedrock",
    "AmazonBedrockModel": "bedrock",
}

#: smolagents' abstract model classes: a class that only derives from these is the person's own.
_BASES = frozenset({"Model", "ApiModel"})


class SmolagentsSource(Source):
    """Records smolagents runs as agent turns."""

    name = "smolagents"
    module = "smolagents"
    distribution = "smolagents"

    def __init__(self, hub: Any) -> None:
        super().__init__(hub)
        self._patched: list[tuple[type, str, Any]] = []
        self._registered: weakref.WeakSet[Any] = weakref.WeakSet()
        self._runs: weakref.WeakKeyDictionary[Any, list[AgentRun]] = weakref.WeakKeyDictionary()
        self._state_lock = threading.Lock()
        self._steps: Any = None  # (ActionStep, FinalAnswerStep)

    # -- install ---------------------------------------------------------------------------

    def install(self, module: ModuleType) -> None:
        import wrapt

        agent_class = module.MultiStepAgent
        action_step = module.ActionStep
        final_step = module.FinalAnswerStep
        for attribute in ("run", "__call__"):
            if not callable(getattr(agent_class, attribute, None)):
                raise TypeError(f"MultiStepAgent.{attribute} not found")
        registry = getattr(module, "CallbackRegistry", None)
        if registry is None:
            from importlib import import_module

            registry = import_module(f"{module.__name__}.memory").CallbackRegistry
        if not callable(getattr(registry, "register", None)):
            raise TypeError("CallbackRegistry.register not found")
        self._steps = (action_step, final_step)
        for attribute, wrapper in (("run", self._wrap_run), ("__call__", self._wrap_call)):
            original = agent_class.__dict__[attribute]
            agent_class_attr = wrapt.FunctionWrapper(original, wrapper)
            setattr(agent_class, attribute, agent_class_attr)
            self._patched.append((agent_class, attribute, original))

    def uninstall(self) -> None:
        for owner, attribute, original in reversed(self._patched):
            current = owner.__dict__.get(attribute)
            if getattr(current, "__wrapped__", None) is original:
                setattr(owner, attribute, original)
        self._patched.clear()
        with self._state_lock:
            started = [run for runs in self._runs.values() for run in runs]
            self._runs.clear()
        for run in started:  # a turn left open would never get its outcome
            run.finish(STOPPED)

    # -- wrappers (run in the person's call: never raise from our own code) ------------------

    def _wrap_call(self, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        if not self.on:
            return wrapped(*args, **kwargs)
        task = args[0] if args else kwargs.get("task")
        token = _managed_task.set(task if isinstance(task, str) else None)
        try:
            return wrapped(*args, **kwargs)
        finally:
            _managed_task.reset(token)

    def _wrap_run(self, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        if not self.on or instance is None:
            return wrapped(*args, **kwargs)
        stream = bool(kwargs.get("stream", args[1] if len(args) > 1 else False))
        run = self.guarded(self._start)(instance, args, kwargs)
        if run is None:
            return wrapped(*args, **kwargs)
        token = _running.set(run)
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as error:
            self.guarded(self._end)(instance, run, error, None)
            raise
        finally:
            _running.reset(token)
        if stream and isinstance(result, Iterator):
            return self._follow(instance, run, result)
        self.guarded(self._end)(instance, run, None, result)
        return result

    def _follow(self, agent: Any, run: AgentRun, steps: Iterator[Any]) -> Generator[Any, Any, Any]:
        """Yield the streamed steps; the run ends when the generator is exhausted or closed."""
        error: BaseException | None = None
        try:
            while True:
                # Each step runs in the reader's context: make the run current there (nested
                # smolagents runs, and other sources' spans, then belong to this turn).
                token = _running.set(run)
                active = self.hub.enter(run)
                try:
                    step = next(steps)
                except StopIteration:
                    break
                finally:
                    self.hub.exit(active)
                    _running.reset(token)
                yield step
        except GeneratorExit as closed:
            error = closed
            close = getattr(steps, "close", None)
            if close is not None:
                close()
            raise
        except BaseException as caught:
            error = caught
            raise
        finally:
            self.guarded(self._end)(agent, run, error, None)

    # -- run bookkeeping ---------------------------------------------------------------------

    def _start(self, agent: Any, args: Any, kwargs: Any) -> AgentRun:
        task = args[0] if args else kwargs.get("task", "")
        outer = _running.get()
        if outer is not None and outer.done:
            outer = None
        short = _managed_task.get()
        _managed_task.set(None)
        name = getattr(agent, "name", None) or type(agent).__name__
        prompt = short if (outer is not None and short) else task
        run = self.hub.start(
            self.name,
            prompt=str(prompt) if prompt is not None else None,
            model=model_id(getattr(agent, "model", None)),
            agent=str(name),
            parent=outer,
            activate=outer is None and not kwargs.get("stream"),
        )
        with self._state_lock:
            self._runs.setdefault(agent, []).append(run)
            registered = agent in self._registered
            if not registered:
                self._registered.add(agent)
        if not registered:
            registry = agent.step_callbacks
            action_step, final_step = self._steps
            registry.register(action_step, self.guarded(self._on_action))
            registry.register(final_step, self.guarded(self._on_final))
        return run

    def _current(self, agent: Any) -> AgentRun | None:
        with self._state_lock:
            runs = self._runs.get(agent)
            return runs[-1] if runs else None

    def _end(self, agent: Any, run: AgentRun, error: BaseException | None, result: Any) -> None:
        with self._state_lock:
            runs = self._runs.get(agent)
            if runs and run in runs:
                runs.remove(run)
        if isinstance(error, GeneratorExit):  # the person stopped reading the stream
            run.finish(None if run.reply_text else CLOSED)
            return
        if error is not None:
            # AgentGenerationError's own text is "Error while generating output:" only.
            cause = error.__cause__
            if type(error).__name__ == "AgentGenerationError" and isinstance(cause, Exception):
                error = cause
            run.finish(error)
            return
        output = getattr(result, "output", result) if result is not None else None
        run.finish(reply=output if output not in (None, "") else None)

    # -- step callbacks ----------------------------------------------------------------------

    def _on_action(self, step: Any, agent: Any = None, **_: Any) -> None:
        run = self._current(agent)
        if run is None:
            return
        managed = set(getattr(agent, "managed_agents", None) or ())
        calls = step_tool_calls(step)
        observation = getattr(step, "observations", None)
        error = getattr(step, "error", None)
        shown = [(name, arguments) for name, arguments in calls if name != "final_answer"]
        for name, arguments in shown:
            if name not in managed:
                run.tool_call(name, arguments)
        recorded = [name for name, _ in shown if name not in managed]
        if not recorded:
            if error is not None and not calls:
                # The model's output could not be turned into an action.
                run.tool_result("step", "", error=str(error))
            return
        if error is not None:
            for name in recorded:
                run.tool_result(name, observation or "", error=str(error))
        elif len(recorded) == 1:
            run.tool_result(recorded[0], observation if observation is not None else "")
        else:
            for name in recorded:
                run.tool_result(name, observation if observation is not None else "")

    def _on_final(self, step: Any, agent: Any = None, **_: Any) -> None:
        run = self._current(agent)
        output = getattr(step, "output", None)
        if run is not None and output is not None:
            run.reply(output)


def step_tool_calls(step: Any) -> list[tuple[str, Any]]:
    """``(name, arguments)`` of an action step's tool calls (from the model's message if the
    step failed before smolagents recorded them)."""
    calls = getattr(step, "tool_calls", None)
    found: list[tuple[str, Any]] = []
    if calls:
        for call in calls:
            found.append((str(getattr(call, "name", "tool")), getattr(call, "arguments", None)))
        return found
    message = getattr(step, "model_output_message", None)
    for call in getattr(message, "tool_calls", None) or ():
        function = getattr(call, "function", None)
        if function is not None:
            found.append(
                (str(getattr(function, "name", "tool")), getattr(function, "arguments", None))
            )
    return found


def model_id(model: Any) -> str | None:
    """The turn's model: ``provider:model`` for smolagents' own model classes, a label for others.

    A model class of the person's own (a subclass of smolagents' ``Model`` written in the
    notebook: a scripted model, a local wrapper) reaches no provider recaps could call, so it is
    named by its class and model id, ``ScriptedModel (scripted-smol)``, in a form no one can read
    as ``provider:model``. A subclass of one of smolagents' provider classes keeps that class's
    provider (it still talks to it).
    """
    if model is None:
        return None
    ident = getattr(model, "model_id", None)
    ident = str(ident) if ident else ""
    for cls in type(model).__mro__:
        provider = _provider(cls, ident)
        if provider is not None:
            return provider if ident else cls.__name__
    cls_name = type(model).__name__
    return f"{cls_name} ({ident})" if ident else cls_name


def _provider(cls: type, ident: str) -> str | None:
    """``provider:model`` when ``cls`` is one of smolagents' provider classes, else None."""
    name = cls.__name__
    provider = _MODEL_PROVIDERS.get(name)
    if provider is not None:
        return f"{provider}:{ident}"
    if name.startswith("LiteLLM"):
        if "/" in ident:
            head, tail = ident.split("/", 1)
            return f"{head}:{tail}"
        return f"litellm:{ident}"
    if not cls.__module__.startswith("smolagents") or name in _BASES:
        return None
    # A provider class of smolagents this table does not know yet: its name says which.
    lowered = name.lower()
    for suffix in ("servermodel", "model"):
        if lowered.endswith(suffix) and len(lowered) > len(suffix):
            lowered = lowered[: -len(suffix)]
            break
    return f"{lowered}:{ident}"
