"""The agents board: one row per kernel with jupyter_recap loaded, for the agents panel.

Kernels report their agent state (turn, recap, tasks, where the work stopped), which the server
reads with :func:`~.validate.parse_report`; it adds what only it sees (which notebook, whether the
person looks at it, restarts, deaths and long cells). Chats' agents and CLI agents waiting for
approval have rows too. The board decides who *needs the person*: a tool call waiting for their
approval, a turn that ended while nobody looked at its notebook, until someone does. It also
numbers the absences in which that happened (``notice``), so the page shows at most one
notification per notebook per absence. See docs/focus-protocol.md, "Agents panel". A row, with
the rule of the person's absences and how it is sent, is :mod:`.rows`; the order rows are
listed, kept and counted in, :mod:`.attention`; what the board remembers of rows that left it,
:mod:`.departed`.

Like the focus hub, nothing here does I/O or knows about HTTP: the clock and the kernel facts
are injected, and every change is announced through ``on_change`` (the server pushes it).
Not thread-safe: the server touches it only from its event loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal

from ..wire import AgentRow, OutsideActivity
from .attention import needs_person
from .departed import Departed
from .rows import MAX_ROW_EVENTS as MAX_ROW_EVENTS
from .rows import AgentWait as AgentWait
from .rows import ChatFacts as ChatFacts
from .rows import OwnRow as OwnRow
from .rows import Row, eviction_order, needs_after, order, replace, set_wait, to_json
from .rows import chat_row_id as chat_row_id
from .rows import cli_row_id as cli_row_id
from .validate import Report

MAX_AGENTS = 64
"""Rows kept; beyond it a seen row goes first (see :func:`.rows.eviction_order`), and a row
left out comes back when it needs the person more than one on the board."""

RowChange = Literal["update", "remove"]
"""What happened to a row, as the board announces it: read it again, or drop it."""
Facts = Callable[[str], tuple[bool | None, str]]
"""A kernel's (aggregate focus, execution state), from the focus hub."""


