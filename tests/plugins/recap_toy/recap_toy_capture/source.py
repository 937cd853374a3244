"""The toy source: each ``toyagent`` run becomes an agent turn, its tool calls tool lines.

It listens through the framework's public extension point (``toyagent.add_listener``) and
reports to jupyter_recap's run hub, as the project's own sources do: :meth:`RunHub.start` when a
run starts, the run's ``tool_call`` / ``tool_result`` as tools are called, ``finish`` when it
ends. Every callback is wrapped by :meth:`Source.guarded`, so one that raises turns the source
off with one warning line instead of reaching the agent's run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

from jupyter_recap.capture.runs import AgentRun, RunHub
from jupyter_recap.capture.sources import Source


class ToySource(Source):
    """Records toyagent runs as agent turns."""

    name = "toy"
    module = "toyagent"
    distribution = "toyagent"

    def __init__(self, hub: RunHub) -> None:
        super().__init__(hub)
        self._framework: ModuleType | None = None
        self._listener: _Listener | None = None
        self._runs: dict[int, list[AgentRun]] = {}
        self._runs_lock = threading.Lock()

    def install(self, module: ModuleType) -> None:
        for needed in ("add_listener", "remove_listener"):
            if not callable(getattr(module, needed, None)):
                raise AttributeError(f"toyagent.{needed} is missing")
        self._listener = _Listener(self)
        module.add_listener(self._listener)
        self._framework = module

    def uninstall(self) -> None:
        if self._framework is not None and self._listener is not None:
            self._framework.remove_listener(self._listener)
        self._framework = None
        with self._runs_lock:
            started = [run for runs in self._runs.values() for run in runs]
            self._runs.clear()
        for run in started:  # a turn left open would never get its outcome
            run.finish("capture of toy stopped during this run")

    # -- what the listener reports -------------------------------------------------------------

    def started(self, agent: Any, prompt: str) -> None:
        run = self.hub.start(
            self.name,
            prompt=prompt,
            # Not "provider:model": the toy model is no provider a recap could call.
            model=f"ToyModel ({agent.model_name})",
            agent=str(agent.name),
        )
        with self._runs_lock:
            self._runs.setdefault(id(agent), []).append(run)

    def tool_called(self, agent: Any, name: str, argument: str) -> None:
        run = self._current(agent)
        if run is not None:
            run.tool_call(name, {"prompt": argument})

    def tool_returned(self, agent: Any, name: str, result: str, error: Any) -> None:
        run = self._current(agent)
        if run is not None:
            run.tool_result(name, result, error=error)

    def ended(self, agent: Any, reply: str | None, error: Any) -> None:
        with self._runs_lock:
            runs = self._runs.get(id(agent))
            run = runs.pop() if runs else None
        if run is not None:
            run.finish(error, reply=reply)

    def _current(self, agent: Any) -> AgentRun | None:
        with self._runs_lock:
            runs = self._runs.get(id(agent))
            return runs[-1] if runs else None


class _Listener:
    """What toyagent calls; each method is the source's, guarded."""

    def __init__(self, source: ToySource) -> None:
        self.run_started: Callable[..., Any] = source.guarded(source.started)
        self.tool_called: Callable[..., Any] = source.guarded(source.tool_called)
        self.tool_returned: Callable[..., Any] = source.guarded(source.tool_returned)
        self.run_ended: Callable[..., Any] = source.guarded(source.ended)
