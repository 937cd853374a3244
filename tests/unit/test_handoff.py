"""The handoff cell: every generated session's state carried into it, the agent magic the
notebook uses, redaction and bounds; ``%recap handoff`` in a real shell, and the banner's
*Continue* answered by the kernel."""

from __future__ import annotations

from typing import Any

import pytest
import strength
from hypothesis import given, settings
from hypothesis import strategies as st
from sessiongen import DOMAIN_LEFT, DOMAINS, error_class, generate

from jupyter_recap.pipeline.handoff import (
    MAGIC_CHARS,
    MAX_CHARS,
    NOTHING_YET,
    NothingToHandOff,
    agent_magic,
    handoff_cell,
)
from jupyter_recap.record.state import Artifact, Ask, Decision, Failure, SessionState
from jupyter_recap.record.statefold import StateFolder, fold
from jupyter_recap.record.transcript import Entry

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
MAGIC = "%%ai openai:gpt-4o-mini"


# -- generated sessions ----------------------------------------------------------------------


@settings(max_examples=strength.examples(200))
@given(SEEDS)
def test_every_generated_sessions_state_reaches_the_handoff(seed: int) -> None:
    generated = generate(seed)
    truth = generated.truth
    where = f"seed {seed}, rounds {truth.rounds}"
    cell = handoff_cell(fold(generated.entries), MAGIC, env={})
    lines = cell.splitlines()
    assert lines[0] == MAGIC, where
    assert truth.task_fact in lines[1], (where, lines[1])  # the task as corrected, first
    assert truth.first_task_fact in cell, where  # and what it started as
    decisions = [line for line in lines if truth.decision_fact in line]
    assert decisions and f'accepted with "{truth.accepted_by.strip()}"' in decisions[0], where
    for phrase in truth.constraints:
        assert phrase in cell, (where, phrase)
    # The failure left behind, with its error line and the cell it happened in.
    left = error_class(DOMAIN_LEFT[truth.open_failures[0]])
    failing = [line for line in lines if left in line]
    assert failing and f"In[{truth.rounds['left'] + 1}]" in failing[0], (where, failing)
    # Failures fixed by a retry or superseded by the changed ask are not handed on as open.
    domain = next(d for d in DOMAINS if d.left_key == truth.open_failures[0])
    for _tool, _arguments, error in (domain.fixed, domain.superseded):
        assert error[:40] not in cell, (where, error)
    assert lines[-1].startswith("Next step: ") and truth.next_fact in lines[-1], where
    assert truth.dropped_next_fact not in lines[-1], where
    assert len(cell) <= MAX_CHARS


# -- what is left out, what is refused -------------------------------------------------------


def _state(*entries: Entry) -> SessionState:
    return StateFolder().extend(entries).state


def test_a_part_with_nothing_in_it_is_left_out() -> None:
    state = _state(Entry("user", "Plot the churn by region."), Entry("assistant", "Done."))
    assert handoff_cell(state, "%%agent", env={}) == (
        "%%agent\nContinue this task where the last session stopped: Plot the churn by region."
    )


def test_the_latest_ask_rides_along_when_it_is_not_the_task() -> None:
    state = _state(
        Entry("user", "Move the orders table to Parquet."),
        Entry("assistant", "Moved. Next: the events table."),
        Entry("user", "Now do the same for the events table."),
    )
    cell = handoff_cell(state, None, env={})
    assert cell.splitlines() == [
        "Continue this task where the last session stopped: Move the orders table to Parquet.",
        "The latest ask was: Now do the same for the events table.",
        "Next step: the events table",  # "do the same" asks for the step the agent named
    ]


@pytest.mark.parametrize(
    "entries",
    [
        (),
        (Entry("code", "1/0", error="ZeroDivisionError: division by zero", count=1),),
        (Entry("event", "In[4] ran for 3 min and finished."),),
    ],
    ids=["nothing", "cells only", "events only"],
)
def test_no_task_is_a_one_line_refusal(entries: tuple[Entry, ...]) -> None:
    with pytest.raises(NothingToHandOff) as refused:
        handoff_cell(_state(*entries), MAGIC, env={})
    assert str(refused.value) == NOTHING_YET
    assert "\n" not in NOTHING_YET


def test_secrets_never_reach_the_cell() -> None:
    key = "sk-proj-" + "Q7x9" * 10
    env_secret = "hunter2-but-long-enough-9137"
    state = _state(
        Entry("user", f"Call the billing API with key {key} and fix the export."),
        Entry("tool_call", "path='export.py'", name="write_file"),
        Entry("tool_result", "", name="write_file", error=f"PermissionError: token {env_secret}"),
        Entry("assistant", f"Next: retry with password={env_secret}."),
    )
    cell = handoff_cell(state, MAGIC, env={"BILLING_TOKEN": env_secret})
    assert key not in cell and env_secret not in cell
    assert "[redacted]" in cell
    assert "PermissionError" in cell and "export.py" in cell  # the rest is kept


