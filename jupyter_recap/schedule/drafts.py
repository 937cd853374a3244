"""The schedule's bookkeeping of drafts: the one draft out at a time and the recap it put on the
banner.

:class:`~.machine.Schedule` decides *when* to draft; :class:`Drafts` keeps what that leaves
behind and turns it into actions: the draft in flight (its id, how many times it started again),
whether the banner shows and which finished turns its recap covers, the fingerprint and words of
the latest recap shown (so the same recap is not shown twice), and the counters ``%recap
status`` reports. It reads no focus, turn or setting: the schedule checks those first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .actions import (
    OUTSIDE_NOTE,
    Action,
    CancelDraft,
    ClearBanner,
    ShowDrafting,
    ShowRecap,
    StartDraft,
)

MAX_REDRAFTS = 2
"""How many times one draft starts again with a model because a newer turn finished while it
was out; after that it is written offline (at once, from the transcript as it is then), so an
agent that ends turns faster than a model answers still gets a recap of its latest turn."""

MAX_OFFLINE_REDRAFTS = 2
"""Offline redrafts after those: a turn would have to end within each one (they take
milliseconds); past this the draft is dropped rather than shown stale."""


@dataclass
class InFlight:
    """The draft out now, since when (the schedule's clock), and how often it started again."""

    draft: StartDraft
    started: float
    redrafts: int = 0
    """How many times this draft started again (:data:`MAX_REDRAFTS`)."""


@dataclass
class EngineCounters:
    """What ``%recap status`` reports about the schedule."""

    drafts_started: int = 0
    saved_by_dedupe: int = 0
    skipped_no_activity: int = 0
    discarded_stale: int = 0
    cancelled: int = 0
    last_reason: str | None = None
    last_shown_at: float | None = None


class Drafts:
    """The draft in flight and the recap on the banner (see the module docstring)."""

    def __init__(
        self,
        counters: EngineCounters,
        *,
        clock: Callable[[], float],
        fingerprint: Callable[[], str],
        completed_turns: Callable[[], int],
    ) -> None:
        self.counters = counters
        self._clock = clock
        self._fingerprint = fingerprint
        self._completed_turns = completed_turns
        self.in_flight: InFlight | None = None
        self.banner_visible = False
        self.last_fingerprint: str | None = None
        self.last_text: str | None = None
        self.shown_turns: int | None = None
        """The finished turns the recap on the banner covers (None: none shows)."""
        self.last_turns: int | None = None
        """The finished turns the latest recap shown covers, banner cleared or not."""
        self._next_id = 0

    def start(self, reason: str, fingerprint: str, model: str | None, note: str = "") -> StartDraft:
        """A new draft in the in-flight slot, covering the turns finished now."""
        self._next_id += 1
        draft = StartDraft(self._next_id, reason, fingerprint, model, note, self._completed_turns())
        self.in_flight = InFlight(draft, self._clock())
        self.counters.drafts_started += 1
        return draft

    def automatic(self, reason: str) -> list[Action]:
        """An automatic trigger no turn holds up: the one in-flight slot, the activity gate (an
        agent turn has finished) and dedupe (the transcript moved since the latest recap)."""
        if self.in_flight is not None:
            return []
        if self._completed_turns() < 1:
            self.counters.skipped_no_activity += 1
            return []
        fingerprint = self._fingerprint()
        if fingerprint == self.last_fingerprint:
            self.counters.saved_by_dedupe += 1
            return []
        return [self.start(reason, fingerprint, None)]

    def cancel(self) -> list[Action]:
        """Abort the draft in flight, if any."""
        if self.in_flight is None:
            return []
        draft_id = self.in_flight.draft.id
        self.in_flight = None
        self.counters.cancelled += 1
        return [CancelDraft(draft_id)]

    def cancel_and_clear(self) -> list[Action]:
        """Abort the draft in flight and hide the banner."""
        actions = self.cancel()
        if self.banner_visible:
            self.banner_visible = False
            self.shown_turns = None
            actions.append(ClearBanner())
        return actions

    def finished(self, draft_id: int) -> InFlight | None:
        """The draft ``draft_id`` came back: it leaves the slot. None when it is not the one in
        flight (cancelled meanwhile: its answer is stale by definition)."""
        flight = self.in_flight
        if flight is None or flight.draft.id != draft_id:
            return None
        self.in_flight = None
        return flight

    def again(self, flight: InFlight, *, outside: bool) -> list[Action]:
        """Start ``flight``'s draft again from the transcript as it is now (same id: it takes
        over), a model's while :data:`MAX_REDRAFTS` allows, then offline; the banner says
        *drafting…* meanwhile. ``outside``: an outside agent's turn goes on (a ``%recap``
        says so)."""
        draft = flight.draft
        redrafts = flight.redrafts + 1
        if redrafts > MAX_REDRAFTS + MAX_OFFLINE_REDRAFTS:
            return []
        model = draft.model if redrafts <= MAX_REDRAFTS else "offline"
        note = draft.note
        if draft.manual:  # the outside turn it mentioned may have ended meanwhile
            note = OUTSIDE_NOTE if outside else ""
        again = StartDraft(
            draft.id,
            draft.reason,
            self._fingerprint(),
            model,
            note,
            self._completed_turns(),
            again=True,
        )
        self.in_flight = InFlight(again, self._clock(), redrafts)
        self.counters.drafts_started += 1
        if draft.manual:
            return [again]  # its banner says drafting… since it started
        self.banner_visible = True
        self.shown_turns = None
        self.last_text = None
        return [ShowDrafting(draft.reason), again]

    def show(
        self, draft: StartDraft, text: str, model: str, note: str, notice: str
    ) -> list[Action]:
        """Show the recap ``draft`` wrote, unless the same words are still on screen."""
        if not draft.manual and text == self.last_text and self.banner_visible:
            # The same words are still on screen: nothing to show. Once the person cleared
            # them (ran a cell, a new turn began, the x), new work earns a banner again even
            # when its recap reads the same (the offline engine often does): a return after
            # new work that shows nothing looks like the recap stopped working.
            self.last_fingerprint = draft.fingerprint
            return []
        self.last_fingerprint = draft.fingerprint
        self.last_text = text
        self.banner_visible = True
        self.shown_turns = self.last_turns = draft.turns
        self.counters.last_reason = draft.reason
        self.counters.last_shown_at = self._clock()
        return [ShowRecap(draft.id, text, model, draft.reason, note, notice, draft.turns)]

    def outdated(self) -> bool:
        """Whether the banner shows a recap of an earlier turn than the latest finished one."""
        return self.banner_visible and self.shown_turns != self._completed_turns()

    def replace_outdated(self, reason: str, *, post_turn_armed: bool) -> list[Action]:
        """The banner shows a recap of an earlier turn: *drafting…* when a recap of the latest
        one is coming (a draft is out, or the post-turn timer is armed), else the offline recap
        of it, written now (no model call)."""
        self.last_text = None  # those words leave the screen
        if self.in_flight is not None or post_turn_armed:
            self.shown_turns = None
            return [ShowDrafting(reason)]
        if self._completed_turns() < 1:
            return self.cancel_and_clear()
        return [self.start(reason, self._fingerprint(), "offline")]
