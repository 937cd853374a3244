"""The trigger schedule itself: when to draft, from focus, turns, the person's input and a clock.

:class:`Schedule` holds what it decides from (focus, the turns running, the away, post-turn and
idle deadlines) and leaves the draft in flight and the banner's recap to :class:`~.drafts.Drafts`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from .actions import OUTSIDE_NOTE, Action, Refuse
from .drafts import Drafts, EngineCounters, InFlight

OUTSIDE_HOLD_SECONDS = 900.0
"""The longest an outside agent's turn holds automatic recaps without its end being heard. The
server ends a silent turn much sooner (``RecapServer.hook_silence_seconds``); this is the
backstop for an end the kernel never heard (its feed was reconnecting when it was sent)."""


class TriggerSettings(Protocol):
    """The settings the schedule reads (the ``Recap`` traits satisfy this)."""

    auto: bool
    away_seconds: float
    post_turn_seconds: float
    idle_seconds: float
    during_active: bool


class Schedule:
    """Decides when to draft; see the package docstring for how it is driven."""

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
        """None until the first focus report: focus is then unproven for this kernel; False:
        the person is away."""
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
        self.counters = EngineCounters()
        self._drafts = Drafts(
            self.counters, clock=clock, fingerprint=fingerprint, completed_turns=completed_turns
        )

    @property
    def in_flight(self) -> InFlight | None:
        """The draft out now (None: none is)."""
        return self._drafts.in_flight

    @property
    def banner_visible(self) -> bool:
        """Whether the banner shows (a recap, or *drafting…*)."""
        return self._drafts.banner_visible

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
        return self._drafts.cancel_and_clear()

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
        return self._drafts.cancel_and_clear()

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
        stale = self._drafts.outdated()
        if not self.settings.auto:
            return self._drafts.cancel_and_clear() if stale else []
        now = self._clock()
        actions: list[Action] = []
        pending, self.pending = self.pending, False
        if pending and self.focused is False:
            actions = self._drafts.automatic("away")
        elif self.focused is False:
            self.post_turn_deadline = now + float(self.settings.post_turn_seconds)
        elif not self.focus_supported:
            self.idle_deadline = now + float(self.settings.idle_seconds)
        if stale:
            # (Only a turn its banner outlived: a recap shown while an outside agent worked.)
            armed = self.post_turn_deadline is not None
            actions += self._drafts.replace_outdated("post_turn", post_turn_armed=armed)
        return actions

    def user_input(self) -> list[Action]:
        """The person did something in the notebook (ran a cell; later: typed)."""
        self.post_turn_deadline = None
        self.idle_deadline = None
        return self._drafts.cancel_and_clear()

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
        if not self.settings.auto or self.in_flight is not None:
            return []
        if self.holding and not self.settings.during_active:
            # Its answer would land mid-turn and be discarded; the turn's end arms the
            # triggers that apply then (a resume while an agent works, say).
            return []
        return self._drafts.automatic("resume")

    def manual(self, model: str | None = None) -> list[Action]:
        """``%recap``: draft now, bypassing the activity gate and dedupe.

        Refused only while a turn of the kernel's own runs (its cell holds the shell anyway,
        and the recap would be stale the moment it lands); an outside agent's turn never
        holds it up, and the recap then says that turn has no stop yet.
        """
        if self.turn_running:
            return [Refuse("an agent turn is still running; ask again when it has finished")]
        actions = self._drafts.cancel()
        note = OUTSIDE_NOTE if self.outside_running else ""
        draft = self._drafts.start("manual", self._fingerprint(), model, note)
        return [*actions, draft]

    def cancel_in_flight(self) -> list[Action]:
        """Abandon the in-flight draft (an interrupted ``%recap``), leaving the banner alone."""
        return self._drafts.cancel()

    def set_auto(self, enabled: bool) -> list[Action]:
        """``Recap.auto`` changed: off drops every automatic timer and the pending bit."""
        if not enabled:
            self.away_deadline = self.post_turn_deadline = self.idle_deadline = None
            self.pending = False
            if self.in_flight is not None and not self.in_flight.draft.manual:
                return self._drafts.cancel()
        elif self.focused is False and self.away_deadline is None:
            self.away_deadline = self._clock() + float(self.settings.away_seconds)
        return []

    def shutdown(self) -> list[Action]:
        """The extension is unloading or the kernel is shutting down."""
        self.away_deadline = self.post_turn_deadline = self.idle_deadline = None
        self.pending = False
        return self._drafts.cancel_and_clear()

    def tick(self) -> list[Action]:
        """Fire every timer whose deadline has passed."""
        now = self._clock()
        actions: list[Action] = []
        if self.away_deadline is not None and now >= self.away_deadline:
            self.away_deadline = None
            if self.focused is False:
                if self.holding and not self.settings.during_active:
                    self.pending = True
                elif self.post_turn_deadline is None:
                    actions += self._drafts.automatic("away")
                # else: a turn ended moments ago; the post-turn debounce drafts unless the
                # agent loop goes on, so drafting now could only be cancelled by its next step.
        if self.post_turn_deadline is not None and now >= self.post_turn_deadline:
            self.post_turn_deadline = None
            if self.focused is False and (not self.holding or self.settings.during_active):
                actions += self._drafts.automatic("post_turn")
        if self.idle_deadline is not None and now >= self.idle_deadline:
            self.idle_deadline = None
            if not self.focus_supported and not self.holding:
                actions += self._drafts.automatic("idle")
        return actions

    def draft_done(
        self, draft_id: int, text: str | None, model: str = "", note: str = "", notice: str = ""
    ) -> list[Action]:
        """A draft finished (``text`` None when it failed). Decide whether to show it."""
        flight = self._drafts.finished(draft_id)
        if flight is None:
            return []  # cancelled meanwhile: its answer is stale by definition
        draft = flight.draft
        if text is None:
            return []
        # A turn finished while it was out: its text covers an older turn than the latest.
        newer_turn = self._completed_turns() != draft.turns
        if draft.manual and newer_turn and not self.turn_running:
            # The person waits for it (``%recap``): a recap of the turn that ended instead.
            self.counters.discarded_stale += 1
            return self._drafts.again(flight, outside=self.outside_running)
        if self.holding and not (draft.manual or self.settings.during_active):
            self.counters.discarded_stale += 1
            return []
        if not draft.manual and self._fingerprint() != draft.fingerprint:
            self.counters.discarded_stale += 1  # the session moved on while we were drafting
            if self.settings.auto and not self.holding and (newer_turn or draft.reason == "resume"):
                # The recap was wanted and the transcript moved on under it: draft again now,
                # from the newer turn (a resume recap, from what the restart added). The
                # person may have come back meanwhile; that is when it helps.
                return self._drafts.again(flight, outside=self.outside_running)
            if self.focused is False and self.settings.auto and self.post_turn_deadline is None:
                # Still away: try again shortly with what happened meanwhile.
                self.post_turn_deadline = self._clock() + float(self.settings.post_turn_seconds)
            return []
        return self._drafts.show(draft, text, model, note, notice)

    def banner_dismissed(self) -> list[Action]:
        """The person closed the banner themselves."""
        self._drafts.banner_visible = False
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

    def coming(self) -> bool:
        """Whether a recap is on its way: a draft runs, or the post-turn one is due for a turn
        the latest recap shown does not cover."""
        return self.in_flight is not None or (
            self.settings.auto
            and self.post_turn_deadline is not None
            and self._drafts.last_turns != self._completed_turns()
        )
