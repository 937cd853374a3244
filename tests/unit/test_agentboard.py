"""The agents board on its own: who needs the person, notices, order, bounds, kernel events
and the validation of a kernel's report (fake clock, fake focus facts)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from manualclock import Clock

from jupyter_recap.focus.board import MAX_ROW_EVENTS, AgentBoard
from jupyter_recap.focus.validate import (
    ERROR_CHARS,
    ID_CHARS,
    MAX_LINKS,
    MAX_TASKS,
    Report,
    ReportError,
    parse_report,
)
from jupyter_recap.wire import AgentRow, TurnState


class Facts:
    """The focus hub's view of each kernel: (aggregate focus, execution state)."""

    def __init__(self) -> None:
        self.focused: dict[str, bool | None] = {}
        self.execution: dict[str, str] = {}

    def __call__(self, kernel_id: str) -> tuple[bool | None, str]:
        return self.focused.get(kernel_id), self.execution.get(kernel_id, "idle")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def facts() -> Facts:
    return Facts()


@pytest.fixture
def changes() -> list[tuple[str, str, int]]:
    return []


@pytest.fixture
def board(clock: Clock, facts: Facts, changes: list[tuple[str, str, int]]) -> AgentBoard:
    return AgentBoard(
        facts=facts, on_change=lambda *change: changes.append(change), max_agents=8, clock=clock
    )


def running(at: float) -> Report:
    return Report(turn="running", turn_started=at, last_activity=at)


def ended(turn: TurnState, at: float, error: str | None = None) -> Report:
    return Report(turn=turn, turn_started=at - 5, turn_ended=at, error=error, last_activity=at)


def row(board: AgentBoard, kernel_id: str) -> AgentRow:
    found = board.row(kernel_id)
    assert found is not None
    return found


# -- who needs the person ----------------------------------------------------------------------


@pytest.mark.parametrize("away", [False, None])
@pytest.mark.parametrize(("turn", "needs"), [("ok", "finished"), ("errored", "errored")])
def test_a_turn_ending_while_away_needs_the_person(
    board: AgentBoard, facts: Facts, away: bool | None, turn: TurnState, needs: str
) -> None:
    facts.focused["k"] = away
    board.report("k", running(100.0))
    assert row(board, "k")["notice"] == 0
    board.report("k", ended(turn, 110.0, "ValueError: bad" if turn == "errored" else None))
    r = row(board, "k")
    assert (r["needs_you"], r["state"], r["notice"]) == (needs, needs, 1)
    assert board.needing() == 1


@pytest.mark.parametrize("turn", ["ok", "errored"])
def test_a_turn_ending_while_looked_at_needs_nobody(
    board: AgentBoard, facts: Facts, turn: TurnState
) -> None:
    facts.focused["k"] = True
    board.report("k", running(100.0))
    board.report("k", ended(turn, 110.0))
    r = row(board, "k")
    assert r["needs_you"] is None
    assert r["notice"] == 0
    assert r["state"] == ("errored" if turn == "errored" else "idle")
    assert board.needing() == 0


@pytest.mark.parametrize("away", [False, None])
def test_an_aborted_turn_never_needs_the_person(
    board: AgentBoard, facts: Facts, away: bool | None
) -> None:
    facts.focused["k"] = away
    board.report("k", running(100.0))
    board.report("k", ended("aborted", 110.0))
    r = row(board, "k")
    assert (r["needs_you"], r["notice"], r["state"], r["turn"]) == (None, 0, "idle", "aborted")


def test_two_turns_ending_in_one_absence_give_one_notice(board: AgentBoard, facts: Facts) -> None:
    facts.focused["k"] = False
    board.report("k", ended("errored", 110.0, "boom"))
    assert (row(board, "k")["needs_you"], row(board, "k")["notice"]) == ("errored", 1)
    board.report("k", running(120.0))
    assert row(board, "k")["state"] == "running"
    board.report("k", ended("ok", 130.0))
    r = row(board, "k")
    assert r["notice"] == 1  # still the same absence
    assert (r["needs_you"], r["state"]) == ("finished", "finished")  # follows the latest turn


