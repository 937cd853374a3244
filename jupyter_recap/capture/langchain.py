"""Capture source for LangChain and LangGraph: every run, through a callback handler.

langchain-core's public ``langchain_core.tracers.context.register_configure_hook`` lets a
library contribute a callback handler to every run: ``CallbackManager.configure`` adds the
value of a registered ``ContextVar`` to each run's handlers. The variable's *default* is our
handler, so it is seen in every context and thread without the person passing ``callbacks=``.

Runs are tracked by ``run_id`` / ``parent_run_id``. A top-level run becomes a turn only once a
chat model, an LLM or a tool runs inside it (a plain ``RunnableLambda`` is not an agent turn):
the hub run starts then, with the top-level chain's input as the prompt. A LangGraph graph
nested in the top one (a subgraph node, an agent called from a tool) becomes a nested run, so
its steps are tool lines named by that graph (``researcher.get_weather``).
"""

from __future__ import annotations

import contextvars
import importlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from ..debuglog import get_logger
from .runs import AgentRun, bounded_text
from .sources import Source

#: The handler registered with langchain-core, once per process (the hook cannot be removed);
#: it reports to whichever :class:`LangChainSource` is current.
_registered: dict[str, Any] = {}
_current: list[LangChainSource] = []

#: How a run still going when capture stops ends in the transcript.
STOPPED = "capture of langchain stopped during this run"
CLOSED = "the stream was closed before the agent answered"


@dataclass(eq=False, slots=True)
class _Node:
    """One LangChain run (chain, model or tool) seen through callbacks."""

    run_id: Any
    kind: str  # "chain", "llm" or "tool"
    name: str
    parent: _Node | None
    inputs: Any = None
    depth: int = 0  # segments of LangGraph's checkpoint namespace
    graph: bool = False  # a LangGraph graph (its children run one namespace deeper)
    hub_run: AgentRun | None = None
    children: list[_Node] = field(default_factory=list)
    token: Any = None  # the active-run token set while this model / tool call runs

    @property
    def top(self) -> _Node:
        node = self
        while node.parent is not None:
            node = node.parent
        return node


