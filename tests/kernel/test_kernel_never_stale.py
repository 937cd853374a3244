"""A shown recap covers the latest finished turn, in a real kernel seen from IOPub (issue 36).

Drafting while the agent works (``Recap.during_active``): a draft starts mid-turn and the turn
ends before the model answers. The answer covers the turn before; the banner must say
*drafting…* and then show the recap of the turn that ended, never the older text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fakellm import FakeLLM
from gates import WAIT, Gates
from kernelutil import SETUP, collect_until, execute, running_kernel, widget_states

pytestmark = pytest.mark.timeout(180)

TURN = """\
def turn(prompt, number={number}):
    ext.report_focus(True)
    ext.report_focus(False)  # the person looks away as the agent starts: a draft mid-turn
    deadline = time.monotonic() + {wait}
    while ext.schedule.in_flight is None and time.monotonic() < deadline:
        time.sleep(0.01)  # the kernel cannot await the fake's request: poll its own state
    print(f"Round {{number}} done. Next: step {{number + 1}}.")
agent.script.append(turn)
"""


@pytest.fixture
def kernel(tmp_path: Any, fake_llm: FakeLLM) -> Iterator[tuple[Any, Gates]]:
    gates = Gates(fake_llm)
    env = {
        "OPENAI_BASE_URL": fake_llm.url + "/v1",
        "OPENAI_API_KEY": "sk-test-0123456789abcdef",
        "JUPYTER_RECAP_MODEL": "openai:gpt-4o-mini",
        "JUPYTER_RECAP_LOG": str(tmp_path / "recap.log"),
    }
    try:
        with running_kernel(env) as kc:
            execute(kc, SETUP)
            yield kc, gates
    finally:
        for event in gates.events:
            event.set()


def names_round(state: dict[str, Any]) -> int | None:
    found = re.search(r"round (\d+)", state.get("text") or "")
    return int(found.group(1)) if found else None


def test_a_turn_ending_mid_draft_gets_its_own_recap_never_the_one_before(
    kernel: tuple[Any, Gates],
) -> None:
    kc, gates = kernel
    execute(
        kc,
        "%config Recap.during_active = True\n"
        "%config Recap.away_seconds = 0.05\n"
        "%config Recap.post_turn_seconds = 600",
    )
    execute(kc, "agent.script.append(lambda p: print('Round 1 done. Next: step 2.'))")
    execute(kc, "%%agent\nwork on round 1")
    calls = 0
    for number in (2, 3, 4):
        execute(kc, TURN.format(number=number, wait=WAIT))
        messages = execute(kc, f"%%agent\nwork on round {number}")
        calls += 1
        assert gates.arrived(calls), "no draft started during the turn"
        gates.open(calls)  # its answer covers the round before
        assert gates.arrived(calls + 1), "no draft of the turn that ended followed"
        calls += 1
        gates.open(calls)

        def shown_now(seen: list[dict[str, Any]], number: int = number) -> bool:
            states = [s for m in seen for s in widget_states([m], m["content"].get("comm_id"))]
            return any(s.get("state") == "shown" and names_round(s) == number for s in states)

        messages += collect_until(kc, shown_now, WAIT)
        updates = [
            state
            for message in messages
            for state in widget_states([message], message["content"].get("comm_id", ""))
            if "state" in state
        ]
        shown = [names_round(s) for s in updates if s["state"] == "shown"]
        assert shown == [number], updates  # once, of the turn that ended; never the one before
        if number > 2:  # the banner exists from the first recap on: it said drafting… first
            assert [s["state"] for s in updates][-2:] == ["drafting", "shown"], updates