def test_a_new_absence_gives_a_new_notice(board: AgentBoard, facts: Facts) -> None:
    facts.focused["k"] = False
    board.report("k", ended("ok", 110.0))
    facts.focused["k"] = True
    board.focus("k", True)
    facts.focused["k"] = False
    board.focus("k", False)
    board.report("k", ended("ok", 130.0))
    assert row(board, "k")["notice"] == 2


def test_focus_false_or_none_does_not_end_the_absence(board: AgentBoard, facts: Facts) -> None:
    facts.focused["k"] = False
    board.report("k", ended("ok", 110.0))
    board.focus("k", False)
    board.focus("k", None)
    board.report("k", ended("ok", 130.0))
    r = row(board, "k")
    assert (r["needs_you"], r["notice"]) == ("finished", 1)


@pytest.mark.parametrize(("turn", "after"), [("ok", "idle"), ("errored", "errored")])
def test_looking_at_the_notebook_clears_needs_you_and_announces_it(
    board: AgentBoard,
    facts: Facts,
    changes: list[tuple[str, str, int]],
    turn: TurnState,
    after: str,
) -> None:
    facts.focused["k"] = False
    board.report("k", ended(turn, 110.0))
    seen = len(changes)
    facts.focused["k"] = True
    board.focus("k", True)
    r = row(board, "k")
    assert (r["needs_you"], r["state"], r["notice"]) == (None, after, 1)
    assert changes[seen:] == [("k", "update", board.version)]
    assert board.needing() == 0


def test_looking_at_a_notebook_that_needs_nothing_announces_nothing(
    board: AgentBoard, facts: Facts, changes: list[tuple[str, str, int]]
) -> None:
    facts.focused["k"] = True
    board.report("k", ended("ok", 110.0))  # ended while looked at
    facts.focused["k"] = False
    board.focus("k", False)  # away now, but nothing ended since
    seen, version = len(changes), board.version
    board.focus("k", True)
    board.focus("nobody", True)  # no row: ignored
    assert len(changes) == seen and board.version == version
    assert "nobody" not in board


def test_repeated_identical_reports_do_not_notify_again(board: AgentBoard, facts: Facts) -> None:
    facts.focused["k"] = False
    report = ended("ok", 110.0)
    board.report("k", report)
    facts.focused["k"] = True
    board.focus("k", True)
    facts.focused["k"] = False
    board.focus("k", False)
    for _ in range(3):  # the kernel re-sends its state (feed restart, activity)
        board.report("k", report)
    r = row(board, "k")
    assert (r["needs_you"], r["notice"]) == (None, 1)


# -- order and announcements -------------------------------------------------------------------


def test_rows_put_needing_first_then_running_then_by_activity(
    board: AgentBoard, facts: Facts, clock: Clock
) -> None:
    for kernel in ("idle-old", "idle-new", "run-old", "run-new", "need-old", "need-new"):
        facts.focused[kernel] = False
    board.report("idle-old", ended("aborted", 50.0))
    board.report("idle-new", Report(turn="ok", turn_ended=None, last_activity=300.0))
    board.report("run-old", running(100.0))
    board.report("run-new", running(200.0))
    board.report("need-new", ended("ok", 150.0))
    board.report("need-old", ended("errored", 120.0))
    clock.tick()
    board.report("fresh", Report())  # no activity: ordered by when the server saw it
    assert [r["kernel_id"] for r in board.rows()] == [
        "need-old",  # errored while away: before a turn that finished (the attention order)
        "need-new",
        "run-new",
        "run-old",
        "fresh",  # updated at 1001 > any last_activity
        "idle-new",
        "idle-old",
    ]


