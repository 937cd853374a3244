"""The focus hub on its own: aggregation, expiry, the event feed and its bounds (fake clock)."""

from __future__ import annotations

import itertools

import pytest
from manualclock import Clock

from jupyter_recap.focus.hub import FocusHub
from jupyter_recap.wire import OutsideEntry


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def notified() -> list[str]:
    return []


@pytest.fixture
def hub(clock: Clock, notified: list[str]) -> FocusHub:
    return FocusHub(heartbeat_timeout=30, clock=clock, notify=notified.append)


def kinds(hub: FocusHub, kernel: str, since: int = 0) -> list[tuple[str, bool | None]]:
    return [(e.type, e.focused) for e in hub.events_since(kernel, since).events]


def test_unknown_kernel_reads_defaults_without_creating_state(hub: FocusHub) -> None:
    feed = hub.events_since("k", 0)
    assert feed.to_json() == {
        "seq": 0,
        "events": [],
        "focused": None,
        "focus_supported": False,
        "execution_state": "unknown",
        "idle_seconds": None,
    }
    assert hub.snapshot("k").focused is None
    assert hub.kernel_ids() == set()


def test_first_report_is_a_change_and_repeats_are_not(hub: FocusHub, notified: list[str]) -> None:
    assert hub.report("k", "tab1", "a.ipynb", False) is True  # null -> False: focus now known
    assert hub.report("k", "tab1", "a.ipynb", False) is False  # a heartbeat
    assert hub.report("k", "tab1", "a.ipynb", True) is True
    assert kinds(hub, "k") == [("focus", False), ("focus", True)]
    assert notified == ["k", "k"]
    assert hub.events_since("k", 0).to_json()["focus_supported"] is True


def test_any_focused_pair_makes_the_kernel_focused(hub: FocusHub) -> None:
    hub.report("k", "tab1", "a.ipynb", True)
    assert hub.report("k", "tab2", "a.ipynb", False) is False  # another tab, unfocused
    assert hub.report("k", "tab2", "b.ipynb", True) is False  # a second notebook, same kernel
    assert hub.report("k", "tab1", "a.ipynb", False) is False  # tab2/b.ipynb still focused
    assert hub.focused("k") is True
    assert hub.report("k", "tab2", "b.ipynb", False) is True
    assert hub.focused("k") is False
    assert kinds(hub, "k") == [("focus", True), ("focus", False)]


def test_kernels_are_independent(hub: FocusHub) -> None:
    hub.report("k1", "tab", "a.ipynb", True)
    hub.report("k2", "tab", "b.ipynb", False)
    assert (hub.focused("k1"), hub.focused("k2")) == (True, False)
    assert hub.seq("k1") == hub.seq("k2") == 1


def test_a_silent_client_expires_and_counts_as_away(
    hub: FocusHub, clock: Clock, notified: list[str]
) -> None:
    hub.report("k", "tab1", "a.ipynb", True)
    clock.now += 20
    hub.report("k", "tab2", "a.ipynb", False)
    clock.now += 11  # tab1 silent for 31 s, tab2 for 11 s
    assert hub.expire() == ["k"]
    assert hub.focused("k") is False
    event = hub.events_since("k", 1).events[0]
    assert (event.type, event.focused, event.at) == ("focus", False, clock.now)
    assert notified[-1] == "k"
    clock.now += 30
    assert hub.expire() == []  # tab2 goes too, but the kernel was already away
    assert hub.focused("k") is False  # stays a bool: focus reporting stays proven


def test_reads_expire_lazily(hub: FocusHub, clock: Clock) -> None:
    hub.report("k", "tab", "a.ipynb", True)
    clock.now += 31
    feed = hub.events_since("k", 1)
    assert [(e.type, e.focused) for e in feed.events] == [("focus", False)]
    assert feed.snapshot.focused is False


def test_input_is_an_event_and_a_heartbeat(hub: FocusHub, clock: Clock) -> None:
    hub.report("k", "tab", "a.ipynb", True)
    clock.now += 25
    event = hub.input("k", "tab")
    assert (event.seq, event.type, event.at) == (2, "input", clock.now)
    assert event.to_json() == {"seq": 2, "type": "input", "at": clock.now}
    clock.now += 25  # 50 s after the report, 25 after the input
    assert hub.expire() == []
    assert hub.focused("k") is True


def test_expiry_follows_the_latest_report_or_input_of_each_client(
    hub: FocusHub, clock: Clock
) -> None:
    start = clock.now
    hub.report("k", "a", "a.ipynb", False)
    clock.now = start + 10
    hub.report("k", "b", "a.ipynb", True)
    clock.now = start + 25
    hub.input("k", "a")  # "a" is now heard from more recently than "b"
    clock.now = start + 41  # "b" silent for 31 s, "a" for 16 s
    assert hub.expire() == ["k"]
    assert hub.focused("k") is False
    clock.now = start + 56  # "a" silent for 31 s
    hub.expire()
    assert len(hub._kernels["k"].clients) == 0


