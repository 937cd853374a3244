"""A CLI agent's turn with no stop (Claude Code sends none when the person interrupts it).

The pieces a hook event passes through after the spool, as they are: the server's
:class:`~jupyter_recap.hooks.sessions.HookSessions` (which ends a turn silent for its
``silence``), the kernel's :class:`~jupyter_recap.ipython.reporting.AgentReporting` writing
the entries into the transcript, the :class:`~jupyter_recap.ipython.triggers.TriggerRunner`
routing them to the :class:`~jupyter_recap.schedule.Schedule`, and the agents-panel report the
kernel builds from the transcript. A turn only hooks know of never refuses ``%recap``, holds
automatic recaps only while the agent is heard from, and is never "running" past the silence.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from outsidekit import FakeSink
from schedulefakes import Settings
from strength import examples

from jupyter_recap.focus.board import AgentBoard
from jupyter_recap.focus.report import CellCounts, agent_report
from jupyter_recap.focus.validate import parse_report
from jupyter_recap.hooks.events import CLAUDE_CODE, HookEvent, event_from_json, normalise
from jupyter_recap.hooks.sessions import NO_STOP, Delivery, HookSessions
from jupyter_recap.ipython.reporting import AgentReporting
from jupyter_recap.ipython.triggers import Surface, TriggerRunner
from jupyter_recap.pipeline.stats import RecapStats
from jupyter_recap.record.transcript import Transcript
from jupyter_recap.schedule import (
    OUTSIDE_HOLD_SECONDS,
    OUTSIDE_NOTE,
    Refuse,
    Schedule,
    ShowRecap,
    StartDraft,
)
from jupyter_recap.server.outside.hooks import HookIntake
from jupyter_recap.settings import Recap
from jupyter_recap.stores.hookspool import append
from jupyter_recap.stores.workstate import WorkState

SILENCE = 120.0
ROOT = "/home/me/analysis"
NOTEBOOK = f"{ROOT}/churn.ipynb"
SESSION = "7d3c1a52-90b4-4e1f-a8f2-3c5d9e0b6a11"


def payload(kind: str, root: str = ROOT) -> dict[str, Any]:
    """A Claude Code hook payload of one kind of step of its loop, in folder ``root``."""
    common = {
        "session_id": SESSION,
        "transcript_path": f"/home/someone/.claude/projects/-work/{SESSION}.jsonl",
        "cwd": root,
        "permission_mode": "default",
    }
    if kind == "prompt":
        return {**common, "hook_event_name": "UserPromptSubmit", "prompt": "fix the churn cell"}
    if kind in ("edit", "edit_other"):
        inputs = {
            "notebook_path": "churn.ipynb" if kind == "edit" else "other.ipynb",
            "cell_id": "cell-1",
            "new_source": "import pandas as pd\ndf = df.dropna()",
            "edit_mode": "replace",
        }
        return {
            **common,
            "hook_event_name": "PostToolUse",
            "tool_name": "NotebookEdit",
            "tool_input": inputs,
            "tool_response": {"new_source": inputs["new_source"], "cell_id": "cell-1"},
        }
    if kind == "bash":
        return {
            **common,
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "pytest -q"},
            "tool_response": {"stdout": "3 passed", "stderr": ""},
        }
    if kind == "stop":
        return {**common, "hook_event_name": "Stop", "last_assistant_message": "Fixed."}
    assert kind == "end"
    return {**common, "hook_event_name": "SessionEnd", "reason": "other"}


def spooled(kind: str, at: float) -> HookEvent:
    """The event the server reads back from the spool for one payload."""
    event = normalise(payload(kind), at=at)
    assert event is not None
    read = event_from_json(event.to_json())
    assert read is not None
    return read


class Kernel:
    """The kernel's end of it, as the extension wires it: outside entries go into the
    transcript through the reporting, whose turns reach the schedule through the runner."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.transcript = Transcript()
        self.settings = Recap(auto=False)
        self.shown: list[ShowRecap] = []
        surface = Surface(show=self.shown.append, clear=lambda: None, drafting=lambda _: None)
        self.runner = TriggerRunner(
            self.transcript, self.settings, RecapStats(), surface, clock=lambda: self.now
        )
        self.runner.start()
        self.cells = CellCounts()
        self.reporting = AgentReporting(
            None,
            self.transcript,
            self.cells,
            WorkState(),
            focus=lambda focused, at: None,
            typed=lambda: None,
            shown=lambda: None,
            drafting=lambda: False,
            outside=self.runner.outside,
        )

    @property
    def schedule(self) -> Schedule:
        return self.runner.schedule

    def receive(self, deliveries: list[Delivery]) -> None:
        for delivery in deliveries:
            if delivery.notebook == NOTEBOOK and delivery.entries:
                self.reporting.outside_entries(list(delivery.entries), False)

    def turn(self) -> str | None:
        """The turn state the agents panel gets from this kernel."""
        return agent_report(self.transcript, cells=self.cells)["turn"]

    def recap_refused(self) -> bool:
        """Whether ``%recap`` would be refused now (the draft it starts is taken back)."""
        actions = self.schedule.manual()
        self.schedule.cancel_in_flight()
        return any(isinstance(action, Refuse) for action in actions)

    def close(self) -> None:
        self.runner.stop()