def test_changes_are_announced_with_a_strictly_increasing_version(
    board: AgentBoard, facts: Facts, changes: list[tuple[str, str, int]]
) -> None:
    facts.focused["a"] = False
    board.report("a", running(1.0))
    board.report("b", running(1.0))
    board.set_path("a", "work/a.ipynb")
    board.report("a", ended("ok", 2.0))
    board.focus("a", True)
    board.kernel_event("b", "long_cell", seconds=75.0, failed=False)
    board.forget("b")
    board.forget("b")  # already gone: nothing
    board.forget("never")
    assert [(k, action) for k, action, _ in changes] == [
        ("a", "update"),
        ("b", "update"),
        ("a", "update"),
        ("a", "update"),
        ("a", "update"),
        ("b", "update"),
        ("b", "remove"),
    ]
    versions = [version for _, _, version in changes]
    assert versions == sorted(set(versions))
    assert versions == list(range(1, len(changes) + 1))  # every change counts
    assert board.version == len(changes)
    assert board.row("b") is None and board.kernel_ids() == {"a"} and len(board) == 1


def test_the_oldest_row_goes_when_the_board_is_full(
    clock: Clock, facts: Facts, changes: list[tuple[str, str, int]]
) -> None:
    board = AgentBoard(
        facts=facts, on_change=lambda *c: changes.append(c), max_agents=3, clock=clock
    )
    for kernel in ("k1", "k2", "k3"):
        board.report(kernel, running(clock.tick()))
    clock.tick()
    board.report("k1", running(clock.now))  # k1 is recent again: k2 is now the oldest
    changes.clear()
    clock.tick()
    board.report("k4", running(clock.now))
    assert board.kernel_ids() == {"k1", "k3", "k4"}
    assert [(k, action) for k, action, _ in changes] == [("k4", "update"), ("k2", "remove")]
    assert len(board.rows()) == 3
    assert list(board.left_out) == ["k2"]


def test_a_full_board_drops_idle_rows_before_those_that_need_the_person(
    clock: Clock, facts: Facts
) -> None:
    """Regression: the least recently updated row went whatever its state, so at 70 kernels
    notebooks that had finished while the person was away left the panel."""
    board = AgentBoard(facts=facts, max_agents=2, clock=clock)
    facts.focused.update(needs=False, idle=False, new=False)
    board.report("needs", ended("ok", clock.tick()))  # finished while away: needs the person
    board.report("idle", Report(turn="ok", last_activity=clock.tick()))
    board.report("new", Report(last_activity=clock.tick()))  # loads the extension, third
    assert board.kernel_ids() == {"needs", "new"}
    assert row(board, "needs")["needs_you"] == "finished"
    assert list(board.left_out) == ["idle"]
    # Only rows that need the person: the least recently updated of them goes.
    board.report("new", ended("errored", clock.tick()))
    board.report("third", ended("ok", clock.tick()))
    assert board.kernel_ids() == {"new", "third"}
    assert list(board.left_out) == ["idle", "needs"]
    # A kernel that is gone is no longer left out; one that reports again comes back.
    board.keep_left_out({"needs"})
    assert list(board.left_out) == ["needs"]
    board.forget("needs")
    assert list(board.left_out) == []


def test_a_dropped_row_that_comes_back_is_noticed_again(clock: Clock, facts: Facts) -> None:
    """Regression: a row that came back started counting notices at 1 again, which the page
    had already notified: it never notified that notebook again."""
    board = AgentBoard(facts=facts, max_agents=1, clock=clock)
    facts.focused.update(a=False, b=False, c=False)
    board.report("a", ended("ok", clock.tick()))
    assert row(board, "a")["notice"] == 1
    board.report("b", ended("ok", clock.tick()))  # both need the person: "a" is older, it goes
    assert board.kernel_ids() == {"b"}
    board.forget("b")
    board.report("a", ended("ok", clock.tick()))  # back in the same absence: no new notice
    assert row(board, "a")["notice"] == 1
    board.report("c", ended("ok", clock.tick()))  # "a" goes again
    assert "a" not in board.kernel_ids()
    board.focus("a", True)  # the person looks at its notebook, then leaves; a turn ends
    board.forget("c")
    board.report("a", ended("ok", clock.tick()))
    assert row(board, "a")["notice"] == 2  # a new notice: the page notifies it


