"""The trigger schedule, replayed with a fake clock: exact actions, their times, and model calls.

Every scenario is a list of steps run against a :class:`Harness`; each step names a harness method,
alone (``"blur"``) or with its arguments (``("wait", 90)``). The harness records every action the
schedule returns together with the (fake) time it was returned, so a scenario asserts the complete
timeline, e.g. ``[(90, StartDraft(1, "away", "fp1"))]``: one model call, 90 s after leaving.

Session model used by the fake: the fingerprint is ``fp0`` before any turn and ``fpN`` after the
N-th completed turn (``("fingerprint", "x")`` sets it directly, i.e. new activity without a turn).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

import pytest
from schedulefakes import Settings

from jupyter_recap.schedule import (
    MAX_OFFLINE_REDRAFTS,
    MAX_REDRAFTS,
    OUTSIDE_NOTE,
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

Step = str | tuple[Any, ...] | list[Any]
"""A harness method name, alone or with its arguments (``"blur"``, ``("wait", 90)``), or a list
of steps (a phase, to keep long scenarios readable)."""

# -- the harness --------------------------------------------------------------------------------


class FakeClock:
    """A clock that only moves when told to."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class FakeSession:
    """What the schedule reads from the transcript: its fingerprint and completed-turn count."""

    fingerprint: str = "fp0"
    completed_turns: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    """Not part of the fingerprint (like cell metadata: not in the recap's context)."""


class Harness:
    """Wraps a Schedule; every helper returns its actions and logs them with the time."""

    def __init__(self, **settings: Any) -> None:
        self.clock = FakeClock()
        self.settings = Settings(**settings)
        self.session = FakeSession()
        self.schedule = Schedule(
            self.settings,
            clock=self.clock,
            fingerprint=lambda: self.session.fingerprint,
            completed_turns=lambda: self.session.completed_turns,
        )
        self.log: list[tuple[float, Action]] = []
        self.ticks = 0

    @property
    def now(self) -> float:
        return self.clock.now

    @property
    def calls(self) -> int:
        """Model calls = drafts started."""
        return sum(isinstance(action, StartDraft) for _, action in self.log)

    def drafts(self) -> list[StartDraft]:
        """Every draft started so far, in order."""
        return [action for _, action in self.log if isinstance(action, StartDraft)]

    def _record(self, actions: list[Action]) -> list[Action]:
        self.log.extend((self.clock.now, action) for action in actions)
        return actions

    def run(self, steps: Sequence[Step]) -> None:
        for step in steps:
            if isinstance(step, list):  # a phase: steps grouped for readability
                self.run(step)
                continue
            name, *args = (step,) if isinstance(step, str) else step
            getattr(self, name)(*args)

    # time

    def advance(self, seconds: float) -> list[Action]:
        """Move the clock, ticking at each deadline on the way (as the timer thread does)."""
        target = self.clock.now + seconds
        actions: list[Action] = []
        for _ in range(1000):
            deadline = self.schedule.next_deadline()
            if deadline is None or deadline > target:
                break
            self.clock.now = max(self.clock.now, deadline)
            self.ticks += 1
            actions += self._record(self.schedule.tick())
        else:
            raise AssertionError("tick() does not consume its deadlines: busy loop")
        self.clock.now = target
        return actions

    wait = advance

    # focus

    def blur(self) -> list[Action]:
        return self._record(self.schedule.focus(False))

    def focus(self) -> list[Action]:
        return self._record(self.schedule.focus(True))

    # agent turns

    def start(self) -> list[Action]:
        return self._record(self.schedule.turn_started())

    def end(self, outcome: str = "ok") -> list[Action]:
        """The turn's outcome is recorded (new activity), then the schedule hears of it."""
        self.session.completed_turns += 1
        self.session.fingerprint = f"fp{self.session.completed_turns}"
        return self._record(self.schedule.turn_ended(outcome))

    def turn(self, outcome: str = "ok", duration: float = 0) -> list[Action]:
        actions = self.start()
        actions += self.advance(duration)
        return actions + self.end(outcome)

    # the person and the session

    def input(self) -> list[Action]:
        return self._record(self.schedule.user_input())

    def cell_ended(self) -> list[Action]:
        return self._record(self.schedule.cell_ended())

    def fingerprint(self, value: str) -> None:
        self.session.fingerprint = value

    def metadata(self, key: str, value: Any) -> None:
        self.session.metadata[key] = value

    def restored(self, turns: int) -> None:
        """A stored session with ``turns`` completed turns is loaded (no schedule input)."""
        self.session.completed_turns = turns
        self.session.fingerprint = f"fp{turns}"

    def resume(self) -> list[Action]:
        return self._record(self.schedule.resume())

    def manual(self, model: str | None = None) -> list[Action]:
        return self._record(self.schedule.manual(model))

    def auto(self, enabled: bool) -> list[Action]:
        """``Recap.auto`` changes: the trait first, then its observer."""
        self.settings.auto = enabled
        return self._record(self.schedule.set_auto(enabled))

    def shutdown(self) -> list[Action]:
        return self._record(self.schedule.shutdown())

    def dismiss(self) -> None:
        self.schedule.banner_dismissed()

    # drafts

    def finish(self, draft: int | StartDraft, text: str | None) -> list[Action]:
        draft_id = draft.id if isinstance(draft, StartDraft) else draft
        return self._record(self.schedule.draft_done(draft_id, text, MODEL))

    def done(self, draft_id: int, text: str) -> list[Action]:
        return self.finish(draft_id, text)

    def fail(self, draft_id: int) -> list[Action]:
        return self.finish(draft_id, None)

    def counters(self) -> dict[str, Any]:
        c = self.schedule.counters
        return {f.name: getattr(c, f.name) for f in fields(c)}


# -- expectations -------------------------------------------------------------------------------


