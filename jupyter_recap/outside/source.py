"""The contract between the server and a source of outside-agent activity.

An *outside source* hears agents that work on notebooks from outside the person's kernel — a CLI
agent's hooks, an MCP server's tool calls, a chat's persona — and tells the server what they did.
It sees the server only through an :class:`OutsideSink`, which holds exactly what a source may
do: say a notebook was touched and by whom, add entries to a kernel's current turn, publish its
lines of what happened while the person was away, look up the kernels of a notebook and the
notebook of a kernel, and run blocking work off the server's loop. Nothing else of the server
reaches a source, so a source is tested against a small fake sink and a new one needs no edit of
the server.

The server makes one sink per source (so a published line is known to be that source's) and
merges the sources' lines by :attr:`OutsideSource.line_precedence`: where two sources have a line
for one notebook, the higher precedence wins (a change line naming who changed the notebook
outranks a chat's line about the same notebook).

:data:`API_VERSION` is the version of this contract; a source built for another is refused.

Sources are found through the entry-point group :data:`GROUP` (the project's own register there
too): each entry point names a factory that takes a :class:`SourceContext` and returns the
source. A plugin usually needs only ``context.sink``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

from ..wire import OutsideActivity, OutsideEntry

API_VERSION = 1
"""The version of :class:`OutsideSink` and :class:`OutsideSource` (raised on a breaking
change: a source declaring another is not started)."""

GROUP = "jupyter_recap.outside"
"""The entry-point group of outside sources: ``name = "module:factory"``."""

_T = TypeVar("_T")


class OutsideSink(Protocol):
    """What an outside source may do in the server (see the module's docstring)."""

    @property
    def root_dir(self) -> str:
        """The server's notebook root, absolute: a path a source reports is relative to it."""
        ...

    def touched(
        self,
        path: str,
        who: str,
        at: float | None = None,
        *,
        edited: int = 0,
        ran: int = 0,
        failed: int = 0,
    ) -> None:
        """An agent (``who``, as a change line names it) worked on the notebook at ``path``
        (relative to :attr:`root_dir`): ``edited`` cells, ``ran`` runs of which ``failed``
        failed; ``at`` is when (UNIX time; now when None)."""
        ...

    def add_entries(
        self, kernel_id: str, entries: list[OutsideEntry], *, latest_cell: bool = False
    ) -> None:
        """Entries for the record of the kernel ``kernel_id`` (dropped when no kernel of that
        id reports to this server). ``latest_cell``: they belong to the turn of the kernel's
        latest prompt."""
        ...

    def publish_lines(self, lines: Mapping[str, OutsideActivity]) -> None:
        """This source's lines of what happened in notebooks (path → line) while the person
        was away; replaces the lines it published before."""
        ...

    def kernels_of(self, path: str) -> list[str]:
        """The kernels running jupyter_recap that serve the notebook at ``path``."""
        ...

    async def notebook_of(self, kernel_id: str) -> str | None:
        """The notebook (relative path) of the server's session running ``kernel_id``."""
        ...

    async def in_pool(self, function: Callable[[], _T]) -> _T:
        """``function()`` on a worker thread, off the server's loop (file reads, parsing)."""
        ...

    def extension_enabled(self, name: str) -> bool:
        """Whether the server extension ``name`` runs in this server."""
        ...

    def extension_apps(self, name: str) -> Sequence[object]:
        """The extension apps of the server extension ``name`` when it is enabled in this
        server (empty otherwise): for a source that hooks into another extension."""
        ...

    def server_setting(self, key: str) -> object:
        """The server's web application setting ``key`` (None when absent): what other
        extensions publish there (Jupyter AI's persona managers, say)."""
        ...


@runtime_checkable
class OutsideSource(Protocol):
    """A source of outside-agent activity, started once the server's extensions are loaded and
    stopped when the server stops. ``start`` and ``stop`` never block the loop; a source that
    raises is turned off with one warning and costs the others nothing."""

    name: str
    """Unique and short: how the log, ``%recap status`` and the server's setting name it."""

    line_precedence: int
    """Whose line a notebook shows when two sources have one: the higher wins."""

    api_version: int
    """The :data:`API_VERSION` the source was written for."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


@dataclass(frozen=True)
class SourceContext:
    """What a source's factory is given: its sink, and the server's own services, which only
    the project's own sources use (a plugin must not: they are not part of the contract)."""

    sink: OutsideSink
    host: object = None


class SourceFactory(Protocol):
    """What an entry point of :data:`GROUP` names."""

    def __call__(self, context: SourceContext) -> OutsideSource: ...


def merge_lines(
    published: Mapping[str, Mapping[str, OutsideActivity]], precedence: Mapping[str, int]
) -> dict[str, OutsideActivity]:
    """One line per notebook from every source's lines (source name → path → line): the
    source of the higher precedence wins a notebook (a source unknown to ``precedence`` counts
    as 0; equal precedences go by name, so the result never depends on publishing order)."""
    merged: dict[str, OutsideActivity] = {}
    for name in sorted(published, key=lambda source: (precedence.get(source, 0), source)):
        merged.update(published[name])
    return merged
