"""One row of the agents board: what it holds, the person's absences from it, and how it reads.

A row is a kernel's (or a chat's) latest report with what only the server sees. The row keeps
the rule of the person's absences: looking at its notebook ends one, and leaving just after a
turn ended, unseen, counts as having been away when it ended; it gives at most one notice per
absence. The board (:mod:`.board`) decides when a row needs the person and which rows it keeps;
this module is what it decides over. Pure, like the board.
"""

from __future__ import annotations

import posixpath
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

from ..wire import CHAT_ROW_PREFIX, AgentRow, NeedsYou, OutsideActivity, RowKind, RowState
from .validate import Report

MAX_ROW_EVENTS = 10
"""Server events (restarts, deaths, long cells) kept per row."""
JUST_ENDED_SECONDS = 3.0
"""A turn that ended this long or less before the person left, and that they had not come
back to, counts as ending while away: the page's "away" and the kernel's "turn ended" race
over separate connections, and on a busy machine the end can arrive first."""


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
class Row:
    """A row of the agents panel as the board keeps it (:func:`to_json` is how it is sent)."""

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

    def give_notice(self) -> None:
        """One notice per absence (the page notifies once per notice)."""
        if not self.noticed:
            self.notice += 1
            self.noticed = True

    def looked_at(self) -> bool:
        """The person looks at the notebook: the absence ends, and with it what the row asked
        of them. True when the row changed (it needed them)."""
        if not self.looking:
            self.looking, self.seen_end = True, self.report.turn_ended
        self.noticed = False
        if self.needs_you is None:
            return False
        self.needs_you = None
        return True

    def left(self, now: float) -> bool:
        """The person stopped looking at ``now``: a turn that ended just before, which they had
        not come back to, ended while they were away. True when the row changed (it needs them)."""
        if not self.looking:
            return False
        self.looking = False
        report, needs = self.report, needs_after(self.report)
        if (
            self.needs_you is None
            and needs is not None
            and report.turn_ended != self.seen_end
            and now - (report.turn_ended or 0.0) <= JUST_ENDED_SECONDS
        ):
            self.needs_you = needs
            self.give_notice()
            return True
        return False


def needs_after(report: Report) -> NeedsYou | None:
    """What an ended turn asks of a person who did not see it end: ``finished`` or
    ``errored`` (None for an aborted turn, or one still running)."""
    if report.turn_ended is None:
        return None
    return "finished" if report.turn == "ok" else "errored" if report.turn == "errored" else None


def to_json(
    row: Row, focused: bool | None, execution: str, outside: OutsideActivity | None
) -> AgentRow:
    """The row as the protocol sends it, with the kernel's facts from the focus hub and what
    chats' agents did in its notebook while the person was away."""
    report = row.report
    chat = row.chat
    return {
        "id": row.kernel_id,
        "kind": row.kind,
        "kernel_id": row.kernel_id if row.kind == "notebook" else None,
        "path": row.path,
        "name": posixpath.basename(row.path) if row.path else "",
        "state": state(row),
        "needs_you": row.needs_you,
        "agent": chat.agent if chat is not None else None,
        "model": chat.model if chat is not None else None,
        "approval": chat.approval if chat is not None else None,
        "outside": outside if row.kind == "notebook" else None,
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


def state(row: Row) -> RowState:
    if row.kernel_state is not None:
        return row.kernel_state
    if row.chat is not None and row.chat.approval:
        return "waiting"
    if row.report.turn == "running":
        return "running"
    if row.needs_you in ("finished", "errored"):
        return "finished" if row.needs_you == "finished" else "errored"
    return "errored" if row.report.turn == "errored" else "idle"


def order(row: AgentRow) -> tuple[int, float]:
    """Waiting for the person's approval, then needing them (latest turn end first), then
    running turns, then by activity."""
    if row["state"] == "waiting":
        return -1, -(row["last_activity"] or row["updated"])
    if row["needs_you"] is not None:
        return 0, -(row["turn_ended"] or 0.0)
    latest = row["last_activity"] or row["updated"]
    return (1 if row["state"] == "running" else 2), -latest


def eviction_order(row: Row) -> tuple[int, float]:
    """Which row goes first when the board is full: idle rows, then rows at work, then those
    that need the person (waiting for approval last); the least recently updated of a kind."""
    now = state(row)
    if row.needs_you is not None or now == "waiting":
        rank = 3 if now == "waiting" else 2
    elif now in ("running", "restarting"):
        rank = 1
    else:
        rank = 0
    return rank, row.updated


def replace(report: Report, **changes: Any) -> Report:
    values = {name: getattr(report, name) for name in Report.__dataclass_fields__}
    values.update(changes)
    return Report(**values)
