"""What the schedule tells its driver to do: each input of :class:`~.machine.Schedule` returns a
list of these actions, carried out by the caller (the kernel's trigger runner, the server's chat
source): start or cancel a draft, show a recap, say *drafting…*, clear the banner, refuse a
``%recap`` with one line."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class StartDraft:
    """Draft a recap now (off the main thread) and report back with
    :meth:`~.machine.Schedule.draft_done`."""

    id: int
    reason: str
    """away, post_turn, idle, resume or manual."""
    fingerprint: str
    model: str | None = None
    """A one-off model for a manual request (``%recap --model``)."""
    note: str = ""
    """What a manual recap must say along with its text (:data:`OUTSIDE_NOTE`)."""
    # Bookkeeping of what it covers, left out of comparisons: two drafts are the same action
    # when their id, trigger, fingerprint, model and note are.
    turns: int = field(default=0, compare=False)
    """The agent turns that had finished when it started: it covers the latest of them."""
    again: bool = field(default=False, compare=False)
    """It takes over the in-flight draft of the same ``id``, whose answer covered an older
    turn than the latest finished one: whoever waited for that draft (a ``%recap`` cell, the
    banner's *drafting…*) waits for this one instead."""

    @property
    def manual(self) -> bool:
        return self.reason == "manual"


@dataclass(frozen=True)
class CancelDraft:
    """Abort the in-flight draft ``id`` (its HTTP request included)."""

    id: int


@dataclass(frozen=True)
class ShowRecap:
    """Show ``text`` by ``model`` in the banner (``note``: why it was written offline,
    ``notice``: an announcement to show the first time)."""

    id: int
    text: str
    model: str
    reason: str
    note: str = ""
    notice: str = ""
    turns: int = field(default=0, compare=False)
    """The agent turns that had finished when it was drafted (see :attr:`StartDraft.turns`)."""


@dataclass(frozen=True)
class ShowDrafting:
    """The banner says *drafting…*: what it showed, or was about to show, covers an older turn
    than the latest finished one, and a recap of that turn is on its way."""

    reason: str


@dataclass(frozen=True)
class ClearBanner:
    """Hide the banner."""


@dataclass(frozen=True)
class Refuse:
    """A manual request that cannot run now, with the one line to tell the person."""

    message: str


Action = StartDraft | CancelDraft | ShowRecap | ShowDrafting | ClearBanner | Refuse

OUTSIDE_NOTE = "a CLI agent's turn on this notebook has no stop yet"
"""Said with a ``%recap`` written while an outside agent's turn goes on."""
