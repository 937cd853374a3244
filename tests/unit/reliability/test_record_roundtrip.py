"""Whatever a session records comes back from disk as it was (after redaction).

A property over any entries: any kind, any text (control characters, lone surrogates, huge
strings, JSON-looking text), any optional fields. Writing them through a ``SessionWriter`` and
loading the session gives back the same entries, as the transcript held them, with only the
secrets redacted — never a failed write, a lost or reordered entry, or a different value.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import get_args

from hypothesis import given, settings
from hypothesis import strategies as st
from strength import examples

from jupyter_recap.record.transcript import Entry, Kind, Outcome, Transcript
from jupyter_recap.redact import Redactor
from jupyter_recap.stores.sessions import SessionStore, SessionWriter

# Long texts (past the transcript's bound) come from one small draw: drawn character by character
# they exceed Hypothesis's data budget and fail its health check now and then.
_long = st.builds(
    lambda n, fill: (fill * n)[:n],
    st.integers(4000, 4200),
    st.sampled_from(["ab \n", "x", "a\nb "]),
)
_text = st.text(max_size=300) | _long
_optional = st.none() | st.text(max_size=40)

entries = st.builds(
    Entry,
    kind=st.sampled_from(get_args(Kind)),
    text=_text,
    time=st.floats(min_value=0, max_value=4e9, allow_nan=False),
    cell_id=_optional,
    name=_optional,
    error=st.none() | _text,
    count=st.none() | st.integers(min_value=-(2**63), max_value=2**63),
    outcome=st.none() | st.sampled_from(get_args(Outcome)),
)


def _as_stored(entry: Entry, clean: Redactor) -> Entry:
    return replace(
        entry,
        text=clean(entry.text),
        error=clean(entry.error) if entry.error else entry.error,
    )


@settings(max_examples=examples(60))
@given(st.lists(entries, max_size=25))
def test_any_entries_come_back_as_they_were(recorded: list[Entry]) -> None:
    transcript = Transcript()
    transcript.user("the first prompt")  # a session without one is never written
    for entry in recorded:
        transcript.append(entry)
    with tempfile.TemporaryDirectory() as home:
        store = SessionStore(Path(home) / "recap")
        writer = SessionWriter(transcript, store=store, delay=3600)
        assert writer.flush(), writer.error
        writer.close()
        record, loaded = store.load(writer.id)
    clean = Redactor()
    assert loaded.entries == [_as_stored(e, clean) for e in transcript]
    assert record.entries == len(transcript)
    assert record.turns == sum(e.kind == "user" for e in transcript)