def Show(draft_id: int, text: str, reason: str) -> ShowRecap:
    return ShowRecap(draft_id, text, MODEL, reason)


Start = StartDraft
Cancel = CancelDraft
CLEAR = ClearBanner()


class _Refused:
    """Matches any Refuse whose message is one clear, non-empty line."""

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Refuse)
            and bool(other.message.strip())
            and "\n" not in other.message
            and len(other.message) <= 100
        )

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "Refuse(<one line>)"


REFUSED = _Refused()
UNCHECKED = object()


class Scenario(NamedTuple):
    name: str
    steps: list[Step]
    expected: list[tuple[float, Any]]
    """Every action, with the time it was returned."""
    calls: int
    settings: dict[str, Any] = {}  # noqa: RUF012 - NamedTuple default, never mutated
    counters: dict[str, Any] = {}  # noqa: RUF012
    deadline: Any = UNCHECKED
    """next_deadline() after the last step (None: nothing armed)."""


def timeline(log: Sequence[tuple[float, Any]]) -> str:
    return "\n".join(f"    t={t:g}: {action!r}" for t, action in log) or "    (no actions)"


def report(h: Harness, scenario: Scenario) -> str:
    steps = "\n".join(f"    {step!r}" for step in scenario.steps)
    return (
        f"\nscenario {scenario.name}\n  steps:\n{steps}\n"
        f"  expected:\n{timeline(scenario.expected)}\n  actual:\n{timeline(h.log)}\n"
        f"  counters: {h.counters()}\n  next_deadline: {h.schedule.next_deadline()}"
    )


# Recurring step sequences.
WORKED: list[Step] = ["focus", "turn"]
"""The labextension reported focus, then one agent turn completed (fingerprint fp1) at t=0."""

AWAY_CYCLE: list[Step] = ["blur", ("wait", 90), "focus"]
"""Leave, stay away past away_seconds, come back."""

SHOWN: list[Step] = [*WORKED, *AWAY_CYCLE, ("done", 1, "A")]
"""Recap 1 ("A", fingerprint fp1) drafted at t=90 while away and shown; the person is back."""

