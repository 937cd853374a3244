"""When to draft a recap: a pure state machine driven by focus, turns, input and a clock.

Nothing here sleeps, starts threads or does I/O. Every input is a method that returns the actions
the caller must carry out (start or cancel a draft, show or clear the banner, refuse a manual
request); timers are deadlines the caller waits for (:meth:`Schedule.next_deadline`) before calling
:meth:`Schedule.tick`. The clock, the transcript fingerprint and the count of completed turns are
injected, so the whole behaviour can be replayed with a fake clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

# -- actions ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class StartDraft:
    """Draft a recap now (off the main thread) and report back with :meth:`Schedule.draft_done`."""

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

OUTSIDE_HOLD_SECONDS = 900.0
"""The longest an outside agent's turn holds automatic recaps without its end being heard. The
server ends a silent turn much sooner (``RecapServer.hook_silence_seconds``); this is the
backstop for an end the kernel never heard (its feed was reconnecting when it was sent)."""


MAX_REDRAFTS = 2
"""How many times one draft starts again with a model because a newer turn finished while it
was out; after that it is written offline (at once, from the transcript as it is then), so an
agent that ends turns faster than a model answers still gets a recap of its latest turn."""

MAX_OFFLINE_REDRAFTS = 2
"""Offline redrafts after those: a turn would have to end within each one (they take
milliseconds); past this the draft is dropped rather than shown stale."""


class TriggerSettings(Protocol):
    """The settings the schedule reads (the ``Recap`` traits satisfy this)."""

    auto: bool
    away_seconds: float
    post_turn_seconds: float
    idle_seconds: float
    during_active: bool


@dataclass
class _InFlight:
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


class Schedule:
    """Decides when to draft; see the module docstring for how it is driven."""

    def __init__(
        self,
        settings: TriggerSettings,
        *,
        clock: Callable[[], float],
        fingerprint: Callable[[], str],
        completed_turns: Callable[[], int],
    ) -> None:
        self.settings = settings
        self._clock = clock
        self._fingerprint = fingerprint
        self._completed_turns = completed_turns
        self.focused: bool | None = None
        """None until the first focus report: focus is then unproven for this kernel."""
        self.focus_changed_at: float | None = None
        self.turn_running = False
        """An agent turn of the kernel's own runs (an agent cell, a captured run)."""
        self.outside_running = False
        """An agent working from outside the kernel (a CLI agent, told by its hooks through the
        server) began a turn on this notebook whose end was not heard yet. It holds automatic
        recaps like a turn of the kernel's own (a draft would land mid-turn), but never
        ``%recap``: nothing in this kernel waits for it, and the server ends it in the record
        when the agent goes silent (Claude Code sends no stop when interrupted)."""
        self.outside_started_at = 0.0
        """When that turn began (the schedule's clock); see :data:`OUTSIDE_HOLD_SECONDS`."""
        self.pending = False
        """The away timer fired during a turn; draft when it ends, if still away."""
        self.away_deadline: float | None = None
        self.post_turn_deadline: float | None = None
        self.idle_deadline: float | None = None
        self.in_flight: _InFlight | None = None
        self.banner_visible = False
        self.last_fingerprint: str | None = None
        self.last_text: str | None = None
        self.shown_turns: int | None = None
        """The finished turns the recap on the banner covers (None: none shows)."""
        self.last_turns: int | None = None
        """The finished turns the latest recap shown covers, banner cleared or not."""
        self.counters = EngineCounters()
        self._next_id = 0

    # -- inputs ----------------------------------------------------------------------------

    @property
    def focus_supported(self) -> bool:
        """True once any focus report arrived; it disarms the idle fallback for good."""
        return self.focused is not None

    def focus(self, focused: bool, at: float | None = None) -> list[Action]:
        """The person's focus on this notebook changed (``at`` in the schedule's clock)."""
        now = self._clock() if at is None else at
        if focused == self.focused:
            return []
        self.focused = focused
        self.focus_changed_at = now
        self.idle_deadline = None
        if focused:
            # Back: stop waiting, but let an in-flight draft land — that is when it helps.
            self.away_deadline = self.post_turn_deadline = None
            self.pending = False
            return []
        if self.settings.auto:
            self.away_deadline = now + float(self.settings.away_seconds)
        return []

    def turn_started(self) -> list[Action]:
        """An agent turn began (an agent cell, or an agent through the API)."""
        self.turn_running = True
        self.post_turn_deadline = None
        self.idle_deadline = None
        return self._cancel_and_clear()

    def turn_ended(self, outcome: str = "ok") -> list[Action]:
        """An agent turn ended, whatever its ``outcome`` (ok, errored, aborted)."""
        self.turn_running = False
        return self._turn_over()

    def outside_turn_started(self) -> list[Action]:
        """An agent working from outside the kernel began a turn here (see
        :attr:`outside_running`): automatic drafts wait; a ``%recap`` in flight goes on."""
        self.outside_running = True
        self.outside_started_at = self._clock()
        self.post_turn_deadline = None
        self.idle_deadline = None
        if self.in_flight is not None and self.in_flight.draft.manual:
            return []  # the person asked for it: it answers, whatever else goes on
        return self._cancel_and_clear()

    def outside_turn_ended(self, outcome: str = "ok") -> list[Action]:
        """An outside agent's turn ended (its stop, or its silence, told by the server)."""
        self.outside_running = False
        return self._turn_over()

    @property
    def holding(self) -> bool:
        """Whether automatic drafts wait: a turn runs, the kernel's own or an outside one."""
        if self.outside_running and (
            self._clock() - self.outside_started_at > OUTSIDE_HOLD_SECONDS
        ):
            self.outside_running = False  # its end was never heard: stop waiting for it
        return self.turn_running or self.outside_running

    def _turn_over(self) -> list[Action]:
        """A turn ended: once none runs, arm what applies after a turn; a banner still showing
        the recap of an earlier turn must not stay up as if it covered this one."""
        if self.holding:
            return []
        stale = self.banner_visible and self.shown_turns != self._completed_turns()
        if not self.settings.auto:
            return self._cancel_and_clear() if stale else []
        now = self._clock()
        actions: list[Action] = []
        pending, self.pending = self.pending, False
        if pending and self._away():
            actions = self._try_draft("away")
        elif self._away():
            self.post_turn_deadline = now + float(self.settings.post_turn_seconds)
        elif not self.focus_supported:
            self.idle_deadline = now + float(self.settings.idle_seconds)
        if stale:
            # (Only a turn its banner outlived: a recap shown while an outside agent worked.)
            actions += self._replace_stale_banner("post_turn")
        return actions

    def _replace_stale_banner(self, reason: str) -> list[Action]:
        """The banner shows a recap of an earlier turn: *drafting…* when a recap of the latest
        one is coming, else the offline recap of it, written now (no model call)."""
        self.last_text = None  # those words leave the screen
        if self.in_flight is not None or self.post_turn_deadline is not None:
            self.shown_turns = None
            return [ShowDrafting(reason)]
        if self._completed_turns() < 1:
            return self._cancel_and_clear()
        return [self._start(reason, self._fingerprint(), "offline")]

    def user_input(self) -> list[Action]:
        """The person did something in the notebook (ran a cell; later: typed)."""
        self.post_turn_deadline = None
        self.idle_deadline = None
        return self._cancel_and_clear()

    def cell_ended(self) -> list[Action]:
        """An ordinary cell finished: the idle fallback counts from here after a turn."""
        # Cheap checks first: this runs after every ordinary cell.
        if (
            self.focused is None
            and not self.holding
            and self.settings.auto
            and self._completed_turns() > 0
        ):
            self.idle_deadline = self._clock() + float(self.settings.idle_seconds)
        return []

    def resume(self) -> list[Action]:
        """The extension loaded on a notebook whose previous session has turns."""
        if not self.settings.auto:
            return []
        return self._try_draft("resume")

    def manual(self, model: str | None = None) -> list[Action]:
        """``%recap``: draft now, bypassing the activity gate and dedupe.

        Refused only while a turn of the kernel's own runs (its cell holds the shell anyway,
        and the recap would be stale the moment it lands); an outside agent's turn never
        holds it up, and the recap then says that turn has no stop yet.
        """
        if self.turn_running:
            return [Refuse("an agent turn is still running; ask again when it has finished")]
        actions = self._cancel()
        note = OUTSIDE_NOTE if self.outside_running else ""
        draft = self._start("manual", self._fingerprint(), model, note)
        return [*actions, draft]

    def cancel_in_flight(self) -> list[Action]:
        """Abandon the in-flight draft (an interrupted ``%recap``), leaving the banner alone."""
        return self._cancel()

    def set_auto(self, enabled: bool) -> list[Action]:
        """``Recap.auto`` changed: off drops every automatic timer and the pending bit."""
        if not enabled:
            self.away_deadline = self.post_turn_deadline = self.idle_deadline = None
            self.pending = False
            if self.in_flight is not None and not self.in_flight.draft.manual:
                return self._cancel()
        elif self.focused is False and self.away_deadline is None:
            self.away_deadline = self._clock() + float(self.settings.away_seconds)
        return []

    def shutdown(self) -> list[Action]:
        """The extension is unloading or the kernel is shutting down."""
        self.away_deadline = self.post_turn_deadline = self.idle_deadline = None
        self.pending = False
        return self._cancel_and_clear()

    def tick(self) -> list[Action]:
        """Fire every timer whose deadline has passed."""
        now = self._clock()
        actions: list[Action] = []
        if self.away_deadline is not None and now >= self.away_deadline:
            self.away_deadline = None
            if self._away():
                if self.holding and not self.settings.during_active:
                    self.pending = True
                elif self.post_turn_deadline is None:
                    actions += self._try_draft("away")
                # else: a turn ended moments ago; the post-turn debounce drafts unless the
                # agent loop goes on, so drafting now could only be cancelled by its next step.
        if self.post_turn_deadline is not None and now >= self.post_turn_deadline:
            self.post_turn_deadline = None
            if self._away() and (not self.holding or self.settings.during_active):
                actions += self._try_draft("post_turn")
        if self.idle_deadline is not None and now >= self.idle_deadline:
            self.idle_deadline = None
            if not self.focus_supported and not self.holding:
                actions += self._try_draft("idle")
        return actions

    def draft_done(
        self, draft_id: int, text: str | None, model: str = "", note: str = "", notice: str = ""
    ) -> list[Action]:
        """A draft finished (``text`` None when it failed). Decide whether to show it."""
        flight = self.in_flight
        if flight is None or flight.draft.id != draft_id:
            return []  # cancelled meanwhile: its answer is stale by definition
        self.in_flight = None
        draft = flight.draft
        if text is None:
            return []
        # A turn finished while it was out: its text covers an older turn than the latest.
        newer_turn = self._completed_turns() != draft.turns
        if draft.manual and newer_turn and not self.turn_running:
            # The person waits for it (``%recap``): a recap of the turn that ended instead.
            self.counters.discarded_stale += 1
            return self._again(flight)
        if self.holding and not (draft.manual or self.settings.during_active):
            self.counters.discarded_stale += 1
            return []
        if not draft.manual and self._fingerprint() != draft.fingerprint:
            self.counters.discarded_stale += 1  # the session moved on while we were drafting
            if self.settings.auto and not self.holding and (newer_turn or draft.reason == "resume"):
                # The recap was wanted and the transcript moved on under it: draft again now,
                # from the newer turn (a resume recap, from what the restart added). The
                # person may have come back meanwhile; that is when it helps.
                return self._again(flight)
            if self._away() and self.settings.auto and self.post_turn_deadline is None:
                # Still away: try again shortly with what happened meanwhile.
                self.post_turn_deadline = self._clock() + float(self.settings.post_turn_seconds)
            return []
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

    def _again(self, flight: _InFlight) -> list[Action]:
        """Start ``flight``'s draft again from the transcript as it is now (same id: it takes
        over), a model's while :data:`MAX_REDRAFTS` allows, then offline; the banner says
        *drafting…* meanwhile."""
        draft = flight.draft
        redrafts = flight.redrafts + 1
        if redrafts > MAX_REDRAFTS + MAX_OFFLINE_REDRAFTS:
            return []
        model = draft.model if redrafts <= MAX_REDRAFTS else "offline"
        note = draft.note
        if draft.manual:  # the outside turn it mentioned may have ended meanwhile
            note = OUTSIDE_NOTE if self.outside_running else ""
        again = StartDraft(
            draft.id,
            draft.reason,
            self._fingerprint(),
            model,
            note,
            self._completed_turns(),
            again=True,
        )
        self.in_flight = _InFlight(again, self._clock(), redrafts)
        self.counters.drafts_started += 1
        if draft.manual:
            return [again]  # its banner says drafting… since it started
        self.banner_visible = True
        self.shown_turns = None
        self.last_text = None
        return [ShowDrafting(draft.reason), again]

    def banner_dismissed(self) -> list[Action]:
        """The person closed the banner themselves."""
        self.banner_visible = False
        return []

    # -- queries ---------------------------------------------------------------------------

    def timers(self) -> tuple[float | None, float | None, float | None]:
        """The away, post-turn and idle deadlines (None when not armed)."""
        return (self.away_deadline, self.post_turn_deadline, self.idle_deadline)

    def next_deadline(self) -> float | None:
        """The earliest armed timer, or None when nothing is armed."""
        armed = [deadline for deadline in self.timers() if deadline is not None]
        return min(armed) if armed else None

    def status(self) -> dict[str, Any]:
        """A snapshot for ``%recap status`` and tests."""
        return {
            "focused": self.focused,
            "focus_changed_at": self.focus_changed_at,
            "turn_running": self.turn_running,
            "outside_turn": self.outside_running,
            "pending": self.pending,
            "in_flight": self.in_flight.draft.reason if self.in_flight else None,
            "next_deadline": self.next_deadline(),
            "banner_visible": self.banner_visible,
        }

    # -- internals -------------------------------------------------------------------------

    def _away(self) -> bool:
        return self.focused is False

    def _try_draft(self, reason: str) -> list[Action]:
        """An automatic trigger: respect the gate, dedupe, the one in-flight slot and a turn."""
        if self.in_flight is not None:
            return []
        if self.holding and not self.settings.during_active:
            # Its answer would land mid-turn and be discarded; the turn's end arms the
            # triggers that apply then (a resume while an agent works, say).
            return []
        if self._completed_turns() < 1:
            self.counters.skipped_no_activity += 1
            return []
        fingerprint = self._fingerprint()
        if fingerprint == self.last_fingerprint:
            self.counters.saved_by_dedupe += 1
            return []
        return [self._start(reason, fingerprint, None)]

    def _start(
        self, reason: str, fingerprint: str, model: str | None, note: str = ""
    ) -> StartDraft:
        self._next_id += 1
        draft = StartDraft(self._next_id, reason, fingerprint, model, note, self._completed_turns())
        self.in_flight = _InFlight(draft, self._clock())
        self.counters.drafts_started += 1
        return draft

    def _cancel(self) -> list[Action]:
        if self.in_flight is None:
            return []
        draft_id = self.in_flight.draft.id
        self.in_flight = None
        self.counters.cancelled += 1
        return [CancelDraft(draft_id)]

    def _cancel_and_clear(self) -> list[Action]:
        actions = self._cancel()
        if self.banner_visible:
            self.banner_visible = False
            self.shown_turns = None
            actions.append(ClearBanner())
        return actions

    def coming(self) -> bool:
        """Whether a recap is on its way: a draft runs, or the post-turn one is due for a turn
        the latest recap shown does not cover."""
        return self.in_flight is not None or (
            self.settings.auto
            and self.post_turn_deadline is not None
            and self.last_turns != self._completed_turns()
        )
