"""One attention order for every row of the agents board: waiting for approval, then errored
while away, then finished while away, then running, then seen — for kernels, chats and CLI
agents alike. The board lists its rows in it, keeps the rows that rank highest when it is full
(a left-out row comes back when it outranks one on the board), and counts every row that needs
the person, those left out included (the page's title count).

Generated boards: any mix of kinds, states, looks and waits, under any bound.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from manualclock import Clock
from strength import examples

from jupyter_recap.focus import attention
from jupyter_recap.focus.board import AgentBoard, AgentWait, ChatFacts, OwnRow, cli_row_id
from jupyter_recap.focus.rows import to_json
from jupyter_recap.focus.validate import Report
from jupyter_recap.wire import AgentRow, NeedsYou, RowState, TurnState

RULE = ("approval", "errored", "finished", "running", "seen")


def place(row: AgentRow) -> int:
    """The rule, read off a row as the page gets it."""
    if row["needs_you"] == "approval" or row["state"] == "waiting":
        return RULE.index("approval")
    if row["needs_you"] == "errored":
        return RULE.index("errored")
    if row["needs_you"] == "finished":
        return RULE.index("finished")
    if row["state"] in ("running", "restarting"):
        return RULE.index("running")
    return RULE.index("seen")


class World:
    """A board with its focus facts, driven by generated steps."""

    def __init__(self, cap: int) -> None:
        self.clock = Clock()
        self.focused: dict[str, bool | None] = {}
        self.board = AgentBoard(
            facts=lambda k: (self.focused.get(k), "idle"), max_agents=cap, clock=self.clock
        )

    def step(self, step: tuple[Any, ...]) -> None:
        self.clock.now += 1.0
        now = self.clock.now
        what, n = step[0], step[1]
        if what == "kernel":
            turn = step[2]
            self.focused[f"k{n}"] = step[3]
            if turn == "running":
                report = Report(turn="running", turn_started=now, last_activity=now)
            elif turn in ("ok", "errored", "aborted"):
                report = Report(turn=turn, turn_started=now - 1, turn_ended=now, last_activity=now)
            else:
                report = Report(last_activity=now)
            self.board.report(f"k{n}", report)
        elif what == "chat":
            path = f"c{n}.chat"
            self.focused["chat:" + path] = step[3]
            running = step[2] == "running" or step[4]
            report = (
                Report(turn="running", turn_started=now, last_activity=now)
                if running
                else Report(turn="ok", turn_started=now - 1, turn_ended=now, last_activity=now)
            )
            facts = ChatFacts("Claude", approval=f"rm x{n}" if step[4] else None)
            self.board.chat(path, report, facts)
        elif what == "cli":
            row_id = cli_row_id("Claude Code", f"s{n}")
            if step[2]:
                wait = AgentWait("Claude Code", f"Bash rm {n} (Claude Code, …)", now)
                self.board.wait(row_id, wait, own=OwnRow("", "/srv"))
            else:
                self.board.forget(row_id)
        elif what == "wait":
            on_notebook = AgentWait("Codex", f"Bash make {n} (Codex, …)", now) if step[2] else None
            self.board.wait(f"k{n}", on_notebook)
        elif what == "look":
            row_id = f"k{n}" if step[2] else f"chat:c{n}.chat"
            self.focused[row_id] = True
            self.board.focus(row_id, True)
        elif what == "leave":
            row_id = f"k{n}" if step[2] else f"chat:c{n}.chat"
            self.focused[row_id] = False
            self.board.focus(row_id, False)
        else:
            self.board.forget(f"k{n}")

    def left_out(self) -> list[AgentRow]:
        return [to_json(row, None, "idle", None) for row in self.board.left_out.values()]


ids = st.integers(0, 9)
steps = st.one_of(
    st.tuples(
        st.just("kernel"),
        ids,
        st.sampled_from(["running", "ok", "errored", "aborted", "idle"]),
        st.sampled_from([True, False, None]),
    ),
    st.tuples(
        st.just("chat"),
        ids,
        st.sampled_from(["running", "ok"]),
        st.sampled_from([True, False, None]),
        st.booleans(),
    ),
    st.tuples(st.just("cli"), ids, st.booleans()),
    st.tuples(st.just("wait"), ids, st.booleans()),
    st.tuples(st.sampled_from(["look", "leave"]), ids, st.booleans()),
    st.tuples(st.just("forget"), ids),
)


@settings(max_examples=examples(300))
@given(cap=st.integers(1, 8), script=st.lists(steps, max_size=40))
def test_any_board_lists_keeps_and_counts_by_the_one_order(
    cap: int, script: list[tuple[Any, ...]]
) -> None:
    world = World(cap)
    for step in script:
        world.step(step)
        rows = world.board.rows()
        # Listed by the rule, then latest first within a place; each row says its place.
        assert [row["attention"]["rank"] for row in rows] == [place(row) for row in rows]
        keys = [(place(row), -row["attention"]["at"]) for row in rows]
        assert keys == sorted(keys)
        for row in rows:
            if row["needs_you"] in ("errored", "finished") and place(row) != 0:
                assert row["attention"]["at"] == (row["turn_ended"] or 0.0)
        # Kept by the rule: no row left out outranks one on the board; none waits for room.
        left = world.left_out()
        assert len(rows) <= cap
        if left:
            assert len(rows) == cap
            assert max(place(row) for row in rows) <= min(place(row) for row in left)
        # Counted by the rule, past the bound too.
        needing = [row for row in rows + left if row["needs_you"] is not None]
        assert world.board.needing() == len(needing)
        assert world.board.needing(left_out=True) == sum(1 for r in left if r["needs_you"])


@settings(max_examples=examples(100))
@given(
    cap=st.integers(1, 6),
    kinds=st.lists(
        st.sampled_from(["finished", "errored", "chat approval", "cli approval", "kernel wait"]),
        min_size=1,
        max_size=14,
    ),
    seen=st.integers(0, 4),
)
def test_the_title_counts_every_row_that_needs_the_person_past_the_bound(
    cap: int, kinds: list[str], seen: int
) -> None:
    """Regression: at 70 notebooks that needed the person the board held 64 and the title said
    "(64)". Rows of every kind that need the person, more than the board holds: the count is all
    of them; the rows shown are those that rank highest; and looking at a row shown makes room
    for one left out."""
    world = World(cap)
    for n in range(seen):  # rows the person has seen: they make room first
        world.focused[f"seen{n}"] = True
        world.board.report(f"seen{n}", Report(turn="ok", last_activity=500.0 + n))
    for n, kind in enumerate(kinds):
        world.clock.now += 1.0
        if kind in ("finished", "errored", "kernel wait"):
            world.focused[f"k{n}"] = False
            turn: TurnState = "errored" if kind == "errored" else "ok"
            world.board.report(
                f"k{n}", Report(turn=turn, turn_started=1.0, turn_ended=world.clock.now)
            )
            if kind == "kernel wait":
                world.board.wait(f"k{n}", AgentWait("Codex", "Bash make", world.clock.now))
        elif kind == "chat approval":
            report = Report(turn="running", turn_started=1.0, last_activity=world.clock.now)
            world.board.chat(f"c{n}.chat", report, ChatFacts("Claude", approval="rm x"))
        else:
            row_id = cli_row_id("Claude Code", f"s{n}")
            wait = AgentWait("Claude Code", "Bash rm", world.clock.now)
            world.board.wait(row_id, wait, own=OwnRow("", None))
    assert world.board.needing() == len(kinds)
    rows = world.board.rows()
    assert len(rows) == min(cap, len(kinds) + seen)
    assert world.board.needing(left_out=True) == max(0, len(kinds) - cap)
    assert all(row["needs_you"] is not None for row in rows[: min(cap, len(kinds))])
    # The person looks at a row shown whose turn ended while they were away (a row waiting for
    # approval still waits when looked at: it keeps its place).
    looked = next((r for r in rows if r["needs_you"] in ("finished", "errored")), None)
    if looked is not None and world.board.needing(left_out=True):
        world.focused[looked["id"]] = True
        world.board.focus(looked["id"], True)
        assert world.board.needing() == len(kinds) - 1
        assert world.board.needing(left_out=True) == max(0, len(kinds) - cap - 1)
        assert len(world.board.rows()) == cap


def test_the_places_are_named_in_the_rule_s_order() -> None:
    assert attention.NAMES == RULE
    places: list[tuple[RowState, NeedsYou | None]] = [
        ("idle", "approval"),
        ("waiting", None),
        ("errored", "errored"),
        ("finished", "finished"),
        ("running", None),
        ("restarting", None),
        ("errored", None),
        ("dead", None),
        ("idle", None),
    ]
    assert [attention.rank(state, needs) for state, needs in places] == [0, 0, 1, 2, 3, 3, 4, 4, 4]
