"""The attention order: which row of the agents panel asks for the person first.

One rule for every row, a kernel's, a chat's or a CLI agent's: waiting for the person's
approval, then errored while they were away, then finished while they were away, then running,
then the rest (seen: nothing asked of them). The board sorts its rows by it, keeps the rows
that rank highest when it is full, and counts the rows that need the person (the page's title
count) by the same reading of ``needs_you``; each row carries its place (``attention``), so the
page sorts a row it read alone exactly as the server would (docs/focus-protocol.md).

Pure: it reads a row's state and why it needs the person, nothing else.
"""

from __future__ import annotations

from typing import Final

from ..wire import Attention, NeedsYou, RowState

APPROVAL: Final = 0
ERRORED: Final = 1
FINISHED: Final = 2
RUNNING: Final = 3
SEEN: Final = 4
NAMES: Final = ("approval", "errored", "finished", "running", "seen")
"""The places, first to last (``NAMES[rank]``)."""


def rank(state: RowState, needs_you: NeedsYou | None) -> int:
    """The row's place: 0 waiting for approval … 4 seen (see the module's rule).

    A row waits for approval when a tool call waits (``state`` ``waiting``), whether or not the
    person has looked since: the agent stays blocked until they answer. ``needs_you`` says what
    a turn that ended while they were away asks of them; a row they saw ranks by what runs.
    """
    if needs_you == "approval" or state == "waiting":
        return APPROVAL
    if needs_you == "errored":
        return ERRORED
    if needs_you == "finished":
        return FINISHED
    if state in ("running", "restarting"):
        return RUNNING
    return SEEN


def needs_person(needs_you: NeedsYou | None) -> bool:
    """Whether a row counts in the title's "(N)" and gets a notice: it asks something of the
    person that they have not seen (an approval, or a turn that ended while they were away)."""
    return needs_you is not None


def place(state: RowState, needs_you: NeedsYou | None, at: float) -> Attention:
    """The row's ``attention`` as the protocol sends it: its rank and the time it sorts by
    within it (newest first)."""
    return {"rank": rank(state, needs_you), "at": round(at, 3)}


def sort_key(attention: Attention) -> tuple[int, float]:
    """Sort key of a row's ``attention``: lower rank first, then the latest ``at`` first."""
    return attention["rank"], -attention["at"]


def keep_rank(state: RowState, needs_you: NeedsYou | None) -> int:
    """How much a full board wants to keep the row: the reverse of :func:`rank` (a seen row
    goes first, one waiting for approval last)."""
    return SEEN - rank(state, needs_you)