@pytest.fixture
def kernel() -> Iterator[Kernel]:
    made = Kernel()
    try:
        yield made
    finally:
        made.close()


# -- one interrupted turn, step by step ------------------------------------------------------------


def test_a_turn_with_no_stop_never_locks_recap_and_ends_at_its_silence(kernel: Kernel) -> None:
    sessions = HookSessions(silence=SILENCE)
    kernel.receive(sessions.feed(spooled("prompt", 1000.0)))
    kernel.receive(sessions.feed(spooled("edit", 1005.0)))
    kernel.receive(sessions.quiet(1006.0))
    # Claude Code is working on the notebook: the panel says so, automatic recaps wait...
    assert kernel.turn() == "running"
    assert (kernel.schedule.turn_running, kernel.schedule.outside_running) == (False, True)
    assert kernel.schedule.holding
    # ...but %recap answers, and says the turn has no stop yet.
    [draft] = kernel.schedule.manual()
    assert isinstance(draft, StartDraft) and draft.note == OUTSIDE_NOTE
    kernel.schedule.cancel_in_flight()
    # The person interrupts Claude Code: no Stop comes. Just short of the silence, nothing yet.
    assert sessions.quiet(1005.0 + SILENCE - 1) == []
    ended = sessions.quiet(1005.0 + SILENCE)
    assert [(d.notebook, d.entries) for d in ended] == [
        (NOTEBOOK, [{"kind": "outcome", "text": "aborted", "name": None, "error": NO_STOP}])
    ]
    kernel.receive(ended)
    assert kernel.turn() == "aborted"
    assert agent_report(kernel.transcript, cells=kernel.cells)["error"] == NO_STOP
    assert not kernel.schedule.holding
    assert not kernel.recap_refused()
    # Once only: the next polls say nothing more, nor does the next prompt.
    assert sessions.quiet(1005.0 + 3 * SILENCE) == []
    assert sessions.feed(spooled("prompt", 2000.0)) == []


def test_a_turn_that_goes_on_after_its_silence_still_reaches_the_notebook() -> None:
    """A tool that ran longer than the silence answers after it: its call and the stop land,
    after an event saying the agent went on; the stop ends the turn as ok."""
    sessions = HookSessions(silence=SILENCE)
    sessions.feed(spooled("prompt", 0.0))
    sessions.feed(spooled("edit", 1.0))
    assert len(sessions.quiet(1.0 + SILENCE)) == 1
    late = sessions.feed(spooled("bash", 300.0))
    assert [(e["kind"], e["name"]) for d in late for e in d.entries] == [
        ("event", None),
        ("tool_call", "Bash"),
        ("tool_result", "Bash"),
    ]
    assert late[0].entries[0]["text"] == (
        f"{CLAUDE_CODE} went on after a silence: the turn had not been interrupted."
    )
    stop = sessions.feed(spooled("stop", 301.0))
    assert [(e["kind"], e["text"]) for d in stop for e in d.entries] == [
        ("assistant", "Fixed."),
        ("outcome", "ok"),
    ]