class LangChainSource(Source):
    """Records LangChain / LangGraph runs as agent turns."""

    name = "langchain"
    module = "langchain_core"
    distribution = "langchain-core"

    def __init__(self, hub: Any) -> None:
        super().__init__(hub)
        self._nodes: dict[Any, _Node] = {}
        self._state_lock = threading.RLock()
        # Built once: a LangGraph step fires a dozen callbacks, each must cost little.
        self.events: dict[str, Callable[..., Any]] = {
            name: self.guarded(getattr(self, f"_{name}"))
            for name in (
                "chain_start",
                "chain_end",
                "chain_error",
                "model_start",
                "llm_end",
                "llm_error",
                "tool_start",
                "tool_end",
                "tool_error",
            )
        }

    # -- install ---------------------------------------------------------------------------

    def install(self, module: ModuleType) -> None:
        base = module.__name__
        context = importlib.import_module(f"{base}.tracers.context")
        callbacks = importlib.import_module(f"{base}.callbacks")
        register = context.register_configure_hook
        handler_base = callbacks.BaseCallbackHandler
        if not callable(register) or not isinstance(handler_base, type):
            raise TypeError("register_configure_hook / BaseCallbackHandler not found")
        for method in ("on_chain_start", "on_chat_model_start", "on_tool_start", "on_llm_end"):
            if not hasattr(handler_base, method):
                raise TypeError(f"BaseCallbackHandler has no {method}")
        _current[:] = [self]
        key = f"{base}:{id(register)}"
        if key not in _registered:
            handler = _handler_class(handler_base)()
            var: contextvars.ContextVar[Any] = contextvars.ContextVar(
                "jupyter_recap_langchain_handler", default=handler
            )
            register(var, True)
            _registered[key] = handler

    def uninstall(self) -> None:
        if _current and _current[0] is self:
            _current.clear()
        with self._state_lock:
            started = [n.hub_run for n in self._nodes.values() if n.hub_run is not None]
            self._nodes.clear()
        for run in started:  # a turn left open would never get its outcome
            run.finish(STOPPED)

    # -- events (called by the handler, guarded) ---------------------------------------------

    def _chain_start(self, serialized: Any, inputs: Any, **kw: Any) -> None:
        name = kw.get("name") or _serialized_name(serialized) or "chain"
        node = self._add(kw, "chain", str(name), inputs)
        if node is not None and node.parent is not None:
            parent = node.parent
            if parent.kind == "chain" and node.depth > parent.depth:
                parent.graph = True

    def _chain_end(self, outputs: Any, **kw: Any) -> None:
        node = self._pop(kw.get("run_id"))
        if node is None or node.hub_run is None:
            return
        text = final_text(outputs)
        node.hub_run.finish(reply=text or None)

    def _chain_error(self, error: BaseException, **kw: Any) -> None:
        node = self._pop(kw.get("run_id"))
        if node is None or node.hub_run is None:
            return
        run = node.hub_run
        if isinstance(error, GeneratorExit):  # the person stopped reading the stream
            run.finish(None if run.reply_text else CLOSED)
        else:
            run.finish(error)

    def _model_start(self, serialized: Any, inputs: Any, **kw: Any) -> None:
        node = self._add(kw, "llm", _serialized_name(serialized) or "model", inputs)
        if node is None:
            return
        run = self._ensure(node)
        if run is not None:
            node.token = self.hub.enter(run)
            model = model_id(serialized, kw.get("metadata"), kw.get("invocation_params"))
            if model:
                run.set_model(model)

    def _llm_end(self, response: Any, **kw: Any) -> None:
        node = self._pop(kw.get("run_id"))
        if node is None:
            return
        run = node.hub_run if node.parent is None else _owner(node)
        if run is None:
            return
        text = generation_text(response)
        if node.parent is None:
            run.finish(reply=text or None)
        elif text:
            run.reply(text)

    def _llm_error(self, error: BaseException, **kw: Any) -> None:
        node = self._pop(kw.get("run_id"))
        if node is not None and node.parent is None and node.hub_run is not None:
            node.hub_run.finish(error)

    def _tool_start(self, serialized: Any, input_str: Any, **kw: Any) -> None:
        name = _serialized_name(serialized) or kw.get("name") or "tool"
        args = kw.get("inputs")
        node = self._add(kw, "tool", str(name), args if args is not None else input_str)
        if node is None or node.parent is None:
            return  # a tool called on its own by the person is not an agent turn
        run = self._ensure(node)
        if run is not None:
            node.token = self.hub.enter(run)
            run.tool_call(node.name, node.inputs)

    def _tool_end(self, output: Any, **kw: Any) -> None:
        node = self._pop(kw.get("run_id"))
        if node is None or node.parent is None:
            return
        run = _owner(node)
        if run is not None:
            run.tool_result(node.name, tool_output(output))

    def _tool_error(self, error: BaseException, **kw: Any) -> None:
        node = self._pop(kw.get("run_id"))
        if node is None or node.parent is None:
            return
        run = _owner(node)
        if run is not None:
            run.tool_result(node.name, "", error=error)

    # -- bookkeeping -------------------------------------------------------------------------

    def _add(self, kw: dict[str, Any], kind: str, name: str, inputs: Any) -> _Node | None:
        run_id = kw.get("run_id")
        if run_id is None:
            return None
        with self._state_lock:
            parent = self._nodes.get(kw.get("parent_run_id"))
            node = _Node(run_id, kind, name, parent, inputs, _depth(kw.get("metadata")))
            if parent is not None:
                parent.children.append(node)
            self._nodes[run_id] = node
        return node

    def _pop(self, run_id: Any) -> _Node | None:
        with self._state_lock:
            node = self._nodes.pop(run_id, None)
            if node is not None and node.parent is None:
                self._forget(node)
        if node is not None and node.token is not None:
            self.hub.exit(node.token)
            node.token = None
        return node

    def _forget(self, node: _Node) -> None:
        """Drop a finished top-level run and everything left under it."""
        stack = list(node.children)
        while stack:
            child = stack.pop()
            self._nodes.pop(child.run_id, None)
            stack.extend(child.children)
        node.children.clear()

    def _ensure(self, node: _Node) -> AgentRun | None:
        """The hub run that owns ``node``'s lines, starting the turn (and nested graphs) now."""
        with self._state_lock:
            top = node.top
            if top.hub_run is None:
                inputs = top.inputs
                top.hub_run = self.hub.start(
                    self.name,
                    prompt=prompt_text(inputs) or None,
                    agent=top.name if top.kind == "chain" else None,
                    activate=False,
                )
            # Graphs between the top one and this node: outermost first.
            path: list[_Node] = []
            current = node.parent if node.kind != "chain" else node
            while current is not None and current is not top:
                if current.kind == "chain" and current.graph:
                    path.append(current)
                current = current.parent
            owner = top.hub_run
            for graph in reversed(path):
                if graph.hub_run is None:
                    graph.hub_run = self.hub.start(
                        self.name,
                        prompt=prompt_text(graph.inputs) or None,
                        agent=graph.name,
                        parent=owner,
                        activate=False,
                    )
                owner = graph.hub_run
            return owner