# -- kernel events ---------------------------------------------------------------------------


def test_a_restart_aborts_the_running_turn_until_the_kernel_is_up(
    board: AgentBoard, facts: Facts, clock: Clock
) -> None:
    facts.focused["k"] = False
    board.report("k", running(100.0))
    clock.now = 2_000.0
    board.kernel_event("k", "restarted", state="restarting", crashed=True)
    r = row(board, "k")
    assert (r["turn"], r["error"], r["turn_ended"]) == ("aborted", "the kernel restarted", 2_000.0)
    assert (r["state"], r["execution_state"]) == ("restarting", "restarting")
    assert r["needs_you"] is None  # an aborted turn is no news to act on
    assert r["events"] == [{"type": "restarted", "at": 2_000.0, "crashed": True}]
    board.kernel_up("k")
    r = row(board, "k")
    assert (r["state"], r["execution_state"], r["turn"]) == ("idle", "idle", "aborted")


def test_a_report_after_a_restart_also_means_the_kernel_is_up(board: AgentBoard) -> None:
    board.report("k", running(100.0))
    board.kernel_event("k", "restarted", state="restarting", crashed=False)
    board.report("k", Report())
    assert row(board, "k")["state"] == "idle"


def test_a_dead_kernel_stays_dead(board: AgentBoard, clock: Clock) -> None:
    board.report("k", running(100.0))
    board.kernel_event("k", "died", state="dead")
    assert (row(board, "k")["turn"], row(board, "k")["error"]) == ("aborted", "the kernel died")
    board.kernel_up("k")
    board.report("k", running(200.0))
    r = row(board, "k")
    assert (r["state"], r["execution_state"]) == ("dead", "dead")


def test_a_restart_between_turns_keeps_the_finished_turn(board: AgentBoard) -> None:
    board.report("k", ended("ok", 110.0))
    board.kernel_event("k", "restarted", state="restarting", crashed=False)
    r = row(board, "k")
    assert (r["turn"], r["error"], r["turn_ended"]) == ("ok", None, 110.0)


def test_row_events_keep_only_the_newest(board: AgentBoard, clock: Clock) -> None:
    board.report("k", Report())
    for number in range(MAX_ROW_EVENTS + 5):
        clock.now = 1_000.0 + number
        board.kernel_event("k", "long_cell", seconds=60.0 + number, failed=number % 2 == 1)
    events = row(board, "k")["events"]
    assert len(events) == MAX_ROW_EVENTS
    assert [e["seconds"] for e in events] == [60.0 + n for n in range(5, MAX_ROW_EVENTS + 5)]
    assert events[-1] == {
        "type": "long_cell",
        "at": 1_000.0 + MAX_ROW_EVENTS + 4,
        "seconds": 60.0 + MAX_ROW_EVENTS + 4,
        "failed": False,
    }


def test_events_for_a_kernel_without_a_row_are_ignored(
    board: AgentBoard, changes: list[tuple[str, str, int]]
) -> None:
    board.kernel_event("k", "died", state="dead")
    board.kernel_up("k")
    board.set_path("k", "a.ipynb")
    assert (board.row("k"), board.path("k"), changes, board.version) == (None, None, [], 0)
    board.report("k", Report())
    assert row(board, "k")["events"] == [] and row(board, "k")["state"] == "idle"


