"""A shown recap covers the latest finished turn (issue 36, part 6).

A real IPython shell with the extension, the stand-in ``%%agent`` magic and the local fake LLM,
whose answers are held at a gate until the test opens it: a turn can then end while a draft of
an earlier one is in flight, deterministically. The fake writes a recap of the latest finished
round its request's context holds ("Round N done"), so a recap names the turn it covers.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from agentmagic import FakeAgentMagics, install
from fakellm import FakeLLM
from gates import WAIT, Gates

pytestmark = pytest.mark.timeout(120)


class Shown:
    """Every recap the banner showed, with the finished turns the transcript had then."""

    def __init__(self, ext: Any) -> None:
        self.ext = ext
        self.seen: list[tuple[str, int]] = []
        self._changed = threading.Condition()
        ext.transcript.subscribe(self._on_recap, kinds=("recap",))

    def _on_recap(self, transcript: Any, entry: Any) -> None:
        with self._changed:
            self.seen.append((entry.text, transcript.completed_turns))
            self._changed.notify_all()

    def wait_for(self, check: Callable[[list[tuple[str, int]]], bool]) -> list[tuple[str, int]]:
        with self._changed:
            assert self._changed.wait_for(lambda: check(self.seen), WAIT), self.seen
            return list(self.seen)


def until(check: Callable[[], Any]) -> Any:
    """Poll a state the kernel reaches on its own threads (no event to await there)."""
    deadline = time.monotonic() + WAIT
    while not (value := check()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)
    return value


@pytest.fixture
def loaded(
    shell: Any, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Any, FakeAgentMagics, Gates, Shown]]:
    from jupyter_recap.ipython import extension

    monkeypatch.setattr(extension.RecapExtension, "has_widgets", property(lambda self: True))
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    monkeypatch.setenv("JUPYTER_RECAP_MODEL", "openai:gpt-4o-mini")
    gates = Gates(fake_llm)
    shell.run_line_magic("load_ext", "jupyter_recap")
    ext = extension.extension_for(shell)
    assert ext is not None
    agent = install(shell)
    shown = Shown(ext)
    try:
        yield ext, agent, gates, shown
    finally:
        for event in gates.events:  # nothing left hanging at the fake when the shell goes
            event.set()


def recap_text(report: dict[str, Any]) -> str | None:
    recap = report["recap"]
    return None if recap is None else str(recap["text"])


def names_round(text: str | None) -> int | None:
    found = re.search(r"round (\d+)", text or "")
    return int(found.group(1)) if found else None


def test_a_day_of_turns_ending_mid_draft_then_a_quiet_return_shows_the_newest_turn(
    shell: Any, loaded: tuple[Any, FakeAgentMagics, Gates, Shown]
) -> None:
    """Drafting while the agent works (``during_active``): each draft starts mid-turn and the
    turn ends before its answer comes. That answer covers the turn before; the banner says
    *drafting…* instead, a draft of the newer turn follows and is what shows, and the agents
    row never carries the older text meanwhile. The last time, the person comes back before
    the stale answer lands: the return shows the newest turn's recap, not nothing."""
    ext, agent, gates, shown = loaded
    shell.run_line_magic("config", "Recap.during_active = True")
    shell.run_line_magic("config", "Recap.away_seconds = 0.05")
    shell.run_line_magic("config", "Recap.post_turn_seconds = 600")

    def turn(number: int, calls_before: int) -> Callable[[str], None]:
        def run(prompt: str) -> None:
            if number > 1:
                # The person looks away as the agent starts: the away timer drafts mid-turn.
                ext.report_focus(True)
                ext.report_focus(False)
                assert gates.arrived(calls_before + 1), "no draft started during the turn"
            print(f"Round {number} done. Next: step {number + 1}.")

        return run

    rounds = 5
    calls = 0
    for number in range(1, rounds + 1):
        agent.script.append(turn(number, calls))
        shell.run_cell(f"%%agent\nwork on round {number}", store_history=True)
        if number == 1:
            continue
        calls += 1  # the draft that started mid-turn, of round number - 1
        report = ext.reporting.report()
        assert names_round(recap_text(report)) in (None, number), report["recap"]
        last = number == rounds
        if last:
            ext.report_focus(True)  # a quiet return, while that draft is still out
        gates.open(calls)  # it answers with the recap of the round before
        assert gates.arrived(calls + 1), "no draft of the newer turn followed the stale one"
        calls += 1
        # Until it lands: drafting, and no older text, in the banner and in the agents row.
        assert ext.banner.state == "drafting"
        report = ext.reporting.report()
        assert report["drafting"] is True
        assert names_round(recap_text(report)) in (None, number), report["recap"]
        gates.open(calls)

        def landed(seen: list[tuple[str, int]], number: int = number) -> bool:
            return any(names_round(text) == number for text, _ in seen)

        seen = shown.wait_for(landed)
        assert ext.banner.state == "shown" and names_round(ext.banner.text) == number
        report = ext.reporting.report()
        assert names_round(recap_text(report)) == number and report["drafting"] is False
    # No recap was ever shown that covered fewer turns than had finished when it appeared.
    assert all(names_round(text) == turns for text, turns in seen), seen
    assert ext.schedule.focused is True and names_round(ext.banner.text) == rounds


