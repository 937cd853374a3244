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

A session waiting for the person's approval of a tool call (Claude Code's or Codex's
``PermissionRequest``, or Claude Code's permission notification) shows on the agents panel,
after every read, as "waiting for your approval: Bash rm -rf build/ (Claude Code, answer in its
terminal)": on the row of each kernel serving the notebook the pending call names, else the
notebook the session named last; when no such row is there (no notebook, one outside the root,
or one no kernel with jupyter_recap serves), on a row of its own for the session (kind ``cli``,
with the agent's folder, and the notebook when there is one). The board gives it the notice and
the place a chat's approval gets. It goes when the session's wait ends (see
:mod:`jupyter_recap.hooks.sessions`).
"""

from __future__ import annotations

import logging
import os
import time
from typing import Literal, NamedTuple, cast

from tornado.ioloop import PeriodicCallback

from ...errors import StoreError
from ...focus.board import AgentBoard, AgentWait, OwnRow, cli_row_id
from ...hooks.events import event_from_json
from ...hooks.sessions import SILENCE_SECONDS, Delivery, HookSessions, Wait, notebook_under
from ...outside.source import API_VERSION, OutsideSink, SourceContext
from ...stores.hookspool import SpoolReader
from ...textutil import shorten
from .host import SourceHost

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0
"""How often the spool is looked at (one ``lstat`` when nothing changed)."""
APPROVAL_CHARS = 200
"""A wait's line on its row, whole: the call is cut so that who waits and where to answer it
always show (the panel shows a line of at most this many)."""


class Shown(NamedTuple):
    """A wait as the board shows it on one row."""

    wait: AgentWait
    kind: Literal["notebook", "cli"]
    """``notebook``: on a kernel's row; ``cli``: on the session's own row."""
    path: str
    folder: str | None


class HookIntake:
    """Reads the hook spool for one server: :meth:`start` at load, :meth:`stop` at shutdown."""

    name = "hooks"
    line_precedence = 0
    api_version = API_VERSION

    def __init__(
        self, sink: OutsideSink, silence: float = SILENCE_SECONDS, board: AgentBoard | None = None
    ) -> None:
        """``silence``: seconds after which a turn that heard nothing more is ended;
        ``board``: the agents panel, where waits for approval show (None: they do not)."""
        self.sink = sink
        self.board = board
        self.sessions = HookSessions(silence=float(silence))
        self.shown: dict[str, Shown] = {}
        """Row id → the wait it shows."""
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
        if self.board is not None:
            for row_id, shown in self.shown.items():
                self._unshow(self.board, row_id, shown)
            self.shown.clear()

    def poll(self) -> None:
        """Read what the spool gained, if it changed, then end the turns gone silent; never
        raises into the loop."""
        if self.reader is None:
            return
        self._read()
        # After the read: a stop read just now is no silence.
        self._send(self.sessions.quiet(time.time()))
        try:
            self._show_waits()
        except Exception:  # the callback must go on; the next poll shows them again
            log.warning("jupyter_recap: a wait for approval was not shown", exc_info=True)

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
        path = self._relative(delivery.notebook)
        if path is None:
            return
        if delivery.edited or delivery.ran:
            self.sink.touched(
                path, delivery.agent, delivery.at, edited=delivery.edited, ran=delivery.ran
            )
        if delivery.entries:
            for kernel_id in self.sink.kernels_of(path):
                self.sink.add_entries(kernel_id, delivery.entries)

    def _show_waits(self) -> None:
        """Put each session's wait for approval on its row, and take the ended ones off."""
        board = self.board
        if board is None or (not self.shown and not self.sessions.waits()):
            return
        wanted: dict[str, Shown] = {}
        for wait in sorted(self.sessions.waits(), key=lambda w: w.at):  # the latest wins a row
            wanted.update(self._rows_of(wait))
        for row_id, shown in self.shown.items():
            if row_id not in wanted or wanted[row_id].kind != shown.kind:
                self._unshow(board, row_id, shown)
        for row_id, shown in wanted.items():
            if self.shown.get(row_id) == shown and row_id in board:
                continue
            own = OwnRow(shown.path, shown.folder) if shown.kind == "cli" else None
            board.wait(row_id, shown.wait, own=own)
        self.shown = wanted

    def _rows_of(self, wait: Wait) -> dict[str, Shown]:
        """The rows ``wait`` shows on: its notebook's kernels', else the session's own."""
        shown = AgentWait(wait.agent, approval_line(wait), wait.at)
        path = ""
        if wait.notebook is not None:
            path = self._relative(wait.notebook) or ""
        kernels = self.sink.kernels_of(path) if path else []
        if kernels:
            return {kernel: Shown(shown, "notebook", path, None) for kernel in kernels}
        row_id = cli_row_id(wait.agent, wait.session)
        return {row_id: Shown(shown, "cli", path, wait.cwd)}

    @staticmethod
    def _unshow(board: AgentBoard, row_id: str, shown: Shown) -> None:
        own = OwnRow(shown.path, shown.folder) if shown.kind == "cli" else None
        board.wait(row_id, None, own=own)

    def _relative(self, notebook: str) -> str | None:
        """``notebook`` relative to the server's root (or its real path), None if outside."""
        roots = [self.sink.root_dir]
        real = os.path.realpath(roots[0])
        if real != roots[0]:
            roots.append(real)  # the agent may name the notebook by the root's real path
        return notebook_under(notebook, roots)

    def _report(self, problem: str) -> None:
        if problem != self._problem:
            self._problem = problem
            log.warning("jupyter_recap: %s", problem)


def approval_line(wait: Wait) -> str:
    """A wait's line on its row: ``Bash rm -rf build/ (Claude Code, answer in its terminal)``,
    at most :data:`APPROVAL_CHARS` characters (the call is cut, never who waits)."""
    where = f" ({shorten(wait.agent, 60)}, answer in its terminal)"
    call = shorten(wait.text, APPROVAL_CHARS - len(where)) if wait.text else "a tool call"
    return call + where


def make_source(context: SourceContext) -> HookIntake:
    """The entry point's factory (``c.RecapServer.hook_silence_seconds`` ends silent turns;
    waits for approval show on the server's agents board)."""
    host = cast(SourceHost, context.host)
    return HookIntake(context.sink, host.hook_silence_seconds, host.board)
