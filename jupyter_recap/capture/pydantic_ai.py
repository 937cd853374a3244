"""Capture source for pydantic-ai, through its public instrumentation hook.

``Agent.instrument_all(InstrumentationSettings(tracer_provider=..., include_content=True))``
makes every agent that does not set its own ``instrument=`` emit OpenTelemetry spans that follow
the GenAI conventions (``invoke_agent``, ``chat``, ``execute_tool``). We give it a private tracer
provider (:mod:`.tracing`) that hands those spans to the tracker that turns them into turns
(:mod:`.genai_tracker`): nothing is exported and the person's global provider is untouched. The
provider is built on the OpenTelemetry API alone, which pydantic-ai itself depends on: the
install pydantic-ai's documentation gives (``pydantic-ai-slim[openai]``) has no SDK.

An explicit ``Agent.instrument_all(...)`` by the person (``logfire.instrument_pydantic_ai()``
does this) replaces ours: their spans go to their provider. If that is the global SDK provider,
the ``opentelemetry`` source records the runs from there instead.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .genai_tracker import GenAITracker, watch_cells
from .sources import Source


class PydanticAISource(Source):
    """Records pydantic-ai agent runs (``run``, ``run_sync``, ``run_stream``…) as agent turns."""

    name = "pydantic-ai"
    module = "pydantic_ai"
    distribution = "pydantic-ai-slim"
    needs = (("opentelemetry.trace", "opentelemetry-api"),)

    def __init__(self, hub: Any) -> None:
        super().__init__(hub)
        self.tracker = GenAITracker(hub, self.name)
        self.settings: Any = None
        self._agent_class: Any = None
        self._cancel_hooks: Callable[[], None] | None = None
        self._after_cell: Callable[[], Any] = lambda: None

    def install(self, module: ModuleType) -> None:
        agent_class = getattr(module, "Agent", None)
        if agent_class is None or not callable(getattr(agent_class, "instrument_all", None)):
            raise AttributeError("pydantic_ai.Agent.instrument_all is missing")
        from pydantic_ai.models.instrumented import InstrumentationSettings

        parameters = inspect.signature(InstrumentationSettings).parameters
        for needed in ("tracer_provider", "include_content"):
            if needed not in parameters:
                raise TypeError(f"InstrumentationSettings takes no {needed}")
        from .tracing import RecordingTracerProvider

        provider = RecordingTracerProvider(
            self.guarded(self.tracker.on_start), self.guarded(self.tracker.on_end)
        )
        self.settings = InstrumentationSettings(
            tracer_provider=provider, include_content=True, include_binary_content=False
        )
        self._agent_class = agent_class
        self._after_cell = self.guarded(self.tracker.after_cell)
        self._cancel_hooks = watch_cells(self.hub, self.after_cell)
        if getattr(agent_class, "_instrument_default", False) not in (False, None):
            return  # the person instrumented already (logfire…): theirs wins
        agent_class.instrument_all(self.settings)

    def after_cell(self) -> None:
        """A cell ended: a run it left open ends with it if it failed (an interrupt: aborted)."""
        self._after_cell()

    def uninstall(self) -> None:
        self.tracker.close_all()
        if self._cancel_hooks is not None:
            self._cancel_hooks()
            self._cancel_hooks = None
        agent_class = self._agent_class
        if agent_class is None or self.settings is None:
            return
        if getattr(agent_class, "_instrument_default", None) is self.settings:
            agent_class.instrument_all(False)
        self._agent_class = None
