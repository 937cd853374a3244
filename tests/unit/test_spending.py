"""What recaps spend: every model call counted in the person's ledger, automatic ones held to the
daily budget and kept off hosted models on request, the price estimated, the announcement made.

Real HTTP to the local fake LLM server, a real usage ledger in a temporary store.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakellm import FakeLLM, answer, hosted_address, hosted_name

import jupyter_recap as jr
from jupyter_recap.pipeline.service import RecapResult, RecapStats, draft_recap
from jupyter_recap.settings import Recap
from jupyter_recap.stores.usage import UsageLedger

KEY = "sk-test-0123456789abcdef"


def session() -> jr.Transcript:
    t = jr.Transcript()
    t.user("fix the flaky CSV loader")
    t.assistant("The date column mixes formats. Next: pin the format in read_csv.")
    t.outcome("ok")
    return t


@pytest.fixture
def ledger(tmp_path: Path) -> UsageLedger:
    return UsageLedger(tmp_path / "store")


def env_for(url: str) -> dict[str, str]:
    return {"OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": KEY}


def draft(
    fake_url: str,
    ledger: UsageLedger | None,
    trigger: str,
    *,
    stats: RecapStats | None = None,
    **settings: object,
) -> RecapResult:
    return draft_recap(
        session(),
        model=None,
        settings=Recap(model="openai:gpt-4o-mini", **settings),
        trigger=trigger,
        env=env_for(fake_url),
        stats=stats,
        usage=ledger,
    )


def test_automatic_recaps_stop_at_the_budget_and_asked_for_ones_still_call(
    fake_llm: FakeLLM, ledger: UsageLedger
) -> None:
    for _ in range(2):
        result = draft(fake_llm.url, ledger, "away", daily_budget=2)
        assert result.recap is not None and result.recap.model == "openai:gpt-4o-mini"
    held = draft(fake_llm.url, ledger, "post_turn", daily_budget=2)
    assert held.recap is not None
    assert held.recap.model == "offline"
    assert held.recap.note == "daily budget of 2 calls reached"
    assert held.recap.text.startswith("Task: Fix the flaky CSV loader.")
    assert len(fake_llm.requests) == 2  # the third was never sent
    asked = draft(fake_llm.url, ledger, "manual", daily_budget=2)
    assert asked.recap is not None and asked.recap.model == "openai:gpt-4o-mini"
    assert len(fake_llm.requests) == 3
    today = ledger.today()
    assert (today.calls, today.automatic, today.tokens_in, today.tokens_out) == (3, 2, 963, 72)


def test_a_budget_of_zero_keeps_automatic_recaps_off_the_model(fake_llm: FakeLLM) -> None:
    # Even with no ledger to count in: nothing is ever sent automatically.
    result = draft(fake_llm.url, None, "idle", daily_budget=0)
    assert result.recap is not None and result.recap.model == "offline"
    assert result.recap.note == "daily budget 0"
    assert fake_llm.requests == []


def test_the_budget_is_a_local_day_and_rolls_over_at_midnight(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    now = [dt.datetime(2026, 12, 1, 23, 59, 30).timestamp()]
    ledger = UsageLedger(tmp_path / "store", clock=lambda: now[0])
    assert draft(fake_llm.url, ledger, "away", daily_budget=1).recap.model != "offline"  # type: ignore[union-attr]
    assert draft(fake_llm.url, ledger, "away", daily_budget=1).recap.model == "offline"  # type: ignore[union-attr]
    now[0] = dt.datetime(2026, 12, 2, 0, 0, 5).timestamp()  # a new day, a new budget
    assert draft(fake_llm.url, ledger, "away", daily_budget=1).recap.model != "offline"  # type: ignore[union-attr]
    assert [day.calls for day in ledger.recent(30)] == [1, 1]
    assert len(fake_llm.requests) == 2


@pytest.fixture
def hosted_llm() -> Iterator[FakeLLM]:
    """The fake LLM server reached by this machine's host name: a "hosted" provider, offline."""
    with FakeLLM(host=hosted_address()) as fake:
        yield fake


