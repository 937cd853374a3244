"""toyagent: a toy agent framework, which the sample capture plugin (``recap_toy_capture``)
teaches jupyter_recap to record.

An :class:`Agent` answers a prompt with its model (a function from text to text), after calling
each of its tools whose name the prompt mentions. What happens is told to the listeners added
with :func:`add_listener`: the framework's public extension point, as a tracing processor or a
callback handler is in a real one. It knows nothing of jupyter_recap.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

Tool = Callable[[str], str]


class Listener(Protocol):
    """What a listener is told, in this order, for each run."""

    def run_started(self, agent: Agent, prompt: str) -> None: ...

    def tool_called(self, agent: Agent, name: str, argument: str) -> None: ...

    def tool_returned(
        self, agent: Agent, name: str, result: str, error: BaseException | None
    ) -> None: ...

    def run_ended(self, agent: Agent, reply: str | None, error: BaseException | None) -> None: ...


_listeners: list[Listener] = []


def add_listener(listener: Listener) -> None:
    """Tell ``listener`` about every run from now on."""
    _listeners.append(listener)


def remove_listener(listener: Listener) -> None:
    if listener in _listeners:
        _listeners.remove(listener)


def echo(prompt: str) -> str:
    """The toy model: it answers by repeating what it was told."""
    return f"Toy answer: {prompt}"


class Agent:
    """An agent with a model (``model_name`` names it) and tools by name."""

    def __init__(
        self,
        name: str = "toy",
        *,
        model: Callable[[str], str] = echo,
        model_name: str = "echo",
        tools: dict[str, Tool] | None = None,
    ) -> None:
        self.name = name
        self.model = model
        self.model_name = model_name
        self.tools = dict(tools or {})

    def run(self, prompt: str) -> str:
        """Call the tools the prompt names, then the model; a tool that raises ends the run."""
        for listener in list(_listeners):
            listener.run_started(self, prompt)
        try:
            notes = [
                self._call(name, tool, prompt)
                for name, tool in self.tools.items()
                if name in prompt
            ]
            reply = self.model(" ".join([prompt, *notes]))
        except BaseException as error:
            for listener in list(_listeners):
                listener.run_ended(self, None, error)
            raise
        for listener in list(_listeners):
            listener.run_ended(self, reply, None)
        return reply

    def _call(self, name: str, tool: Tool, argument: str) -> str:
        for listener in list(_listeners):
            listener.tool_called(self, name, argument)
        try:
            result = tool(argument)
        except Exception as error:
            for listener in list(_listeners):
                listener.tool_returned(self, name, "", error)
            raise
        for listener in list(_listeners):
            listener.tool_returned(self, name, result, None)
        return result


def run(prompt: str) -> str:
    """Run a default agent once."""
    return Agent().run(prompt)
