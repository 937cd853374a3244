"""The agents board: one row per kernel with jupyter_recap loaded, for the agents panel.

Kernels report their agent state (turn, recap, tasks, where the work stopped), which the server
reads with :func:`~.validate.parse_report`; it adds what only it sees (which notebook, whether the
person looks at it, restarts, deaths and long cells). The board decides who *needs the person*:
a turn that ended while nobody looked at its notebook, until someone does. It also numbers the
absences in which that happened (``notice``), so the page shows at most one notification per
notebook per absence. See docs/focus-protocol.md, "Agents panel".

Like the focus hub, nothing here does I/O or knows about HTTP: the clock and the kernel facts
are injected, and every change is announced through ``on_change`` (the server pushes it).
Not thread-safe: the server touches it only from its event loop.
"""

from __future__ import annotations

import posixpath
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..wire import CHAT_ROW_PREFIX, AgentRow, NeedsYou, OutsideActivity, RowKind, RowState
from .validate import Report

MAX_AGENTS = 64
"""Rows kept; beyond it an idle row goes first (see :func:`_eviction_order`)."""
MAX_REMEMBERED = 4096
"""Rows whose notices (and whose leaving out) the board remembers after they left it."""

MAX_ROW_EVENTS = 10
"""Server events (restarts, deaths, long cells) kept per row."""
JUST_ENDED_SECONDS = 3.0
"""A turn that ended this long or less before the person left, and that they had not come
back to, counts as ending while away: the page's "away" and the kernel's "turn ended" race
over separate connections, and on a busy machine the end can arrive first."""

RowChange = Literal["update", "remove"]
"""What happened to a row, as the board announces it: read it again, or drop it."""
Facts = Callable[[str], tuple[bool | None, str]]
"""A kernel's (aggregate focus, execution state), from the focus hub."""


@dataclass(frozen=True, slots=True)
class ChatFacts:
    """What a chat row shows beside its report: the persona, its model, what waits."""

    agent: str
    model: str | None = None
    approval: str | None = None
    """The tool call waiting for the person's approval (plain, redacted, one line)."""


def chat_row_id(path: str) -> str:
    """The row id of the chat at ``path``."""
    return CHAT_ROW_PREFIX + path


@dataclass(slots=True)
class _Row:
    kernel_id: str
    """The row's id: a kernel id, or :func:`chat_row_id` of a chat."""
    updated: float
    report: Report = field(default_factory=Report)
    path: str = ""
    kind: RowKind = "notebook"
    chat: ChatFacts | None = None
    needs_you: NeedsYou | None = None
    notice: int = 0
    noticed: bool = False
    """A notice was given in the current absence (reset when the person looks)."""
    looking: bool = False
    """The person looks at the notebook (the last focus the board heard)."""
    seen_end: float | None = None
    """The end of the turn the person last came back to (they saw how it ended)."""
    kernel_state: Literal["restarting", "dead"] | None = None
    """``restarting`` or ``dead`` while the server sees the kernel so, else None."""
    events: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=MAX_ROW_EVENTS))