def test_a_stop_that_comes_late_says_the_agent_went_on(kernel: Kernel) -> None:
    sessions = HookSessions(silence=SILENCE)
    for kind, at in (("prompt", 0.0), ("edit", 1.0)):
        kernel.receive(sessions.feed(spooled(kind, at)))
    kernel.receive(sessions.quiet(200.0))
    kernel.receive(sessions.feed(spooled("stop", 250.0)))
    kinds = [(e.kind, e.outcome) for e in kernel.transcript.entries]
    assert kinds[-4:] == [
        ("outcome", "aborted"),
        ("event", None),
        ("assistant", None),
        ("outcome", "ok"),
    ]
    assert kernel.turn() == "ok"


def test_a_session_forgotten_mid_turn_ends_its_turn_in_its_notebooks() -> None:
    sessions = HookSessions(max_sessions=1, silence=SILENCE)
    sessions.feed(spooled("prompt", 0.0))
    sessions.feed(spooled("edit", 1.0))
    other = HookEvent(agent="Codex", session="another", kind="prompt", at=2.0, text="hello")
    forgotten = sessions.feed(other)
    assert [(d.notebook, d.entries[0]["error"]) for d in forgotten] == [(NOTEBOOK, NO_STOP)]


# -- the schedule ----------------------------------------------------------------------------------


def schedule(**options: Any) -> tuple[Schedule, list[float], dict[str, Any]]:
    clock = [0.0]
    session: dict[str, Any] = {"fingerprint": "fp0", "turns": 0}
    made = Schedule(
        Settings(**options),
        clock=lambda: clock[0],
        fingerprint=lambda: session["fingerprint"],
        completed_turns=lambda: session["turns"],
    )
    return made, clock, session


def test_an_outside_turn_holds_automatic_recaps_until_it_ends_then_drafts_if_away() -> None:
    plan, clock, session = schedule()
    session["turns"] = 1
    plan.focus(False)
    plan.outside_turn_started()
    clock[0] = 90.0
    assert plan.tick() == []  # away long enough, but the agent works: the draft waits
    assert plan.pending
    session["fingerprint"], session["turns"] = "fp-aborted", 2
    [draft] = plan.outside_turn_ended("aborted")  # its silence, told by the server
    assert draft == StartDraft(1, "away", "fp-aborted")


def test_an_outside_turn_whose_end_was_never_heard_stops_holding_recaps() -> None:
    """The server's "ended by silence" can be lost (the kernel's feed was reconnecting): the
    schedule stops waiting for that turn on its own, much later than the server would."""
    plan, clock, session = schedule()
    session["turns"] = 1
    plan.focus(False)
    plan.outside_turn_started()
    clock[0] = 90.0
    assert plan.tick() == [] and plan.holding
    clock[0] = OUTSIDE_HOLD_SECONDS + 1.0
    assert not plan.holding
    plan.focus(True)
    plan.focus(False)  # leaves again: the away timer may draft now
    clock[0] += 90.0
    [draft] = plan.tick()
    assert isinstance(draft, StartDraft) and draft.reason == "away"


def test_an_outside_turn_starting_never_cancels_the_recap_the_person_asked_for() -> None:
    plan, _, session = schedule()
    session["turns"] = 1
    [draft] = plan.manual()
    assert isinstance(draft, StartDraft) and draft.note == ""
    assert plan.outside_turn_started() == []
    assert plan.draft_done(draft.id, "A recap.", "m") == [
        ShowRecap(draft.id, "A recap.", "m", "manual")
    ]


def test_the_kernel_s_own_turn_still_refuses_recap() -> None:
    """Its cell holds the shell anyway, and a recap would be stale the moment it lands."""
    plan, _, _ = schedule()
    plan.outside_turn_started()
    plan.turn_started()
    [refusal] = plan.manual()
    assert isinstance(refusal, Refuse)
    plan.turn_ended()
    assert plan.holding  # the outside turn still goes on
    assert isinstance(plan.manual()[0], StartDraft)


# -- the server's intake -------------------------------------------------------------------------


