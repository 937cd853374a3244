"""What the project's own outside sources are given of the server beyond their sinks."""

from __future__ import annotations

from typing import NamedTuple, Protocol

from ...changes.touches import Touches
from ...outside.source import OutsideSource
from .running import SourceList
from .sink import EventBus, ServerParts


class PersonaCell(NamedTuple):
    """A kernel's running ``%%ai model@Persona`` cell, as the server's execution watcher saw
    it start."""

    persona: str
    started: float
    """When its input reached the watcher (``time.time()``)."""
    prompt: str | None = None
    """Its text after the magic's line, stripped (None: not known)."""


class Watcher(Protocol):
    @property
    def persona_cells(self) -> dict[str, PersonaCell]:
        """Kernel id → its running ``%%ai model@Persona`` cell."""
        ...


class SourceHost(ServerParts, Protocol):
    """The server (``RecapServer``) as the project's own sources' factories see it: its
    parts, the settings of its sources, and the list they run in."""

    @property
    def watcher(self) -> Watcher: ...
    @property
    def touches(self) -> Touches: ...
    @property
    def event_bus(self) -> EventBus | None: ...
    @property
    def hook_silence_seconds(self) -> float: ...
    @property
    def mcp_otel_file(self) -> str: ...
    @property
    def sources(self) -> SourceList: ...
    @property
    def changes(self) -> OutsideSource: ...
    @property
    def chats(self) -> OutsideSource: ...