def test_the_price_comes_from_the_table_or_from_recap_prices(
    hosted_llm: FakeLLM, ledger: UsageLedger
) -> None:
    url = hosted_llm.url_as(hosted_name())
    stats = RecapStats()
    draft(url, ledger, "manual", stats=stats)  # 321 in, 24 out at the list price
    listed = 321 * 0.15 / 1e6 + 24 * 0.60 / 1e6
    assert stats.cost == pytest.approx(listed) and ledger.today().cost == pytest.approx(listed)
    stats = RecapStats()
    prices = {"openai:gpt-4o-mini": [1000.0, 2000.0]}
    draft(url, ledger, "manual", stats=stats, prices=prices)
    assert stats.cost == pytest.approx(0.321 + 0.048)
    stats = RecapStats()
    draft_recap(
        session(),
        settings=Recap(model="openai:my-own-finetune"),
        env=env_for(url),
        stats=stats,
        usage=ledger,
    )
    assert (stats.cost, stats.unpriced) == (0.0, 1)  # an unknown model: tokens, no price
    assert ledger.today().unpriced == 1


def test_a_model_served_on_this_machine_costs_no_list_price(
    fake_llm: FakeLLM, ledger: UsageLedger
) -> None:
    # vLLM, llama.cpp or LM Studio on localhost serve "gpt-4o-mini" too: nothing is paid.
    stats = RecapStats()
    result = draft(fake_llm.url, ledger, "manual", stats=stats)
    assert result.recap is not None and stats.tokens_in > 0
    assert (stats.cost, stats.unpriced) == (0.0, 0) and ledger.today().cost == 0.0
    # ... unless the person prices it (their GPU hours, say).
    stats = RecapStats()
    draft(fake_llm.url, ledger, "manual", stats=stats, prices={"openai:gpt-4o-mini": [1.0, 2.0]})
    assert stats.cost == pytest.approx((321 * 1.0 + 24 * 2.0) / 1e6)


def test_tokens_are_estimated_when_the_provider_reports_none(
    fake_llm: FakeLLM, ledger: UsageLedger
) -> None:
    fake_llm.respond(answer(tokens_in=0, tokens_out=0))
    stats = RecapStats()
    draft(fake_llm.url, ledger, "manual", stats=stats)
    sent = len(str(fake_llm.bodies()[0]))
    assert 0.15 * sent < stats.tokens_in < 0.5 * sent  # about four characters a token
    assert stats.tokens_out > 0 and ledger.today().estimated == 1


def test_automatic_recaps_stay_off_hosted_models_when_asked(
    hosted_llm: FakeLLM, ledger: UsageLedger
) -> None:
    url = hosted_llm.url_as(hosted_name())
    held = draft(url, ledger, "away", auto_hosted=False)
    assert held.recap is not None and held.recap.model == "offline"
    assert held.recap.note == "hosted models only when asked (Recap.auto_hosted)"
    assert hosted_llm.requests == []
    asked = draft(url, ledger, "manual", auto_hosted=False)  # the person asked: it is sent
    assert asked.recap is not None and asked.recap.model == "openai:gpt-4o-mini"
    assert len(hosted_llm.requests) == 1


def test_an_automatic_recap_by_a_hosted_model_carries_the_announcement(
    hosted_llm: FakeLLM, fake_llm: FakeLLM, ledger: UsageLedger
) -> None:
    hosted = draft(hosted_llm.url_as(hosted_name()), ledger, "away")
    assert hosted.recap is not None
    assert hosted.recap.notice.startswith(
        "Automatic recaps send this notebook's recent transcript (redacted) to "
        "openai:gpt-4o-mini. To stop: %recap off"
    )
    assert "JUPYTER_RECAP_AUTO_HOSTED=0" in hosted.recap.notice
    local = draft(fake_llm.url, ledger, "away")  # a server on this machine: nothing leaves
    asked = draft(hosted_llm.url_as(hosted_name()), ledger, "manual")  # the person asked
    assert local.recap is not None and asked.recap is not None
    assert local.recap.notice == asked.recap.notice == ""
    # Once per person and model, across kernels: the mark is in the store.
    assert ledger.announce_once("openai:gpt-4o-mini")
    assert not UsageLedger(ledger.root).announce_once("openai:gpt-4o-mini")
