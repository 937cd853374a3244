"""The daily budget and the hosted-model announcement across two real kernels of one person.

Both kernels share one session store (one person); their model is the local fake LLM server.
Automatic recaps come from the idle fallback (these kernels have no focus reports).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import Any

import needs
import pytest
from fakellm import FakeLLM, answer, hosted_address, hosted_name
from kernelutil import SETUP, banner_id, execute, running_kernel, stream_text, wait_for_shown

pytestmark = pytest.mark.timeout(180)

TURN = "%%agent\nfix the flaky CSV loader"


@pytest.fixture(autouse=True)
def _one_day() -> None:
    """Budgets count today's calls (and one test plants today's ledger file): none of these
    tests may straddle midnight."""
    needs.a_day_that_lasts()


def start(env: dict[str, str]) -> Any:
    return running_kernel(env)


def automatic_recap(kc: Any, comm_id: str | None, prompt: str = TURN) -> dict[str, Any]:
    """Run an agent turn and wait for the idle fallback's recap in the banner."""
    execute(kc, "agent.script.append(lambda p: print('Read the loader. Next: pin the format.'))")
    execute(kc, prompt)
    state, _ = wait_for_shown(kc, comm_id, 20)
    return state


@pytest.fixture
def person(fake_llm: FakeLLM) -> dict[str, str]:
    """One person's environment: a shared store, a model, a budget of one automatic call."""
    return {
        "JUPYTER_RECAP_HOME": tempfile.mkdtemp(prefix="recap-person-"),
        "OPENAI_BASE_URL": fake_llm.url + "/v1",
        "OPENAI_API_KEY": "sk-test-0123456789abcdef",
        "JUPYTER_RECAP_MODEL": "openai:gpt-4o-mini",
    }


def configure(kc: Any, budget: int) -> str | None:
    comm_id = banner_id(execute(kc, SETUP))
    execute(kc, f"%config Recap.idle_seconds = 1\n%config Recap.daily_budget = {budget}")
    return comm_id


def test_the_budget_holds_across_two_kernels_and_asking_still_calls(
    fake_llm: FakeLLM, person: dict[str, str]
) -> None:
    with start(person) as first, start(person) as second:
        first_banner, second_banner = configure(first, 1), configure(second, 1)
        shown = automatic_recap(first, first_banner)
        assert shown["model"] == "openai:gpt-4o-mini"
        assert len(fake_llm.requests) == 1
        # The second kernel's automatic recap finds today's one call spent by the first.
        shown = automatic_recap(second, second_banner)
        assert shown["model"] == "offline · daily budget of 1 calls reached"
        assert shown["text"].startswith("Task: Fix the flaky CSV loader.")
        assert len(fake_llm.requests) == 1
        # Asked for, a recap still calls the model, and counts.
        assert "✦ recap" not in stream_text(execute(second, "%recap"))  # shown in the banner
        assert len(fake_llm.requests) == 2
        status = stream_text(execute(second, "%recap status"))
        assert "today:       2 calls (1 automatic)" in status
        assert "budget:      0 of 1 automatic calls left today" in status
        assert "(this kernel)" in status and "(all your kernels)" in status


def test_a_ledger_that_cannot_be_written_stops_automatic_calls_and_says_why(
    fake_llm: FakeLLM, person: dict[str, str]
) -> None:
    """Today's usage file replaced by a directory: the budget cannot be counted, so automatic
    recaps are written offline (the banner's header says why), status claims no calls left,
    and a recap the person asks for still calls the model."""
    with start(person) as kc:
        comm_id = configure(kc, 2)
        execute(
            kc,
            "import datetime, os\nfrom jupyter_recap.stores.usage import UsageLedger\n"
            "ledger = UsageLedger()\nos.makedirs(ledger.folder, mode=0o700, exist_ok=True)\n"
            "os.mkdir(ledger.folder / f'{datetime.date.today().isoformat()}.jsonl')",
        )
        engine = ""
        for round_ in range(3):
            prompt = f"{TURN} (round {round_})"
            shown = automatic_recap(kc, comm_id, prompt)
            # (an update carries what changed: the engine line is sent the first time)
            engine = shown.get("model", engine) if round_ else shown["model"]
            assert engine == "offline · daily budget not counted: see %recap status"
            execute(kc, "print('looked at it')")  # the person saw it: the next one is news
        assert fake_llm.requests == []
        status = stream_text(execute(kc, "%recap status"))
        assert "today:       unknown (" in status and "is not a regular file of yours" in status
        assert "budget:      not counted, so automatic recaps are written offline" in status
        assert "calls left" not in status
        execute(kc, "%recap")
        assert len(fake_llm.requests) == 1  # asked for: it still calls


@pytest.fixture
def hosted_llm() -> Iterator[FakeLLM]:
    with FakeLLM(host=hosted_address()) as fake:
        yield fake


def test_the_first_automatic_recap_by_a_hosted_model_is_announced_once(
    hosted_llm: FakeLLM, person: dict[str, str]
) -> None:
    person["OPENAI_BASE_URL"] = hosted_llm.url_as(hosted_name()) + "/v1"
    with start(person) as first, start(person) as second:
        first_banner, second_banner = configure(first, 10), configure(second, 10)
        shown = automatic_recap(first, first_banner)
        assert shown["model"] == "openai:gpt-4o-mini"
        assert shown["notice"].startswith(
            "Automatic recaps send this notebook's recent transcript (redacted) to "
            "openai:gpt-4o-mini."
        )
        # (A recap is never shown twice in a row: the next one must say something new.)
        hosted_llm.respond(answer("<recap>You are fixing the date parser.</recap>"))
        again = automatic_recap(first, first_banner, "%%agent\nnow the date parser")
        # Once: the draft took the announcement down, and the new recap brings none back.
        assert again.get("notice", "") == ""
        elsewhere = automatic_recap(second, second_banner)
        assert elsewhere.get("notice", "") == ""  # once per person (a trait left "" is not sent)
        assert len(hosted_llm.requests) == 3


def test_hosted_models_stay_out_of_automatic_recaps_when_the_person_says_so(
    hosted_llm: FakeLLM, person: dict[str, str]
) -> None:
    person["OPENAI_BASE_URL"] = hosted_llm.url_as(hosted_name()) + "/v1"
    person["JUPYTER_RECAP_AUTO_HOSTED"] = "0"
    with start(person) as kc:
        shown = automatic_recap(kc, configure(kc, 10))
        assert shown["model"] == "offline · hosted models only when asked (Recap.auto_hosted)"
        assert hosted_llm.requests == []
