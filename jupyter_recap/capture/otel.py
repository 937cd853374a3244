"""Capture source for OpenTelemetry: GenAI spans of any instrumented client or framework.

The public extension point is the SDK's span processor chain of the person's *global* tracer
provider (``trace.get_tracer_provider().add_span_processor(...)``); content that an
instrumentation puts on log events instead of spans comes through a log record processor on the
global SDK logger provider. Nothing here ever sets a provider: the person's setup wins, and
one set after ``%load_ext`` is found before the next cell (:meth:`OpenTelemetrySource.before_cell`
and :meth:`~OpenTelemetrySource.after_cell` hang on the hub's cell hooks).

What the person sets for message content to be recorded (without it, only the model, the tool
names and the outcome are known): ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``, which
for ``opentelemetry-instrumentation-openai-v2`` 2.x (through ``opentelemetry-util-genai``) is
one of ``span_only`` (messages as span attributes), ``event_only`` (as
``gen_ai.client.inference.operation.details`` log events: needs an SDK ``LoggerProvider`` set
globally) or ``span_and_event`` — before ``OpenAIInstrumentor().instrument()``. (``true`` is
the older 1.x / legacy spelling.)
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ..debuglog import get_logger
from .genai_tracker import GenAITracker, log_processor, span_processor, watch_cells
from .sources import Source


class OpenTelemetrySource(Source):
    """Records runs seen as GenAI spans on the global OpenTelemetry tracer provider."""

    name = "opentelemetry"
    module = "opentelemetry.sdk.trace"
    distribution = "opentelemetry-sdk"

    def __init__(self, hub: Any) -> None:
        super().__init__(hub)
        self.tracker = GenAITracker(hub, self.name)
        self._sdk: ModuleType | None = None
        self._span_processor: Any = None
        self._log_processor: Any = None
        self._cancel_hooks: Callable[[], None] = _nothing
        self._get_tracer_provider: Callable[[], Any] = _nothing
        self._get_logger_provider: Callable[[], Any] = _nothing
        self._seen_tracer: Any = None
        self._after_cell: Callable[[], Any] = _nothing

    def install(self, module: ModuleType) -> None:
        if not hasattr(module, "TracerProvider") or not hasattr(module, "SpanProcessor"):
            raise AttributeError("opentelemetry.sdk.trace has no TracerProvider/SpanProcessor")
        if not hasattr(module.TracerProvider, "add_span_processor"):
            raise AttributeError("TracerProvider.add_span_processor is missing")
        self._sdk = module
        self._span_processor = span_processor(self.tracker, self.guarded)
        self._get_tracer_provider, self._get_logger_provider = self._getters()
        self._after_cell = self.guarded(self.tracker.after_cell)
        self._hook_cells()
        self.before_cell()

    def before_cell(self) -> None:
        """Join the global providers if the person set them since (cheap; call before each cell).

        The person typically sets a provider and instruments in one cell and runs the agent in
        the next: this finds the provider in between. It runs before every cell, so the usual
        case (the same provider as last time) is one call and one identity check.
        """
        if self.state != "active" or self._sdk is None:
            return
        try:
            tracer_provider = self._get_tracer_provider()
            if tracer_provider is self._seen_tracer:
                return
            # The logger provider (content sent as log events) is looked for when the tracer
            # provider changes: people set both in one go, and reading it costs environment
            # lookups that every cell would pay.
            self._seen_tracer = tracer_provider
            self._join(tracer_provider, self._get_logger_provider())
        except Exception as error:  # noqa: BLE001 - an API we do not know: stand aside
            get_logger().exception("capture: joining the OpenTelemetry providers failed")
            self.fail(f"could not join the tracer provider ({type(error).__name__}: {error})")

    def _getters(self) -> tuple[Callable[[], Any], Callable[[], Any]]:
        """The functions returning the global tracer and logger providers (looked up once)."""
        from opentelemetry import trace

        try:
            from opentelemetry import _logs

            get_logger_provider: Callable[[], Any] = _logs.get_logger_provider
        except ImportError:  # an API without the logs signal: spans only

            def get_logger_provider() -> Any:
                return None

        return trace.get_tracer_provider, get_logger_provider

    def _join(self, tracer_provider: Any, logger_provider: Any) -> None:
        assert self._sdk is not None
        # Not set yet (a proxy) or not the SDK's: nothing we can join.
        if isinstance(tracer_provider, self._sdk.TracerProvider):
            self._attach(tracer_provider, "add_span_processor", self._span_processor)
        if logger_provider is None:
            return
        try:
            from opentelemetry.sdk import _logs as sdk_logs
        except ImportError:
            return
        if not isinstance(logger_provider, sdk_logs.LoggerProvider):
            return
        if self._log_processor is None:
            self._log_processor = log_processor(self.tracker, self.guarded)
        self._attach(logger_provider, "add_log_record_processor", self._log_processor)

    def _attach(self, provider: Any, add: str, processor: Any) -> None:
        """Give ``provider`` our processor, once per process: an SDK provider cannot drop one,
        so after a reload (or a new ``Recap.capture``) the one it has is fed to this source."""
        joined = _joined.setdefault(add, weakref.WeakKeyDictionary())
        existing = joined.get(provider)
        if existing is not None:
            existing.feed(self.tracker, self.guarded)
            return
        getattr(provider, add)(processor)
        joined[provider] = processor

    def after_cell(self) -> None:
        """A cell ended: runs it left open end with it if it failed (see ``GenAITracker``)."""
        self._after_cell()

    def _hook_cells(self) -> None:
        self._cancel_hooks = watch_cells(self.hub, self.after_cell, self.before_cell)

    def uninstall(self) -> None:
        self.tracker.close_all()
        # Processors cannot be removed from an SDK provider: ours stay, as no-ops (guarded).
        self._cancel_hooks()
        self._cancel_hooks = _nothing


#: The processors given to each provider, by the method that added them (once per process).
_joined: dict[str, weakref.WeakKeyDictionary[Any, Any]] = {}


def _nothing() -> None:
    pass