def test_set_path_gives_the_path_and_the_name(
    board: AgentBoard, changes: list[tuple[str, str, int]]
) -> None:
    board.report("k", Report())
    assert (row(board, "k")["path"], row(board, "k")["name"]) == ("", "")
    board.set_path("k", "work/billing.ipynb")
    assert (row(board, "k")["path"], row(board, "k")["name"]) == (
        "work/billing.ipynb",
        "billing.ipynb",
    )
    assert board.path("k") == "work/billing.ipynb"
    seen = len(changes)
    board.set_path("k", "work/billing.ipynb")  # the same: no change
    board.set_path("k", "")  # unknown: keeps the known path
    assert len(changes) == seen and board.path("k") == "work/billing.ipynb"
    board.set_path("k", "top.ipynb")
    assert row(board, "k")["name"] == "top.ipynb"


def test_a_notebook_reopened_in_a_new_kernel_replaces_its_dead_kernels_row(
    board: AgentBoard, changes: list[tuple[str, str, int]]
) -> None:
    for kernel, path in (("dead", "a.ipynb"), ("dead-b", "b.ipynb"), ("live", "a.ipynb")):
        board.report(kernel, running(100.0))
        board.set_path(kernel, path)
    board.kernel_event("dead", "died", state="dead")
    board.kernel_event("dead-b", "died", state="dead")
    assert (board.is_dead("dead"), board.is_dead("live"), board.is_dead("nobody")) == (
        True,
        False,
        False,
    )
    board.report("new", Report())
    changes.clear()
    board.set_path("new", "a.ipynb")
    # The dead kernel's row of that notebook goes (announced); a live kernel on the same
    # notebook and the dead kernel of another notebook stay.
    assert ("dead", "remove", board.version - 1) in changes
    assert board.kernel_ids() == {"dead-b", "live", "new"}


def test_rows_needing_the_person_put_the_latest_turn_end_first(
    board: AgentBoard, facts: Facts
) -> None:
    for kernel in ("early", "late"):
        facts.focused[kernel] = False
    board.report("early", ended("ok", 120.0))
    board.report("late", ended("errored", 150.0))
    assert [r["kernel_id"] for r in board.rows()] == ["late", "early"]


def test_a_row_carries_the_focus_facts(board: AgentBoard, facts: Facts) -> None:
    facts.focused["k"] = True
    facts.execution["k"] = "busy"
    board.report("k", running(1.0))
    r = row(board, "k")
    assert (r["focused"], r["execution_state"], r["updated"]) == (True, "busy", 1_000.0)


# -- parse_report ----------------------------------------------------------------------------

FULL: dict[str, Any] = {
    "turn": "errored",
    "turn_started": 1795968398.43,
    "turn_ended": 1795968410.1,
    "error": "ValueError: bad column",
    "last_activity": 1795968410.1,
    "recap": {
        "text": "Fixed the join; rerun In[12] next.",
        "model": "offline",
        "at": 1795968415.0,
        "links": [{"start": 20, "end": 27, "cell_id": "c-7"}],
    },
    "drafting": True,
    "progress": {"done": 2, "total": 5},
    "stop_cell": {"cell_id": "c-9", "label": "In[14]", "failed": True},
}
TOP_FIELDS = list(FULL)


def read(body: object) -> tuple[Report, list[str]]:
    """The report of a body (its ``ignored`` emptied, to compare it) and its dropped lines."""
    report = parse_report(body)
    return dataclasses.replace(report, ignored=()), list(report.ignored)


def parsed(body: object) -> Report:
    """The report of a body that has nothing to drop."""
    report, ignored = read(body)
    assert ignored == []
    return report


def test_a_full_report_round_trips_into_the_row(board: AgentBoard, facts: Facts) -> None:
    facts.focused["k"] = True
    board.report("k", parsed({**FULL, "future_field": [1, 2], "another": {"x": None}}))
    r: dict[str, object] = dict(row(board, "k"))
    for name, value in FULL.items():
        assert r[name] == value, name
    assert r["state"] == "errored"


