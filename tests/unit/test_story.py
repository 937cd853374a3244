"""A notebook's story: the newest stored session, framed by the earlier ones when it is short.

Issue 35.6: a ten-second side run of a notebook (three throwaway prompts in a second kernel)
became its newest session, and both ``jupyter recap NOTEBOOK`` and the next kernel's resume
recap told that run instead of the notebook's five-turn story.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jupyter_recap.cli.stored import choose
from jupyter_recap.pipeline.context import build_context
from jupyter_recap.record.transcript import Entry, Transcript
from jupyter_recap.stores import sessionfiles
from jupyter_recap.stores.sessionfiles import AppendFile, SessionRecord, json_bytes, uuid7
from jupyter_recap.stores.sessions import SessionStore, SessionWriter
from jupyter_recap.stores.story import (
    MAX_SESSIONS,
    STORY_CHARS,
    STORY_TURNS,
    Story,
    is_short,
    notebook_story,
    sources_line,
)

NOTEBOOK = "/projects/refunds.ipynb"
WORDS = "the refund ledger matches the provider export except for two orders "


def reply(chars: int) -> str:
    return (WORDS * (chars // len(WORDS) + 1))[:chars].strip() + "."


def store_session(
    root: Path,
    prompts: Sequence[str],
    reply_chars: int,
    *,
    at: float,
    notebook: str = NOTEBOOK,
    parent: str | None = None,
    framed_by: Sequence[str] = (),
    tasks: list[object] | None = None,
) -> str:
    """Store a finished session as a kernel leaves it (header and transcript files), last
    written at ``at`` + its prompt count; its id."""
    sessionfiles.ensure_dir(root)
    entries: list[Entry] = []
    for n, prompt in enumerate(prompts):
        entries.append(Entry("user", prompt, time=at + n))
        entries.append(Entry("assistant", reply(reply_chars), time=at + n + 0.5))
        entries.append(Entry("outcome", time=at + n + 0.6, outcome="ok"))
    record = SessionRecord(
        id=uuid7(),
        created=at,
        updated=at + len(prompts),
        notebook=notebook,
        title=prompts[0],
        first_prompt=prompts[0],
        turns=len(prompts),
        entries=len(entries),
        parent=parent,
        framed_by=list(framed_by),
        tasks=tasks or [],
    )
    (root / f"{record.id}.json").write_bytes(json_bytes(record.to_dict()))
    lines = b"".join(json_bytes(entry.to_dict()) + b"\n" for entry in entries)
    (root / f"{record.id}.jsonl").write_bytes(lines)
    return record.id


def five_turn_story(root: Path, at: float = 1000.0) -> str:
    prompts = [
        "Reconcile the refunds ledger against the payment provider's March export",
        "Which orders differ, and by how much?",
        "Refund the cables on order A-1004 but not the monitor",
        "Write the corrected ledger to refunds_fixed.csv",
        "Draft the email to finance about the two mismatches",
    ]
    return store_session(root, prompts, 400, at=at)


def side_run(root: Path, at: float = 2000.0) -> str:
    return store_session(root, ["hi", "test", "again"], 20, at=at)


def user_texts(story: Story) -> list[str]:
    return [entry.text for entry in story.entries if entry.kind == "user"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "store"


# -- the rule ------------------------------------------------------------------------------------


def test_a_side_run_is_framed_by_the_notebooks_story(root: Path) -> None:
    story_id = five_turn_story(root)
    side = side_run(root)
    story = notebook_story(SessionStore(root), NOTEBOOK)
    assert story is not None
    assert story.ids == (story_id, side)
    texts = user_texts(story)
    assert texts[0].startswith("Reconcile the refunds ledger") and texts[-3:] == [
        "hi",
        "test",
        "again",
    ]
    assert story.history == 15  # the five turns of the story come before the side run's own
    # by the prefixes a listing shows (longer here: both ids were made within a millisecond)
    line = sources_line(story)
    assert line.startswith("from sessions ")
    first, second = line.removeprefix("from sessions ").split(" and ")
    assert story_id.startswith(first) and side.startswith(second) and first != second
    # what a recap sees: the notebook's task first, the newest prompt as the recent detail
    context = build_context(story.transcript())
    assert "Original task: Reconcile the refunds ledger" in context
    assert context.rstrip().endswith(f"User: again\nAssistant: {reply(20)}")


def test_a_substantial_newest_session_is_the_story_alone(root: Path) -> None:
    side_run(root, at=500.0)
    story_id = five_turn_story(root)
    story = notebook_story(SessionStore(root), NOTEBOOK)
    assert story is not None and story.ids == (story_id,) and story.history == 0
    assert sources_line(story) == f"from session {story_id[:8]}"  # none shares its prefix


def test_short_sessions_alone_are_not_merged(root: Path) -> None:
    store_session(root, ["plot churn by cohort"], 300, at=100.0)
    newest = side_run(root)
    story = notebook_story(SessionStore(root), NOTEBOOK)
    assert story is not None and story.ids == (newest,)


def test_other_notebooks_never_frame_a_story(root: Path) -> None:
    five_turn_story(root)
    side = side_run(root)
    mine = store_session(root, ["hi"], 10, at=3000.0, notebook="/projects/other.ipynb")
    story = notebook_story(SessionStore(root), "/projects/other.ipynb")
    assert story is not None and story.ids == (mine,)
    assert side not in story.ids


@pytest.mark.parametrize(
    ("prompts", "reply_chars", "short"),
    [
        (STORY_TURNS - 1, 2000, True),  # a few prompts, however long the replies
        (STORY_TURNS + 5, 3, True),  # many prompts that say nothing ("hi", "again")
        (STORY_TURNS, STORY_CHARS // STORY_TURNS, False),
    ],
)
def test_what_is_short(prompts: int, reply_chars: int, short: bool) -> None:
    t = Transcript()
    for n in range(prompts):
        t.user(f"p{n}")
        t.assistant("x" * reply_chars)
        t.tool_result("read_file", "y" * 4000)  # tool traffic says nothing of the work's size
    assert is_short(t.entries) is short


def test_the_task_list_of_the_story(root: Path) -> None:
    planned = [{"text": "email finance", "status": "in_progress"}]
    story_id = store_session(
        root, ["Reconcile the refunds"] * 5, 400, at=1000.0, tasks=list(planned)
    )
    side = side_run(root)
    story = notebook_story(SessionStore(root), NOTEBOOK)
    assert story is not None and story.ids == (story_id, side)
    assert story.tasks == planned  # the side run kept none: the story's list is the earlier one


def test_forked_sessions_hold_the_same_entries_and_are_left_out(root: Path) -> None:
    story_id = five_turn_story(root)
    held = store_session(root, ["start over on the export"], 40, at=2000.0)
    # A second kernel brought `held` in while the first held it: a fork with its entries.
    fork = store_session(
        root, ["start over on the export", "and again"], 40, at=3000.0, parent=held
    )
    story = notebook_story(SessionStore(root), NOTEBOOK)
    assert story is not None and story.ids == (story_id, fork)


def test_unreadable_sessions_are_left_out_and_said(root: Path) -> None:
    story_id = five_turn_story(root)
    lost = store_session(root, ["lost"], 40, at=1500.0)
    (root / f"{lost}.jsonl").write_bytes(b"{torn\n")
    side = side_run(root)
    said: list[tuple[str, str]] = []
    story = notebook_story(SessionStore(root), NOTEBOOK, lambda i, why: said.append((i, why)))
    assert story is not None and story.ids == (story_id, side)
    assert said == [(lost, "has no readable turns")]


def test_at_most_max_sessions_the_nearest_short_ones_kept(root: Path) -> None:
    story_id = five_turn_story(root)
    shorts = [store_session(root, [f"try {n}"], 30, at=2000.0 + 10 * n) for n in range(8)]
    story = notebook_story(SessionStore(root), NOTEBOOK)
    assert story is not None and len(story.ids) == MAX_SESSIONS
    assert story.ids == (story_id, *shorts[-(MAX_SESSIONS - 1) :])


# -- a kernel continues the newest session with its frame -----------------------------------------


def continue_story(store: SessionStore) -> tuple[Story, Transcript, SessionWriter]:
    """What a kernel does at load: restore the story, continue its newest session."""
    story = notebook_story(store, NOTEBOOK)
    assert story is not None
    record = story.newest
    record.framed_by = [earlier.id for earlier in story.earlier]
    t = Transcript()
    t.restore(story.entries)
    return story, t, SessionWriter(t, store=store, record=record, history=story.history)


def stored_prompts(root: Path, session_id: str) -> list[str]:
    lines = (root / f"{session_id}.jsonl").read_text().splitlines()
    return [item["text"] for item in map(json.loads, lines) if item["kind"] == "user"]


def test_a_recorded_frame_holds_once_the_newest_has_grown(root: Path) -> None:
    store = SessionStore(root)
    story_id = five_turn_story(root)
    side = side_run(root)
    _, t, writer = continue_story(store)
    for n in range(STORY_TURNS + 1):  # the person works on in the continued session
        t.user(f"now fix mismatch {n} in the corrected ledger")
        t.assistant(reply(400))
        t.outcome("ok")
    writer.close()
    # Only the side run's own entries and the new ones were written into it, never the frame.
    assert stored_prompts(root, side)[:3] == ["hi", "test", "again"]
    assert len(stored_prompts(root, side)) == 3 + STORY_TURNS + 1
    assert json.loads((root / f"{side}.json").read_text())["framed_by"] == [story_id]
    # It is substantial now, and its first prompt is still a side run's "hi": the recorded
    # frame keeps the notebook's task first.
    again = notebook_story(store, NOTEBOOK)
    assert again is not None and again.ids == (story_id, side)
    assert "Original task: Reconcile the refunds ledger" in build_context(again.transcript())
    assert writer.status().prompts == 3 + STORY_TURNS + 1  # its own prompts, not the frame's


def test_the_frame_is_never_written_into_the_continued_session(root: Path) -> None:
    """Not when its transcript file is replaced behind the writer's back (the whole story is
    written again), nor when another process then holds it (the writer forks)."""
    store = SessionStore(root)
    story_id = five_turn_story(root)
    side = side_run(root)
    _, t, writer = continue_story(store)
    t.user("first real step")
    writer.flush()
    (root / f"{side}.jsonl").unlink()
    t.user("second real step")
    writer.flush()
    assert stored_prompts(root, side) == [
        "hi",
        "test",
        "again",
        "first real step",
        "second real step",
    ]
    # Someone removes it again and another process takes the file: the writer forks.
    (root / f"{side}.jsonl").unlink()
    other = AppendFile(root / f"{side}.jsonl")
    try:
        t.user("third real step")
        writer.flush()
    finally:
        other.close()
    fork = writer.id
    assert fork != side
    assert stored_prompts(root, fork)[0] == "hi"  # the session's own story, without its frame
    header = json.loads((root / f"{fork}.json").read_text())
    assert header["parent"] == side and header["framed_by"] == [story_id]
    writer.close()


def test_a_malformed_frame_is_ignored(root: Path, caplog: pytest.LogCaptureFixture) -> None:
    side = side_run(root)
    path = root / f"{side}.json"
    header = json.loads(path.read_text())
    header["framed_by"] = ["../../etc/passwd"]
    path.write_text(json.dumps(header))
    record = SessionStore(root).header(side)
    assert record is not None and record.framed_by == []
    assert "ignoring malformed framed_by" in caplog.text


# -- generated cases -------------------------------------------------------------------------------

# Each session: how many prompts, and how long each reply is.
SESSIONS = st.lists(
    st.tuples(st.integers(1, STORY_TURNS + 3), st.sampled_from([10, 120, 400])),
    min_size=1,
    max_size=8,
)


def substantial(prompts: int, reply_chars: int, prompt_chars: int) -> bool:
    return prompts >= STORY_TURNS and prompts * (prompt_chars + reply_chars + 1) >= STORY_CHARS


@given(SESSIONS)
def test_the_story_always_ends_with_the_newest_and_reaches_back_to_the_work(
    sessions: list[tuple[int, int]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "store"
        notebook = os.path.join(tmp, "nb.ipynb")
        ids = []
        for k, (prompts, chars) in enumerate(sessions):
            asked = [f"session {k} asks step {n:02d} of the work" for n in range(prompts)]
            ids.append(store_session(root, asked, chars, at=1000.0 + 100 * k, notebook=notebook))
        prompt_chars = len("session 0 asks step 00 of the work")
        big = [substantial(p, c, prompt_chars) for p, c in sessions]
        store = SessionStore(root)
        story = notebook_story(store, notebook)
        choice = choose(notebook, Transcript(), store)  # what `jupyter recap NOTEBOOK` tells

        assert story is not None and choice.sessions == story.ids
        assert story.ids[-1] == ids[-1]  # always the newest
        positions = [ids.index(i) for i in story.ids]
        assert positions == sorted(positions) and len(positions) <= MAX_SESSIONS
        earlier_work = [k for k in range(len(ids) - 1) if big[k]]
        if big[-1] or not earlier_work:
            assert story.ids == (ids[-1],)
        else:
            work = earlier_work[-1]  # the latest substantial session before the newest
            between = list(range(work + 1, len(ids) - 1))[-(MAX_SESSIONS - 2) :]
            assert positions == [work, *between, len(ids) - 1]
        # What the recap sees: the newest prompt, and the work's task when it frames it.
        assert choice.transcript is not None
        context = build_context(choice.transcript)
        newest_prompt = f"session {len(ids) - 1} asks step {sessions[-1][0] - 1:02d}"
        assert f"User: {newest_prompt}" in context
        first = positions[0]
        if len(positions) > 1:
            assert f"Original task: session {first} asks step 00" in context


# -- in a real IPython shell: %load_ext brings the story back, %recap resume picks one -------------


def test_load_brings_the_story_back_and_recap_resume_picks_one(
    shell: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from jupyter_recap.ipython.extension import extension_for
    from jupyter_recap.record.transcript import current

    root = tmp_path / "recap-home"  # the isolated JUPYTER_RECAP_HOME
    story_id = five_turn_story(root)
    side = side_run(root)
    monkeypatch.setenv("JPY_SESSION_NAME", NOTEBOOK)
    monkeypatch.setenv("JUPYTER_RECAP_AUTO", "0")
    shell.run_line_magic("load_ext", "jupyter_recap")
    ext = extension_for(shell)
    assert ext is not None and ext.writer is not None
    assert ext.session.story is not None and ext.session.story.ids == (story_id, side)
    assert ext.writer.id == side  # the newest session is the one continued
    assert current().prompt_count == 8
    assert ext.session.story_note.startswith("from sessions ")
    current().user("send the email to finance")
    assert ext.writer.flush()
    header = json.loads((root / f"{side}.json").read_text())
    assert header["framed_by"] == [story_id] and header["turns"] == 4

    # `%recap resume ID` is exactly that session: nothing frames it any more.
    shell.run_line_magic("recap", f"resume {side}")
    assert "resumed session" in capsys.readouterr().out
    assert [e.text for e in current() if e.kind == "user"] == [
        "hi",
        "test",
        "again",
        "send the email to finance",
    ]
    assert ext.session.story is None and ext.session.story_note == ""
    current().user("and file it")
    assert ext.writer.flush()
    assert json.loads((root / f"{side}.json").read_text())["framed_by"] == []
