"""A rerun agent cell asks the same prompt again: the context says each prompt once, with how
often it was asked, and keeps every errored turn's error with its prompt."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import example, given, settings
from hypothesis import strategies as st
from strength import examples

import jupyter_recap as jr
from jupyter_recap.pipeline.context import ASKED_AGAIN, TURN_ERRORS, build_context
from jupyter_recap.record.transcript import LATEST_PROMPTS

WORDS = st.sampled_from(
    ["refund", "order", "plot", "sales", "clean", "the", "table", "merge", "check", "totals"]
)


@dataclass
class Turn:
    prompt: str
    steps: int
    """Replies, tool calls and cells between the prompt and how the turn ended."""
    ending: str | None
    """"ok", "aborted", an error text, or None (the turn recorded no end)."""


@dataclass
class Session:
    turns: list[Turn]

    def transcript(self) -> jr.Transcript:
        t = jr.Transcript()
        for n, turn in enumerate(self.turns):
            t.user(turn.prompt)
            for step in range(turn.steps):
                if step % 3 == 0:
                    t.tool_call("read_file", {"path": f"part{n}_{step}.csv"})
                    t.tool_result("read_file", f"rows {n} {step}")
                elif step % 3 == 1:
                    t.assistant(f"looked at part {n}.{step}")
                else:
                    t.code(f"df{n}_{step}.describe()", count=n * 10 + step)
            if turn.ending == "ok":
                t.outcome("ok")
            elif turn.ending == "aborted":
                t.outcome("aborted")
            elif turn.ending is not None:
                t.outcome("errored", turn.ending)
        return t

    def __repr__(self) -> str:
        return f"Session({self.turns!r})"


@st.composite
def sessions(draw: st.DrawFn) -> Session:
    """A few different prompts, each run one to eight times in a row (a rerun cell), asked
    again later now and then; turns end well, are interrupted, record no end, or fail with one
    of a few errors (a rerun often fails the same way)."""
    # Some of a few words (a follow-up that points back), some longer.
    texts = [
        " ".join([f"P{n}:", *draw(st.lists(WORDS, max_size=8))])
        for n in range(draw(st.integers(1, 5)))
    ]
    errors = [f"E{n}: RuntimeError: " + draw(WORDS) + f" failed {n}" for n in range(3)]
    endings = st.sampled_from(["ok", "aborted", None]) | st.sampled_from(errors)
    turns: list[Turn] = []
    for _ in range(draw(st.integers(1, 8))):
        prompt = draw(st.sampled_from(texts))
        for _ in range(draw(st.integers(1, 8))):
            turns.append(Turn(prompt, draw(st.integers(0, 5)), draw(endings)))
    return Session(turns[: LATEST_PROMPTS + 1])


def mentions(text: str, prompt: str) -> tuple[int, int]:
    """How many framing lines and how many recent lines give ``prompt`` in full (in the recent
    detail, a prompt shorter than saying it was asked again is left as it is)."""
    framing, recent = text.split("Recent activity (oldest first)\n")
    in_framing = sum(
        line.startswith((f"Original task: {prompt}", f"- {prompt}"))
        for line in framing.splitlines()
    )
    in_recent = sum(line == f"User: {prompt}" for line in recent.splitlines())
    return in_framing, in_recent


def rerun_eight_times() -> Session:
    error = "E0: KeyError: 'region'"
    return Session([Turn("P0: refund the order", 2, error) for _ in range(8)])


@settings(max_examples=examples(200))
@given(sessions())
@example(rerun_eight_times())
def test_each_prompt_once_and_every_error_with_it(session: Session) -> None:
    text = build_context(session.transcript())
    for prompt in {turn.prompt for turn in session.turns}:
        in_framing, in_recent = mentions(text, prompt)
        # Once among the earlier prompts, once in the recent detail at most, and somewhere.
        assert in_framing <= 1, text
        assert in_recent <= 1 or len(f"User: {prompt}") <= len(ASKED_AGAIN), text
        assert in_framing + in_recent >= 1, text
    for turn in session.turns:
        if turn.ending not in ("ok", "aborted", None):
            assert turn.ending in text, text
    assert len(text) <= 12000


def test_eight_reruns_say_the_prompt_twice_and_how_often_it_was_asked() -> None:
    text = build_context(rerun_eight_times().transcript())
    framing = text.split("\n\n")[0]
    assert framing == (
        "Task framing\nOriginal task: P0: refund the order "
        "(asked 8 times; turn errored 7 times: E0: KeyError: 'region')\n"
        "Open failures:\n"
        "- an agent turn: KeyError: 'region' (failed 8 times)"
    )
    assert text.count("P0: refund the order") == 2  # the original task and the latest prompt
    # A rerun of a few words points back: the recent detail reaches the two turns before it,
    # and says the prompt there once.
    t = jr.Transcript()
    for _ in range(8):
        t.user("retry the refund for A-1004")
        t.outcome("errored", "KeyError: 'region'")
    text = build_context(t)
    assert "Original task: retry the refund for A-1004 (asked 8 times; turn errored 5 " in text
    assert text.count("retry the refund for A-1004") == 2
    assert text.count(ASKED_AGAIN) == 2
    assert text.endswith("User: retry the refund for A-1004\nTurn errored: KeyError: 'region'")


def test_an_errored_earlier_prompt_keeps_its_error_and_an_interrupted_one_says_so() -> None:
    t = jr.Transcript()
    t.user("Refund order A-1004 for the cables")
    t.outcome("ok")
    t.user("Email the customer about the refund of A-1004")
    t.tool_call("send_mail", {"to": "customer"})
    t.tool_result("send_mail", "", error="SMTPAuthenticationError: 535 bad credentials")
    t.outcome("errored", "SMTPAuthenticationError: 535 bad credentials")
    t.user("Export the refunds of this week to refunds.csv")
    t.outcome("aborted")
    t.user("Now plot the refunds per day for the weekly report")
    framing = build_context(t).split("\n\n")[0]
    lines = framing.splitlines()
    assert lines[lines.index("Earlier prompts:") :] == [
        "Earlier prompts:",
        "- Email the customer about the refund of A-1004 "
        "(turn errored: SMTPAuthenticationError: 535 bad credentials)",
        "- Export the refunds of this week to refunds.csv (turn interrupted)",
    ]


def test_a_long_turn_still_keeps_its_error() -> None:
    t = jr.Transcript()
    t.user("Scan every module for open() without an encoding")
    t.user("Fix each open() call you found in the loaders package")
    for n in range(300):  # far more steps than the framing looks through from either end
        t.tool_call("edit", {"path": f"mod{n}.py"})
        t.tool_result("edit", "ok")
    t.outcome("errored", "PermissionError: mod299.py is read-only")
    for n in range(20):
        t.code(f"check({n})", count=n + 1)
    t.user("Write the changelog entry for the encoding fixes")
    framing = build_context(t).split("\n\n")[0]
    assert (
        "- Fix each open() call you found in the loaders package "
        "(turn errored: PermissionError: mod299.py is read-only)"
    ) in framing


def test_many_different_errors_keep_the_newest_and_count_the_rest() -> None:
    t = jr.Transcript()
    t.user("Load the sales data")
    for n in range(TURN_ERRORS + 2):
        t.user("Train the churn model on sales.parquet")
        t.outcome("errored", f"ValueError: bad column {n}")
    t.user("Write the report for the board")
    framing = build_context(t).split("\n\n")[0]
    line = next(line for line in framing.splitlines() if line.startswith("- Train"))
    for n in range(2, TURN_ERRORS + 2):
        assert f"ValueError: bad column {n}" in line
    assert "ValueError: bad column 0" not in line
    assert "asked 5 times" in line and "2 other errors" in line
