"""Whatever a session recorded, the model sees a capped, faithful, repeatable context.

``build_context`` is what every recap is drafted from. Sessions come in every shape: agents
that log tool results without calls (or in the wrong order), cells that fail, compaction
summaries, shown recaps and bookkeeping, prompts of a few words or of pages. The properties
below hold for all of them and for any cap in the range people set; the examples after them
are the sessions that broke them once.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strength import examples

import jupyter_recap as jr
from jupyter_recap.pipeline.context import (
    ASKED_AGAIN,
    RECENT_HEADER,
    build_context,
    render_entry,
)
from jupyter_recap.pipeline.offline import offline_recap
from jupyter_recap.pipeline.prompt import MAX_RECAP_CHARS
from jupyter_recap.record.transcript import Entry, Kind, Outcome
from jupyter_recap.redact import Redactor

NO_ENV: dict[str, str] = {}
"""No environment secrets: the context then depends on its inputs alone."""

OMITTED = "… (earlier steps omitted)"

# Recap and bookkeeping texts carry a word no other text can spell (no capitals elsewhere).
RECAP_WORD, META_WORD = "RECAPSHOWN", "METANOTE"

# -- sessions ------------------------------------------------------------------------------------

ALPHABET = st.characters(
    codec="utf-8",
    categories=["Ll", "Lo", "Nd", "P", "Zs", "Cc"],
    exclude_characters="\r",
)
SHORT = st.text(alphabet=ALPHABET, max_size=40)


@st.composite
def texts(draw: st.DrawFn) -> str:
    """A text of a few characters to several thousand (a phrase, or a phrase repeated)."""
    phrase = draw(SHORT)
    return phrase * draw(st.sampled_from([1, 1, 3, 20, 150]))


NAMES = st.sampled_from(["read_file", "edit", "run_tests", "search"])


KINDS: list[Kind] = ["user", "user", "assistant", "tool_call", "tool_result", "tool_result"]
KINDS += ["code", "summary", "outcome", "recap", "meta"]
OUTCOMES: list[Outcome] = ["ok", "errored", "aborted"]

#: The strategies' clock: a fixed time, so a drawn session is the same on every run.
CLOCK = 1_700_000_000.0


@st.composite
def entries(draw: st.DrawFn) -> Entry:
    """One entry of any kind (prompts and tool results more often), in any order."""
    kind = draw(st.sampled_from(KINDS))
    text = draw(texts())
    if kind in ("tool_call", "tool_result"):
        error = draw(st.none() | texts()) if kind == "tool_result" else None
        return Entry(kind, text, CLOCK, name=draw(NAMES), error=error)
    if kind == "code":
        count = draw(st.none() | st.integers(1, 500))
        return Entry("code", text, CLOCK, error=draw(st.none() | texts()), count=count)
    if kind == "outcome":
        outcome = draw(st.sampled_from(OUTCOMES))
        return Entry("outcome", "", CLOCK, error=draw(st.none() | texts()), outcome=outcome)
    if kind == "recap":
        return Entry("recap", f"{RECAP_WORD} {text}", CLOCK, name="offline")
    if kind == "meta":
        return Entry("meta", f"{META_WORD} {text}", CLOCK)
    return Entry(kind, text, CLOCK)


@dataclass
class Case:
    transcript: jr.Transcript
    max_chars: int
    extras: tuple[str, ...]

    def __repr__(self) -> str:  # a failing example must be replayable from the report
        entries = self.transcript.to_list()
        return f"Case(max_chars={self.max_chars}, extras={self.extras!r}, entries={entries!r})"


@st.composite
def cases(draw: st.DrawFn) -> Case:
    transcript = jr.Transcript()
    size = draw(st.integers(0, 60))  # drawn first: lists alone stay short
    for entry in draw(st.lists(entries(), min_size=size, max_size=size)):
        transcript.append(entry)
    extras = tuple(draw(st.lists(texts(), max_size=3)))
    # Small caps more often: that is where the tiers compete for room.
    cap = draw(st.one_of(st.integers(500, 2500), st.integers(500, 20_000)))
    return Case(transcript, cap, extras)


def context(case: Case) -> str:
    return build_context(case.transcript, max_chars=case.max_chars, extras=case.extras, env=NO_ENV)


def recent_lines(text: str) -> list[str]:
    """The lines of the recent tier, without its header."""
    assert text.count(RECENT_HEADER + "\n") == 1, text
    return text.split(RECENT_HEADER + "\n", 1)[1].split("\n")


# -- the properties ------------------------------------------------------------------------------


def matchings(
    lines: list[str], rendered: list[str | None], latest: int | None
) -> Iterator[tuple[list[int], set[int]]]:
    """Every way to read ``lines`` as entries of the session, in order (the newest first
    tried): the shown indexes and the indexes a marker comes before.

    Each line is a whole rendered entry, but for the latest prompt, which may be cut to its
    head, and for an earlier prompt asked again later, which may say so instead of its text.
    Sessions repeat lines ("Tool call: edit()"), so a line may stand for more than one
    entry; the properties hold when one reading satisfies them.
    """

    def fits(line: str, index: int) -> bool:
        if rendered[index] == line:
            return True
        if line == ASKED_AGAIN and index != latest:
            return (rendered[index] or "").startswith("User: ")
        if index != latest:
            return False
        head = line[:-1] if line.endswith("…") else line
        full = rendered[index] or ""
        return full.startswith(head) and len(head) >= min(60, len(full))

    def walk(
        position: int, before: int, marked: frozenset[int]
    ) -> Iterator[tuple[list[int], set[int]]]:
        if position < 0:
            yield [], set(marked)
            return
        line = lines[position]
        if line == OMITTED:
            yield from walk(position - 1, before, marked | {before})
            return
        for index in range(before - 1, -1, -1):
            if rendered[index] is not None and fits(line, index):
                for shown, marks in walk(position - 1, index, marked):
                    yield [*shown, index], marks

    yield from walk(len(lines) - 1, len(rendered), frozenset())


def violation(
    case: Case, rendered: list[str | None], shown: list[int], marked: set[int]
) -> str | None:
    """What a reading of the recent lines breaks of the properties, or None."""
    entries = case.transcript.entries
    prompts = [i for i, entry in enumerate(entries) if entry.kind == "user"]
    visible = [i for i, line in enumerate(rendered) if line is not None]
    if prompts and prompts[-1] not in shown:
        return "the latest prompt is missing"
    # A marker stands exactly where visible steps were left out (none before the first line).
    ends = [*shown[1:], len(entries)] if shown else []
    for index, after in zip(shown, ends, strict=True):
        skipped = any(rendered[i] is not None for i in range(index + 1, after))
        if skipped != (after in marked):
            return "steps left out without saying so, or a stray marker"
    # The newest steps form one unbroken run to the end; before it, only pinned lines.
    run_start = len(shown)
    while run_start > 0 and not any(
        rendered[i] is not None for i in range(shown[run_start - 1] + 1, ends[run_start - 1])
    ):
        run_start -= 1
    if visible and visible[-1] not in shown:
        run_start = len(shown)  # not even the newest step fitted
    failures = set(case.transcript.snapshot().unresolved)  # the rule: tests/test_context.py
    for index in shown[:run_start]:
        entry = entries[index]
        nxt = next(
            (i for i in range(index + 1, min(index + 4, len(entries))) if i in failures), None
        )
        if not (
            (prompts and index == prompts[-1])
            or index in failures
            or (entry.kind == "tool_call" and nxt is not None and entries[nxt].name == entry.name)
        ):
            return (
                f"an old step kept out of the newest run that is not an unresolved failure: {index}"
            )
    run = shown[run_start:]
    opens_on_result = run and run[0] != visible[0] and entries[run[0]].kind == "tool_result"
    if opens_on_result and not (run[0] in failures or (prompts and run[0] == prompts[-1])):
        return "the newest steps open on a tool result whose call was cut away"
    return None


@settings(max_examples=examples(150))
@given(case=cases())
def test_context_is_capped_and_keeps_the_latest_prompt_and_the_newest_steps(case: Case) -> None:
    """The model always sees the latest prompt and then the newest steps, whole and in order,
    within the cap, reaching back into earlier turns only as far as the latest one needs; out
    of that run it sees only unresolved failures. Left-out steps are always marked, and the run
    of newest steps never opens on a tool result whose call was cut away."""
    text = context(case)
    assert len(text) <= case.max_chars
    entries = case.transcript.entries
    prompts = [i for i, entry in enumerate(entries) if entry.kind == "user"]
    rendered = [render_entry(entry, Redactor(NO_ENV)) for entry in entries]
    visible = [i for i, line in enumerate(rendered) if line is not None]
    if not text:
        assert not prompts and not visible
        return
    lines = [line for line in recent_lines(text) if line]
    latest = prompts[-1] if prompts else None
    first: str | None = None
    for shown, marked in itertools.islice(matchings(lines, rendered, latest), 500):
        problem = violation(case, rendered, shown, marked)
        if problem is None:
            return
        first = first or problem
    assert first is not None, "the recent lines are not whole lines of the session, in order"
    raise AssertionError(first)


@settings(max_examples=examples(80))
@given(case=cases())
def test_context_never_holds_shown_recaps_or_bookkeeping(case: Case) -> None:
    """A recap the person was shown, or the extension's bookkeeping, is never fed back to the
    model (it would recap its own recap)."""
    text = context(case)
    assert RECAP_WORD not in text and META_WORD not in text


@settings(max_examples=examples(60))
@given(case=cases())
def test_context_is_deterministic(case: Case) -> None:
    """The same session gives the same text, even rebuilt from its stored form, so the
    fingerprint dedupe holds and an unchanged session is never drafted twice."""
    first = context(case)
    assert context(case) == first
    stored = jr.Transcript.from_list(case.transcript.to_list())
    assert build_context(stored, max_chars=case.max_chars, extras=case.extras, env=NO_ENV) == first


@settings(max_examples=examples(80))
@given(case=cases())
def test_offline_recap_is_one_plain_line_of_this_session(case: Case) -> None:
    """The offline engine (no network) says something short and plain about any session, or
    nothing; it never repeats a shown recap or bookkeeping, and never fails."""
    recap = offline_recap(case.transcript, open_task=case.extras[0] if case.extras else None)
    if recap is None:
        return
    assert recap == recap.strip() and 0 < len(recap) <= MAX_RECAP_CHARS
    assert RECAP_WORD not in recap and META_WORD not in recap
    assert recap.isprintable(), f"control characters in {recap!r}"


# -- the sessions that broke it -------------------------------------------------------------------


def framed_session() -> jr.Transcript:
    """Five long prompts and a long summary: a framing of about 2,500 characters."""
    t = jr.Transcript()
    for n in range(5):
        t.user(f"prompt {n}: " + "migrate the billing tables " * 40)
        t.assistant("done")
    t.summary("goal: migrate billing to v2 " * 40)
    t.user("now fix the FK constraint in invoices.ts")
    t.tool_call("read_file", {"path": "invoices.ts"})
    return t


@pytest.mark.parametrize("cap", [500, 1000, 2000])
def test_a_long_framing_never_crowds_out_the_latest_prompt(cap: int) -> None:
    text = build_context(framed_session(), max_chars=cap, env=NO_ENV)
    assert len(text) <= cap
    assert "User: now fix the FK constraint in invoices.ts" in text
    assert "Tool call: read_file(path='invoices.ts')" in text


def test_the_newest_step_is_never_cut_mid_line() -> None:
    # The prompt line and the "omitted" marker were not counted against the budget, so the
    # final cut took the end of the newest step.
    t = jr.Transcript()
    t.user("run the long agent loop " * 60)
    for n in range(300):
        t.tool_call("step", {"n": n})
    text = build_context(t, max_chars=2000, env=NO_ENV)
    assert len(text) <= 2000
    assert text.endswith("Tool call: step(n=299)")
    assert OMITTED in text


def test_a_prompt_that_nearly_fills_the_cap_leaves_room_to_say_steps_were_omitted() -> None:
    t = jr.Transcript()
    t.user("x" * 940)  # its line fits in a 1,000-character cap, with a few characters to spare
    for n in range(5):
        t.tool_call("step", {"n": n})
    text = build_context(t, max_chars=1000, env=NO_ENV)
    assert len(text) <= 1000
    assert text.startswith(RECENT_HEADER + "\nUser: xxx")
    assert text.endswith("\n" + OMITTED), "the model must know the turn went on"


def test_a_session_whose_steps_do_not_fit_still_says_steps_were_left_out() -> None:
    # No prompt, and nothing the walk kept: the newest step alone over the room, or a huge
    # tool error kept and then dropped (its call was cut away). The context was empty, which
    # reads as a session with nothing to recap; it says that steps were left out.
    errored = jr.Transcript()
    errored.assistant("a long answer " * 20)
    errored.tool_result("run_tests", "", error="Traceback ...\n" + "E   assert 0\n" * 5000)
    long_reply = jr.Transcript()
    long_reply.assistant("word " * 200)
    for t in (errored, long_reply):
        text = build_context(t, max_chars=500, env=NO_ENV)
        # (The failure no later run fixed is the framing's, from the session state.)
        assert text.endswith("\n\n" + RECENT_HEADER + "\n" + OMITTED) or text == (
            RECENT_HEADER + "\n" + OMITTED
        )
        assert len(text) <= 500