@pytest.mark.usefixtures("own_loop")
def test_the_intake_ends_a_silent_turn_on_a_poll_with_nothing_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_RECAP_HOME", str(tmp_path / "store"))
    root = tmp_path / "root"
    root.mkdir()
    # The agents panel has one notebook row, of kernel k1.
    server = FakeSink(root, kernels={"churn.ipynb": ["k1"]})
    intake = HookIntake(server, silence=50.0)
    assert intake.sessions.silence == 50.0  # c.RecapServer.hook_silence_seconds
    intake.start()
    try:
        now = time.time()
        for kind, at in (("prompt", now - 60), ("edit", now - 40)):
            event = normalise(payload(kind, str(root)), at=at)
            assert event is not None
            append(event.to_json())
        intake.poll()
        kinds = [entry["kind"] for _, entries, _ in server.entries for entry in entries]
        assert kinds == ["user", "event", "tool_call", "tool_result"]
        # Nothing new in the spool: a poll still ends the turn, once it is silent long enough.
        server.entries.clear()
        intake.poll()
        assert server.entries == [], "heard 40 s ago: a silence of 50 s is not over yet"
        intake.sessions.silence = 30.0
        intake.poll()
        intake.poll()
        assert [entries for _, entries, _ in server.entries] == [
            [{"kind": "outcome", "text": "aborted", "name": None, "error": NO_STOP}]
        ]
    finally:
        intake.stop()


# -- the agents panel ------------------------------------------------------------------------------


def test_the_row_of_a_silenced_turn_stops_running_and_says_why(kernel: Kernel) -> None:
    board = AgentBoard(facts=lambda kernel_id: (False, "idle"))
    sessions = HookSessions(silence=SILENCE)
    for kind, at in (("prompt", 0.0), ("edit", 1.0)):
        kernel.receive(sessions.feed(spooled(kind, at)))
    board.report("k1", parse_report(dict(agent_report(kernel.transcript, cells=kernel.cells))))
    running = board.row("k1")
    assert running is not None and running["state"] == "running"
    kernel.receive(sessions.quiet(1.0 + SILENCE))
    board.report("k1", parse_report(dict(agent_report(kernel.transcript, cells=kernel.cells))))
    row = board.row("k1")
    assert row is not None
    assert (row["state"], row["turn"], row["error"], row["needs_you"]) == (
        "idle",
        "aborted",
        NO_STOP,
        None,
    )


# -- any order of events ---------------------------------------------------------------------------

STEPS = st.lists(
    st.tuples(
        st.sampled_from(["prompt", "edit", "edit_other", "bash", "stop", "end", "wait"]),
        st.floats(min_value=0.0, max_value=3 * SILENCE, allow_nan=False),
    ),
    max_size=30,  # under MAX_CALLS: every call of a turn is sent
)


@settings(max_examples=examples(200), deadline=None)
@given(steps=STEPS)
@example(steps=[("prompt", 0.0), ("edit", 1.0), ("wait", SILENCE)])  # silent: ends on time
@example(steps=[("prompt", 0.0), ("edit", 1.0), ("wait", SILENCE - 0.5), ("edit", SILENCE)])
def test_in_any_order_of_events_recap_is_never_locked_nor_a_turn_running_past_its_silence(
    steps: list[tuple[str, float]],
) -> None:
    kernel = Kernel()
    sessions = HookSessions(silence=SILENCE)
    heard: float | None = None
    # What the session holds, as far as the notebook is concerned: asks not yet given to a
    # notebook's turn, whether its turn touched a notebook and this one, and whether this
    # notebook's record has that turn going on (it got the asks) and had it ended by silence.
    asks = touched = mine = told = silenced = False
    try:
        for kind, gap in steps:
            kernel.now += gap
            # The server polls every second: a silence that passed before this step is told.
            kernel.receive(sessions.quiet(kernel.now))
            if heard is not None and told and kernel.now - heard >= SILENCE:
                silenced = True
            if kind != "wait":
                kernel.receive(sessions.feed(spooled(kind, kernel.now)))
                heard = kernel.now
            if kind == "edit" and not mine:
                mine, told = True, asks
            if kind in ("edit", "edit_other"):
                touched = True
            elif kind == "end" or (kind in ("prompt", "stop") and touched):
                asks = touched = mine = told = silenced = False
            asks = asks or kind == "prompt"
            kernel.receive(sessions.quiet(kernel.now))

            assert not kernel.recap_refused()
            if heard is not None and kernel.now - heard >= SILENCE:
                assert kernel.turn() != "running"
                assert not kernel.schedule.holding
            elif told and not silenced:
                # Heard from within the silence: the turn is told as going on.
                assert kernel.turn() == "running"
                assert kernel.schedule.outside_running
    finally:
        kernel.close()
