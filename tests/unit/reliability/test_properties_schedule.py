"""The trigger schedule under any sequence of events: the promises hold after every step.

The trigger schedule is a pure state machine with an injected clock, so Hypothesis drives it
through random sessions (stateful testing): focus coming and going (reports arriving late),
agent turns starting and ending every way, the person typing, cells ending, background
activity, the clock jumping by seconds or hours, the timer thread waking early, resumes,
``%recap``, drafts finishing, failing or arriving after they were cancelled, ``auto``
switched off and on. After every step it checks what a person would notice: two recaps
racing, a model call while the agent works, a paid call for nothing new, a stale recap shown,
the idle fallback overriding real focus reports. The examples at the end are the sequences
that broke a promise once.

The session is modelled the way the kernel feeds the schedule: every recorded entry (a prompt,
an outcome, a cell, a tool call) changes the fingerprint, which is ``fpN`` for the N-th
change; the completed-turn count grows with each outcome.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from schedulefakes import Settings
from strength import examples

from jupyter_recap.schedule import (
    Action,
    CancelDraft,
    ClearBanner,
    Refuse,
    Schedule,
    ShowDrafting,
    ShowRecap,
    StartDraft,
)

MODEL = "fake-model"
TEXTS = st.sampled_from(["A", "B", "C"])  # few texts, so that equal answers come up
ANSWERS = ["A", "B", None, "A", "C"]
"""What drafts answering at once say, by draft id (None: the draft failed)."""


@dataclass
class Draft:
    """What the session looked like when a draft started."""

    action: StartDraft
    activity: int
    interrupted: bool = False
    """The person gave input or a turn started since: its answer is stale."""


@dataclass
class Session:
    """The test's model of the notebook: the schedule sees only the fingerprint and turn count."""

    now: float = 0.0
    activity: int = 0
    completed_turns: int = 0
    turn_running: bool = False
    focus_seen: bool = False
    drafts: dict[int, Draft] = field(default_factory=dict)
    outstanding: set[int] = field(default_factory=set)
    last_shown: Draft | None = None
    last_shown_text: str | None = None
    on_screen: str | None = None
    """The text the banner shows now (None once cleared or dismissed)."""

    @property
    def fingerprint(self) -> str:
        return f"fp{self.activity}"