def _owner(node: _Node) -> AgentRun | None:
    """The nearest started hub run above ``node`` (a nested graph's, else the turn's)."""
    current = node.parent
    while current is not None:
        if current.hub_run is not None:
            return current.hub_run
        current = current.parent
    return None


def _handler_class(base: type) -> type:
    """A ``BaseCallbackHandler`` subclass that forwards to the current source."""

    def forward(event: str) -> Any:
        def method(self: Any, *args: Any, **kwargs: Any) -> None:
            source = _current[0] if _current else None
            if source is not None and source.state == "active":
                try:
                    source.events[event](*args, **kwargs)
                except Exception:  # noqa: BLE001 - LangChain would print a warning into the cell
                    get_logger().exception("capture: langchain %s failed", event)

        method.__name__ = event
        return method

    namespace: dict[str, Any] = {
        "__doc__": "jupyter_recap: records LangChain runs as agent turns.",
        # Called in the run's own context and order, also under AsyncCallbackManager.
        "run_inline": True,
        "raise_error": False,
        "on_chain_start": forward("chain_start"),
        "on_chain_end": forward("chain_end"),
        "on_chain_error": forward("chain_error"),
        "on_chat_model_start": forward("model_start"),
        "on_llm_start": forward("model_start"),
        "on_llm_end": forward("llm_end"),
        "on_llm_error": forward("llm_error"),
        "on_tool_start": forward("tool_start"),
        "on_tool_end": forward("tool_end"),
        "on_tool_error": forward("tool_error"),
    }
    return type("JupyterRecapCallbackHandler", (base,), namespace)


# -- conversions (pure, tested in-process) -----------------------------------------------------


def _serialized_name(serialized: Any) -> str | None:
    if not isinstance(serialized, dict):
        return None
    name = serialized.get("name")
    if isinstance(name, str) and name:
        return name
    ident = serialized.get("id")
    if isinstance(ident, list) and ident and isinstance(ident[-1], str):
        return ident[-1]
    return None


def _depth(metadata: Any) -> int:
    if not isinstance(metadata, dict):
        return 0
    ns = metadata.get("langgraph_checkpoint_ns")
    return len(ns.split("|")) if isinstance(ns, str) and ns else 0


def _message_role(message: Any) -> str:
    if isinstance(message, (tuple, list)) and len(message) == 2 and isinstance(message[0], str):
        return {"user": "human", "assistant": "ai"}.get(message[0], message[0])
    if isinstance(message, dict):
        role = str(message.get("role") or message.get("type") or "")
        return {"user": "human", "assistant": "ai"}.get(role, role)
    return str(getattr(message, "type", "") or "")