def outside_turn(ext: Any, prompt: str) -> None:
    with ext.runner.outside():
        ext.transcript.user(prompt)


def outside_end(ext: Any, reply: str) -> None:
    with ext.runner.outside():
        ext.transcript.assistant(reply)
        ext.transcript.outcome("ok")


def test_a_recap_asked_for_while_an_outside_agent_works_waits_for_the_turn_it_ended(
    shell: Any, loaded: tuple[Any, FakeAgentMagics, Gates, Shown]
) -> None:
    """``%recap`` while a CLI agent works on the notebook; that turn ends before the answer
    comes. The person is not shown the older recap (nor its "no stop yet" note): ``%recap``
    answers with the recap of the turn that ended."""
    ext, agent, gates, shown = loaded
    agent.script.append(lambda prompt: print("Round 1 done. Next: step 2."))
    shell.run_cell("%%agent\nwork on round 1", store_history=True)
    outside_turn(ext, "work on round 2")

    def outside_agent() -> None:
        assert gates.arrived(1)
        outside_end(ext, "Round 2 done. Next: step 3.")
        gates.open(1)
        assert gates.arrived(2)
        gates.open(2)

    helper = threading.Thread(target=outside_agent)
    helper.start()
    result = ext.manual()
    helper.join(WAIT)
    assert result.recap is not None and names_round(result.recap.text) == 2, result
    assert "no stop yet" not in result.recap.note
    assert [names_round(text) for text, _ in shown.seen] == [2]
    assert names_round(ext.banner.text) == 2
    assert names_round(recap_text(ext.reporting.report())) == 2


def test_a_banner_shown_during_an_outside_turn_is_not_left_up_once_that_turn_ends(
    shell: Any, loaded: tuple[Any, FakeAgentMagics, Gates, Shown]
) -> None:
    """A ``%recap`` landed while a CLI agent worked; then its turn ended. The person is here:
    the banner and the row show the offline recap of the newer turn, not the older text."""
    ext, agent, gates, shown = loaded
    agent.script.append(lambda prompt: print("Round 1 done. Next: step 2."))
    shell.run_cell("%%agent\nwork on round 1", store_history=True)
    ext.report_focus(True)
    outside_turn(ext, "work on round 2")
    gates.open(1)
    result = ext.manual()
    assert result.recap is not None and ext.banner.state == "shown"
    outside_end(ext, "Round 2 done. Next: step 3.")
    seen = shown.wait_for(lambda seen: len(seen) == 2)
    assert seen[-1][1] == 2 and "Round 2 done" in seen[-1][0], seen
    assert ext.banner.state == "shown" and "Round 2 done" in ext.banner.text
    assert ext.banner.model.startswith("offline")
    assert "Round 2 done" in (recap_text(ext.reporting.report()) or "")


def test_the_agents_row_never_keeps_an_older_recap_as_current(
    shell: Any, loaded: tuple[Any, FakeAgentMagics, Gates, Shown]
) -> None:
    """The row's recap after a newer turn ended: *drafting…* while a recap of it is on its
    way, else the offline recap of that turn; never the text of the turn before."""
    ext, agent, gates, _ = loaded
    shell.run_line_magic("config", "Recap.post_turn_seconds = 600")
    gates.open(1)
    agent.script.append(lambda prompt: print("Round 1 done. Next: step 2."))
    shell.run_cell("%%agent\nwork on round 1", store_history=True)
    ext.manual()
    assert names_round(recap_text(ext.reporting.report())) == 1

    # The person is here and watches round 2 end: no draft follows it.
    ext.report_focus(True)
    agent.script.append(lambda prompt: print("Round 2 done. Next: step 3."))
    shell.run_cell("%%agent\nwork on round 2", store_history=True)
    report = ext.reporting.report()
    assert report["drafting"] is False
    assert "Round 2 done" in (recap_text(report) or ""), report["recap"]
    assert report["recap"] is not None and report["recap"]["model"] == "offline"

    # Away when round 3 ends: the post-turn recap is due, so the row says it is coming.
    agent.script.append(lambda prompt: print("Round 3 done. Next: step 4."))
    ext.report_focus(False)
    shell.run_cell("%%agent\nwork on round 3", store_history=True)
    report = ext.reporting.report()
    assert report["drafting"] is True and report["recap"] is None, report
