"""The usage ledger: per-person, per-local-day counts of model calls, in real files."""

from __future__ import annotations

import datetime as dt
import json
import multiprocessing
import os
import time
from collections.abc import Iterator
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from jupyter_recap.errors import StoreError, UnsafeStoreError
from jupyter_recap.pipeline.prices import call_cost
from jupyter_recap.stores.usage import KEEP_DAYS, DayUsage, Ticket, UsageLedger


class Clock:
    """A settable clock: what ``time.time`` would say."""

    def __init__(self, when: dt.datetime) -> None:
        self.now = when.timestamp()  # naive: local time

    def set(self, when: dt.datetime) -> None:
        self.now = when.timestamp()

    def __call__(self) -> float:
        return self.now


NOON = dt.datetime(2025, 3, 14, 12, 0, 0)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return Path(os.environ["JUPYTER_RECAP_HOME"])  # set for every test by conftest


@pytest.fixture
def clock() -> Clock:
    return Clock(NOON)


@pytest.fixture
def ledger(clock: Clock) -> UsageLedger:
    return UsageLedger(clock=clock)


@pytest.fixture
def tokyo() -> Iterator[None]:
    """Local time nine hours ahead of UTC, so a local day differs from the UTC one."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TZ", "JST-9")
        time.tzset()
        yield
    time.tzset()


def call(
    ledger: UsageLedger,
    model: str = "openai:gpt-4o-mini",
    *,
    automatic: bool = True,
    tokens: tuple[int, int] = (3000, 200),
) -> Ticket:
    ticket = ledger.start(model, automatic=automatic)
    assert ticket is not None
    cost = call_cost(model, *tokens)
    ledger.finish(ticket, tokens_in=tokens[0], tokens_out=tokens[1], estimated=False, cost=cost)
    return ticket


def day_file(home: Path, day: str = "2025-03-14") -> Path:
    return home / "usage" / f"{day}.jsonl"


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_start_and_finish_add_up_per_day(ledger: UsageLedger, home: Path) -> None:
    assert ledger.today() == DayUsage("2025-03-14")  # nothing yet, and nothing created
    assert not home.exists()

    call(ledger, "openai:gpt-4o-mini", tokens=(10_000, 500))
    call(ledger, "anthropic:claude-3-5-haiku-20241022", automatic=False, tokens=(2000, 300))
    unknown = ledger.start("openai:gpt-99", automatic=False)
    assert unknown is not None
    ledger.finish(unknown, tokens_in=100, tokens_out=10, estimated=True, cost=None)
    failed = ledger.start("openai:gpt-4o-mini", automatic=True)
    assert failed is not None
    ledger.finish(failed, tokens_in=0, tokens_out=0, estimated=False, cost=None, failed=True)

    usage = ledger.today()
    assert (usage.calls, usage.automatic, usage.failed) == (4, 2, 1)
    assert (usage.tokens_in, usage.tokens_out, usage.estimated) == (12_100, 810, 1)
    # 0.0018 for gpt-4o-mini, 0.0028 for claude-3-5-haiku; gpt-99 has no price
    assert usage.cost == pytest.approx(0.0046)
    assert usage.unpriced == 1  # the failed call had nothing to price
    assert usage.models == {
        "openai:gpt-4o-mini": 2,
        "anthropic:claude-3-5-haiku-20241022": 1,
        "openai:gpt-99": 1,
    }
    assert usage.to_dict()["cost"] == usage.cost

    # Private like the rest of the store; one start and one finish line a call.
    path = day_file(home)
    assert (path.stat().st_mode & 0o777) == 0o600
    assert ((home / "usage").stat().st_mode & 0o777) == 0o700
    records = lines(path)
    assert len(records) == 8
    assert records[0] == {
        "id": records[0]["id"],
        "t": NOON.timestamp(),
        "model": "openai:gpt-4o-mini",
        "auto": True,
    }
    assert records[1] == {
        "id": records[0]["id"],
        "in": 10_000,
        "out": 500,
        "est": False,
        "cost": pytest.approx(0.0018),
        "failed": False,
    }
    # another kernel of the person sees the same totals
    assert UsageLedger().day("2025-03-14") == usage


def test_the_budget_refuses_automatic_calls_at_the_limit(ledger: UsageLedger, home: Path) -> None:
    for _ in range(3):
        ticket = ledger.start("openai:gpt-4o-mini", automatic=True, budget=3)
        assert ticket is not None
        ledger.finish(ticket, tokens_in=10, tokens_out=1, estimated=False, cost=0.0)
    before = day_file(home).read_bytes()
    assert ledger.start("openai:gpt-4o-mini", automatic=True, budget=3) is None
    assert day_file(home).read_bytes() == before  # a refused call leaves no trace
    # a larger budget (the setting raised) lets it through; a call the person asked for is
    # never refused
    assert ledger.start("openai:gpt-4o-mini", automatic=True, budget=4) is not None
    assert ledger.start("openai:gpt-4o-mini", automatic=False, budget=4) is not None
    assert ledger.start("openai:gpt-4o-mini", automatic=True, budget=4) is None
    assert (ledger.today().calls, ledger.today().automatic) == (5, 4)


def test_a_budget_of_zero_never_calls_and_writes_nothing(clock: Clock, home: Path) -> None:
    assert UsageLedger(clock=clock).start("openai:gpt-4o", automatic=True, budget=0) is None
    assert not home.exists()


def _spend(root: str, calls: int, start_line: Barrier, budget: int | None) -> None:
    # With a budget, each tenth call starts a new day: many days' last calls are raced for.
    clock = Clock(NOON)
    ledger = UsageLedger(Path(root), clock=clock if budget is not None else time.time)
    start_line.wait(60)  # both processes are loaded: they spend at the same time
    for i in range(calls):
        clock.set(NOON + dt.timedelta(days=i // 10))
        ticket = ledger.start(f"model-{i % 3}", automatic=True, budget=budget)
        if ticket is not None:
            ledger.finish(ticket, tokens_in=7, tokens_out=3, estimated=True, cost=0.001)


def _race(home: Path, calls: int, budget: int | None) -> None:
    context = multiprocessing.get_context("spawn")
    start_line = context.Barrier(2)
    workers = [
        context.Process(target=_spend, args=(str(home), calls, start_line, budget))
        for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    assert [worker.exitcode for worker in workers] == [0, 0]


def test_two_processes_spending_at_once_lose_no_count(home: Path) -> None:
    _race(home, 200, None)
    usage = UsageLedger().today()
    assert (usage.calls, usage.automatic) == (400, 400)
    assert (usage.tokens_in, usage.tokens_out, usage.estimated) == (2800, 1200, 400)
    assert usage.cost == pytest.approx(0.4)
    assert sum(usage.models.values()) == 400


def test_two_processes_racing_for_the_last_calls_of_a_budget(home: Path) -> None:
    _race(home, 300, 3)  # 30 days, each with 20 tries at a budget of 3
    last = Clock(NOON + dt.timedelta(days=29))
    days = UsageLedger(clock=last).recent(40)
    # never 4: the budget check and the start line are written under one lock
    assert [day.automatic for day in days] == [3] * 30


def test_days_roll_over_at_local_midnight(tokyo: None, home: Path) -> None:
    clock = Clock(dt.datetime(2025, 3, 14, 23, 59, 59))
    ledger = UsageLedger(clock=clock)
    late = call(ledger, tokens=(100, 10))
    # in UTC both calls are on March 14th; locally, the second is on the 15th
    clock.set(dt.datetime(2025, 3, 15, 0, 0, 1))
    early = call(ledger, tokens=(200, 20))
    assert (late.day, early.day) == ("2025-03-14", "2025-03-15")
    assert ledger.today().calls == 1 and ledger.today().tokens_in == 200
    assert ledger.day("2025-03-14").tokens_in == 100

    # a call that starts before midnight and ends after it counts on its first day
    clock.set(dt.datetime(2025, 3, 15, 23, 59, 59, 500_000))
    ticket = ledger.start("openai:gpt-4o-mini", automatic=True, budget=2)
    assert ticket is not None and ticket.day == "2025-03-15"
    clock.set(dt.datetime(2025, 3, 16, 0, 0, 2))
    ledger.finish(ticket, tokens_in=5000, tokens_out=50, estimated=False, cost=0.01)
    assert ledger.day("2025-03-15").tokens_in == 5200
    assert ledger.today() == DayUsage("2025-03-16")
    assert not day_file(home, "2025-03-16").exists()
    # the budget is a day's: the 15th spent its 2, the 16th starts afresh
    assert ledger.start("openai:gpt-4o-mini", automatic=True, budget=2) is not None


def test_a_corrupt_day_file_is_moved_aside_and_counting_restarts(
    ledger: UsageLedger, home: Path, isolated_env: Path
) -> None:
    call(ledger)
    call(ledger)
    path = day_file(home)
    with path.open("a") as file:
        file.write('{"id": "x", "t": 1.0, "model": "m", "auto": "yes"}\n')  # auto must be a bool
    corrupt = path.read_bytes()

    assert ledger.today() == DayUsage("2025-03-14")
    backups = list(path.parent.glob(path.name + ".corrupt-*"))
    assert len(backups) == 1 and backups[0].read_bytes() == corrupt
    warnings = ledger.take_warnings()
    assert len(warnings) == 1
    assert "usage file of 2025-03-14 was corrupt (line 5: a start record" in warnings[0]
    assert str(backups[0]) in warnings[0] and "counting started again" in warnings[0]
    assert ledger.take_warnings() == []
    assert "corrupt" in isolated_env.read_text()  # the debug log has it too

    call(ledger)
    assert ledger.today().calls == 1
    assert ledger.take_warnings() == []


def test_a_corrupt_file_found_by_a_budget_check_is_moved_aside(
    ledger: UsageLedger, home: Path
) -> None:
    call(ledger)
    other = UsageLedger(clock=ledger._clock)  # another kernel, which has read nothing yet
    with day_file(home).open("a") as file:
        file.write("this is not json\n")
    assert other.start("openai:gpt-4o-mini", automatic=True, budget=1) is not None
    assert len(other.take_warnings()) == 1
    assert other.today().automatic == 1  # the call just made, on a fresh file
    assert ledger.today().automatic == 1  # the first kernel sees the new file too


def test_a_torn_last_line_is_ignored_and_cut_by_the_next_write(
    ledger: UsageLedger, home: Path
) -> None:
    call(ledger)
    path = day_file(home)
    with path.open("a") as file:
        file.write('{"id": "abc", "t": 17')  # a writer killed mid-line
    assert ledger.today().calls == 1
    assert ledger.take_warnings() == []
    assert not list(path.parent.glob("*.corrupt-*"))

    call(ledger)
    assert ledger.today().calls == 2
    assert len(lines(path)) == 4  # whole lines only: the torn one is gone
    assert UsageLedger(clock=ledger._clock).today().calls == 2


def test_another_kernels_calls_are_seen_by_an_earlier_reader(
    ledger: UsageLedger, clock: Clock
) -> None:
    call(ledger)
    assert ledger.today().calls == 1
    other = UsageLedger(clock=clock)
    call(other)
    call(other)
    assert ledger.today().calls == 3
    assert other.start("m", automatic=True, budget=4) is not None
    assert ledger.start("m", automatic=True, budget=4) is None


def test_recent_lists_the_days_with_records_newest_first(clock: Clock, home: Path) -> None:
    ledger = UsageLedger(clock=clock)
    for days_ago in (40, 31, 10, 1, 0):
        clock.set(NOON - dt.timedelta(days=days_ago))
        call(ledger)
        if days_ago == 10:
            call(ledger)
    (home / "usage" / "2025-03-01.jsonl").touch()  # a day file with nothing in it
    clock.set(NOON)
    recent = ledger.recent(30)
    assert [(u.day, u.calls) for u in recent] == [
        ("2025-03-14", 1),
        ("2025-03-13", 1),
        ("2025-03-04", 2),
    ]
    assert [u.day for u in ledger.recent(35)][-1] == "2025-02-11"
    assert ledger.recent(1) == [ledger.today()]
    assert UsageLedger(home / "elsewhere").recent() == []


def test_old_day_files_are_pruned_on_the_first_write_of_a_day(clock: Clock, home: Path) -> None:
    folder = home / "usage"
    folder.mkdir(parents=True, mode=0o700)
    old = NOON.date() - dt.timedelta(days=KEEP_DAYS + 1)
    kept = NOON.date() - dt.timedelta(days=KEEP_DAYS - 1)
    for name in (f"{old}.jsonl", f"{old}.jsonl.corrupt-20240101-000000-1", f"{kept}.jsonl"):
        (folder / name).write_text("")
    ledger = UsageLedger(clock=clock)
    call(ledger)
    days = sorted(p.name for p in folder.iterdir() if p.name != ".lock")
    assert days == [f"{kept}.jsonl", "2025-03-14.jsonl"]

    (folder / f"{old}.jsonl").write_text("")  # later the same day: not looked at again
    call(ledger)
    assert (folder / f"{old}.jsonl").exists()
    clock.set(NOON + dt.timedelta(days=1))
    call(ledger)
    assert not (folder / f"{old}.jsonl").exists()


def test_a_store_others_could_write_is_refused(ledger: UsageLedger, home: Path) -> None:
    call(ledger)
    home.chmod(0o777)
    try:
        with pytest.raises(UnsafeStoreError, match="others can write to it"):
            ledger.today()
        with pytest.raises(UnsafeStoreError):
            ledger.start("openai:gpt-4o-mini", automatic=False)
    finally:
        home.chmod(0o700)


def test_a_day_must_be_a_date(ledger: UsageLedger) -> None:
    for bad in ("../secrets", "2025-13-01", "today", ""):
        with pytest.raises(StoreError, match="not a day"):
            ledger.day(bad)