def test_the_cell_is_inert() -> None:
    state = _state(Entry("user", "Fix the \x1b[31mred\x1b[0m \u202eloader\u202c bug."))
    cell = handoff_cell(state, MAGIC, env={})
    assert "\u202e" not in cell and "\x1b" not in cell
    assert "Fix the red loader bug." in cell


def test_the_longest_state_stays_within_the_bound() -> None:
    """Every part at its longest, every list at its fullest: the cell stays under MAX_CHARS."""
    word = "x" * 9 + " "
    long = word * 200
    ask = Ask(long, 1)
    failure = Failure(
        kind="tool",
        key=("run_sql", long),
        label=long,
        error=long,
        cell_id="c",
        count=99999,
        ask=1,
        times=999,
    )
    state = SessionState(
        first_ask=ask,
        corrections=(Ask(long, 2),),
        latest_ask=Ask(long, 3),
        decisions=tuple(Decision(long, long, 1) for _ in range(20)),
        constraints=tuple(f"{n} {long}" for n in range(20)),
        open_failures=(failure,) * 30,
        artifacts=tuple(Artifact(f"{n}{long}", "cell", 999, "edit") for n in range(40)),
        next_step=long,
    )
    cell = handoff_cell(state, "%%ai " + long, env={})
    assert len(cell) <= MAX_CHARS, len(cell)
    assert cell.splitlines()[0] == "%%ai " + "x" * 9  # the magic and its model, never cut inside
    assert "and 25 older failures" in cell


# -- the notebook's agent magic --------------------------------------------------------------


def test_the_magic_of_the_latest_agent_cell_comes_first() -> None:
    assert (
        agent_magic(
            "%%ai  anthropic:claude-sonnet-4   -f code",
            model="openai:gpt-4o",
            cell_magics={"ai", "agent"},
            agent_magics=["ai", "agent"],
        )
        == "%%ai anthropic:claude-sonnet-4 -f code"
    )


def test_without_an_agent_cell_here_jupyter_ai_gets_the_sessions_model() -> None:
    loaded = {"ai", "agent", "timeit"}
    assert (
        agent_magic(None, model="openai:gpt-4o-mini", cell_magics=loaded, agent_magics=["ai"])
        == "%%ai openai:gpt-4o-mini"
    )
    # No model known: the first agent magic loaded, bare (the person adds its arguments).
    assert agent_magic(None, model=None, cell_magics=loaded, agent_magics=["ai", "agent"]) == (
        "%%ai"
    )
    assert agent_magic(None, model="m", cell_magics=loaded, agent_magics=["%%agent"]) == "%%agent"


def test_no_agent_magic_loaded_means_a_plain_prompt() -> None:
    magic = agent_magic(None, model="gpt-4o", cell_magics={"timeit"}, agent_magics=["ai", "agent"])
    assert magic is None
    state = _state(Entry("user", "Summarise the survey answers."))
    assert handoff_cell(state, magic, env={}) == (
        "Continue this task where the last session stopped: Summarise the survey answers."
    )
    # What is not a cell magic is never written as one.
    assert handoff_cell(state, "print(1)", env={}).startswith("Continue this task")
    assert len(MAGIC) < MAGIC_CHARS


# -- %recap handoff in a real shell ----------------------------------------------------------


def _session(shell: Any) -> Any:
    from agentmagic import install

    import jupyter_recap as jr

    shell.run_line_magic("load_ext", "jupyter_recap")
    agent = install(shell)
    agent.answers.append("I suggest we cache the lookups in Redis. Shall I?")
    shell.run_cell(
        "%%ai openai:gpt-4o-mini\nSpeed up the lookups. Never change the public API.",
        store_history=True,
    )
    agent.answers.append("Done. Next: benchmark the cache.")
    shell.run_cell("%%ai openai:gpt-4o-mini\nAgreed, do it.", store_history=True)
    shell.run_cell("lookup('x')", store_history=True)  # NameError: left open
    jr.current().tool_call("write_file", {"path": "cache.py"})
    jr.current().tool_result("write_file", "ok")
    return agent


EXPECTED = [
    "%%ai openai:gpt-4o-mini",
    "Continue this task where the last session stopped: Speed up the lookups. Never change the "
    "public API.",
    "Decisions made (keep to them):",
    '- I suggest we cache the lookups in Redis. (accepted with "Agreed, do it.")',
    "Constraints to keep:",
    "- Never change the public API.",
    "Still failing (nothing fixed these yet):",
    "- In[3]: NameError: name 'lookup' is not defined",
    "Changed so far: cache.py (1 change)",
    "Next step: benchmark the cache",
]