def test_an_empty_report_is_all_defaults() -> None:
    assert parsed({}) == Report()
    assert parsed({"recap": None, "progress": None, "stop_cell": None}) == Report()


def test_optional_parts_of_a_report_get_defaults() -> None:
    report = parsed({"recap": {"text": ""}, "stop_cell": {"cell_id": "c"}})
    assert report.recap == {"text": "", "model": "", "at": None, "links": []}
    assert report.stop_cell == {"cell_id": "c", "label": "", "failed": False}
    assert parsed({"turn_started": 5}).turn_started == 5.0
    assert parsed({"progress": {"done": MAX_TASKS, "total": MAX_TASKS}}).progress is not None


def with_(path: str, value: object) -> dict[str, Any]:
    """FULL with one (dotted) field replaced."""
    body: dict[str, Any] = {
        **FULL,
        "recap": {**FULL["recap"], "links": list(FULL["recap"]["links"])},
        "progress": dict(FULL["progress"]),
        "stop_cell": dict(FULL["stop_cell"]),
    }
    *parents, last = path.split(".")
    target = body
    for part in parents:
        target = target[part]
    target[last] = value
    return body


def link(start: int, end: int, cell_id: object = "c") -> dict[str, Any]:
    return {"start": start, "end": end, "cell_id": cell_id}


TEXT_LEN = len(FULL["recap"]["text"])

# (field, bad value, what the line names, the field that is dropped, the default it takes)
BAD: list[tuple[str, object, str, str, object]] = [
    ("turn", "done", "turn", "turn", None),
    ("turn", 1, "turn", "turn", None),
    ("turn", "", "turn", "turn", None),
    ("turn_started", -1, "turn_started", "turn_started", None),
    ("turn_ended", math.nan, "turn_ended", "turn_ended", None),
    ("turn_ended", math.inf, "turn_ended", "turn_ended", None),
    ("last_activity", True, "last_activity", "last_activity", None),
    ("turn_started", "1795968398", "turn_started", "turn_started", None),
    ("turn_started", 10**400, "turn_started", "turn_started", None),
    ("error", 42, "error", "error", None),
    ("error", ["boom"], "error", "error", None),
    ("error", "x" * (ERROR_CHARS + 1), "error", "error", None),
    ("recap", {"model": "offline"}, "recap.text", "recap", None),
    ("recap", "a recap", "recap", "recap", None),
    ("recap.text", None, "recap.text", "recap", None),
    ("recap.text", "x" * 4001, "recap.text", "recap", None),
    ("recap.model", "m" * (ID_CHARS + 1), "recap.model", "recap.model", ""),
    ("recap.model", 7, "recap.model", "recap.model", ""),
    ("recap.at", -5, "recap.at", "recap.at", None),
    ("recap.links", "none", "recap.links", "recap.links", []),
    ("recap.links", [link(0, 2 * TEXT_LEN + 1)], "recap.links[0].end", "recap.links", []),
    ("recap.links", [link(5, 4)], "recap.links[0]: overlapping", "recap.links", []),
    ("recap.links", [link(0, 6), link(4, 9)], "recap.links[1]: overlapping", "recap.links", []),
    ("recap.links", [link(10, 12), link(0, 3)], "out of order", "recap.links", []),
    ("recap.links", [link(0, 1)] * (MAX_LINKS + 1), "recap.links", "recap.links", []),
    ("recap.links", [link(-1, 3)], "recap.links[0].start", "recap.links", []),
    ("recap.links", [link(0, 3, None)], "recap.links[0].cell_id", "recap.links", []),
    ("recap.links", [{"start": 0}], "recap.links[0].end", "recap.links", []),
    ("recap.links", ["In[3]"], "recap.links[0]", "recap.links", []),
    ("progress", {"done": 6, "total": 5}, "progress.done", "progress", None),
    ("progress.done", -1, "progress.done", "progress", None),
    ("progress.total", -3, "progress.total", "progress", None),
    ("progress.total", MAX_TASKS + 1, "progress.total", "progress", None),
    ("progress.total", 2**70, "progress.total", "progress", None),
    ("progress.done", 1.5, "progress.done", "progress", None),
    ("progress.total", True, "progress.total", "progress", None),
    ("progress", [2, 5], "progress", "progress", None),
    ("stop_cell", {"label": "In[3]", "failed": True}, "stop_cell.cell_id", "stop_cell", None),
    ("stop_cell.failed", "yes", "stop_cell.failed", "stop_cell.failed", False),
    ("stop_cell.label", "x" * 65, "stop_cell.label", "stop_cell.label", ""),
    ("drafting", 1, "drafting", "drafting", False),
]