def _needs_after(report: Report) -> NeedsYou | None:
    """What an ended turn asks of a person who did not see it end: ``finished`` or
    ``errored`` (None for an aborted turn, or one still running)."""
    if report.turn_ended is None:
        return None
    return "finished" if report.turn == "ok" else "errored" if report.turn == "errored" else None


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
        self._rows: dict[str, _Row] = {}
        self._notices: OrderedDict[str, tuple[int, bool]] = OrderedDict()
        """Row id → (notice, noticed) of rows that left the board: a row that comes back goes
        on counting, so the page, which remembers the notices it gave, notifies it again."""
        self.left_out: OrderedDict[str, None] = OrderedDict()
        """Rows dropped to keep ``max_agents`` whose kernel (or chat) is still there."""
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
        self._evict()

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
            self._chat(row, report, facts, history=history)
        finally:
            self._evict()

    def _chat(self, row: _Row, report: Report, facts: ChatFacts, *, history: bool) -> None:
        row_id = row.kernel_id
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
                self._notice(row)
        elif not facts.approval and row.needs_you == "approval":
            row.needs_you = None  # answered (in another tab, or the agent went on)
        self._apply(row, report)

    def rename_chat(self, old_path: str, new_path: str) -> None:
        """A chat's file was renamed: its row moves to its new id, keeping what it says."""
        row = self._rows.pop(chat_row_id(old_path), None)
        if row is None:
            return
        self._announce(row.kernel_id, "remove")
        row.kernel_id, row.path = chat_row_id(new_path), new_path
        self._rows[row.kernel_id] = row
        self._changed(row)

    def _apply(self, row: _Row, report: Report) -> None:
        before = row.report
        row.report = report
        ended = (
            report.turn in ("ok", "errored")
            and report.turn_ended is not None
            and report.turn_ended != before.turn_ended
        )
        if ended and row.needs_you != "approval":
            focused, _ = self._facts(row.kernel_id)
            if focused is not True:
                row.needs_you = _needs_after(report)
                self._notice(row)
        if row.kernel_state == "restarting":
            row.kernel_state = None  # the kernel reports again: it is up
        self._changed(row)

    def _notice(self, row: _Row) -> None:
        """One notice per absence (the page notifies once per notice)."""
        if not row.noticed:
            row.notice += 1
            row.noticed = True

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
        if focused is not True:
            if row is not None and row.looking:
                row.looking = False
                report, needs = row.report, _needs_after(row.report)
                if (
                    row.needs_you is None
                    and needs is not None
                    and report.turn_ended != row.seen_end
                    and self._clock() - (report.turn_ended or 0.0) <= JUST_ENDED_SECONDS
                ):
                    row.needs_you = needs
                    self._notice(row)
                    self._changed(row)
            return
        if row is None:
            if kernel_id in self._notices:  # a dropped row's absence ends too
                self._notices[kernel_id] = (self._notices[kernel_id][0], False)
            return
        if not row.looking:
            row.looking, row.seen_end = True, row.report.turn_ended
        row.noticed = False
        if row.needs_you is not None:
            row.needs_you = None
            self._changed(row)

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
            row.report = _replace(row.report, turn="aborted", turn_ended=now, error=why)
        self._changed(row)

    def kernel_up(self, kernel_id: str) -> None:
        """The server saw the (restarted) kernel answer again."""
        row = self._rows.get(kernel_id)
        if row is not None and row.kernel_state == "restarting":
            row.kernel_state = None
            self._changed(row)

    def forget(self, kernel_id: str) -> None:
        """The kernel was shut down or culled: its row leaves the panel."""
        self._notices.pop(kernel_id, None)
        if self.left_out.pop(kernel_id, None) is not None:
            self.version += 1  # "+N more" shrinks
        if self._rows.pop(kernel_id, None) is not None:
            self._announce(kernel_id, "remove")

    def keep_left_out(self, alive: set[str]) -> None:
        """Only rows whose kernel (or chat) is still there count as left out."""
        gone = [row_id for row_id in self.left_out if row_id not in alive]
        for row_id in gone:
            del self.left_out[row_id]
        if gone:
            self.version += 1

    # -- reads -------------------------------------------------------------------------------

    def kernel_ids(self) -> set[str]:
        return set(self._rows)

    def __contains__(self, kernel_id: object) -> bool:
        return kernel_id in self._rows

    def __len__(self) -> int:
        return len(self._rows)

    def row(self, kernel_id: str) -> AgentRow | None:
        """One row as the protocol sends it, or None."""
        row = self._rows.get(kernel_id)
        return None if row is None else self._to_json(row)

    def rows(self) -> list[AgentRow]:
        """Every row, those needing the person first (see :func:`_order`)."""
        return sorted((self._to_json(row) for row in self._rows.values()), key=_order)

    def needing(self) -> int:
        """How many notebooks need the person now."""
        return sum(1 for row in self._rows.values() if row.needs_you is not None)

    # -- internals ---------------------------------------------------------------------------

    def _to_json(self, row: _Row) -> AgentRow:
        focused, execution = self._facts(row.kernel_id)
        report = row.report
        chat = row.chat
        return {
            "id": row.kernel_id,
            "kind": row.kind,
            "kernel_id": row.kernel_id if row.kind == "notebook" else None,
            "path": row.path,
            "name": posixpath.basename(row.path) if row.path else "",
            "state": _state(row),
            "needs_you": row.needs_you,
            "agent": chat.agent if chat is not None else None,
            "model": chat.model if chat is not None else None,
            "approval": chat.approval if chat is not None else None,
            "outside": self.outside.get(row.path) if row.kind == "notebook" else None,
            "notice": row.notice,
            "turn": report.turn,
            "turn_started": report.turn_started,
            "turn_ended": report.turn_ended,
            "error": report.error,
            "last_activity": report.last_activity,
            "recap": report.recap,
            "drafting": report.drafting,
            "progress": report.progress,
            "stop_cell": report.stop_cell,
            "focused": focused,
            "execution_state": row.kernel_state or execution,
            "events": list(row.events),
            "updated": round(row.updated, 3),
        }

    def _changed(self, row: _Row) -> None:
        row.updated = self._clock()
        self._announce(row.kernel_id, "update")

    def _announce(self, kernel_id: str, action: RowChange) -> None:
        self.version += 1
        if self._on_change is not None:
            self._on_change(kernel_id, action, self.version)

    def _new_row(self, row_id: str, **fields: Any) -> _Row:
        row = _Row(row_id, self._clock(), **fields)
        row.notice, row.noticed = self._notices.pop(row_id, (0, False))
        row.looking = self._facts(row_id)[0] is True
        if self.left_out.pop(row_id, None) is not None:
            self.version += 1
        return row

    def _evict(self) -> None:
        """Past ``max_agents``, drop the row that matters least: never one that needs the
        person while another does not (see :func:`_eviction_order`)."""
        while len(self._rows) > self.max_agents:
            victim = min(self._rows.values(), key=_eviction_order)
            del self._rows[victim.kernel_id]
            self._notices[victim.kernel_id] = (victim.notice, victim.noticed)
            self.left_out[victim.kernel_id] = None
            for remembered in (self._notices, self.left_out):
                while len(remembered) > MAX_REMEMBERED:
                    remembered.popitem(last=False)
            self._announce(victim.kernel_id, "remove")


