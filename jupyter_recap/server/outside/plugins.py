"""Finding the outside sources: the entry points of ``jupyter_recap.outside``, in name order.

The project's own sources register there like anybody else's (``pyproject.toml``). Each entry
point names a factory taking a :class:`~jupyter_recap.outside.source.SourceContext`; what it
returns must be an :class:`~jupyter_recap.outside.source.OutsideSource` of the entry point's
name. A plugin that cannot be loaded, whose factory raises, or that returns something else is
left out with one warning line naming it; the others go on. ``c.RecapServer.disabled_sources``
names those not to load at all. The sources the server drives itself (the chats and the
notebooks' changes, which its routes and focus rules call) are made by the server and join the
list after the discovered ones.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import cast

from ...entrypoints import Entry, group_entries
from ...outside.source import GROUP, OutsideSource, SourceContext, SourceFactory
from .host import SourceHost
from .sink import ServerSink

log = logging.getLogger(__name__)


def label(entry: Entry) -> str:
    """``toy-log (recap-toy-log 0.1.0)``: a source as the log names it."""
    origin = " ".join(part for part in (entry.distribution, entry.version) if part)
    return f"{entry.name} ({origin})"


def found_sources(disabled: Collection[str] = ()) -> list[Entry]:
    """The group's entry points in name order, but those ``disabled`` names (one each: of two
    with one name, the first distribution's wins, and the other is reported)."""
    found: dict[str, Entry] = {}
    entries, problems = group_entries(GROUP)
    for problem in problems:
        log.warning("jupyter_recap: outside sources of %s", problem)
    for entry in sorted(entries, key=lambda e: (e.name, e.distribution)):
        if entry.name in found:
            log.warning(
                "jupyter_recap: two outside sources named %s (%s and %s): the second is not loaded",
                entry.name,
                found[entry.name].distribution,
                entry.distribution,
            )
            continue
        found[entry.name] = entry
    for name in sorted(set(disabled) & set(found)):
        log.info("jupyter_recap: outside source %s is disabled", label(found.pop(name)))
    return list(found.values())


def load_sources(host: SourceHost, found: list[Entry]) -> list[OutsideSource]:
    """Each found source made with its own sink; one that fails is left out with a warning."""
    sources: list[OutsideSource] = []
    for plugin in found:
        try:
            factory = cast(SourceFactory, plugin.entry.load())
            source: object = factory(SourceContext(ServerSink(host, plugin.name), host))
        except Exception as error:  # noqa: BLE001 - a plugin's bug must not cost the others
            log.warning(
                "jupyter_recap: outside source %s could not be loaded: %s",
                label(plugin),
                f"{type(error).__name__}: {error}".splitlines()[0][:300],
            )
            continue
        if not isinstance(source, OutsideSource) or source.name != plugin.name:
            log.warning(
                "jupyter_recap: outside source %s is not an outside source named %s: not loaded",
                label(plugin),
                plugin.name,
            )
            continue
        log.info("jupyter_recap: outside source %s", label(plugin))
        sources.append(source)
    return sources


def make_sources(host: SourceHost, disabled: Collection[str] = ()) -> list[OutsideSource]:
    """Every outside source of the server, in start order: the discovered ones in name order,
    then the chats and the notebooks' changes, which the server makes and drives itself."""
    return [*load_sources(host, found_sources(disabled)), host.changes, host.chats]
