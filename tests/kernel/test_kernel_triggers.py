"""Automatic recaps in a real kernel, observed the way a frontend sees them (IOPub)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from fakellm import FakeLLM, slow
from kernelutil import (
    SETUP,
    banner_id,
    collect,
    execute,
    running_kernel,
    shown_updates,
    stream_text,
    wait_for_shown,
)

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def kernel(tmp_path: Any) -> Iterator[tuple[Any, str | None]]:
    env = {"JUPYTER_RECAP_MODEL": "offline", "JUPYTER_RECAP_LOG": str(tmp_path / "recap.log")}
    with running_kernel(env) as kc:
        yield kc, banner_id(execute(kc, SETUP))


@pytest.fixture
def provider_kernel(tmp_path: Any, fake_llm: FakeLLM) -> Iterator[tuple[Any, str | None]]:
    env = {
        "OPENAI_BASE_URL": fake_llm.url + "/v1",
        "OPENAI_API_KEY": "sk-test-0123456789abcdef",
        "JUPYTER_RECAP_MODEL": "openai:gpt-4o-mini",
        "JUPYTER_RECAP_LOG": str(tmp_path / "recap.log"),
    }
    with running_kernel(env) as kc:
        yield kc, banner_id(execute(kc, SETUP))


def test_idle_fallback_shows_a_recap_without_any_cell_run(kernel: tuple[Any, str | None]) -> None:
    kc, comm_id = kernel
    execute(kc, "%config Recap.idle_seconds = 1")
    execute(kc, "agent.script.append(lambda p: print('Next: rerun the loader.'))")
    execute(kc, "%%agent\nfix the flaky CSV loader")
    ended = time.monotonic()
    state, at = wait_for_shown(kc, comm_id, 10)
    assert (
        "Fix the flaky CSV loader" in state["text"] and "Next: Rerun the loader." in state["text"]
    )
    assert state["reason"] == "idle"
    assert at - ended >= 0.9  # not before the idle time passed


def test_away_timer_during_a_long_turn_drafts_at_turn_end(kernel: tuple[Any, str | None]) -> None:
    kc, comm_id = kernel
    execute(kc, "%config Recap.away_seconds = 1\n%config Recap.post_turn_seconds = 60")

    execute(
        kc,
        "def long_turn(prompt):\n"
        "    ext.report_focus(False)  # the person switches tabs as the agent starts\n"
        "    time.sleep(2.5)          # the away timer fires mid-turn: pending\n"
        "    print('Migrated 4 of 7 tables. Next: the invoices FK.')\n"
        "agent.script.append(long_turn)",
    )
    messages = execute(kc, "%%agent\nmigrate the billing tables") + collect(kc, 2)
    # Nothing was drafted while the turn ran: the first recap shown already holds the agent's
    # last output, which is recorded only when the turn ends. (The order of the messages on
    # IOPub proves nothing: the kernel flushes the cell's stdout after the turn has ended, so a
    # recap drafted at turn end may arrive before the text printed just before it.)
    shown = shown_updates(messages, comm_id)
    assert shown, "no recap at turn end"
    state = shown[0]
    assert state["reason"] == "away"
    assert "Next: The invoices FK." in state["text"]
    status = stream_text(execute(kc, "%recap status"))
    assert "source: api" in status and "away for" in status


def test_slow_provider_never_delays_a_cell_and_input_cancels_the_draft(
    provider_kernel: tuple[Any, str | None], fake_llm: FakeLLM
) -> None:
    kc, _ = provider_kernel
    fake_llm.respond(slow(30))
    execute(kc, "%config Recap.idle_seconds = 0.2")
    execute(kc, "%%agent\nfix the FK")
    assert fake_llm.wait_for_requests(1, timeout=10)  # the draft is now stuck at the provider

    started = time.monotonic()
    reply = execute(kc, "print(6 * 7)")
    elapsed = time.monotonic() - started
    assert stream_text(reply) == "42\n"
    assert elapsed < 1.0, f"a cell took {elapsed:.2f} s while a draft was in flight"

    deadline = time.monotonic() + 5
    while not fake_llm.disconnects and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fake_llm.disconnects, "running a cell did not abort the in-flight request"


def test_ten_away_cycles_without_activity_make_one_model_call(
    provider_kernel: tuple[Any, str | None], fake_llm: FakeLLM
) -> None:
    kc, _ = provider_kernel
    execute(kc, "%config Recap.away_seconds = 0.2\n%config Recap.post_turn_seconds = 0.2")
    execute(kc, "%%agent\nfix the FK")
    # The person leaves and returns ten times; no cell runs, so nothing new happens. Each
    # absence lasts until its away timer fired and was handled (a draft that has ended, or
    # a dedupe), however slow the machine, rather than a fixed half second: an absence
    # that began while the first draft was still in flight would be covered by that draft
    # and counted as neither.
    execute(
        kc,
        "import threading\n"
        "handled = lambda c: c.drafts_started + c.saved_by_dedupe\n"
        "def cycles():\n"
        "    for _ in range(10):\n"
        "        before = handled(ext.schedule.counters)\n"
        "        ext.report_focus(False)\n"
        "        deadline = time.monotonic() + 20\n"
        "        while (\n"
        "            handled(ext.schedule.counters) == before or ext.schedule.in_flight\n"
        "        ) and time.monotonic() < deadline:\n"
        "            time.sleep(0.02)\n"
        "        ext.report_focus(True); time.sleep(0.1)\n"
        "worker = threading.Thread(target=cycles); worker.start()",
    )
    execute(kc, "worker.join()", timeout=300)
    assert len(fake_llm.requests) == 1
    status = stream_text(execute(kc, "%recap status"))
    assert "calls:       1 made" in status and "9 saved by dedupe" in status, status