def _eviction_order(row: _Row) -> tuple[int, float]:
    """Which row goes first when the board is full: idle rows, then rows at work, then those
    that need the person (waiting for approval last); the least recently updated of a kind."""
    state = _state(row)
    if row.needs_you is not None or state == "waiting":
        rank = 3 if state == "waiting" else 2
    elif state in ("running", "restarting"):
        rank = 1
    else:
        rank = 0
    return rank, row.updated


def _state(row: _Row) -> RowState:
    if row.kernel_state is not None:
        return row.kernel_state
    if row.chat is not None and row.chat.approval:
        return "waiting"
    if row.report.turn == "running":
        return "running"
    if row.needs_you in ("finished", "errored"):
        return "finished" if row.needs_you == "finished" else "errored"
    return "errored" if row.report.turn == "errored" else "idle"


def _order(row: AgentRow) -> tuple[int, float]:
    """Waiting for the person's approval, then needing them (latest turn end first), then
    running turns, then by activity."""
    if row["state"] == "waiting":
        return -1, -(row["last_activity"] or row["updated"])
    if row["needs_you"] is not None:
        return 0, -(row["turn_ended"] or 0.0)
    latest = row["last_activity"] or row["updated"]
    return (1 if row["state"] == "running" else 2), -latest


def _replace(report: Report, **changes: Any) -> Report:
    values = {name: getattr(report, name) for name in Report.__dataclass_fields__}
    values.update(changes)
    return Report(**values)
