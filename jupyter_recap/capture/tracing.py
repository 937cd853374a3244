"""A tracer provider of our own, built on the OpenTelemetry API alone (no SDK).

pydantic-ai takes any API ``TracerProvider`` (``InstrumentationSettings(tracer_provider=...)``)
and depends on ``opentelemetry-api`` only: ``pip install "pydantic-ai-slim[openai]"``, the install
its documentation gives, brings no SDK. So the ``pydantic-ai`` source gives it this provider,
which hands every span to two callbacks, as it starts and as it ends: nothing is sampled away,
batched or exported, and the person's global provider is untouched.

A span keeps what :class:`~.genai_tracker.GenAITracker` reads, under the names of the SDK's
``ReadableSpan`` (``context``, ``parent``, ``name``, ``attributes``, ``events``, ``status``), so
the tracker reads these spans and SDK spans alike. Parents, statuses and exceptions follow the
SDK's rules, which pydantic-ai's instrumentation was written against.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any, NamedTuple

from opentelemetry import trace
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

#: What the provider calls with each span (as it starts; as it ends).
SpanCallback = Callable[["RecordingSpan"], Any]


class Event(NamedTuple):
    """One span event (``exception``, or one an instrumentation adds)."""

    name: str
    attributes: Mapping[str, Any]
    timestamp: int


class RecordingSpan(trace.Span):
    """A span that keeps its name, attributes, events and status until it ends."""

    def __init__(
        self,
        name: str,
        context: SpanContext,
        parent: SpanContext | None,
        on_end: SpanCallback,
        *,
        kind: SpanKind = SpanKind.INTERNAL,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> None:
        self.name = name
        self.context = context
        self.parent = parent
        self.kind = kind
        self.attributes: dict[str, Any] = {}
        self.events: list[Event] = []
        self.status = Status(StatusCode.UNSET)
        self.start_time = time.time_ns()
        self.end_time: int | None = None
        self._on_end = on_end
        self._record_exception = record_exception
        self._set_status_on_exception = set_status_on_exception

    def end(self, end_time: int | None = None) -> None:
        if self.end_time is not None:
            return  # ended twice: the callback has seen it once
        self.end_time = end_time if end_time is not None else time.time_ns()
        self._on_end(self)

    def get_span_context(self) -> SpanContext:
        return self.context

    def is_recording(self) -> bool:
        return self.end_time is None

    def set_attribute(self, key: str, value: Any) -> None:
        if self.end_time is None and value is not None:  # the SDK drops None values too
            # A list is kept as a tuple, as the SDK does: the caller may change its list later.
            self.attributes[key] = tuple(value) if isinstance(value, list) else value

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        for key, value in attributes.items():
            self.set_attribute(key, value)

    def add_event(
        self, name: str, attributes: Mapping[str, Any] | None = None, timestamp: int | None = None
    ) -> None:
        if self.end_time is None:
            stamp = timestamp if timestamp is not None else time.time_ns()
            self.events.append(Event(name, dict(attributes or {}), stamp))

    def add_link(self, context: SpanContext, attributes: Mapping[str, Any] | None = None) -> None:
        """Links are not read (the API's default would warn that they are not implemented)."""

    def update_name(self, name: str) -> None:
        if self.end_time is None:
            self.name = name

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        # The SDK's rules: an OK status is final, and UNSET never replaces another.
        if self.end_time is not None or self.status.status_code is StatusCode.OK:
            return
        if isinstance(status, Status):
            if status.status_code is not StatusCode.UNSET:
                self.status = status
        elif status is not StatusCode.UNSET:
            self.status = Status(status, description)

    def record_exception(
        self,
        exception: BaseException,
        attributes: Mapping[str, Any] | None = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        # The SDK's event, without the formatted stack trace: nothing here reads it, and
        # formatting it would cost every failing tool call.
        kind = type(exception)
        module = kind.__module__
        name = (
            f"{module}.{kind.__qualname__}"
            if module and module != "builtins"
            else kind.__qualname__
        )
        event = {
            "exception.type": name,
            "exception.message": str(exception),
            "exception.escaped": str(escaped),
            **(attributes or {}),
        }
        self.add_event("exception", event, timestamp)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        """``with tracer.start_span(...) as span``: an exception is recorded as the SDK does."""
        if exc_val is not None and self.end_time is None:
            if self._record_exception:
                self.record_exception(exc_val, escaped=True)
            if self._set_status_on_exception:
                self.set_status(Status(StatusCode.ERROR, f"{type(exc_val).__name__}: {exc_val}"))
        self.end()


class RecordingTracer(trace.Tracer):
    """Starts :class:`RecordingSpan` objects and tells the callbacks about them."""

    def __init__(self, on_start: SpanCallback, on_end: SpanCallback) -> None:
        self._on_start = on_start
        self._on_end = on_end

    def start_span(
        self,
        name: str,
        context: Any = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Mapping[str, Any] | None = None,
        links: Sequence[Any] | None = (),
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> trace.Span:
        parent: SpanContext | None = trace.get_current_span(context).get_span_context()
        if parent is None or not parent.is_valid:
            parent = None  # a root: a new trace
            trace_id = _random_id(128)
        else:
            trace_id = parent.trace_id
        span_context = SpanContext(
            trace_id,
            _random_id(64),
            is_remote=False,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
            trace_state=parent.trace_state if parent is not None else None,
        )
        span = RecordingSpan(
            name,
            span_context,
            parent,
            self._on_end,
            kind=kind,
            record_exception=record_exception,
            set_status_on_exception=set_status_on_exception,
        )
        if start_time is not None:
            span.start_time = start_time
        span.set_attributes(attributes or {})
        self._on_start(span)  # like an SDK processor: after the start attributes are set
        return span

    @contextmanager
    def start_as_current_span(  # type: ignore[override]  # the API's own decorator is private
        self,
        name: str,
        context: Any = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Mapping[str, Any] | None = None,
        links: Sequence[Any] | None = (),
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
        end_on_exit: bool = True,
    ) -> Iterator[trace.Span]:
        span = self.start_span(
            name,
            context,
            kind,
            attributes,
            links,
            start_time,
            record_exception,
            set_status_on_exception,
        )
        # The API's use_span makes the span current and, on an exception, records it and sets
        # the error status (as the SDK's own start_as_current_span does).
        with trace.use_span(
            span,
            end_on_exit=end_on_exit,
            record_exception=record_exception,
            set_status_on_exception=set_status_on_exception,
        ) as current:
            yield current


class RecordingTracerProvider(trace.TracerProvider):
    """One tracer for every instrumentation scope: the callbacks do not tell scopes apart."""

    def __init__(self, on_start: SpanCallback, on_end: SpanCallback) -> None:
        self._tracer = RecordingTracer(on_start, on_end)

    def get_tracer(
        self,
        instrumenting_module_name: str,
        instrumenting_library_version: str | None = None,
        schema_url: str | None = None,
        attributes: Any = None,
    ) -> trace.Tracer:
        return self._tracer


def _random_id(bits: int) -> int:
    """A random trace (128 bits) or span (64 bits) id; never 0, the invalid id."""
    while True:
        found = random.getrandbits(bits)
        if found:
            return found