class AgentBoard:
    """The rows of the agents panel and the rules for who needs the person."""

    def __init__(
        self,
        *,
        facts: Facts,
        on_change: Callable[[str, RowChange, int], None] | None = None,
        max_agents: int = MAX_AGENTS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._facts = facts
        self._on_change = on_change
        self.max_agents = max(1, max_agents)
        self._clock = clock
        self._rows: dict[str, Row] = {}
        self._departed = Departed()
        """Rows that left the board: a row that comes back goes on counting its notices."""
        self.left_out = self._departed.left_out
        """Rows dropped to keep ``max_agents`` whose kernel (or chat) is still there, by id (the
        departed rows' own list, read here by the server: never rebound)."""
        self.outside: dict[str, OutsideActivity] = {}
        """Notebook path → what chats' agents did there while the person was away."""
        self.version = 0
        """One counter for the whole board, +1 on every change (pages detect gaps with it)."""

    # -- inputs ------------------------------------------------------------------------------

    def report(self, kernel_id: str, report: Report) -> None:
        """A kernel's new agent state; a turn that ended while away makes it need the person."""
        row = self._rows.get(kernel_id)
        if row is None:
            row = self._rows[kernel_id] = self._new_row(kernel_id)
        self._apply(row, report)
        self._balance()

    def chat(self, path: str, report: Report, facts: ChatFacts, *, history: bool = False) -> None:
        """A chat's new state (its latest turn as a report, and its persona's facts).

        A tool call waiting for approval while the person looks elsewhere needs them more than
        anything else; a turn that ended while away needs them as a kernel's does. ``history``:
        the chat as it was when the server first read it (opened, or the server started), which
        is no news: it needs nobody.
        """
        row_id = chat_row_id(path)
        row = self._rows.get(row_id)
        if row is None:
            row = self._rows[row_id] = self._new_row(row_id, path=path, kind="chat")
        try:
            before = row.chat
            row.chat = facts
            if history:
                row.report = report
                self._changed(row)
                return
            if facts.approval and (before is None or before.approval != facts.approval):
                focused, _ = self._facts(row_id)
                if focused is not True:
                    row.needs_you = "approval"
                    row.give_notice()
            elif not facts.approval and row.needs_you == "approval":
                row.needs_you = None  # answered (in another tab, or the agent went on)
            self._apply(row, report)
        finally:
            self._balance()

    def rename_chat(self, old_path: str, new_path: str) -> None:
        """A chat's file was renamed: its row moves to its new id, keeping what it says."""
        row = self._rows.pop(chat_row_id(old_path), None)
        if row is None:
            return
        self._announce(row.kernel_id, "remove")
        row.kernel_id, row.path = chat_row_id(new_path), new_path
        self._rows[row.kernel_id] = row
        self._changed(row)

    def _apply(self, row: Row, report: Report) -> None:
        before = row.report
        row.report = report
        ended = (
            report.turn in ("ok", "errored")
            and report.turn_ended is not None
            and report.turn_ended != before.turn_ended
        )
        if ended:
            focused, _ = self._facts(row.kernel_id)
            if focused is not True and row.needs_you == "approval":
                # An approval asks more; the turn's end waits under it (a CLI agent's wait).
                row.needs_under = needs_after(report)
            elif focused is not True:
                row.needs_you = needs_after(report)
                row.give_notice()
        if row.kernel_state == "restarting":
            row.kernel_state = None  # the kernel reports again: it is up
        self._changed(row)

    def wait(self, row_id: str, wait: AgentWait | None, *, own: OwnRow | None = None) -> None:
        """A CLI agent waits for the person's approval on the row ``row_id`` (None: it no
        longer does). Like a chat's approval: it needs the person when it starts while they look
        elsewhere (a notice), and sorts first while it waits; when it ends unseen, the row needs
        what it needed before.

        Without ``own`` the row is a notebook's: a row left out of a full board keeps the wait
        (and comes back for it), a row that is not there is left alone. With ``own`` it is the
        session's own row (kind ``cli``: no notebook row shows the wait), made for it with the
        notebook it names and its folder, and gone when the wait ends."""
        row = self._rows.get(row_id)
        if own is not None:
            if wait is None:
                self.forget(row_id)
                return
            if row is None:
                row = self._rows[row_id] = self._new_row(row_id, kind="cli")
            row.path, row.folder = own.path, own.folder
            row.report = Report(turn_started=wait.at, last_activity=wait.at)
            set_wait(row, wait, self._facts(row_id)[0])
            self._changed(row)
        elif row is not None:
            if set_wait(row, wait, self._facts(row_id)[0]):
                self._changed(row)
        elif (left := self.left_out.get(row_id)) is not None and set_wait(
            left, wait, self._facts(row_id)[0]
        ):
            self.version += 1  # what the left-out rows need changed
        self._balance()

    def set_outside(self, outside: dict[str, OutsideActivity]) -> None:
        """What chats' agents did in notebooks while the person was away from them.

        The rows of those notebooks are announced; a notebook without a row is read by the
        page with the whole board, which the raised version tells it to do.
        """
        if outside == self.outside:
            return
        paths = {*outside, *self.outside}
        changed = {path for path in paths if outside.get(path) != self.outside.get(path)}
        self.outside = dict(outside)
        rows = [r for r in self._rows.values() if r.kind == "notebook" and r.path in changed]
        for row in rows:
            self._changed(row)
        if not rows:
            self.version += 1

    def set_path(self, kernel_id: str, path: str) -> None:
        """The notebook the kernel serves (from the browser or the server's sessions).

        A dead kernel's row of the same notebook has said what it had to: this one replaces it.
        """
        row = self._rows.get(kernel_id)
        if row is not None and path and row.path != path:
            row.path = path
            for other in [r for r in self._rows.values() if r.path == path and r is not row]:
                if other.kernel_state == "dead":
                    self.forget(other.kernel_id)
            self._changed(row)

    def is_dead(self, kernel_id: str) -> bool:
        """Whether the row is of a kernel that died (kept after the server dropped the kernel,
        so the panel can say so)."""
        row = self._rows.get(kernel_id)
        return row is not None and row.kernel_state == "dead"

    def path(self, kernel_id: str) -> str | None:
        row = self._rows.get(kernel_id)
        return None if row is None else row.path

    def focus(self, kernel_id: str, focused: bool | None) -> None:
        """The kernel's aggregate focus changed: looking at it ends the absence; leaving just
        after a turn ended, which the person had not come back to, counts as being away when
        it ended."""
        row = self._rows.get(kernel_id)
        if row is None:
            # A dropped row's absence ends too (and the count of those needing the person).
            if focused is True and self._departed.looked_at(kernel_id):
                self.version += 1
            return
        if row.looked_at() if focused is True else row.left(self._clock()):
            self._changed(row)
            self._balance()  # seen, it may make room for a left-out row that needs the person

    def kernel_event(
        self,
        kernel_id: str,
        kind: str,
        *,
        state: Literal["restarting", "dead"] | None = None,
        **fields: Any,
    ) -> None:
        """Something the server saw: ``restarted`` (``crashed``), ``died``, ``long_cell``.

        ``state`` (``restarting`` or ``dead``) is how the kernel is until :meth:`kernel_up`.
        """
        row = self._rows.get(kernel_id)
        if row is None:
            return
        now = self._clock()
        row.events.append({"type": kind, "at": round(now, 3), **fields})
        if state is not None:
            row.kernel_state = state
        if kind in ("restarted", "died") and row.report.turn == "running":
            # The process that ran the turn is gone; it never reports how the turn ended.
            why = "the kernel died" if kind == "died" else "the kernel restarted"
            row.report = replace(row.report, turn="aborted", turn_ended=now, error=why)
        self._changed(row)

    def kernel_up(self, kernel_id: str) -> None:
        """The server saw the (restarted) kernel answer again."""
        row = self._rows.get(kernel_id)
        if row is not None and row.kernel_state == "restarting":
            row.kernel_state = None
            self._changed(row)

    def forget(self, kernel_id: str) -> None:
        """The kernel was shut down or culled: its row leaves the panel."""
        if self._departed.gone(kernel_id):
            self.version += 1  # "+N more" shrinks
        if self._rows.pop(kernel_id, None) is not None:
            self._announce(kernel_id, "remove")
            self._balance()  # room for a left-out row

    def keep_left_out(self, alive: set[str]) -> None:
        """Only rows whose kernel (or chat) is still there count as left out."""
        if self._departed.keep(alive):
            self.version += 1

    # -- reads -------------------------------------------------------------------------------

    def kernel_ids(self) -> set[str]:
        """The kernel ids of the notebook rows on the board."""
        return {row_id for row_id, row in self._rows.items() if row.kind == "notebook"}

    def __contains__(self, kernel_id: object) -> bool:
        return kernel_id in self._rows

    def __len__(self) -> int:
        return len(self._rows)

    def row(self, kernel_id: str) -> AgentRow | None:
        """One row as the protocol sends it, or None."""
        row = self._rows.get(kernel_id)
        if row is None:
            return None
        return to_json(row, *self._facts(kernel_id), self.outside.get(row.path))

    def rows(self) -> list[AgentRow]:
        """Every row, in the attention order (see :func:`.rows.order`)."""
        rows = (self.row(row_id) for row_id in self._rows)
        return sorted((row for row in rows if row is not None), key=order)

    def needing(self, *, left_out: bool = False) -> int:
        """How many rows (notebooks, chats, CLI agents) need the person now, those left out of
        a full board included: the page's title count (``left_out``: of those left out only)."""
        if left_out:
            return self._departed.needing()
        on_board = sum(1 for row in self._rows.values() if needs_person(row.needs_you))
        return on_board + self._departed.needing()

    # -- internals ---------------------------------------------------------------------------

    def _changed(self, row: Row) -> None:
        row.updated = self._clock()
        self._announce(row.kernel_id, "update")

    def _announce(self, kernel_id: str, action: RowChange) -> None:
        self.version += 1
        if self._on_change is not None:
            self._on_change(kernel_id, action, self.version)

    def _new_row(self, row_id: str, **fields: Any) -> Row:
        """A row for ``row_id``: the one left out of the board, whole, or a new one that goes
        on counting the notices of one that had gone."""
        row = self._departed.take(row_id)
        if row is not None:
            self.version += 1  # "+N more" shrinks
        else:
            row = Row(row_id, self._clock(), **fields)
            row.notice, row.noticed = self._departed.returned(row_id)
        row.looking = self._facts(row_id)[0] is True
        return row

    def _balance(self) -> None:
        """Keep the ``max_agents`` rows that rank highest in the attention order: past the
        bound drop the row that matters least (never one that needs the person while another
        does not, see :func:`.rows.eviction_order`); below it, or when a left-out row ranks
        higher than a row on the board (its notebook was looked at), take the left-out row
        back."""

        def drop(victim: Row) -> None:
            del self._rows[victim.kernel_id]
            self._departed.dropped(victim)
            self._announce(victim.kernel_id, "remove")

        while len(self._rows) > self.max_agents:
            drop(min(self._rows.values(), key=eviction_order))
        while (best := self._departed.first()) is not None:
            if len(self._rows) >= self.max_agents:
                worst = min(self._rows.values(), key=eviction_order)
                if eviction_order(best)[0] <= eviction_order(worst)[0]:
                    return
                drop(worst)
            taken = self._new_row(best.kernel_id)
            self._rows[taken.kernel_id] = taken
            self._changed(taken)