def content_text(content: Any) -> str:
    """A message's content as text (content blocks: their text parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "\n".join(part for part in parts if part)
    return bounded_text(content) if content is not None else ""


def _message_text(message: Any) -> str:
    if isinstance(message, str):
        return message
    if isinstance(message, (tuple, list)) and len(message) == 2:
        return content_text(message[1])
    if isinstance(message, dict):
        return content_text(message.get("content"))
    return content_text(getattr(message, "content", None))


def _last(messages: Any, role: str) -> str | None:
    if not isinstance(messages, (list, tuple)):
        return None
    for message in reversed(messages):
        if isinstance(message, (list, tuple)) and message and not isinstance(message[0], str):
            found = _last(message, role)  # a chat model's list of message lists
            if found is not None:
                return found
            continue
        if _message_role(message) == role:
            text = _message_text(message).strip()
            if text:
                return text
    return None


def prompt_text(inputs: Any) -> str:
    """What the agent was asked: the last human message, the ``input``, or the value itself."""
    if inputs is None:
        return ""
    if isinstance(inputs, str):
        return inputs
    if isinstance(inputs, dict):
        if "messages" in inputs:
            found = _last(inputs["messages"], "human")
            if found:
                return found
        for key in ("input", "question", "query", "prompt", "task"):
            value = inputs.get(key)
            if isinstance(value, str) and value.strip():
                return value
    if isinstance(inputs, (list, tuple)):
        found = _last(inputs, "human")
        if found:
            return found
        strings = [item for item in inputs if isinstance(item, str)]
        if strings:
            return strings[-1]
    if hasattr(inputs, "to_messages"):  # a PromptValue
        found = _last(list(inputs.to_messages()), "human")
        if found:
            return found
    if hasattr(inputs, "content"):
        return _message_text(inputs)
    return bounded_text(inputs)


def final_text(outputs: Any) -> str:
    """The answer in a run's outputs: the last AI message's text, the ``output``, the text."""
    if outputs is None:
        return ""
    if isinstance(outputs, str):
        return outputs
    if isinstance(outputs, dict):
        if "messages" in outputs:
            return _last(outputs["messages"], "ai") or ""
        for key in ("output", "answer", "result", "text", "content"):
            value = outputs.get(key)
            if isinstance(value, str) and value.strip():
                return value
        return ""
    if isinstance(outputs, (list, tuple)):
        return _last(outputs, "ai") or ""
    if _message_role(outputs) in ("ai", "AIMessageChunk"):
        return _message_text(outputs)
    return ""


def generation_text(response: Any) -> str:
    """The text of an ``LLMResult``'s first generation."""
    generations = getattr(response, "generations", None)
    if not generations or not generations[0]:
        return ""
    first = generations[0][0]
    message = getattr(first, "message", None)
    if message is not None:
        text = _message_text(message)
        if text:
            return text
    return str(getattr(first, "text", "") or "")


def tool_output(output: Any) -> Any:
    """A tool's result: a ``ToolMessage``'s content, else the value."""
    if hasattr(output, "content") and getattr(output, "type", None) == "tool":
        return content_text(output.content)
    return output


_PROVIDERS = {"azure": "azure", "google_genai": "google", "google_vertexai": "google-vertex"}


def model_id(serialized: Any, metadata: Any, params: Any) -> str | None:
    """``provider:model`` from LangChain's ``ls_provider`` / ``ls_model_name`` or the params."""
    meta = metadata if isinstance(metadata, dict) else {}
    invocation = params if isinstance(params, dict) else {}
    model = meta.get("ls_model_name") or invocation.get("model") or invocation.get("model_name")
    if not model and isinstance(serialized, dict):
        kwargs = serialized.get("kwargs")
        if isinstance(kwargs, dict):
            model = kwargs.get("model_name") or kwargs.get("model")
    if not model:
        return None
    provider = meta.get("ls_provider")
    if not provider:
        kind = str(invocation.get("_type") or "")
        provider = kind.split("-")[0] if kind else None
    if not provider:
        name = _serialized_name(serialized) or ""
        provider = name.lower().removeprefix("chat") or None
    model_text = str(model)
    if not provider:
        return model_text
    provider = _PROVIDERS.get(str(provider), str(provider))
    return f"{provider}:{model_text}"