def test_events_since_returns_only_newer_events(hub: FocusHub) -> None:
    hub.report("k", "tab", "a.ipynb", True)
    hub.input("k")
    hub.report("k", "tab", "a.ipynb", False)
    assert [e.seq for e in hub.events_since("k", 1).events] == [2, 3]
    feed = hub.events_since("k", 3)
    assert (feed.seq, feed.events, feed.restarted) == (3, (), False)


def test_since_ahead_of_seq_means_the_server_restarted(hub: FocusHub) -> None:
    hub.report("k", "tab", "a.ipynb", True)
    feed = hub.events_since("k", 57)
    assert feed.restarted is True
    assert feed.events == ()
    assert feed.seq == 1
    assert feed.snapshot.focused is True
    assert hub.events_since("unknown", 3).restarted is True  # a fresh server knows nothing


def test_the_ring_keeps_the_last_events(clock: Clock) -> None:
    hub = FocusHub(clock=clock, max_events=100)
    for n in range(250):
        hub.report("k", "tab", "a.ipynb", n % 2 == 0)
    events = hub.events_since("k", 0).events
    assert len(events) == 100
    assert [events[0].seq, events[-1].seq] == [151, 250]
    assert all(b.seq == a.seq + 1 for a, b in itertools.pairwise(events))


def test_clients_per_kernel_are_capped_oldest_first(clock: Clock) -> None:
    hub = FocusHub(clock=clock, max_clients=64)
    hub.report("k", "oldest", "a.ipynb", True)
    for n in range(64):
        clock.now += 0.01
        hub.report("k", f"tab{n}", "a.ipynb", False)
    # 65 pairs: the oldest (and only focused) one was dropped
    assert hub.focused("k") is False
    assert len(hub._kernels["k"].clients) == 64


def test_a_heartbeat_keeps_a_client_from_being_dropped_by_the_cap(clock: Clock) -> None:
    hub = FocusHub(clock=clock, max_clients=2)
    hub.report("k", "a", "nb", True)
    hub.report("k", "b", "nb", False)
    hub.report("k", "a", "nb", True)  # a heartbeat: "a" is now the most recent
    hub.report("k", "c", "nb", False)  # drops "b"
    assert hub.focused("k") is True


def test_forget_drops_everything_and_wakes_waiters(hub: FocusHub, notified: list[str]) -> None:
    hub.report("k", "tab", "a.ipynb", True)
    hub.set_banner("k", "model-1")
    notified.clear()
    hub.forget("k")
    assert notified == ["k"]
    assert hub.kernel_ids() == set()
    assert hub.snapshot("k").banner_model_id is None
    hub.forget("k")  # twice is harmless
    assert notified == ["k"]


def test_banner_model_id(hub: FocusHub) -> None:
    hub.set_banner("k", "model-1")
    assert hub.snapshot("k").banner_model_id == "model-1"
    hub.set_banner("k", None)
    assert hub.snapshot("k").banner_model_id is None


def test_idle_seconds_follow_execution(hub: FocusHub, clock: Clock) -> None:
    hub.set_execution("k", "idle")
    clock.now += 5
    assert hub.snapshot("k").idle_seconds == 5  # never ran a cell: idle since first seen
    hub.set_execution("k", "busy")
    clock.now += 100
    snapshot = hub.snapshot("k")
    assert (snapshot.execution_state, snapshot.idle_seconds) == ("busy", None)
    hub.set_execution("k", "idle")  # the cell finished now
    clock.now += 42.5
    assert hub.snapshot("k").to_json()["idle_seconds"] == 42.5
    hub.set_execution("k", "idle")  # a second idle does not move the finish time
    assert hub.snapshot("k").idle_seconds == 42.5
    assert hub.events_since("k", 0).to_json()["execution_state"] == "idle"


def test_snapshot_json(hub: FocusHub, clock: Clock) -> None:
    hub.report("k", "tab", "a.ipynb", True)
    hub.set_banner("k", "m")
    assert hub.snapshot("k").to_json() == {
        "kernel_id": "k",
        "focused": True,
        "banner_model_id": "m",
        "execution_state": "unknown",
        "idle_seconds": 0.0,
    }


def test_outside_entries_are_an_event_of_a_known_kernel_only(hub: FocusHub) -> None:
    entries: list[OutsideEntry] = [
        {
            "kind": "tool_call",
            "text": "edit_cell churn.ipynb cell-1",
            "name": "edit_cell",
            "error": None,
        },
        {"kind": "tool_result", "text": '{"success": true}', "name": "edit_cell", "error": None},
    ]
    assert hub.outside("k1", entries) is None  # no feed is made for a kernel nobody knows
    assert hub.events_since("k1", 0).events == ()
    hub.set_execution("k1", "busy")
    assert hub.outside("k1", []) is None  # nothing to say
    event = hub.outside("k1", entries, latest_cell=True)
    assert event is not None
    assert event.to_json() == {
        "seq": event.seq,
        "type": "outside",
        "at": event.at,
        "entries": entries,
        "cell": "latest",
    }
    assert [e.type for e in hub.events_since("k1", 0).events] == ["outside"]