@pytest.mark.parametrize(
    ("path", "value", "named", "dropped", "default"),
    BAD,
    ids=[f"{p}={v!r}"[:40] for p, v, *_ in BAD],
)
def test_a_bad_field_is_dropped_with_one_line_naming_it_and_the_rest_kept(
    path: str, value: object, named: str, dropped: str, default: object
) -> None:
    report, ignored = read(with_(path, value))
    # Exactly FULL with the dropped field at its default: the bad value reaches nothing, and
    # every other field is taken.
    assert report == parsed(with_(dropped, default))
    [line] = ignored
    assert named in line
    assert "\n" not in line and line.strip() == line


def test_each_bad_field_of_a_report_gets_its_own_line() -> None:
    body = with_("recap.model", "m" * 300)
    body["turn"] = "finished"
    body["progress"] = {"done": 0, "total": 2**70}
    report, ignored = read(body)
    assert ignored == [
        "turn: must be one of running, ok, errored, aborted or null",
        "recap.model: longer than 256 characters",
        f"progress.total: must be an integer from 0 to {MAX_TASKS}",
    ]
    assert (report.turn, report.progress) == (None, None)
    assert report.recap is not None and report.recap["text"] == FULL["recap"]["text"]


def test_a_model_id_too_long_still_shows_the_recap_and_ends_drafting(board: AgentBoard) -> None:
    """Regression: the whole report was refused, and the row stayed at "drafting…"."""
    board.report("k", parsed({"turn": "ok", "drafting": True}))
    assert row(board, "k")["drafting"] is True
    report, ignored = read(
        {"turn": "ok", "drafting": False, "recap": {"text": "Done.", "model": "m" * 300}}
    )
    board.report("k", report)
    assert ignored == ["recap.model: longer than 256 characters"]
    r = row(board, "k")
    assert r["recap"] == {"text": "Done.", "model": "", "at": None, "links": []}
    assert r["drafting"] is False


def test_a_huge_task_count_drops_the_progress_only() -> None:
    """Regression: ``2**70`` tasks is no task list; the rest of the report is kept."""
    report, ignored = read(with_("progress.total", 2**70))
    assert report == parsed(with_("progress", None))
    assert ignored == [f"progress.total: must be an integer from 0 to {MAX_TASKS}"]


@pytest.mark.parametrize("body", [None, [], "turn", 3, ["turn", "ok"]])
def test_a_body_that_is_not_an_object_is_refused(body: object) -> None:
    with pytest.raises(ReportError, match="not a JSON object"):
        parse_report(body)


def test_adjacent_links_and_astral_text_are_accepted() -> None:
    text = "🎉 In[1]In[2]"  # 🎉 is two UTF-16 code units
    report = parsed({"recap": {"text": text, "links": [link(3, 8, "a"), link(8, 13, "b")]}})
    assert report.recap is not None
    assert [(x["start"], x["end"], x["cell_id"]) for x in report.recap["links"]] == [
        (3, 8, "a"),
        (8, 13, "b"),
    ]


