"""One row of the agents board: what it holds, the person's absences from it, and how it reads.

A row is a kernel's (or a chat's) latest report with what only the server sees, or a CLI
agent's session waiting for approval that no notebook row can show. The row keeps the rule of
the person's absences: looking at its notebook ends one, and leaving just after a turn ended,
unseen, counts as having been away when it ended; it gives at most one notice per absence. The
board (:mod:`.board`) decides when a row needs the person and which rows it keeps; this module
is what it decides over, and :mod:`.attention` the order it lists them in. Pure, like the
board.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from ..wire import (
    CHAT_ROW_PREFIX,
    CLI_ROW_PREFIX,
    AgentRow,
    NeedsYou,
    OutsideActivity,
    RowKind,
    RowState,
)
from . import attention
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


@dataclass(frozen=True, slots=True)
class AgentWait:
    """A CLI agent (told by its hooks) waiting for the person to approve a tool call."""

    agent: str
    """Who waits: ``Claude Code``, ``Codex``."""
    approval: str
    """The row's line of it: the call and where to answer (``Bash rm -rf build/ (Claude Code,
    answer in its terminal)``); plain, redacted, one line."""
    at: float
    """When it started waiting (the hook's time)."""


class OwnRow(NamedTuple):
    """Where a CLI agent's own row (kind ``cli``) points: the notebook its waiting call names,
    relative to the server's root ("" for none), and the agent's working folder."""

    path: str
    folder: str | None


def chat_row_id(path: str) -> str:
    """The row id of the chat at ``path``."""
    return CHAT_ROW_PREFIX + path


def cli_row_id(agent: str, session: str) -> str:
    """The row id of a CLI agent's session: a digest, so that a session id or a folder (what
    a session is named by when its agent sends no id) never has to travel in a URL."""
    digest = hashlib.sha256(f"{agent}\x00{session}".encode("utf-8", "replace")).hexdigest()
    return CLI_ROW_PREFIX + digest[:24]


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
    wait: AgentWait | None = None
    """A CLI agent waiting for approval on this row (a notebook's, or a ``cli`` row's own)."""
    folder: str | None = None
    """A ``cli`` row's: the agent's working folder."""
    needs_you: NeedsYou | None = None
    needs_under: NeedsYou | None = None
    """What the row needed before a CLI agent's approval took its place (it needs that again
    when the wait ends unseen)."""
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
        self.needs_under = None
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


def set_wait(row: Row, wait: AgentWait | None, focused: bool | None) -> bool:
    """Set the row's CLI wait (``focused``: whether the person looks at the row's notebook);
    True when it changed. A new wait while they look elsewhere needs them (a notice), over what
    the row needed before; a wait that ends gives the row back what it needed under it."""
    before = row.wait
    if wait == before:
        return False
    row.wait = wait
    if wait is not None and (before is None or before.approval != wait.approval):
        if focused is not True:
            if row.needs_you != "approval":
                row.needs_under = row.needs_you
            row.needs_you = "approval"
            row.give_notice()
    elif wait is None and row.needs_you == "approval" and row.chat is None:
        row.needs_you, row.needs_under = row.needs_under, None
    return True


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
    chat, wait = row.chat, row.wait
    now = state(row)
    agent = chat.agent if chat is not None else None
    approval = chat.approval if chat is not None else None
    if wait is not None and not approval:
        approval = wait.approval
        agent = wait.agent if row.kind == "cli" else agent
    return {
        "id": row.kernel_id,
        "kind": row.kind,
        "kernel_id": row.kernel_id if row.kind == "notebook" else None,
        "path": row.path,
        "name": name(row),
        "state": now,
        "needs_you": row.needs_you,
        "agent": agent,
        "model": chat.model if chat is not None else None,
        "approval": approval,
        "outside": outside if row.kind == "notebook" else None,
        "folder": row.folder if row.kind == "cli" else None,
        "attention": attention.place(now, row.needs_you, attention_at(row, now)),
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


def name(row: Row) -> str:
    """What the row is called: its notebook's (or chat's) file name; a ``cli`` row without a
    notebook, its agent's folder."""
    if row.path:
        return posixpath.basename(row.path)
    if row.folder:
        return posixpath.basename(row.folder.rstrip("/\\")) or row.folder
    return ""


def state(row: Row) -> RowState:
    if row.kernel_state is not None:
        return row.kernel_state
    if (row.chat is not None and row.chat.approval) or row.wait is not None:
        return "waiting"
    if row.report.turn == "running":
        return "running"
    if row.needs_you in ("finished", "errored"):
        return "finished" if row.needs_you == "finished" else "errored"
    return "errored" if row.report.turn == "errored" else "idle"


def attention_at(row: Row, now: RowState) -> float:
    """The time a row sorts by within its place of the attention order (latest first): when a
    CLI agent started waiting, when the unseen turn ended, else the latest activity."""
    report = row.report
    latest = report.last_activity or row.updated
    rank = attention.rank(now, row.needs_you)
    if rank == attention.APPROVAL:
        return row.wait.at if row.wait is not None and not row.chat else latest
    if rank in (attention.ERRORED, attention.FINISHED):
        return report.turn_ended or 0.0
    return latest


def order(row: AgentRow) -> tuple[int, float]:
    """The list's order: the row's place in the attention order (:mod:`.attention`)."""
    return attention.sort_key(row["attention"])


def eviction_order(row: Row) -> tuple[int, float]:
    """Which row goes first when the board is full: the reverse of the attention order (a seen
    row first, one waiting for approval last); the least recently updated of a place."""
    return attention.keep_rank(state(row), row.needs_you), row.updated


def replace(report: Report, **changes: Any) -> Report:
    values = {name: getattr(report, name) for name in Report.__dataclass_fields__}
    values.update(changes)
    return Report(**values)
