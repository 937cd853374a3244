"""The recap-quality corpus stays honest: varied, with facts an extractive recap can contain."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_recap_quality as bench
from recap_corpus import SESSIONS, Session, found, full_text, recall

from jupyter_recap.pipeline.context import build_context
from jupyter_recap.pipeline.prompt import MAX_RECAP_CHARS

REQUIRED_TAGS = {
    "followup",
    "tool-heavy",
    "code-only",
    "summary",
    "tasks",
    "notes",
    "preamble",
    "mid-session",
    *("en", "de", "fr", "es", "ja", "zh"),
}


def test_the_corpus_is_large_and_varied() -> None:
    assert len(SESSIONS) >= 12
    assert len({s.name for s in SESSIONS}) == len(SESSIONS)
    tags = set().union(*(s.tags for s in SESSIONS))
    assert tags >= REQUIRED_TAGS, REQUIRED_TAGS - tags
    assert all(3 <= len(s.facts) <= 5 for s in SESSIONS)


@pytest.mark.parametrize("session", SESSIONS, ids=lambda s: s.name)
def test_every_fact_is_in_the_transcript_before_its_last_entry(session: Session) -> None:
    entries = session.transcript().entries
    text, before_last = full_text(entries), full_text(entries[:-1])
    for fact in session.facts:
        assert all(1 <= len(alt.split()) <= 4 for alt in fact), fact
        for alt in fact:
            assert found(text, (alt,)), f"{session.name}: {alt!r} is not in the transcript"
        assert found(before_last, fact), f"{session.name}: {fact} is only in the last entry"


def test_the_shapes_the_tags_promise() -> None:
    by_tag = {tag: [s for s in SESSIONS if tag in s.tags] for tag in REQUIRED_TAGS}
    heavy = by_tag["tool-heavy"][0].transcript().entries
    assert sum(e.kind == "tool_call" for e in heavy) >= 150
    assert len(full_text(heavy)) > 12000
    for session in by_tag["code-only"]:
        kinds = {e.kind for e in session.transcript().entries}
        assert kinds == {"code"}
    assert all(any(e.kind == "summary" for e in s.transcript().entries) for s in by_tag["summary"])
    assert all(s.framing().open_task for s in by_tag["tasks"])
    notes = by_tag["notes"][0].framing().extras
    assert any(line.startswith("Project notes: ") for line in notes)


def test_the_tool_heavy_session_is_over_the_cap_and_the_context_is_not() -> None:
    session = next(s for s in SESSIONS if "tool-heavy" in s.tags)
    texts = bench.texts(session)
    assert len(texts["all"]) > 12000
    assert len(texts["context"]) <= 12000
    assert texts["context"] == build_context(session.transcript(), max_chars=12000)


def test_recall_counts_a_fact_when_any_phrasing_occurs() -> None:
    facts = [("KeyError",), ("monthly_revenue.csv", "monthly revenue"), ("In[12]",)]
    assert bench.recall("In[12] failed with a keyerror", facts) == pytest.approx(2 / 3)
    assert recall("the Monthly\n   Revenue table; KEYERROR in[12]", facts) == 1.0
    assert recall("nothing here", facts) == 0.0
    assert recall("anything", []) == 1.0
    # Whitespace collapses on both sides; a phrasing is not split across a word boundary.
    assert found("monthly\trevenue", ("monthly  revenue",))
    assert not found("monthlyrevenue", ("monthly revenue",))


def test_measure_names_the_missed_facts() -> None:
    measured = bench.measure("ImportError in test_cli.py", [("ImportError",), ("app/config.py",)])
    assert measured == bench.Measure(0.5, len("ImportError in test_cli.py"), ("app/config.py",))


MID_SESSION = [s for s in SESSIONS if bench.MID_SESSION in s.tags]


def test_head_tail_and_snippets_keep_to_their_sizes() -> None:
    assert bench.head_tail("short") == "short"
    raw = "".join(f"{n:05d}" for n in range(5000))
    cut = bench.head_tail(raw)
    assert len(cut) == bench.CONTEXT_CHARS + 1
    assert cut.startswith(raw[:6000]) and cut.endswith(raw[-6000:])
    for session in SESSIONS:
        text = bench.snippets(session.transcript().entries)
        assert len(text) <= 3 * bench.SNIPPET_CHARS + 2
    assert bench.SNIPPET_CHARS * 3 <= MAX_RECAP_CHARS  # the offline recap's cap


def test_truncation_does_not_saturate_the_corpus() -> None:
    # The promise of the README: a context builder no better than the first and last 6,000
    # characters of the transcript scores lower. The mid-session sessions keep key facts
    # where head+tail cannot see them, and the context must find them.
    assert len(MID_SESSION) >= 3
    for session in MID_SESSION:
        texts = bench.texts(session)
        assert len(texts["all"]) > 2 * bench.CONTEXT_CHARS, session.name
        truncated = recall(texts["head_tail"], session.facts)
        context = recall(texts["context"], session.facts)
        assert truncated < 1.0, f"{session.name}: head+tail finds every fact"
        assert context > truncated, f"{session.name}: context {context} <= head+tail {truncated}"
    for session in SESSIONS:
        texts = bench.texts(session)
        assert recall(texts["context"], session.facts) >= recall(
            texts["head_tail"], session.facts
        ), session.name