FIELDS = [
    "turn",
    "turn_started",
    "turn_ended",
    "error",
    "last_activity",
    "recap",
    "drafting",
    "progress",
    "stop_cell",
    "text",
    "model",
    "at",
    "links",
    "start",
    "end",
    "cell_id",
    "done",
    "total",
    "label",
    "failed",
]

# Integers stay within 64 bits here: huge integers have their own cases in BAD.
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["running", "ok", "errored", "aborted", "In[3]"]),
)
KEYS = st.one_of(st.sampled_from(FIELDS), st.text(max_size=8))
JSONISH = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(KEYS, children, max_size=6)
    ),
    max_leaves=30,
)


def parses_or_refuses(body: object) -> Report | None:
    """``parse_report``'s only two answers: a report and one line per dropped field, or (for a
    body that is not an object) one line saying so."""
    try:
        report, ignored = read(body)
    except ReportError as error:
        assert not isinstance(body, dict)
        assert "\n" not in str(error)
        return None
    assert isinstance(report, Report)
    for line in ignored:
        assert ": " in line and "\n" not in line and len(line) < 200
    return report


@given(JSONISH)
def test_parse_report_either_returns_a_report_or_refuses_it(body: object) -> None:
    parses_or_refuses(body)


@given(st.dictionaries(st.sampled_from(FIELDS), JSONISH, max_size=9))
def test_parse_report_on_objects_with_known_fields(body: dict[str, Any]) -> None:
    report = parses_or_refuses(body)
    assert report is not None
    AgentBoard(facts=lambda _: (None, "idle")).report("k", report)


FULL_REPORT = parsed(FULL)


@given(st.sampled_from(TOP_FIELDS), JSONISH)
def test_whatever_one_field_holds_every_other_field_is_kept(name: str, value: object) -> None:
    report, ignored = read({**FULL, name: value})
    for other in TOP_FIELDS:
        if other != name:
            assert getattr(report, other) == getattr(FULL_REPORT, other), other
    # Each line names the field that was given (or a part of it) first.
    for line in ignored:
        assert line.split(":")[0].split(".")[0].split("[")[0] == name, line


# -- leaving just after a turn ended -------------------------------------------------------------


@pytest.mark.parametrize(("turn", "needs"), [("ok", "finished"), ("errored", "errored")])
@pytest.mark.parametrize("left_after", [0.2, 2.9])
def test_leaving_just_after_a_turn_ended_unseen_needs_the_person(
    board: AgentBoard, facts: Facts, clock: Clock, turn: TurnState, needs: str, left_after: float
) -> None:
    # The page's "away" reached the server after the kernel's "turn ended" (a busy machine):
    # the person never saw the end, as if it had come while they were away.
    facts.focused["k"] = True
    board.report("k", running(clock.now))
    board.focus("k", True)
    board.report("k", ended(turn, clock.tick()))
    assert row(board, "k")["needs_you"] is None
    clock.tick(left_after)
    facts.focused["k"] = False
    board.focus("k", False)
    r = row(board, "k")
    assert (r["needs_you"], r["notice"]) == (needs, 1)
    # Coming back clears it, and leaving again right away does not bring it back.
    facts.focused["k"] = True
    board.focus("k", True)
    assert row(board, "k")["needs_you"] is None
    facts.focused["k"] = False
    board.focus("k", False)
    assert row(board, "k")["needs_you"] is None


def test_leaving_long_after_a_turn_ended_in_view_needs_nobody(
    board: AgentBoard, facts: Facts, clock: Clock
) -> None:
    facts.focused["k"] = True
    board.report("k", running(clock.now))
    board.report("k", ended("ok", clock.tick()))
    for _ in range(5):  # news while the person reads: each says the same focus
        board.focus("k", True)
        clock.tick()
    facts.focused["k"] = None  # the tab closed
    board.focus("k", None)
    assert row(board, "k")["needs_you"] is None
    assert board.needing() == 0
