"""Tasks and memory notes in a recap: the framing lines, their budget, the offline next step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakellm import FakeLLM

import jupyter_recap as jr
from jupyter_recap.pipeline.context import (
    EXTRAS_CHARS,
    FRAMING_HEADER,
    RECENT_HEADER,
    build_context,
)
from jupyter_recap.pipeline.service import draft_recap
from jupyter_recap.settings import Recap
from jupyter_recap.stores.framing import (
    NOTES_LABEL,
    Framing,
    framing_for,
    notebook_framing,
    record_framing,
)
from jupyter_recap.stores.memory import MemoryStore
from jupyter_recap.stores.sessions import SessionStore, SessionWriter
from jupyter_recap.stores.tasks import Task

PLAN = [
    Task("read the loader", "completed"),
    Task("fix the date parsing", "completed"),
    Task("add a regression test for two-digit years", "in_progress"),
    Task("update the changelog"),
    Task("publish the wheel", "blocked", "no upload token yet"),
]


@pytest.fixture
def memory(tmp_path: Path) -> MemoryStore:
    """Three notes of a project, one recalled (the store is the test's own: see conftest)."""
    project = tmp_path / "project"
    project.mkdir()
    store = MemoryStore(project)
    store.remember("command", "the tests run with pytest -x tests/")
    store.remember("gotcha", "two-digit years before 1970 parse as 20xx")
    store.remember("decision", "dates are stored as UTC ISO strings")
    store.recall("two-digit years")
    return store


def long_session() -> jr.Transcript:
    t = jr.Transcript()
    with t.turn("fix the CSV loader's date parsing", model="openai:gpt-4o-mini"):
        for i in range(400):
            t.tool_call("run", f"pytest -k case_{i}")
            t.tool_result("run", "." * 50 + f" case {i} ok")
        t.assistant("The parser now handles ISO dates. " * 60)
    return t


def test_framing_lines_and_open_task(memory: MemoryStore) -> None:
    framing = framing_for(PLAN, memory)
    tasks_line, notes_line = framing.extras
    assert tasks_line.startswith("Tasks 2/5 done; in progress: add a regression test")
    assert "next: update the changelog" in tasks_line and "1 blocked" in tasks_line
    # the recalled note ranks first
    assert notes_line.startswith(NOTES_LABEL + "[gotcha] two-digit years before 1970")
    assert "[command] the tests run with pytest -x tests/" in notes_line
    assert framing.open_task == "add a regression test for two-digit years"
    assert framing.progress == (2, 5)


def test_no_tasks_no_notes_is_no_framing(memory: MemoryStore) -> None:
    assert framing_for((), None) == Framing()
    off = MemoryStore(memory.project_dir, disabled=True)
    assert framing_for((), off) == Framing()
    done = [Task("ship it", "completed")]
    assert framing_for(done, None) == Framing(("Tasks 1/1 done",), None)


def test_context_holds_tasks_and_notes_within_budget(memory: MemoryStore) -> None:
    t = long_session()
    bare = build_context(t)
    framing = framing_for(PLAN, memory)
    context = build_context(t, extras=framing.extras)
    assert len(context) <= 12000
    head, recent = context.split("\n\n" + RECENT_HEADER + "\n")
    assert head.startswith(FRAMING_HEADER)
    assert "Tasks 2/5 done" in head and "two-digit years before 1970" in head
    extras_chars = sum(len(line) + 1 for line in head.splitlines()[1:])
    assert extras_chars <= EXTRAS_CHARS
    # the recent tier gives up no more than the framing took, and keeps the turn's end
    bare_recent = bare.split(RECENT_HEADER + "\n", 1)[1]
    assert len(recent) >= len(bare_recent) - EXTRAS_CHARS - len(FRAMING_HEADER) - 2
    assert recent.splitlines()[-1].startswith("Assistant: The parser now handles ISO dates.")


def test_a_full_memory_stays_within_budget(memory: MemoryStore) -> None:
    for i in range(40):
        memory.remember("fact", f"module number {i} owns " + "a long explanation " * 18)
    framing = framing_for(PLAN, memory)
    assert sum(len(line) for line in framing.extras) <= EXTRAS_CHARS
    context = build_context(long_session(), extras=framing.extras)
    assert len(context) <= 12000 and "Tasks 2/5 done" in context


def test_secrets_in_notes_never_reach_the_model(memory: MemoryStore) -> None:
    key = "sk-proj-" + "A1b2C3d4" * 6
    memory.remember("command", f"export OPENAI_API_KEY={key} before the smoke test")
    memory.recall("smoke test")
    context = build_context(long_session(), extras=framing_for(PLAN, memory).extras)
    assert "smoke test" in context and key not in context


def test_offline_next_step_comes_from_the_task_list(memory: MemoryStore) -> None:
    t = jr.Transcript()
    with t.turn("fix the CSV loader's date parsing", model="offline"):
        t.assistant("I changed the parser to accept ISO dates.")
    result = draft_recap(t, model="offline", framing=framing_for(PLAN, memory), env={})
    assert result.recap is not None
    assert result.recap.text.endswith(
        "Next: Add a regression test for two-digit years (2 of 5 tasks done)."
    )
    # a next step the transcript names wins over the list
    t2 = jr.Transcript()
    with t2.turn("fix the CSV loader", model="offline"):
        t2.assistant("Done with the parser. Next: rerun the notebook top to bottom.")
    text = draft_recap(t2, model="offline", framing=framing_for(PLAN, None), env={}).recap
    assert text is not None and text.text.endswith("Next: Rerun the notebook top to bottom.")


def test_the_model_sees_the_framing(memory: MemoryStore) -> None:
    t = jr.Transcript()
    with t.turn("fix the CSV loader's date parsing", model="openai:gpt-4o-mini"):
        t.assistant("I changed the parser to accept ISO dates.")
    with FakeLLM() as fake:
        env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.url}
        result = draft_recap(t, framing=framing_for(PLAN, memory), env=env)
        assert result.recap is not None
        (_, _, body) = fake.requests[0]
    sent = json.dumps(body)
    assert "Tasks 2/5 done; in progress: add a regression test" in sent
    assert "[gotcha] two-digit years before 1970 parse as 20xx" in sent