class SessionMachine(RuleBasedStateMachine):
    """A notebook session driven at random; after every step, what the person would notice
    holds: at most one recap drafting at a time; no automatic model call while the agent works
    (unless ``during_active``), with ``auto`` off, or for what the last recap already covered;
    no recap shown after new input, a new turn or new activity, nor the same one twice; no
    idle-fallback recap once focus reports arrive; no timer left armed that should not be."""

    def __init__(self) -> None:
        super().__init__()
        self.session = Session()
        self.settings = Settings()
        self.schedule = self._schedule()
        self.lab = self.asks = True
        self.fast = False

    def _schedule(self) -> Schedule:
        return Schedule(
            self.settings,
            clock=lambda: self.session.now,
            fingerprint=lambda: self.session.fingerprint,
            completed_turns=lambda: self.session.completed_turns,
        )

    @initialize(
        auto=st.sampled_from([True, True, True, False]),
        away=st.sampled_from([0.0, 1.0, 2.5, 90.0]),
        post_turn=st.sampled_from([0.0, 1.0, 3.0]),
        idle=st.sampled_from([0.0, 2.0, 120.0]),
        during_active=st.booleans(),
        lab=st.booleans(),
        asks=st.sampled_from([True, False, False]),
        fast=st.booleans(),
    )
    def configure(
        self,
        auto: bool,
        away: float,
        post_turn: float,
        idle: float,
        during_active: bool,
        lab: bool,
        asks: bool,
        fast: bool,
    ) -> None:
        """The settings; whether focus is reported (JupyterLab with the labextension, or a
        bare kernel); whether the person also asks with ``%recap``; whether drafts answer at
        once (the offline engine) or whenever the ``draft_done`` rule says."""
        self.settings = Settings(auto, away, post_turn, idle, during_active)
        self.schedule = self._schedule()
        self.lab, self.asks, self.fast = lab, asks, fast

    # -- checking every action ----------------------------------------------------------------

    def check(self, actions: list[Action], *, landing: Draft | None = None) -> None:
        """Apply the promises to the actions one input returned, in order."""
        s = self.session
        started: int | None = None
        for action in actions:
            if isinstance(action, CancelDraft):
                s.outstanding.discard(action.id)
            elif isinstance(action, StartDraft):
                assert not s.outstanding, f"two drafts in flight: {s.outstanding} and {action}"
                assert action.fingerprint == s.fingerprint, "a draft of an outdated session"
                s.outstanding.add(action.id)
                s.drafts[action.id] = Draft(action, s.activity)
                started = action.id
                if action.manual:
                    continue
                assert self.settings.auto, f"an automatic draft with auto off: {action}"
                assert not s.turn_running or self.settings.during_active, (
                    f"an automatic draft while the agent works: {action}"
                )
                if s.last_shown is not None:
                    assert action.fingerprint != s.last_shown.action.fingerprint, (
                        f"a model call for what the last recap already covered: {action}"
                    )
                assert action.reason != "idle" or not s.focus_seen, (
                    "the idle fallback fired although focus reports arrive"
                )
            elif isinstance(action, ShowRecap):
                assert landing is not None and landing.action.id == action.id, (
                    f"a recap shown without its draft landing: {action}"
                )
                draft = landing
                assert not draft.interrupted, f"a recap shown after new input or turn: {action}"
                if not draft.action.manual:
                    assert draft.activity == s.activity, f"a stale recap shown: {action}"
                    assert not s.turn_running or self.settings.during_active, (
                        f"an automatic recap shown while the agent works: {action}"
                    )
                    assert action.text != s.on_screen, "the same recap shown again while on screen"
                s.last_shown, s.last_shown_text = draft, action.text
                s.on_screen = action.text
            elif isinstance(action, Refuse):
                assert s.turn_running and len(actions) == 1, f"refused for nothing: {action}"
            elif isinstance(action, ShowDrafting):
                # The banner's recap covered an older turn: it leaves the screen, and a recap
                # of the newer turn must be on its way (checked below, once all actions ran).
                s.on_screen = None
            else:
                assert isinstance(action, ClearBanner), action
                s.on_screen = None
        if any(isinstance(action, ShowDrafting) for action in actions):
            assert s.outstanding or self.schedule.post_turn_deadline is not None, (
                f"drafting… shown with no recap on its way: {actions}"
            )
        if self.fast and started is not None and started in s.outstanding:
            self.answer(started, ANSWERS[started % len(ANSWERS)])

    def interrupt_drafts(self) -> None:
        for draft in self.session.drafts.values():
            draft.interrupted = True

    # -- the person ----------------------------------------------------------------------------

    @precondition(lambda self: self.lab)
    @rule(focused=st.booleans(), late=st.sampled_from([0.0, 0.0, 1.0, 30.0]))
    def focus(self, focused: bool, late: float) -> None:
        """A focus report (from the labextension), possibly arriving ``late`` seconds late."""
        at = self.session.now - late
        self.session.focus_seen = True
        self.check(self.schedule.focus(focused, at=at))

    @precondition(lambda self: self.lab)
    @rule(
        outcome=st.sampled_from(["ok", "errored"]),
        before=st.sampled_from([0.0, 2.0, 100.0]),
        after=st.sampled_from([0.0, 1.0, 3.0, 100.0]),
    )
    def leave_while_the_agent_works(self, outcome: str, before: float, after: float) -> None:
        """The person switches tabs; the agent finishes a turn while they are gone."""
        self.focus(False, 0.0)
        self.advance(before)
        self.turn(outcome, 1.0)
        self.advance(after)

    @rule(recorded=st.booleans())
    def user_input(self, recorded: bool) -> None:
        """The person runs a cell (recorded as activity, or not: ``record_code_cells``)."""
        actions = self.schedule.user_input()
        self.interrupt_drafts()
        if recorded:
            self.session.activity += 1
        self.check(actions)

    @rule()
    def cell_ended(self) -> None:
        self.check(self.schedule.cell_ended())

    @rule()
    def dismiss(self) -> None:
        self.check(self.schedule.banner_dismissed())
        self.session.on_screen = None

    @rule(enabled=st.booleans())
    def set_auto(self, enabled: bool) -> None:
        self.settings.auto = enabled
        self.check(self.schedule.set_auto(enabled))

    @rule(enabled=st.booleans())
    def set_during_active(self, enabled: bool) -> None:
        """``%config Recap.during_active = …`` (the schedule reads it live; no observer)."""
        self.settings.during_active = enabled

    @precondition(lambda self: self.asks)
    @rule(model=st.sampled_from([None, "openai:gpt-4o-mini"]))
    def manual(self, model: str | None) -> None:
        self.check(self.schedule.manual(model))

    @precondition(lambda self: self.asks)
    @rule()
    def interrupt_manual(self) -> None:
        """Ctrl-C while ``%recap`` waits: the in-flight draft is abandoned."""
        self.check(self.schedule.cancel_in_flight())

    # -- the agent -------------------------------------------------------------------------------

    @rule()
    def turn_started(self) -> None:
        """A prompt is recorded: new activity, and a turn runs."""
        self.session.activity += 1
        self.session.turn_running = True
        self.interrupt_drafts()
        self.check(self.schedule.turn_started())

    @precondition(lambda self: self.session.turn_running)
    @rule(outcome=st.sampled_from(["ok", "errored", "aborted"]))
    def turn_ended(self, outcome: str) -> None:
        """The turn's outcome is recorded: new activity and one more completed turn."""
        self.session.activity += 1
        self.session.completed_turns += 1
        self.session.turn_running = False
        self.check(self.schedule.turn_ended(outcome))

    @rule(
        outcome=st.sampled_from(["ok", "errored", "aborted"]),
        seconds=st.sampled_from([0.0, 1.0, 5.0, 100.0]),
    )
    def turn(self, outcome: str, seconds: float) -> None:
        """A whole agent turn of ``seconds``."""
        self.turn_started()
        self.advance(seconds)
        self.turn_ended(outcome)

    @rule()
    def background_activity(self) -> None:
        """An agent in a background thread records a tool call: no schedule input at all."""
        self.session.activity += 1

    @rule()
    def resume(self) -> None:
        self.check(self.schedule.resume())

    @rule()
    def shutdown(self) -> None:
        self.check(self.schedule.shutdown())

    # -- drafts --------------------------------------------------------------------------------

    @precondition(lambda self: bool(self.session.outstanding))
    @rule(text=st.none() | TEXTS | TEXTS)
    def draft_done(self, text: str | None) -> None:
        """The draft in flight answers (``None``: it failed)."""
        self.answer(next(iter(self.session.outstanding)), text)

    @precondition(lambda self: bool(self.session.drafts))
    @rule(data=st.data(), text=st.none() | TEXTS)
    def late_answer(self, data: st.DataObject, text: str | None) -> None:
        """Any draft answers, cancelled or answered already (the HTTP call ignored the cancel)."""
        self.answer(data.draw(st.sampled_from(sorted(self.session.drafts)), label="draft"), text)

    def answer(self, draft_id: int, text: str | None) -> list[Action]:
        """Draft ``draft_id`` answers ``text``; nothing may come of a stale or failed one."""
        s = self.session
        draft = s.drafts[draft_id]
        was_outstanding = draft_id in s.outstanding
        actions = self.schedule.draft_done(draft_id, text, MODEL)
        s.outstanding.discard(draft_id)
        if not was_outstanding or text is None:
            assert actions == [], f"a cancelled, finished or failed draft acted: {actions}"
        self.check(actions, landing=draft)
        return actions

    # -- liveness ------------------------------------------------------------------------------

    @precondition(
        lambda self: (
            self.lab
            and not self.fast
            and self.settings.auto
            and not self.session.turn_running
            and not self.session.outstanding
        )
    )
    @rule(same=st.booleans(), outcome=st.sampled_from(["ok", "errored", "aborted"]))
    def a_round_of_work_while_away(self, same: bool, outcome: str) -> None:
        """The person runs the agent again, leaves, and stays away: the round's recap is shown,
        also when it reads exactly like the one they saw (and cleared) before."""
        self.user_input(recorded=True)
        self.focus(False, 0.0)
        self.turn(outcome, 1.0)
        s = self.session
        text = (s.last_shown_text or "A") if same else "D"
        # A draft that started mid-turn (``during_active``) answers for an outdated session
        # and is dropped; the schedule must then try again, so allow a second round.
        for _ in range(2):
            self.advance(max(self.settings.away_seconds, self.settings.post_turn_seconds) + 1)
            assert s.outstanding, "new work while away, yet no recap drafted"
            actions = self.answer(next(iter(s.outstanding)), text)
            if any(isinstance(a, ShowRecap) for a in actions):
                return
        raise AssertionError(f"new work while away, yet its recap {text!r} was not shown")

    @precondition(
        lambda self: (
            not self.lab
            and not self.fast
            and self.settings.auto
            and not self.session.turn_running
            and not self.session.outstanding
        )
    )
    @rule(same=st.booleans(), outcome=st.sampled_from(["ok", "errored", "aborted"]))
    def a_round_of_work_without_focus_reports(self, same: bool, outcome: str) -> None:
        """A bare kernel (no labextension, so no focus reports): the person runs the agent
        again and leaves it be; once the kernel was idle long enough, the idle fallback shows
        the round's recap, every round, also when it reads like the one shown before."""
        self.user_input(recorded=True)
        self.turn(outcome, 1.0)
        self.cell_ended()
        s = self.session
        text = (s.last_shown_text or "A") if same else "D"
        self.advance(self.settings.idle_seconds + 1)
        assert s.outstanding, "new work and an idle kernel, yet no recap drafted"
        actions = self.answer(next(iter(s.outstanding)), text)
        assert any(isinstance(a, ShowRecap) for a in actions), (
            f"new work and an idle kernel, yet its recap {text!r} was not shown"
        )

    # -- time ----------------------------------------------------------------------------------

    @rule(
        seconds=st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0, 10.0, 89.0, 90.0, 200.0, 3600.0])
        | st.floats(0, 300)
    )
    def advance(self, seconds: float) -> None:
        """Time passes; the timer thread wakes at each deadline on the way, as it does."""
        target = self.session.now + seconds
        for _ in range(100):
            deadline = self.schedule.next_deadline()
            if deadline is None or deadline > target:
                break
            self.session.now = max(self.session.now, deadline)
            self.check(self.schedule.tick())
        else:
            raise AssertionError("tick() does not consume its deadlines: a busy loop")
        self.session.now = target

    @rule(seconds=st.sampled_from([1.0, 3.0, 90.0, 120.0]))
    def wait(self, seconds: float) -> None:
        """More time passing (a second rule: time passes often in a session)."""
        self.advance(seconds)

    @rule()
    def spurious_wakeup(self) -> None:
        """The timer thread wakes before any deadline (or with none armed)."""
        self.check(self.schedule.tick())

    @invariant()
    def idle_is_disarmed_once_focus_is_reported(self) -> None:
        if self.session.focus_seen:
            assert self.schedule.idle_deadline is None, "idle armed after a focus report"

    @invariant()
    def nothing_is_armed_while_auto_is_off(self) -> None:
        if not self.settings.auto:
            assert self.schedule.next_deadline() is None and not self.schedule.pending

    @invariant()
    def coming_back_stops_the_away_timers(self) -> None:
        schedule = self.schedule
        if schedule.focused:
            assert schedule.away_deadline is None and schedule.post_turn_deadline is None
            assert not schedule.pending

    @invariant()
    def at_most_one_draft_in_flight(self) -> None:
        flight = self.schedule.in_flight
        assert len(self.session.outstanding) <= 1
        assert (flight.draft.id if flight else None) == next(iter(self.session.outstanding), None)


# -- the sequences that broke it ---------------------------------------------------------------


def test_a_resume_while_the_agent_works_waits_for_the_turn_to_end() -> None:
    # A stored session is resumed (``%recap resume ID``) while an agent started through the
    # API is working: a draft now would be a paid call whose answer is discarded mid-turn.
    session = Session(activity=3, completed_turns=1)
    schedule = Schedule(
        Settings(),
        clock=lambda: session.now,
        fingerprint=lambda: session.fingerprint,
        completed_turns=lambda: session.completed_turns,
    )
    schedule.turn_started()
    assert schedule.resume() == []
    assert schedule.in_flight is None
    session.activity, session.completed_turns = 4, 2
    assert schedule.turn_ended("ok") == []
    session.now = 120  # no focus reports (a bare kernel): the idle fallback recaps it
    assert schedule.tick() == [StartDraft(1, "idle", "fp4")]


SessionMachine.TestCase.settings = settings(max_examples=examples(300), stateful_step_count=50)
test_trigger_schedule_keeps_its_promises = SessionMachine.TestCase