SCENARIOS = [
    # 1. Away timer -------------------------------------------------------------------------------
    Scenario(
        "r1_away_timer_drafts_after_away_seconds",
        [*WORKED, ("wait", 10), "blur", ("wait", 89), ("wait", 1)],
        [(100, Start(1, "away", "fp1"))],
        calls=1,
        deadline=None,
    ),
    Scenario(
        "r1_focus_in_before_away_seconds_cancels_timer",
        [*WORKED, "blur", ("wait", 89), "focus", ("wait", 500)],
        [],
        calls=0,
        deadline=None,
    ),
    Scenario(
        "r1_away_timer_counts_from_the_latest_blur",
        [*WORKED, "blur", ("wait", 60), "focus", ("wait", 10), "blur", ("wait", 89), ("wait", 1)],
        [(160, Start(1, "away", "fp1"))],
        calls=1,
    ),
    # 2. Turn ends while away ---------------------------------------------------------------------
    Scenario(
        "r2_turn_ending_while_away_drafts_post_turn_seconds_later",
        ["focus", "blur", ("wait", 10), ("turn", "ok", 20), ("wait", 2), ("wait", 1)],
        [(33, Start(1, "post_turn", "fp1"))],
        calls=1,
        deadline=90,  # the away timer is still armed; the slot/dedupe stop it later
    ),
    Scenario(
        "r2_multi_step_loop_drafts_only_after_the_last_step",
        [
            "focus",
            "blur",
            ("wait", 5),
            *[("turn", "ok", 5), ("wait", 2.5)] * 3,  # end → start within 3 s, three times
            ("turn", "ok", 5),
            ("wait", 3),
        ],
        [(35.5, Start(1, "post_turn", "fp4"))],  # 3 s after the 4th step ends at 32.5
        calls=1,
    ),
    Scenario(
        "r2_coming_back_within_post_turn_seconds_drafts_nothing",
        ["focus", "blur", ("wait", 10), "turn", ("wait", 2), "focus", ("wait", 500)],
        [],
        calls=0,
        deadline=None,
    ),
    Scenario(
        "r2_coming_back_disarms_post_turn_at_once",
        ["focus", "blur", ("wait", 10), "turn", ("wait", 2), "focus"],
        [],
        calls=0,
        deadline=None,
    ),
    Scenario(
        "r2_new_turn_within_post_turn_seconds_disarms_it",
        ["focus", "blur", ("wait", 10), "turn", ("wait", 2), "start"],
        [],
        calls=0,
        deadline=90,  # only the away timer is left
    ),
    Scenario(
        "r2_multi_step_loop_with_during_active_does_not_draft_between_steps",
        ["focus", "blur", ("wait", 10), "turn", ("wait", 2), ("turn", "ok", 20), ("wait", 3)],
        [(35, Start(1, "post_turn", "fp2"))],
        calls=1,
        settings={"during_active": True},
    ),
    Scenario(
        "r2_turn_ending_while_focused_arms_nothing",
        ["focus", ("turn", "ok", 30), ("wait", 500)],
        [],
        calls=0,
        deadline=None,
    ),
    Scenario(
        "r2_post_turn_recap_makes_the_later_away_timer_a_dedupe",
        ["focus", "blur", ("wait", 10), "turn", ("wait", 3), ("done", 1, "A"), ("wait", 100)],
        [(13, Start(1, "post_turn", "fp1")), (13, Show(1, "A", "post_turn"))],
        calls=1,
        counters={"saved_by_dedupe": 1},
        deadline=None,
    ),
    # 3. Away timer fires mid-turn ----------------------------------------------------------------
    Scenario(
        "r3_away_fires_mid_turn_pends_then_drafts_at_turn_end",
        ["focus", "blur", "start", ("wait", 120), "end", ("wait", 500)],
        [(120, Start(1, "away", "fp1"))],
        calls=1,
        deadline=None,
    ),
    Scenario(
        "r3_pending_dropped_when_person_returns_before_turn_end",
        ["focus", "blur", "start", ("wait", 100), "focus", ("wait", 20), "end", ("wait", 500)],
        [],
        calls=0,
        deadline=None,
    ),
    Scenario(
        "r3_returning_clears_pending_even_if_the_person_leaves_again",
        [
            ["focus", "blur", "start", ("wait", 100), "focus", ("wait", 5), "blur", ("wait", 5)],
            ["end", ("wait", 3)],
        ],
        [(113, Start(1, "post_turn", "fp1"))],  # a fresh absence: post_turn, not "away" at 110
        calls=1,
    ),
    Scenario(
        "r3_errored_turn_end_resolves_pending_too",
        ["focus", "blur", "start", ("wait", 95), ("end", "errored")],
        [(95, Start(1, "away", "fp1"))],
        calls=1,
    ),
    Scenario(
        "r3_during_active_drafts_mid_turn_and_shows_while_turn_runs",
        [*WORKED, "blur", "start", ("wait", 90), ("wait", 5), ("done", 1, "A")],
        [(90, Start(1, "away", "fp1")), (95, Show(1, "A", "away"))],
        calls=1,
        settings={"during_active": True},
    ),
    # 4. Idle fallback ----------------------------------------------------------------------------
    Scenario(
        "r4_idle_fallback_drafts_idle_seconds_after_turn_without_focus_reports",
        [("turn", "ok", 30), ("wait", 119), ("wait", 1)],
        [(150, Start(1, "idle", "fp1"))],
        calls=1,
        deadline=None,
    ),
    Scenario(
        "r4_input_before_idle_seconds_cancels_idle",
        ["turn", ("wait", 119), "input", ("wait", 500)],
        [],
        calls=0,
        deadline=None,
    ),
    Scenario(
        "r4_ordinary_cell_ending_after_a_turn_rearms_idle",
        ["turn", ("wait", 60), "input", ("wait", 5), "cell_ended", ("wait", 120)],
        [(185, Start(1, "idle", "fp1"))],
        calls=1,
    ),
    Scenario(
        "r4_cell_ending_with_no_completed_turn_arms_nothing",
        ["input", "cell_ended"],
        [],
        calls=0,
        deadline=None,
    ),
    Scenario(
        "r4_cell_ending_during_a_turn_arms_nothing",
        ["turn", "start", "cell_ended"],
        [],
        calls=0,
        deadline=None,
    ),
    Scenario(
        "r4_first_focus_in_disarms_idle_for_the_rest_of_the_session",
        ["turn", ("wait", 10), "focus", ("wait", 500), "turn", "cell_ended", ("wait", 500)],
        [],
        calls=0,
        deadline=None,
    ),
    Scenario(
        "r4_first_blur_disarms_idle_too",
        ["turn", "blur", ("wait", 90), ("fail", 1), "focus", "turn", "cell_ended", ("wait", 500)],
        [(90, Start(1, "away", "fp1"))],  # the away timer's; no idle draft at t=120 nor later
        calls=1,
        deadline=None,
    ),
    # 5. Resume -----------------------------------------------------------------------------------
    Scenario(
        "r5_resume_drafts_when_auto_and_turns_exist",
        [("restored", 3), "resume"],
        [(0, Start(1, "resume", "fp3"))],
        calls=1,
    ),
    Scenario(
        "r5_resume_without_completed_turns_is_skipped",
        ["resume"],
        [],
        calls=0,
        counters={"skipped_no_activity": 1},
    ),
    Scenario(
        "r5_resume_is_a_no_op_with_auto_off",
        [("restored", 3), "resume"],
        [],
        calls=0,
        settings={"auto": False},
        counters={"skipped_no_activity": 0},
    ),
    # 6. Manual -----------------------------------------------------------------------------------
    Scenario(
        "r6_manual_drafts_now_without_completed_turns",
        [("wait", 7), "manual"],
        [(7, Start(1, "manual", "fp0"))],
        calls=1,
        counters={"skipped_no_activity": 0},
    ),
    Scenario(
        "r6_manual_bypasses_dedupe_and_repeats_the_same_text",
        [*SHOWN, "manual", ("done", 2, "A")],
        [
            (90, Start(1, "away", "fp1")),
            (90, Show(1, "A", "away")),
            (90, Start(2, "manual", "fp1")),
            (90, Show(2, "A", "manual")),
        ],
        calls=2,
        counters={"saved_by_dedupe": 0},
    ),
    Scenario(
        "r6_manual_refused_while_a_turn_runs",
        ["start", "manual", ("wait", 10), "end", "manual"],
        [(0, REFUSED), (10, Start(1, "manual", "fp1"))],
        calls=1,
    ),
    Scenario(
        "r6_manual_replaces_an_in_flight_automatic_draft",
        [*WORKED, "blur", ("wait", 90), "manual", ("done", 1, "old"), ("done", 2, "B")],
        [
            (90, Start(1, "away", "fp1")),
            (90, Cancel(1)),
            (90, Start(2, "manual", "fp1")),
            (90, Show(2, "B", "manual")),
        ],
        calls=2,
    ),
    # 7. One in-flight slot -----------------------------------------------------------------------
    Scenario(
        "r7_second_automatic_trigger_while_in_flight_starts_nothing",
        ["focus", "blur", ("wait", 10), "turn", ("wait", 200), ("done", 1, "A")],
        [(13, Start(1, "post_turn", "fp1")), (210, Show(1, "A", "post_turn"))],
        calls=1,
        counters={"saved_by_dedupe": 0, "drafts_started": 1},
        deadline=None,
    ),
    Scenario(
        "r7_resume_while_in_flight_starts_nothing",
        [("restored", 2), "resume", "resume"],
        [(0, Start(1, "resume", "fp2"))],
        calls=1,
    ),
    # 8. Input / new turn cancel and clear --------------------------------------------------------
    Scenario(
        "r8_input_cancels_in_flight_and_its_late_answer_shows_nothing",
        [*WORKED, "blur", ("wait", 90), "focus", ("wait", 5), "input", ("done", 1, "A")],
        [(90, Start(1, "away", "fp1")), (95, Cancel(1))],
        calls=1,
        counters={"cancelled": 1},
    ),
    Scenario(
        "r8_new_turn_cancels_in_flight_and_its_late_answer_shows_nothing",
        [*WORKED, "blur", ("wait", 90), "start", ("done", 1, "A")],
        [(90, Start(1, "away", "fp1")), (90, Cancel(1))],
        calls=1,
        counters={"cancelled": 1},
    ),
    Scenario(
        "r8_late_answer_of_a_cancelled_draft_does_not_disturb_the_next_one",
        [
            [*WORKED, "blur", ("wait", 90), "start", ("wait", 10), "end", ("wait", 3)],
            [("done", 1, "old"), ("done", 2, "new")],
        ],
        [
            (90, Start(1, "away", "fp1")),
            (90, Cancel(1)),
            (103, Start(2, "post_turn", "fp2")),
            (103, Show(2, "new", "post_turn")),
        ],
        calls=2,
    ),
    Scenario(
        "r8_input_clears_the_visible_banner",
        [*SHOWN, "input", "input"],
        [(90, Start(1, "away", "fp1")), (90, Show(1, "A", "away")), (90, CLEAR)],
        calls=1,
    ),
    Scenario(
        "r8_new_turn_clears_the_visible_banner",
        [*SHOWN, ("wait", 30), "start"],
        [(90, Start(1, "away", "fp1")), (90, Show(1, "A", "away")), (120, CLEAR)],
        calls=1,
    ),
    Scenario(
        "r8_input_cancels_in_flight_and_clears_banner_together",
        [*SHOWN, "manual", "input"],
        [
            (90, Start(1, "away", "fp1")),
            (90, Show(1, "A", "away")),
            (90, Start(2, "manual", "fp1")),
            (90, Cancel(2)),
            (90, CLEAR),
        ],
        calls=2,
    ),
    # 9. Focus-in does not cancel -----------------------------------------------------------------
    Scenario(
        "r9_focus_in_lets_the_in_flight_draft_land",
        [*WORKED, "blur", ("wait", 90), ("wait", 4), "focus", ("wait", 6), ("done", 1, "A")],
        [(90, Start(1, "away", "fp1")), (100, Show(1, "A", "away"))],
        calls=1,
        counters={"cancelled": 0},
    ),
    # 10. Stale drafts ----------------------------------------------------------------------------
    Scenario(
        "r10_fingerprint_change_during_draft_discards_answer",
        [
            [*WORKED, "blur", ("wait", 90), ("fingerprint", "fp1b"), ("done", 1, "A")],
            ["focus", *AWAY_CYCLE],
        ],
        [(90, Start(1, "away", "fp1")), (180, Start(2, "away", "fp1b"))],
        calls=2,
        counters={"discarded_stale": 1, "saved_by_dedupe": 0},
    ),
    Scenario(
        "r10_turn_started_during_draft_cancels_it",
        [*WORKED, "blur", ("wait", 90), ("wait", 2), "start", "end", ("done", 1, "A")],
        [(90, Start(1, "away", "fp1")), (92, Cancel(1))],
        calls=1,
        counters={"cancelled": 1},
    ),
    Scenario(
        "r10_metadata_only_change_keeps_fingerprint_and_is_shown",
        [*WORKED, "blur", ("wait", 90), ("metadata", "tags", ["x"]), ("done", 1, "A")],
        [(90, Start(1, "away", "fp1")), (90, Show(1, "A", "away"))],
        calls=1,
        counters={"discarded_stale": 0},
    ),
    # 11. Activity gate and dedupe ----------------------------------------------------------------
    Scenario(
        "r11_no_completed_turn_no_automatic_draft",
        ["focus", *AWAY_CYCLE, "input", "cell_ended", *AWAY_CYCLE],
        [],
        calls=0,
        counters={"skipped_no_activity": 2},
    ),
    Scenario(
        "r11_same_fingerprint_as_last_shown_makes_no_call",
        [*SHOWN, *AWAY_CYCLE],
        [(90, Start(1, "away", "fp1")), (90, Show(1, "A", "away"))],
        calls=1,
        counters={"saved_by_dedupe": 1},
    ),
    Scenario(
        "r11_ten_away_cycles_without_activity_make_one_call",
        [*SHOWN, *AWAY_CYCLE * 9],
        [(90, Start(1, "away", "fp1")), (90, Show(1, "A", "away"))],
        calls=1,
        counters={"saved_by_dedupe": 9, "drafts_started": 1},
        deadline=None,
    ),
    Scenario(
        "r11_new_activity_makes_a_new_call",
        [*SHOWN, "turn", *AWAY_CYCLE, ("done", 2, "B")],
        [
            (90, Start(1, "away", "fp1")),
            (90, Show(1, "A", "away")),
            (90, CLEAR),  # the new turn clears the banner
            (180, Start(2, "away", "fp2")),
            (180, Show(2, "B", "away")),
        ],
        calls=2,
    ),
    Scenario(
        # The second return after new work: the first banner was cleared by the new turn, so
        # the round's recap is shown although it reads the same (the offline engine often
        # does); a third return with nothing new makes no call.
        "r11_same_text_after_new_work_is_shown_again",
        [*SHOWN, "turn", *AWAY_CYCLE, ("done", 2, "A"), *AWAY_CYCLE],
        [
            (90, Start(1, "away", "fp1")),
            (90, Show(1, "A", "away")),
            (90, CLEAR),  # the new turn clears the banner
            (180, Start(2, "away", "fp2")),
            (180, Show(2, "A", "away")),
        ],
        calls=2,
        counters={"saved_by_dedupe": 1},
    ),
    Scenario(
        # Background activity (no turn, no input) while the recap is still on screen: the
        # same words again would be no news.
        "r11_same_text_while_still_on_screen_is_not_shown_again",
        [*SHOWN, ("fingerprint", "fp9"), *AWAY_CYCLE, ("done", 2, "A")],
        [
            (90, Start(1, "away", "fp1")),
            (90, Show(1, "A", "away")),
            (180, Start(2, "away", "fp9")),
        ],
        calls=2,
    ),
    # 12. auto off --------------------------------------------------------------------------------
    Scenario(
        "r12_auto_off_no_away_draft",
        [*WORKED, "blur", ("wait", 500)],
        [],
        calls=0,
        settings={"auto": False},
        deadline=None,
    ),
    Scenario(
        "r12_auto_off_no_post_turn_draft",
        ["focus", "blur", ("wait", 10), "turn", ("wait", 500)],
        [],
        calls=0,
        settings={"auto": False},
        deadline=None,
    ),
    Scenario(
        "r12_auto_off_no_idle_draft",
        ["turn", ("wait", 500), "input", "cell_ended", ("wait", 500)],
        [],
        calls=0,
        settings={"auto": False},
        deadline=None,
    ),
    Scenario(
        "r12_set_auto_false_mid_wait_drops_the_armed_timer",
        [*WORKED, "blur", ("wait", 60), ("auto", False), ("wait", 500)],
        [],
        calls=0,
        deadline=None,
    ),
    Scenario(
        "r12_set_auto_false_drops_pending_and_post_turn",
        ["focus", "blur", "start", ("wait", 100), ("auto", False), "end", ("wait", 500)],
        [],
        calls=0,
        deadline=None,
    ),
    Scenario(
        "r12_pending_dropped_by_auto_off_does_not_come_back",
        [
            ["focus", "blur", "start", ("wait", 100), ("auto", False), "end", ("auto", True)],
            ["start", ("wait", 10), "end", ("wait", 3)],
        ],
        [(113, Start(1, "post_turn", "fp2"))],  # not "away" at t=110
        calls=1,
    ),
    Scenario(
        "r12_set_auto_false_drops_idle",
        ["turn", ("wait", 60), ("auto", False), ("wait", 500)],
        [],
        calls=0,
        deadline=None,
    ),
    Scenario(
        "r12_set_auto_false_cancels_an_in_flight_automatic_draft",
        [*WORKED, "blur", ("wait", 90), ("auto", False), ("done", 1, "A")],
        [(90, Start(1, "away", "fp1")), (90, Cancel(1))],
        calls=1,
    ),
    Scenario(
        "r12_set_auto_false_keeps_a_manual_draft",
        ["manual", ("auto", False), ("done", 1, "A")],
        [(0, Start(1, "manual", "fp0")), (0, Show(1, "A", "manual"))],
        calls=1,
    ),
    Scenario(
        "r12_manual_still_works_with_auto_off",
        [*WORKED, "blur", ("wait", 500), "manual", ("done", 1, "A")],
        [(500, Start(1, "manual", "fp1")), (500, Show(1, "A", "manual"))],
        calls=1,
        settings={"auto": False},
    ),
    Scenario(
        "r12_set_auto_true_while_away_rearms_the_away_timer",
        [*WORKED, "blur", ("wait", 50), ("auto", True), ("wait", 89), ("wait", 1)],
        [(140, Start(1, "away", "fp1"))],
        calls=1,
        settings={"auto": False},
    ),
    Scenario(
        "r12_set_auto_true_while_focused_arms_nothing",
        [*WORKED, ("auto", True), ("wait", 500)],
        [],
        calls=0,
        settings={"auto": False},
        deadline=None,
    ),
    # 13. Errored and aborted turns ---------------------------------------------------------------
    Scenario(
        "r13_errored_turn_while_away_drafts_post_turn",
        ["focus", "blur", ("wait", 10), ("turn", "errored"), ("wait", 3)],
        [(13, Start(1, "post_turn", "fp1"))],
        calls=1,
    ),
    Scenario(
        "r13_aborted_turn_while_away_drafts_post_turn",
        ["focus", "blur", ("wait", 10), ("turn", "aborted"), ("wait", 3)],
        [(13, Start(1, "post_turn", "fp1"))],
        calls=1,
    ),
    Scenario(
        "r13_aborted_turn_arms_idle",
        [("turn", "aborted"), ("wait", 120)],
        [(120, Start(1, "idle", "fp1"))],
        calls=1,
    ),
    Scenario(
        "r13_aborted_turn_resolves_pending",
        ["focus", "blur", "start", ("wait", 100), ("end", "aborted")],
        [(100, Start(1, "away", "fp1"))],
        calls=1,
    ),
    # 14. Shutdown --------------------------------------------------------------------------------
    Scenario(
        "r14_shutdown_cancels_in_flight_clears_banner_and_disarms_timers",
        [*SHOWN, "manual", "blur", "shutdown", ("done", 2, "B"), ("wait", 500)],
        [
            (90, Start(1, "away", "fp1")),
            (90, Show(1, "A", "away")),
            (90, Start(2, "manual", "fp1")),
            (90, Cancel(2)),
            (90, CLEAR),
        ],
        calls=2,
        deadline=None,
    ),
    Scenario(
        "r14_shutdown_disarms_idle",
        ["turn", ("wait", 60), "shutdown", ("wait", 500)],
        [],
        calls=0,
        deadline=None,
    ),
    # Edge cases from the seeds -------------------------------------------------------------------
    Scenario(
        "edge_quick_blur_refocus_cycles_spend_nothing",
        ["focus", "turn", *("blur", ("wait", 30), "focus", ("wait", 5)) * 20],
        [],
        calls=0,
        deadline=None,
    ),
    Scenario(
        "edge_failed_draft_shows_nothing_and_next_cycle_retries",
        [*WORKED, *AWAY_CYCLE, ("fail", 1), *AWAY_CYCLE, ("done", 2, "A")],
        [
            (90, Start(1, "away", "fp1")),
            (180, Start(2, "away", "fp1")),
            (180, Show(2, "A", "away")),
        ],
        calls=2,
        counters={"saved_by_dedupe": 0},
    ),
    Scenario(
        "edge_repeated_blur_does_not_push_the_away_deadline",
        [*WORKED, "blur", ("wait", 50), "blur", ("wait", 40)],
        [(90, Start(1, "away", "fp1"))],
        calls=1,
    ),
    Scenario(
        "edge_repeated_focus_in_is_a_no_op",
        [*WORKED, "focus", "blur", ("wait", 90), "focus", "focus", ("done", 1, "A")],
        [(90, Start(1, "away", "fp1")), (90, Show(1, "A", "away"))],
        calls=1,
    ),
    Scenario(
        "edge_dismissed_banner_is_not_cleared_again",
        [*SHOWN, "dismiss", "input"],
        [(90, Start(1, "away", "fp1")), (90, Show(1, "A", "away"))],
        calls=1,
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario(scenario: Scenario) -> None:
    h = Harness(**scenario.settings)
    h.run(scenario.steps)
    why = report(h, scenario)
    assert h.log == scenario.expected, why
    assert h.calls == scenario.calls, f"model calls: {h.calls} != {scenario.calls}{why}"
    actual_counters = {name: h.counters()[name] for name in scenario.counters}
    assert actual_counters == scenario.counters, why
    if scenario.deadline is not UNCHECKED:
        assert h.schedule.next_deadline() == scenario.deadline, why


def test_scenario_names_are_unique_and_cover_every_rule() -> None:
    names = [s.name for s in SCENARIOS]
    assert len(names) == len(set(names))
    assert len(SCENARIOS) >= 25
    covered = {name.split("_", 1)[0] for name in names}
    assert covered >= {f"r{n}" for n in range(1, 15)} | {"edge"}


# -- focused tests ------------------------------------------------------------------------------


def test_harness_counts_model_calls_and_finishes_drafts() -> None:
    h = Harness()
    h.run(["focus", "turn", "blur"])
    [draft] = h.advance(90)
    assert draft == StartDraft(id=1, reason="away", fingerprint="fp1")
    assert h.calls == 1
    assert h.finish(draft, "Where you were: fixing the FK.") == [
        ShowRecap(1, "Where you were: fixing the FK.", MODEL, "away")
    ]


def test_next_deadline_is_none_when_nothing_is_armed() -> None:
    h = Harness()
    assert h.schedule.next_deadline() is None
    h.run(["focus", "turn", ("wait", 10_000)])
    assert h.schedule.next_deadline() is None
    assert h.ticks == 0, "nothing armed must mean no tick at all (no busy polling)"
    h.run(["blur", ("wait", 90), "focus", ("wait", 10_000)])
    assert h.schedule.next_deadline() is None
    assert h.ticks == 1


def test_first_focus_report_disarms_the_idle_timer_at_once() -> None:
    for report in ("focus", "blur"):
        h = Harness(auto=True)
        h.run(["turn", ("wait", 10)])
        assert h.schedule.next_deadline() == 120
        h.run([report])
        expected = None if report == "focus" else 100  # blur arms the away timer instead
        assert h.schedule.next_deadline() == expected, f"after the first {report}"


def test_next_deadline_is_the_earliest_armed_timer() -> None:
    h = Harness()
    h.run(["focus", "blur"])
    assert h.schedule.next_deadline() == 90  # away
    h.run([("wait", 10), "turn"])
    assert h.schedule.next_deadline() == 13  # post_turn, before away
    assert h.advance(3) == [StartDraft(1, "post_turn", "fp1")]
    assert h.schedule.next_deadline() == 90  # away still armed
    h.start()
    assert h.schedule.next_deadline() == 90  # a new turn drops post_turn only
    h.focus()
    assert h.schedule.next_deadline() is None

    idle = Harness()
    idle.run([("wait", 5), "turn"])
    assert idle.schedule.next_deadline() == 125  # idle
    idle.input()
    assert idle.schedule.next_deadline() is None


def test_away_timer_right_after_a_turn_end_leaves_it_to_the_debounce() -> None:
    # The away timer comes due 1 s after a turn ended: the agent loop may go on, so the
    # post-turn debounce decides (a draft now would be cancelled by the loop's next step).
    h = Harness(away_seconds=2, post_turn_seconds=5)
    h.run(["focus", "turn", "blur", ("wait", 1), "turn"])
    assert h.schedule.next_deadline() == 2
    h.advance(1)
    assert h.log == []
    assert h.schedule.next_deadline() == 6
    h.advance(4)
    assert h.log == [(6, StartDraft(1, "post_turn", "fp2"))]


def test_a_loop_step_starting_inside_the_debounce_is_never_interrupted_by_the_away_timer() -> None:
    h = Harness(away_seconds=4, post_turn_seconds=3)
    h.run(["focus", "blur", "start", ("wait", 3), "end", ("wait", 2), "start"])
    assert h.calls == 0 and not h.schedule.pending
    h.run([("wait", 10), "end", ("wait", 3)])
    assert h.log == [(18, StartDraft(1, "post_turn", "fp2"))]


def test_an_answer_of_the_turn_before_is_drafted_again_from_the_turn_that_ended() -> None:
    # during_active: a mid-turn draft is still in flight when the turn ends, so the post-turn
    # trigger finds the slot busy; the draft then lands with a recap of the turn before. It is
    # not shown: the banner says drafting… and the same draft starts again at once, from the
    # turn that ended (a shown recap covers the latest finished turn).
    h = Harness(away_seconds=10, post_turn_seconds=3, during_active=True)
    h.run(["focus", "turn", "blur", "start", ("wait", 10)])
    assert h.calls == 1
    (first,) = h.drafts()
    h.run(["end", ("wait", 3)])  # post-turn fires while the first draft is still in flight
    assert h.calls == 1
    again = StartDraft(first.id, "away", "fp2")
    assert h.finish(first, "stale text") == [ShowDrafting("away"), again]
    assert h.schedule.coming() and h.schedule.banner_visible
    assert h.done(first.id, "fresh text") == [ShowRecap(first.id, "fresh text", MODEL, "away")]
    assert h.schedule.counters.discarded_stale == 1


def test_away_timer_counts_from_the_reported_focus_time() -> None:
    h = Harness()
    h.run(["focus", "turn", ("wait", 100)])
    assert h.schedule.focus(False, at=70) == []  # the report arrives 30 s late
    assert h.schedule.focus_changed_at == 70
    assert h.schedule.next_deadline() == 160
    assert h.advance(60) == [StartDraft(1, "away", "fp1")]
    assert h.now == 160


def test_repeated_focus_report_changes_nothing() -> None:
    h = Harness()
    h.run(["focus", "turn", ("wait", 10), "blur", ("wait", 50)])
    before = h.schedule.status()
    assert h.blur() == []
    assert h.schedule.status() == before
    assert h.schedule.focus_changed_at == 10


def test_manual_refusal_is_one_clear_line_and_starts_nothing() -> None:
    h = Harness()
    h.run(["turn", "start"])
    [refusal] = h.manual()
    assert isinstance(refusal, Refuse)
    assert refusal.message.strip() and "\n" not in refusal.message
    assert "turn" in refusal.message and "running" in refusal.message
    assert h.calls == 0
    assert h.schedule.in_flight is None


def test_manual_with_a_one_off_model() -> None:
    h = Harness()
    assert h.manual("openai:gpt-4o-mini") == [
        StartDraft(1, "manual", "fp0", model="openai:gpt-4o-mini")
    ]
    assert h.schedule.status()["in_flight"] == "manual"


def test_during_active_answer_of_a_changed_session_is_still_stale() -> None:
    h = Harness(during_active=True)
    h.run(["focus", "turn", "blur", "start", ("wait", 90)])
    assert h.log == [(90, StartDraft(1, "away", "fp1"))]
    h.fingerprint("fp1+tool-call")  # the running turn recorded more activity
    assert h.done(1, "A") == []
    assert h.schedule.counters.discarded_stale == 1


def test_draft_done_for_an_unknown_id_is_ignored() -> None:
    h = Harness()
    h.run([("restored", 1), "resume"])
    assert h.done(99, "A") == []
    assert h.schedule.in_flight is not None, "the real draft is still in flight"
    assert h.done(1, "A") == [ShowRecap(1, "A", MODEL, "resume")]
    assert h.done(1, "A") == [], "a second answer for the same draft is ignored"


def test_counters_after_a_session() -> None:
    h = Harness()
    h.run(["focus", *AWAY_CYCLE, "turn", *AWAY_CYCLE, ("done", 1, "A"), *AWAY_CYCLE])
    h.run(["turn", "blur", ("wait", 90), ("fingerprint", "fp2+"), ("done", 2, "B")])
    h.run(["focus", "blur", ("wait", 90), "input"])
    assert h.counters() == {
        "drafts_started": 3,
        "saved_by_dedupe": 1,
        "skipped_no_activity": 1,
        "discarded_stale": 1,
        "cancelled": 1,
        "last_reason": "away",
        "last_shown_at": 180,
    }


def test_status_snapshot() -> None:
    h = Harness()
    h.run(["focus", "turn", "blur", "start", ("wait", 90)])
    assert h.schedule.status() == {
        "focused": False,
        "focus_changed_at": 0,
        "turn_running": True,
        "outside_turn": False,
        "pending": True,
        "in_flight": None,
        "next_deadline": None,
        "banner_visible": False,
    }


def test_cancel_in_flight_leaves_the_banner_alone() -> None:
    h = Harness()
    h.run(["focus", "turn", *AWAY_CYCLE, ("done", 1, "A"), "manual"])
    assert h.schedule.cancel_in_flight() == [CancelDraft(2)]
    assert h.schedule.cancel_in_flight() == []
    assert h.schedule.banner_visible
    assert h.done(2, "B") == []


def test_multi_step_loop_with_pending_drafts_at_the_first_step_end() -> None:
    """Rule 3 wins over rule 2 here: the pending draft starts at once, the next step cancels it."""
    h = Harness()
    h.run(["focus", "blur", "start", ("wait", 100), "end", ("wait", 1), "start"])
    assert h.log == [(100, StartDraft(1, "away", "fp1")), (101, CancelDraft(1))]
    h.run([("wait", 10), "end", ("wait", 3)])
    assert h.log[2:] == [(114, StartDraft(2, "post_turn", "fp2"))]


def test_a_deadline_at_time_zero_is_still_armed() -> None:
    h = Harness(post_turn_seconds=0)
    h.run(["focus", "blur", "turn"])  # clock at 0: post_turn deadline = 0.0
    assert h.schedule.next_deadline() == 0.0
    assert h.advance(0) == [StartDraft(1, "post_turn", "fp1")]


def test_shutdown_drops_the_pending_bit() -> None:
    h = Harness()
    h.run(["focus", "blur", "start", ("wait", 100)])
    assert h.schedule.pending
    assert h.shutdown() == []
    assert not h.schedule.pending
    assert h.schedule.next_deadline() is None


def test_every_stale_answer_is_counted() -> None:
    # %recap status reports how many answers came too late to show: for a session that moved
    # on while drafting, and one landing mid-turn after during_active was switched off (not
    # shown while the agent works).
    h = Harness(during_active=True)
    h.run(["focus", "turn", "blur", "start", ("wait", 90)])
    h.fingerprint("fp1+tool-call")
    assert h.done(1, "A") == []
    h.run([("wait", 3)])  # still away: tried again after the debounce
    assert [d.reason for d in h.drafts()] == ["away", "post_turn"]
    h.settings.during_active = False
    assert h.done(2, "B") == []
    h.run(["end", ("wait", 3), ("fingerprint", "fp2+tool-call")])
    assert h.done(3, "C") == []
    assert h.schedule.counters.discarded_stale == 3


def test_the_recap_carries_its_note_and_notice_to_the_banner() -> None:
    h = Harness()
    h.run(["focus", "turn", *AWAY_CYCLE])
    shown = h.schedule.draft_done(1, "A", MODEL, note="offline: no model", notice="new: x")
    assert shown == [ShowRecap(1, "A", MODEL, "away", "offline: no model", "new: x")]


def test_the_same_words_still_on_screen_are_not_asked_for_again() -> None:
    # A background agent adds activity without clearing the banner; the next draft reads the
    # same as what is on screen, so nothing is shown, and that state counts as covered: the
    # next absence asks the model for nothing.
    h = Harness()
    h.run(["focus", "turn", *AWAY_CYCLE, ("done", 1, "A"), "focus"])
    h.run([("fingerprint", "fp1+background"), "blur", ("wait", 90)])
    assert h.done(2, "A") == []
    assert h.schedule.banner_visible
    h.run(["focus", "blur", ("wait", 90)])
    assert h.calls == 2
    assert h.schedule.counters.saved_by_dedupe == 1


def test_every_cancelled_draft_is_counted() -> None:
    h = Harness()
    h.run(["focus", "turn", *AWAY_CYCLE, "input", "turn", *AWAY_CYCLE, "start"])
    assert h.counters()["cancelled"] == 2


# -- a shown recap covers the latest finished turn ----------------------------------------------


def one_draft(actions: list[Action]) -> StartDraft:
    [draft] = actions
    assert isinstance(draft, StartDraft), actions
    return draft


def outside_end(h: Harness) -> list[Action]:
    """An outside agent's turn ends (its stop heard through the server)."""
    h.session.completed_turns += 1
    h.session.fingerprint = f"fp{h.session.completed_turns}"
    return h._record(h.schedule.outside_turn_ended())


def test_a_manual_answer_of_the_turn_before_is_drafted_again_for_the_person_waiting() -> None:
    h = Harness()
    h.run(["focus", "turn"])
    assert h.schedule.outside_turn_started() == []
    asked = one_draft(h.manual())
    assert asked.note == OUTSIDE_NOTE and asked.turns == 1
    outside_end(h)  # the CLI agent's turn ends while %recap drafts
    [again] = h.done(asked.id, "covers turn 1")
    assert isinstance(again, StartDraft) and again.again and again.manual
    assert (again.id, again.turns, again.note) == (asked.id, 2, "")  # its stop was heard
    assert h.done(asked.id, "covers turn 2") == [
        ShowRecap(asked.id, "covers turn 2", MODEL, "manual")
    ]


def test_redrafts_of_a_draft_the_agent_keeps_outrunning_end_offline_then_stop() -> None:
    h = Harness()
    h.run(["focus", "turn"])
    h.schedule.outside_turn_started()
    draft = one_draft(h.manual())
    models = []
    for _ in range(MAX_REDRAFTS + MAX_OFFLINE_REDRAFTS):
        outside_end(h)
        h.schedule.outside_turn_started()
        [again] = h.done(draft.id, "behind")
        assert isinstance(again, StartDraft)
        models.append(again.model)
    assert models == [None] * MAX_REDRAFTS + ["offline"] * MAX_OFFLINE_REDRAFTS
    outside_end(h)
    assert h.done(draft.id, "behind") == []  # dropped rather than shown stale
    assert h.schedule.in_flight is None


def test_a_banner_outlived_by_an_outside_turn_makes_way_for_the_newer_turn() -> None:
    # Shown while the CLI agent worked; its turn then ends. Here: the offline recap of it,
    # written at once. Away: drafting… until the post-turn recap of it.
    h = Harness()
    h.run(["focus", "turn"])
    h.schedule.outside_turn_started()
    draft = one_draft(h.manual())
    assert h.done(draft.id, "A")[0] == ShowRecap(draft.id, "A", MODEL, "manual")
    [offline] = outside_end(h)
    assert isinstance(offline, StartDraft) and offline.model == "offline" and offline.turns == 2

    h = Harness()
    h.run(["focus", "turn"])
    h.schedule.outside_turn_started()
    draft = one_draft(h.manual())
    h.done(draft.id, "A")
    h.blur()
    assert outside_end(h) == [ShowDrafting("post_turn")]
    assert h.schedule.coming()
    h.run([("wait", 3)])
    assert h.drafts()[-1] == StartDraft(2, "post_turn", "fp2")


def test_a_banner_covering_the_latest_turn_stays_when_an_outside_turn_ends_without_news() -> None:
    h = Harness()
    h.run(["focus", "turn"])
    draft = one_draft(h.manual())
    h.done(draft.id, "A")
    assert h.schedule.outside_turn_ended() == []  # a silent turn's end, nothing finished
    assert h.schedule.banner_visible


def test_with_auto_off_a_banner_outlived_by_a_turn_is_cleared() -> None:
    h = Harness()
    h.run(["focus", "turn", ("auto", False)])
    h.schedule.outside_turn_started()
    draft = one_draft(h.manual())
    h.done(draft.id, "A")
    assert outside_end(h) == [ClearBanner()]
