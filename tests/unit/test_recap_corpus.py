"""The recap-quality corpus stays honest: varied, with facts an extractive recap can contain."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_recap_quality as bench
from recap_corpus import SESSIONS, Session, found, full_text, recall

from jupyter_recap.pipeline.context import build_context

REQUIRED_TAGS = {
    "followup",
    "tool-heavy",
    "code-only",
    "summary",
    "tasks",
    "notes",
    "preamble",
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
