"""A budget is a promise about money: what happens when the usage ledger cannot keep it.

What used to happen: with ``Recap.daily_budget = 2``, a usage file or lock replaced by a directory
or a link, or a store others could write, let every automatic recap call the model (the ledger
error was logged and the call made), and status still said "2 of 2 left". Now an automatic call
is not made when it cannot be counted; a recap the person asks for still is. Around it: totals
that cannot reach infinity, prices that cannot print 300 digits, and an announcement mark that
a planted link cannot fake.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from fakellm import FakeLLM
from traitlets import TraitError

import jupyter_recap as jr
from jupyter_recap.pipeline.service import UNCOUNTED, draft_recap
from jupyter_recap.settings import Recap
from jupyter_recap.stores.usage import UsageLedger, local_day
from jupyter_recap.textutil import format_cost

KEY = "sk-test-0123456789abcdef"


def session() -> jr.Transcript:
    t = jr.Transcript()
    t.user("fix the flaky CSV loader")
    t.assistant("The date column mixes formats. Next: pin the format in read_csv.")
    t.outcome("ok")
    return t


def today_file(ledger: UsageLedger) -> Path:
    """Today's usage file, removed so that a fault can take its place."""
    path = ledger.folder / f"{local_day(ledger._clock())}.jsonl"
    path.unlink()
    return path


def day_file_is_a_directory(ledger: UsageLedger) -> None:
    today_file(ledger).mkdir()


def day_file_is_a_link(ledger: UsageLedger) -> None:
    elsewhere = ledger.root.parent / "elsewhere.jsonl"
    elsewhere.write_text("")
    today_file(ledger).symlink_to(elsewhere)


def lock_is_a_directory(ledger: UsageLedger) -> None:
    ledger.lock_path.unlink()
    ledger.lock_path.mkdir()


def lock_is_a_link(ledger: UsageLedger) -> None:
    target = ledger.root.parent / "lock-elsewhere"
    target.write_text("")
    ledger.lock_path.unlink()
    ledger.lock_path.symlink_to(target)


def store_group_writable(ledger: UsageLedger) -> None:
    os.chmod(ledger.root, 0o770)


def store_world_writable(ledger: UsageLedger) -> None:
    os.chmod(ledger.root, 0o777)


FAULTS: list[Callable[[UsageLedger], None]] = [
    day_file_is_a_directory,
    day_file_is_a_link,
    lock_is_a_directory,
    lock_is_a_link,
    store_group_writable,
    store_world_writable,
]


@pytest.fixture
def ledger(tmp_path: Path) -> UsageLedger:
    ledger = UsageLedger(tmp_path / "store")
    ticket = ledger.start("openai:gpt-4o-mini", automatic=False)  # a ledger in use
    assert ticket is not None
    ledger.finish(ticket, tokens_in=1, tokens_out=1, estimated=False, cost=None)
    return ledger


def draft(fake: FakeLLM, ledger: UsageLedger, trigger: str) -> jr.RecapResult:
    return draft_recap(
        session(),
        settings=Recap(model="openai:gpt-4o-mini", daily_budget=2),
        trigger=trigger,
        env={"OPENAI_BASE_URL": fake.url + "/v1", "OPENAI_API_KEY": KEY},
        usage=ledger,
    )


@pytest.mark.parametrize("fault", FAULTS, ids=[f.__name__ for f in FAULTS])
def test_automatic_recaps_make_no_call_when_the_budget_cannot_be_counted(
    fault: Callable[[UsageLedger], None], ledger: UsageLedger, fake_llm: FakeLLM
) -> None:
    fault(ledger)
    assert ledger.problem() is not None  # status says why, never "2 of 2 left"
    for _ in range(8):
        result = draft(fake_llm, ledger, "away")
        assert result.recap is not None and result.recap.model == "offline"
        assert result.recap.note == UNCOUNTED
    assert fake_llm.requests == []
    asked = draft(fake_llm, ledger, "manual")  # the person asked: not the budget's business
    assert asked.recap is not None and asked.recap.model == "openai:gpt-4o-mini"
    assert len(fake_llm.requests) == 1


def test_a_ledger_that_works_has_no_problem(ledger: UsageLedger, tmp_path: Path) -> None:
    assert ledger.problem() is None
    assert UsageLedger(tmp_path / "never-made").problem() is None  # the first call makes it


def test_totals_stay_finite_and_every_json_is_strict(ledger: UsageLedger) -> None:
    for _ in range(2):
        ticket = ledger.start("openai:gpt-4o", automatic=False)
        assert ticket is not None
        ledger.finish(ticket, tokens_in=1, tokens_out=1, estimated=False, cost=1e308)
    cost = ledger.today().cost
    assert cost == pytest.approx(1e12)  # bounded, not inf
    json.dumps(ledger.today().to_dict(), allow_nan=False)  # raises on Infinity
    assert format_cost(cost) == "over $1,000,000"


def test_prices_beyond_any_list_price_are_refused_in_one_line() -> None:
    with pytest.raises(TraitError, match=r"two numbers from 0 to 10,000; got \[1e\+300, 1\]"):
        Recap(prices={"openai:gpt-4o": [1e300, 1]})
    assert format_cost(123456.789) == "~$123,456.79"


def test_an_announcement_mark_that_is_not_a_file_does_not_count(
    ledger: UsageLedger, tmp_path: Path
) -> None:
    assert ledger.announce_once("openai:gpt-4o")
    marks = list(ledger.folder.glob("announced-*"))
    assert len(marks) == 1
    (tmp_path / "decoy").write_text("")
    other = "anthropic:claude-sonnet-4-5"
    assert ledger.announce_once(other) and not ledger.announce_once(other)
    planted = next(m for m in ledger.folder.glob("announced-*") if m not in marks)
    planted.unlink()
    planted.symlink_to(tmp_path / "decoy")  # planted to silence the notice for good
    assert ledger.announce_once(other)  # not ours: replaced by a real mark, announced once
    assert planted.is_file() and not planted.is_symlink()
    assert not ledger.announce_once(other)