def test_record_and_notebook_framing(memory: MemoryStore, tmp_path: Path) -> None:
    notebook = memory.project_dir / "loader.ipynb"
    t = jr.Transcript()
    writer = SessionWriter(t, notebook=str(notebook))
    with t.turn("fix the CSV loader", model="offline"):
        t.assistant("ok")
    writer.set_tasks([task.to_dict() for task in PLAN])
    writer.close()
    (record,) = SessionStore().records()
    from_record = record_framing(record, enabled=True)
    assert from_record == framing_for(PLAN, memory)
    assert notebook_framing(notebook, enabled=True) == from_record
    assert record_framing(record, enabled=False) == framing_for(PLAN, None)
    # a notebook without a stored session still gets its project's notes
    other = notebook_framing(memory.project_dir / "other.ipynb", enabled=True)
    assert other.open_task is None and other.extras[0].startswith(NOTES_LABEL)


def test_unreadable_memory_never_stops_a_recap(memory: MemoryStore) -> None:
    memory.path.unlink()
    memory.path.mkdir()  # reading it fails with an OSError, as root too
    framing = framing_for(PLAN, MemoryStore(memory.project_dir))
    assert framing.extras == framing_for(PLAN, None).extras
    assert framing.open_task is not None


def test_prompt_tells_the_model_about_tasks() -> None:
    from jupyter_recap.pipeline.prompt import INSTRUCTIONS

    assert "3 of 5 tasks done" in INSTRUCTIONS and "Project notes" in INSTRUCTIONS
    assert Recap().memory is True
