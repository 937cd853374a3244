"""CLI agents' hook events, read from the spool into the notebooks they worked on.

``jupyter recap hook`` (run by Claude Code, Codex or VS Code's agent hooks) appends each event
of an agent's session to the hook spool (:mod:`jupyter_recap.stores.hookspool`). Every second,
when the spool changed, :class:`HookIntake` reads the new events (from where the spool ended
when the server started: history is not news) and hands them to
:class:`~jupyter_recap.hooks.sessions.HookSessions`, which says what each notebook gets. For a
notebook inside the server's root (a path outside it is never followed):

- the change line's attribution hears that the agent edited or ran it
  (:meth:`RecapServer.notebook_touched`);
- each kernel serving it (its agents-panel row) gets the entries for its record as an
  ``outside`` event of its feed: the agent's asks, tool calls and answer become a turn of the
  kernel's transcript, which recaps tell like any other.

Every second, whether the spool changed or not, a turn silent for
``c.RecapServer.hook_silence_seconds`` is ended in its notebooks ("no stop received
(interrupted?)"): Claude Code sends no ``Stop`` when the person interrupts it, and a turn
left open would hold the kernel's automatic recaps and count on in the agents panel.

A notebook no kernel with jupyter_recap serves gets the attribution only. A spool that cannot
be read (a store others could write, a file that is not the person's) is reported once in the
server's log and read again when it changes.
"""

from __future__ import annotations

import logging
import os
import time
from typing import cast

from tornado.ioloop import PeriodicCallback

from ...errors import StoreError
from ...hooks.events import event_from_json
from ...hooks.sessions import SILENCE_SECONDS, Delivery, HookSessions, notebook_under
from ...outside.source import API_VERSION, OutsideSink, SourceContext
from ...stores.hookspool import SpoolReader
from .host import SourceHost

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0
"""How often the spool is looked at (one ``lstat`` when nothing changed)."""


class HookIntake:
    """Reads the hook spool for one server: :meth:`start` at load, :meth:`stop` at shutdown."""

    name = "hooks"
    line_precedence = 0
    api_version = API_VERSION

    def __init__(self, sink: OutsideSink, silence: float = SILENCE_SECONDS) -> None:
        """``silence``: seconds after which a turn that heard nothing more is ended."""
        self.sink = sink
        self.sessions = HookSessions(silence=float(silence))
        self.reader: SpoolReader | None = None
        self._periodic: PeriodicCallback | None = None
        self._problem: str | None = None
        """The last reading problem logged (each is logged once, until reading works again)."""

    def start(self) -> None:
        """Start after what the spool holds now, and look at it every second."""
        self.reader = SpoolReader()
        self.reader.skip_to_end()
        self._periodic = PeriodicCallback(self.poll, POLL_SECONDS * 1000)
        self._periodic.start()

    def stop(self) -> None:
        if self._periodic is not None:
            self._periodic.stop()
            self._periodic = None

    def poll(self) -> None:
        """Read what the spool gained, if it changed, then end the turns gone silent; never
        raises into the loop."""
        if self.reader is None:
            return
        self._read()
        # After the read: a stop read just now is no silence.
        self._send(self.sessions.quiet(time.time()))

    def _read(self) -> None:
        reader = self.reader
        if reader is None:
            return
        try:
            if not reader.changed():
                return
            records = reader.read()
        except (StoreError, OSError) as error:
            self._report(f"cannot read the hook spool: {error}")
            return
        except Exception:  # the callback must go on; the next change is read again
            log.warning("jupyter_recap: reading the hook spool failed", exc_info=True)
            return
        self._problem = None
        for record in records:
            event = event_from_json(record)
            if event is not None:
                self._send(self.sessions.feed(event))

    def _send(self, deliveries: list[Delivery]) -> None:
        for delivery in deliveries:
            try:
                self._deliver(delivery)
            except Exception:  # one notebook's trouble is not the next one's
                log.warning("jupyter_recap: a hook event was not delivered", exc_info=True)

    def _deliver(self, delivery: Delivery) -> None:
        roots = [self.sink.root_dir]
        real = os.path.realpath(roots[0])
        if real != roots[0]:
            roots.append(real)  # the agent may name the notebook by the root's real path
        path = notebook_under(delivery.notebook, roots)
        if path is None:
            return
        if delivery.edited or delivery.ran:
            self.sink.touched(
                path, delivery.agent, delivery.at, edited=delivery.edited, ran=delivery.ran
            )
        if delivery.entries:
            for kernel_id in self.sink.kernels_of(path):
                self.sink.add_entries(kernel_id, delivery.entries)

    def _report(self, problem: str) -> None:
        if problem != self._problem:
            self._problem = problem
            log.warning("jupyter_recap: %s", problem)


def make_source(context: SourceContext) -> HookIntake:
    """The entry point's factory (``c.RecapServer.hook_silence_seconds`` ends silent turns)."""
    host = cast(SourceHost, context.host)
    return HookIntake(context.sink, host.hook_silence_seconds)
