"""The kernel's agent report: the latest turn, where the work stopped, progress, recap links
(UTF-16 offsets) and the cell counts behind them."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from jupyter_recap.focus.report import CellCounts, agent_report, recap_links
from jupyter_recap.focus.validate import MAX_LINKS, parse_report
from jupyter_recap.record.transcript import Entry, Kind, Outcome, Transcript
from jupyter_recap.stores.tasks import Task
from jupyter_recap.wire import AgentReport

AGENT = "agent-cell"


def prompt(at: float, cell_id: str | None = AGENT) -> Entry:
    return Entry("user", "fix the join", time=at, cell_id=cell_id, name="offline")


def reply(at: float) -> Entry:
    return Entry("assistant", "done", time=at, cell_id=AGENT)


def outcome(at: float, how: str = "ok", error: str | None = None) -> Entry:
    return Entry("outcome", "", time=at, cell_id=AGENT, error=error, outcome=how)  # type: ignore[arg-type]


def code(at: float, cell_id: str, count: int, error: str | None = None) -> Entry:
    return Entry("code", "df.merge(x)", time=at, cell_id=cell_id, error=error, count=count)


def report(*entries: Entry, cells: CellCounts | None = None, **kwargs: Any) -> AgentReport:
    body = agent_report(Transcript(list(entries)), cells=cells or CellCounts(), **kwargs)
    assert parse_report(body).ignored == ()  # whatever the kernel builds, the server takes
    return body


def utf16(text: str, start: int, end: int) -> str:
    """``text.slice(start, end)`` as a browser computes it."""
    return text.encode("utf-16-le")[2 * start : 2 * end].decode("utf-16-le")


# -- the turn --------------------------------------------------------------------------------


def test_no_entries_means_no_turn() -> None:
    body = report()
    assert body == {
        "turn": None,
        "turn_started": None,
        "turn_ended": None,
        "error": None,
        "last_activity": None,
        "recap": None,
        "drafting": False,
        "progress": None,
        "stop_cell": None,
    }


def test_cells_without_an_agent_mean_no_turn() -> None:
    body = report(code(10.0, "c1", 1), code(11.0, "c2", 2, error="NameError: x"))
    assert (body["turn"], body["last_activity"]) == (None, None)


def test_a_prompt_without_an_outcome_is_a_running_turn() -> None:
    cells = CellCounts()
    cells.note(AGENT, 7)
    body = report(prompt(100.0), reply(105.0), cells=cells)
    assert (body["turn"], body["turn_started"], body["turn_ended"]) == ("running", 100.0, None)
    assert body["stop_cell"] == {"cell_id": AGENT, "label": "In[7]", "failed": False}


def test_an_agent_cell_without_a_known_count_is_named_as_such() -> None:
    body = report(prompt(100.0))
    assert body["stop_cell"] == {"cell_id": AGENT, "label": "the agent cell", "failed": False}


def test_a_prompt_outside_any_cell_has_no_stop_cell() -> None:
    assert report(prompt(100.0, cell_id=None))["stop_cell"] is None


def test_a_finished_turn() -> None:
    body = report(prompt(100.0), reply(105.0), outcome(110.0))
    assert (body["turn"], body["turn_started"], body["turn_ended"]) == ("ok", 100.0, 110.0)
    assert body["error"] is None
    assert body["stop_cell"] == {"cell_id": AGENT, "label": "the agent cell", "failed": False}


def test_an_errored_turn_stops_at_the_agent_cell_with_its_error() -> None:
    cells = CellCounts()
    cells.note(AGENT, 4)
    body = report(prompt(100.0), outcome(110.0, "errored", "ValueError: bad column"), cells=cells)
    assert (body["turn"], body["turn_ended"]) == ("errored", 110.0)
    assert body["error"] == "ValueError: bad column"
    assert body["stop_cell"] == {"cell_id": AGENT, "label": "In[4]", "failed": True}


def test_a_long_multi_line_error_is_cut_to_one_line() -> None:
    error = "Traceback:\n" + "frame line\n" * 200
    body = report(prompt(100.0), outcome(110.0, "errored", error))
    assert body["error"] is not None
    assert "\n" not in body["error"] and len(body["error"]) <= 300


def test_an_aborted_turn() -> None:
    body = report(prompt(100.0), outcome(110.0, "aborted"))
    assert (body["turn"], body["turn_ended"]) == ("aborted", 110.0)
    assert body["stop_cell"] == {"cell_id": AGENT, "label": "the agent cell", "failed": False}


def test_only_the_latest_turn_counts() -> None:
    body = report(
        prompt(100.0),
        outcome(110.0, "errored", "boom"),
        prompt(200.0),
    )
    assert (body["turn"], body["turn_started"], body["error"]) == ("running", 200.0, None)
    assert body["stop_cell"] is not None
    assert body["stop_cell"]["failed"] is False


# -- where the work stopped ------------------------------------------------------------------


def test_a_cell_that_failed_after_the_turn_is_where_work_stopped() -> None:
    body = report(prompt(100.0), outcome(110.0), code(120.0, "c-9", 14, error="KeyError: 'id'"))
    assert body["turn"] == "ok"
    assert body["stop_cell"] == {"cell_id": "c-9", "label": "In[14]", "failed": True}


def test_the_failed_cell_label_prefers_the_known_count() -> None:
    cells = CellCounts()
    cells.note("c-9", 15)  # ran again (and failed again) since
    body = report(prompt(100.0), code(120.0, "c-9", 14, error="KeyError"), cells=cells)
    assert body["stop_cell"] == {"cell_id": "c-9", "label": "In[15]", "failed": True}


def test_a_failed_cell_run_again_successfully_is_no_longer_the_stop() -> None:
    body = report(
        prompt(100.0),
        outcome(110.0),
        code(120.0, "c-9", 14, error="KeyError: 'id'"),
        code(130.0, "c-9", 15),
    )
    assert body["stop_cell"] == {"cell_id": AGENT, "label": "the agent cell", "failed": False}


def test_another_cell_succeeding_does_not_hide_a_failure() -> None:
    body = report(
        prompt(100.0),
        code(120.0, "c-9", 14, error="KeyError: 'id'"),
        code(130.0, "c-10", 15),
    )
    assert body["stop_cell"] == {"cell_id": "c-9", "label": "In[14]", "failed": True}


def test_the_newest_failure_wins() -> None:
    body = report(
        prompt(100.0),
        code(120.0, "c-1", 3, error="A"),
        code(130.0, "c-2", 4, error="B"),
    )
    assert body["stop_cell"] is not None
    assert body["stop_cell"]["cell_id"] == "c-2"


def test_a_failure_before_the_latest_prompt_does_not_count() -> None:
    body = report(
        code(50.0, "c-9", 2, error="KeyError: 'id'"),
        prompt(100.0),
        outcome(110.0),
    )
    assert body["stop_cell"] == {"cell_id": AGENT, "label": "the agent cell", "failed": False}


def test_a_failure_while_the_turn_runs_is_where_it_stopped() -> None:
    body = report(prompt(100.0), code(105.0, "c-3", 3, error="ZeroDivisionError"))
    assert body["turn"] == "running"
    assert body["stop_cell"] == {"cell_id": "c-3", "label": "In[3]", "failed": True}


def test_last_activity_is_the_newest_agent_entry() -> None:
    body = report(
        prompt(100.0),
        Entry("tool_call", "read", time=103.0, name="read_file"),
        reply(107.0),
        outcome(110.0),
        code(500.0, "c-1", 1),
        Entry("event", "kernel restarted", time=600.0),
        Entry("meta", "bookkeeping", time=700.0),
    )
    assert body["last_activity"] == 110.0


def test_the_transcript_api_gives_the_same_report() -> None:
    transcript = Transcript()
    transcript.user("fix it", cell_id=AGENT)
    transcript.tool_call("run", {"code": "1/0"}, cell_id=AGENT)
    transcript.tool_result("run", "ZeroDivisionError", error=True, cell_id=AGENT)
    transcript.outcome("errored", "ZeroDivisionError: division by zero", cell_id=AGENT)
    transcript.code("1/0", error="ZeroDivisionError", count=3, cell_id="c-3")
    body = agent_report(transcript, cells=CellCounts())
    assert parse_report(body).ignored == ()
    assert (body["turn"], body["error"]) == ("errored", "ZeroDivisionError: division by zero")
    assert body["stop_cell"] == {"cell_id": "c-3", "label": "In[3]", "failed": True}
    assert body["last_activity"] == transcript[3].time


# -- progress, drafting ----------------------------------------------------------------------


def test_progress_counts_completed_tasks() -> None:
    tasks = [
        Task("load", "completed"),
        Task("join", "completed"),
        Task("plot", "in_progress"),
        Task("write up"),
        Task("deploy", "blocked", "no access"),
    ]
    body = report(prompt(1.0), tasks=tasks, drafting=True)
    assert body["progress"] == {"done": 2, "total": 5}
    assert body["drafting"] is True
    assert report(tasks=[])["progress"] is None


# -- recap links -----------------------------------------------------------------------------


def counts(**by_count: int) -> CellCounts:
    cells = CellCounts()
    for cell_id, count in by_count.items():
        cells.note(cell_id, count)
    return cells


def test_recap_links_name_the_cells_we_know() -> None:
    text = "Fix In[3] then rerun In[12]"
    links = recap_links(text, counts(c3=3, c12=12))
    assert links == [
        {"start": 4, "end": 9, "cell_id": "c3"},
        {"start": 21, "end": 27, "cell_id": "c12"},
    ]
    assert [text[x["start"] : x["end"]] for x in links] == ["In[3]", "In[12]"]


def test_an_unknown_cell_gets_no_link() -> None:
    links = recap_links("See In[99] and In [3].", counts(c3=3))
    assert links == [{"start": 15, "end": 21, "cell_id": "c3"}]  # "In [3]" is a mention too


def test_words_that_only_contain_in_are_not_mentions() -> None:
    assert recap_links("Within[3] or Main[3]", counts(c3=3)) == []


def test_recap_links_count_utf16_code_units_after_an_emoji() -> None:
    text = "🎉 Done 🚀 — fix In[3], then In[12] ✓"
    links = recap_links(text, counts(c3=3, c12=12))
    assert [utf16(text, x["start"], x["end"]) for x in links] == ["In[3]", "In[12]"]
    python_start = text.index("In[3]")
    assert links[0]["start"] == python_start + 2  # two astral characters before it
    assert [x["cell_id"] for x in links] == ["c3", "c12"]


def test_a_shown_recap_is_reported_with_its_links() -> None:
    recap: dict[str, Any] = {"text": "🎉 Rerun In[12] next.", "model": "offline", "at": 1234.5}
    body = report(prompt(1.0), cells=counts(c12=12), recap=recap)
    assert body["recap"] == {
        "text": recap["text"],
        "model": "offline",
        "at": 1234.5,
        "links": [{"start": 9, "end": 15, "cell_id": "c12"}],
    }
    assert utf16(recap["text"], 9, 15) == "In[12]"


def test_a_long_recap_is_cut_before_links_are_found() -> None:
    text = "x" * 1995 + " In[3] is cut off"
    body = report(recap={"text": text, "model": "m", "at": 1.0}, cells=counts(c3=3))
    assert body["recap"] is not None
    assert len(body["recap"]["text"]) == 2000
    assert body["recap"]["links"] == []


def test_a_recap_naming_many_cells_still_makes_a_valid_report() -> None:
    cells = CellCounts()
    for count in range(1, MAX_LINKS + 10):
        cells.note(f"c{count}", count)
    text = " ".join(f"In[{count}]" for count in range(1, MAX_LINKS + 10))
    body = agent_report(
        Transcript([prompt(1.0)]), cells=cells, recap={"text": text, "model": "m", "at": 2.0}
    )
    assert parse_report(body).ignored == ()
    # The first MAX_LINKS mentions are links, in order; the rest of the text stays plain.
    assert body["recap"] is not None
    links = body["recap"]["links"]
    assert [link["cell_id"] for link in links] == [f"c{n}" for n in range(1, MAX_LINKS + 1)]
    assert [utf16(text, x["start"], x["end"]) for x in links[-2:]] == [
        f"In[{MAX_LINKS - 1}]",
        f"In[{MAX_LINKS}]",
    ]


# -- cell counts -----------------------------------------------------------------------------


def test_after_a_restart_the_newest_cell_holds_a_count() -> None:
    cells = counts(a=1, b=2)
    cells.note("c", 1)  # the kernel restarted: counts start again
    assert cells.cell_of(1) == "c"
    assert cells.cell_of(2) == "b"
    assert (cells.count_of("c"), cells.count_of("b")) == (1, 2)
    links = recap_links("In[1]", cells)
    assert links == [{"start": 0, "end": 5, "cell_id": "c"}]


def test_cells_without_an_id_or_count_are_not_noted() -> None:
    cells = CellCounts()
    cells.note(None, 1)
    cells.note("", 2)
    cells.note("a", None)
    assert (cells.cell_of(1), cells.cell_of(2), cells.count_of("a")) == (None, None, None)


def test_the_bound_drops_the_oldest_cell() -> None:
    cells = CellCounts(limit=3)
    for count, cell_id in enumerate("abcd", 1):
        cells.note(cell_id, count)
    assert cells.count_of("a") is None and cells.cell_of(1) is None
    assert [cells.cell_of(n) for n in (2, 3, 4)] == ["b", "c", "d"]
    assert [cells.count_of(c) for c in "bcd"] == [2, 3, 4]


def test_running_a_cell_again_makes_it_the_newest() -> None:
    cells = CellCounts(limit=3)
    cells.note("a", 1)
    cells.note("b", 2)
    cells.note("c", 3)
    cells.note("a", 4)  # a ran again: b is now the oldest
    cells.note("d", 5)
    assert cells.count_of("b") is None and cells.cell_of(2) is None
    assert [cells.count_of(c) for c in "acd"] == [4, 3, 5]
    assert [cells.cell_of(n) for n in (3, 4, 5)] == ["c", "a", "d"]


def test_evicting_a_cell_keeps_a_newer_holder_of_its_count() -> None:
    cells = CellCounts(limit=3)
    cells.note("a", 1)
    cells.note("b", 2)
    cells.note("c", 3)
    cells.note("d", 1)  # restart: d is In[1] now; a (the oldest) goes
    assert cells.count_of("a") is None
    assert cells.cell_of(1) == "d"


def test_the_bound_also_forgets_earlier_runs_of_a_dropped_cell() -> None:
    cells = CellCounts(limit=3)
    for count in range(1, 101):
        cells.note("a", count)  # one cell, run a hundred times
    for count, cell_id in enumerate("bcd", 101):
        cells.note(cell_id, count)
    assert cells.count_of("a") is None
    assert [cells.cell_of(n) for n in range(1, 101)] == [None] * 100


def test_seed_learns_counts_from_stored_entries() -> None:
    entries = [
        code(1.0, "a", 1),
        prompt(2.0),
        code(3.0, "b", 2, error="NameError"),
        Entry("code", "x", time=4.0, cell_id=None, count=3),
        code(5.0, "a", 4),
    ]
    cells = CellCounts()
    cells.seed(entries)
    assert [cells.count_of(c) for c in ("a", "b", AGENT)] == [4, 2, None]
    assert (cells.cell_of(4), cells.cell_of(2), cells.cell_of(3)) == ("a", "b", None)


# -- every report is one the server accepts ---------------------------------------------------

CELL_IDS = st.sampled_from([AGENT, "c-1", "c-2", "c-3", None])


@st.composite
def entries(draw: st.DrawFn) -> list[Entry]:
    at = draw(st.floats(min_value=0, max_value=2e9))
    made: list[Entry] = []
    for _ in range(draw(st.integers(0, 12))):
        at += draw(st.floats(min_value=0, max_value=100))
        kind: Kind = draw(
            st.sampled_from(["user", "assistant", "tool_call", "code", "outcome", "event"])
        )
        cell_id = draw(CELL_IDS)
        if kind == "code":
            error = draw(st.none() | st.text(max_size=400))
            made.append(Entry("code", "x", at, cell_id, None, error, draw(st.integers(1, 999))))
        elif kind == "outcome":
            how: Outcome = draw(st.sampled_from(["ok", "errored", "aborted"]))
            error = draw(st.none() | st.text(max_size=600)) if how == "errored" else None
            made.append(Entry("outcome", "", at, cell_id, error=error, outcome=how))
        else:
            made.append(Entry(kind, draw(st.text(max_size=20)), at, cell_id))
    return made


RECAP_PIECES = st.one_of(
    st.text(max_size=15),
    st.sampled_from(["🎉", "✓", "é", "\n", " In[", "]"]),
    st.integers(1, 40).map(lambda n: f" In[{n}] "),
)


@given(
    entries(),
    st.lists(st.tuples(CELL_IDS, st.integers(1, 40)), max_size=8),
    st.none() | st.lists(RECAP_PIECES, max_size=MAX_LINKS).map("".join),
    st.lists(st.sampled_from(["pending", "in_progress", "completed"]), max_size=6),
)
def test_every_report_passes_the_servers_validation(
    made: list[Entry],
    noted: list[tuple[str | None, int]],
    recap_text: str | None,
    statuses: list[str],
) -> None:
    cells = CellCounts(limit=5)
    for cell_id, count in noted:
        cells.note(cell_id, count)
    recap = None if recap_text is None else {"text": recap_text, "model": "m", "at": 1.0}
    tasks = [Task(f"step {n}", status) for n, status in enumerate(statuses)]
    body = agent_report(Transcript(made), cells=cells, recap=recap, tasks=tasks)
    parsed = parse_report(body)
    assert parsed.ignored == ()
    if parsed.recap is not None:
        text = parsed.recap["text"]
        links = parsed.recap["links"]
        for x in links:
            mention = utf16(text, x["start"], x["end"])
            assert mention.startswith("In") and mention.endswith("]")
            assert cells.cell_of(int(mention[2:].strip(" [")[:-1])) == x["cell_id"]
        # And links are found at all: a plain " In[n] " naming a cell we know is one.
        known = [n for n in range(1, 41) if f" In[{n}] " in text and cells.cell_of(n)]
        assert links or not known, (text, known)


def test_an_error_leaves_the_kernel_redacted() -> None:
    transcript = Transcript()
    transcript.user("call the billing API", cell_id="cell-1")
    key = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2
    transcript.outcome("errored", f"AuthenticationError: Incorrect API key provided: {key}")
    error = agent_report(transcript, cells=CellCounts())["error"]
    assert error is not None
    assert error.startswith("AuthenticationError: Incorrect API key provided: ")
    assert key not in error and "a1B2c3D4e5F6" not in error
