"""The outside sources one server runs: started in order, each failure kept to itself, and
their lines of what happened in notebooks merged by each source's declared precedence."""

from __future__ import annotations

import logging
from collections.abc import Iterator

from ...outside.source import API_VERSION, OutsideSource, merge_lines
from ...wire import OutsideActivity

log = logging.getLogger(__name__)


class SourceList:
    """The outside sources of one server, in start order, by name."""

    def __init__(self, sources: list[OutsideSource]) -> None:
        self._sources = {source.name: source for source in sources}
        self._lines: dict[str, dict[str, OutsideActivity]] = {}
        self.running: list[str] = []
        """The names of the sources started and not failed."""

    def __iter__(self) -> Iterator[OutsideSource]:
        return iter(self._sources.values())

    def __getitem__(self, name: str) -> OutsideSource:
        return self._sources[name]

    def start(self) -> None:
        """Start every source; one that is for another API version or raises stays off."""
        for source in self:
            if source.api_version != API_VERSION:
                log.warning(
                    "jupyter_recap: outside source %s is for API version %s, not %s: not started",
                    source.name,
                    source.api_version,
                    API_VERSION,
                )
                continue
            try:
                source.start()
            except Exception:  # an extra: the rest of the extension works without it
                log.warning(
                    "jupyter_recap: outside source %s did not start", source.name, exc_info=True
                )
                continue
            self.running.append(source.name)

    def stop(self) -> None:
        for source in self:
            try:
                source.stop()
            except Exception:  # the next one is stopped all the same
                log.warning(
                    "jupyter_recap: outside source %s did not stop", source.name, exc_info=True
                )
        self.running.clear()

    def publish(self, name: str, lines: dict[str, OutsideActivity]) -> dict[str, OutsideActivity]:
        """Source ``name``'s lines replace its earlier ones; returns every source's lines
        merged, one per notebook, the higher precedence winning."""
        self._lines[name] = lines
        precedence = {source.name: source.line_precedence for source in self}
        return merge_lines(self._lines, precedence)

    def get(self, name: str) -> OutsideSource | None:
        return self._sources.get(name)