def test_recap_handoff_prints_the_cell_in_terminal_ipython(
    shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    _session(shell)
    capsys.readouterr()
    shell.run_line_magic("recap", "handoff")
    assert capsys.readouterr().out.splitlines() == EXPECTED
    # Never put at the next prompt, where Enter would run it.
    assert getattr(shell, "rl_next_input", None) is None


def test_recap_handoff_asks_the_front_end_for_a_cell_below(
    shell: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from jupyter_recap.ipython import extension

    monkeypatch.setattr(extension.RecapExtension, "has_widgets", property(lambda self: True))
    _session(shell)
    ext = extension.extension_for(shell)
    assert ext is not None
    prompts = ext.transcript.prompt_count
    capsys.readouterr()
    shell.run_cell("%recap handoff", store_history=True)
    # IPython's payload for a new cell below the running one (ipykernel sends it on).
    assert shell.rl_next_input.splitlines() == EXPECTED
    assert capsys.readouterr().out.startswith("recap: the handoff is in a new cell below, not run")
    assert ext.transcript.prompt_count == prompts  # nothing was run, nothing recorded
    capsys.readouterr()
    shell.run_line_magic("recap", "handoff --print")
    assert capsys.readouterr().out.splitlines() == EXPECTED


def test_recap_handoff_uses_the_notebooks_own_agent_magic(
    shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentmagic import install

    shell.run_line_magic("load_ext", "jupyter_recap")
    agent = install(shell)
    agent.script.append(lambda prompt: print("Next: read the logs."))
    shell.run_cell("%%agent\nFind why the nightly job fails.", store_history=True)
    capsys.readouterr()
    shell.run_line_magic("recap", "handoff")
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "%%agent"
    assert "Find why the nightly job fails." in out[1]


def test_a_magic_line_that_failed_is_not_handed_on(
    shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The latest agent cell whose turn went through gives the magic: a typo in a model id
    tried since would only fail again."""
    from agentmagic import install

    shell.run_line_magic("load_ext", "jupyter_recap")
    agent = install(shell)
    agent.answers.append("Next: fit the model.")
    shell.run_cell("%%ai openai:gpt-4o-mini\nClean the survey data.", store_history=True)
    agent.answers.append(RuntimeError("unknown model openai:gpt-4o-mni"))
    shell.run_cell("%%ai openai:gpt-4o-mni\nNow fit the model.", store_history=True)
    capsys.readouterr()
    shell.run_line_magic("recap", "handoff")
    assert capsys.readouterr().out.splitlines()[0] == "%%ai openai:gpt-4o-mini"


def test_recap_handoff_before_any_prompt(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_line_magic("load_ext", "jupyter_recap")
    capsys.readouterr()
    shell.run_line_magic("recap", "handoff")
    assert capsys.readouterr().out == f"recap: {NOTHING_YET}\n"
    shell.run_line_magic("recap", "handoff --now")
    assert capsys.readouterr().out.startswith("recap: unknown arguments 'handoff --now'")


# -- the banner's Continue, answered by the kernel ------------------------------------------


def _click_continue(banner: Any, request: object = "r-1") -> list[dict[str, Any]]:
    """What the kernel sends back when a view asks for the handoff (through ipywidgets' own
    handling of a custom message from the page)."""
    sent: list[dict[str, Any]] = []
    banner.comm.send = lambda data=None, **kwargs: sent.append(data)
    message = {"type": "handoff", "id": request}
    banner._handle_msg(
        {"content": {"data": {"method": "custom", "content": message}}, "buffers": []}
    )
    return [data["content"] for data in sent if data and data.get("method") == "custom"]


def test_the_banners_continue_gets_the_handoff_from_the_live_state(
    shell: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_recap.ipython import extension

    monkeypatch.setattr(extension.RecapExtension, "has_widgets", property(lambda self: True))
    shell.run_line_magic("load_ext", "jupyter_recap")
    ext = extension.extension_for(shell)
    assert ext is not None
    banner = ext.banner
    assert _click_continue(banner) == [{"type": "handoff", "id": "r-1", "error": NOTHING_YET}]
    _session(shell)
    (answer,) = _click_continue(banner, "r-2")
    assert answer["id"] == "r-2" and answer["source"].splitlines() == EXPECTED
    # Not a request this banner knows how to answer: nothing is sent.
    assert _click_continue(banner, 42) == []
    assert _click_continue(banner, "x" * 500) == []


def test_a_failing_handoff_is_one_line_to_the_page(shell: Any) -> None:
    from jupyter_recap.widget.banner import RecapBanner

    banner = RecapBanner()
    try:
        assert _click_continue(banner)[0]["error"] == "this kernel does not write handoffs"

        def broken() -> str:
            raise KeyError("state")

        banner.handoff = broken
        (answer,) = _click_continue(banner)
        assert answer == {
            "type": "handoff",
            "id": "r-1",
            "error": "the handoff could not be written (see the debug log)",
        }
    finally:
        banner.close()
