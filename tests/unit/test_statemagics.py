"""%todos, %remember, %notes, %forget and %recap compact-memory in a real IPython shell."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agentmagic import install
from fakellm import FakeLLM, answer, status

import jupyter_recap as jr
from jupyter_recap.stores.memory import MemoryStore


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    monkeypatch.setenv("JPY_SESSION_NAME", str(root / "loader.ipynb"))
    return root


@pytest.fixture
def loaded(shell: Any, project: Path) -> Any:
    shell.run_line_magic("load_ext", "jupyter_recap")
    return shell


def run(shell: Any, capsys: Any, magic: str, line: str = "") -> str:
    capsys.readouterr()
    shell.run_line_magic(magic, line)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return str(captured.out)


# -- tasks ---------------------------------------------------------------------------------


def test_todos_renders_the_agents_list(loaded: Any, capsys: Any) -> None:
    assert run(loaded, capsys, "todos") == (
        "todos: no task list yet (an agent writes one with jupyter_recap.todo_write)\n"
    )
    loaded.run_cell(
        "import jupyter_recap as jr\n"
        "jr.todo_write([{'text': 'read the loader', 'status': 'completed'},\n"
        "               {'text': 'fix the parser', 'status': 'in_progress'},\n"
        "               {'text': 'write the test', 'status': 'in_progress'},\n"
        "               'update the changelog',\n"
        "               {'text': 'publish', 'status': 'blocked', 'note': 'no token'}])"
    )
    assert run(loaded, capsys, "todos") == (
        "tasks ##.......... 1/5  1 blocked\n"
        "[x] read the loader\n"
        "[~] fix the parser\n"
        "[~] write the test\n"
        "[ ] update the changelog\n"
        "[!] publish — no token\n"
        "warning: 2 tasks are in progress; keep one at a time\n"
    )
    assert "tasks:       Tasks 1/5 done; in progress: fix the parser" in run(
        loaded, capsys, "recap", "status"
    )
    assert run(loaded, capsys, "todos", "clear") == "todos: the task list is now empty\n"
    assert jr.tasks_prompt() == ""
    assert run(loaded, capsys, "todos", "add x").startswith("todos: unknown arguments 'add x'")


# -- memory --------------------------------------------------------------------------------


def test_remember_search_forget_notes(loaded: Any, capsys: Any, project: Path) -> None:
    assert run(loaded, capsys, "notes").startswith(f"notes: none yet for {project}")
    assert run(loaded, capsys, "notes", "loader") == "notes: no note contains all of 'loader'\n"
    out = run(loaded, capsys, "remember", "gotcha the loader drops rows with a BOM")
    assert out == "remembered [gotcha] the loader drops rows with a BOM\n"
    run(loaded, capsys, "remember", "command pytest -x tests/test_loader.py")
    run(loaded, capsys, "remember", "fact the loader's cache lives in .cache/loader")
    # %notes TERMS searches: every term must appear (any case), and each note found counts a hit
    assert run(loaded, capsys, "notes", "LOADER bom") == (
        "[gotcha] the loader drops rows with a BOM\n"
    )
    assert run(loaded, capsys, "notes", "loader parquet") == (
        "notes: no note contains all of 'loader parquet'\n"
    )
    assert run(loaded, capsys, "notes") == (
        f"3 notes for {project} (1 recalled at least once)\n"
        " hits  kind      note\n"
        "    1  gotcha    the loader drops rows with a BOM\n"
        "    0  command   pytest -x tests/test_loader.py\n"
        "    0  fact      the loader's cache lives in .cache/loader\n"
    )
    ambiguous = run(loaded, capsys, "forget", "loader")
    assert ambiguous.startswith("forget: 3 notes match 'loader' ([gotcha] the loader drops")
    assert ambiguous.endswith("be more specific, or forget them all\n")
    assert run(loaded, capsys, "forget", "cache lives") == (
        "forgot [fact] the loader's cache lives in .cache/loader\n"
    )
    assert run(loaded, capsys, "forget", "--all loader") == (
        "forgot [gotcha] the loader drops rows with a BOM\n"
        "forgot [command] pytest -x tests/test_loader.py\n"
    )
    assert run(loaded, capsys, "forget", "nothing like it") == (
        "forget: no note contains 'nothing like it'\n"
    )
    status = run(loaded, capsys, "recap", "status")
    assert f"memory:      0 notes for {project}" in status


@pytest.mark.parametrize(
    ("magic", "line", "expected"),
    [
        ("remember", "", "remember: usage: %remember KIND TEXT (KIND is one of fact, decision"),
        ("remember", "gotcha", "remember: usage: %remember KIND TEXT"),
        ("remember", "opinion tabs are better", "remember: unknown kind 'opinion': use one of"),
        ("remember", "fact " + "x" * 401, "remember: a note is at most 400 characters"),
        ("forget", "--all", "forget: usage: %forget [--all] TEXT"),
    ],
)
def test_bad_input_is_one_line(
    loaded: Any, capsys: Any, magic: str, line: str, expected: str
) -> None:
    out = run(loaded, capsys, magic, line)
    assert out.startswith(expected) and out.count("\n") == 1


def test_duplicates_and_a_full_memory(loaded: Any, capsys: Any, project: Path) -> None:
    run(loaded, capsys, "remember", "fact Data lives in data/raw.")
    out = run(loaded, capsys, "remember", "decision data lives in data/raw")
    assert out == "remember: already remembered: [fact] Data lives in data/raw.\n"
    store = MemoryStore(project)
    for i in range(299):
        store.remember("fact", f"note {i}")
    out = run(loaded, capsys, "remember", "fact one too many")
    assert out.startswith("remember: memory is full (300 notes): run %recap compact-memory")
    assert len(store.entries()) == 300


def test_corrupt_memory_is_reported_once(loaded: Any, capsys: Any, project: Path) -> None:
    run(loaded, capsys, "remember", "fact soon garbled")
    store = MemoryStore(project)
    store.path.write_bytes(b"\x00\x01 garbage")
    first, warning = run(loaded, capsys, "notes").splitlines()
    assert first.startswith("notes: none yet")
    assert warning.startswith("warning: the project memory file was corrupt")
    assert "moved to" in warning and "a fresh memory started" in warning
    assert run(loaded, capsys, "notes").startswith("notes: none yet")
    assert len(list(store.root.glob("*.corrupt-*"))) == 1


def test_memory_off(loaded: Any, capsys: Any, project: Path) -> None:
    run(loaded, capsys, "remember", "fact stored while on")
    loaded.run_line_magic("config", "Recap.memory = False")
    off = "project memory is turned off (Recap.memory = False or JUPYTER_RECAP_MEMORY=0)\n"
    assert run(loaded, capsys, "remember", "fact never stored") == "remember: " + off
    assert run(loaded, capsys, "notes") == "notes: " + off
    assert run(loaded, capsys, "notes", "stored") == "notes: " + off
    assert run(loaded, capsys, "recap", "compact-memory") == "recap: " + off
    assert jr.recall("stored") == [] and jr.memory_prompt() == ""
    assert "memory:      off" in run(loaded, capsys, "recap", "status")
    loaded.run_line_magic("config", "Recap.memory = True")
    assert [e.text for e in MemoryStore(project).entries()] == ["stored while on"]


def test_memory_off_by_environment(
    shell: Any, capsys: Any, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_RECAP_MEMORY", "off")
    shell.run_line_magic("load_ext", "jupyter_recap")
    assert run(shell, capsys, "remember", "fact x").startswith("remember: project memory is")
    assert not MemoryStore(project).path.exists()


# -- compaction ----------------------------------------------------------------------------


def compactable(project: Path) -> MemoryStore:
    """62 notes: 60 recalled at least once, two never ("unused a", "unused b")."""
    store = MemoryStore(project)
    for i in range(60):
        store.remember("fact", f"recalled note {i:02d}")
    store.remember("fact", "unused a: the cache is cleared nightly")
    store.remember("fact", "unused b: the nightly job clears the cache")
    for i in range(60):
        store.recall(f"recalled note {i:02d}")
    assert sum(e.hits == 0 for e in store.entries()) == 2
    return store


@pytest.fixture
def openai(fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> FakeLLM:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-compaction")
    return fake_llm


def test_compaction_is_a_no_op_on_a_small_store(loaded: Any, capsys: Any) -> None:
    run(loaded, capsys, "remember", "fact only one note")
    assert run(loaded, capsys, "recap", "compact-memory") == (
        "recap: nothing to compact: 1 notes (compaction starts past 60)\n"
    )


def test_compaction_merges_the_unused_notes(
    loaded: Any, capsys: Any, project: Path, openai: FakeLLM
) -> None:
    store = compactable(project)
    recalled = [e for e in store.entries() if e.hits]
    merged = [{"kind": "fact", "text": "the nightly job clears the cache"}]
    openai.respond(answer(json.dumps(merged)))
    out = run(loaded, capsys, "recap", "compact-memory --model openai:gpt-4o-mini")
    assert out == "recap: compacted 62 notes into 61\n"
    (_, _, body) = openai.requests[0]
    sent = json.dumps(body)
    assert "unused a: the cache is cleared nightly" in sent and "recalled note" not in sent
    after = store.entries()
    assert after[:60] == recalled
    assert [e.text for e in after[60:]] == ["the nightly job clears the cache"]
    assert "calls:       1 made" in run(loaded, capsys, "recap", "status")


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("Sure! I merged the notes for you.", "the reply is not JSON"),
        ('[{"kind": "fact"}]', "a note must be text"),
    ],
)
def test_an_unusable_reply_leaves_the_file_untouched(
    loaded: Any, capsys: Any, project: Path, openai: FakeLLM, reply: str, reason: str
) -> None:
    store = compactable(project)
    before = store.path.read_bytes()
    openai.respond(answer(reply))
    out = run(loaded, capsys, "recap", "compact-memory --model=openai:gpt-4o-mini")
    assert out == f"recap: memory unchanged: {reason}\n"
    assert store.path.read_bytes() == before


def test_a_reply_that_drops_recalled_notes_cannot_lose_them(
    loaded: Any, capsys: Any, project: Path, openai: FakeLLM
) -> None:
    store = compactable(project)
    recalled = [e for e in store.entries() if e.hits]
    # the model returns one note and nothing else: the recalled ones were never sent
    openai.respond(answer(json.dumps([{"kind": "fact", "text": "caches are cleared"}])))
    assert "compacted 62 notes into 61" in run(
        loaded, capsys, "recap", "compact-memory --model openai:gpt-4o-mini"
    )
    assert store.entries()[:60] == recalled


def test_compaction_failures_are_one_line(
    loaded: Any, capsys: Any, project: Path, openai: FakeLLM
) -> None:
    store = compactable(project)
    before = store.path.read_bytes()
    assert run(loaded, capsys, "recap", "compact-memory").startswith(
        "recap: memory unchanged: compaction needs a model and only the offline engine"
    )
    openai.respond(status(500))
    out = run(loaded, capsys, "recap", "compact-memory --model openai:gpt-4o-mini")
    assert out.startswith("recap: memory unchanged: ") and out.count("\n") == 1
    assert "sk-test-compaction" not in out
    out = run(loaded, capsys, "recap", "compact-memory --model bogus:model")
    assert out.startswith("recap: model provider 'bogus' of 'bogus:model' is not supported")
    assert run(loaded, capsys, "recap", "compact-memory now").startswith(
        "recap: unknown arguments 'compact-memory now'"
    )
    assert store.path.read_bytes() == before


# -- the recap sees it ---------------------------------------------------------------------


def test_offline_recap_names_the_open_task(loaded: Any, capsys: Any) -> None:
    loaded.agent = install(loaded)
    loaded.agent.script.append(lambda prompt: print("I read the loader and the failing test."))
    loaded.run_cell("%%agent\nfix the CSV loader's date parsing", store_history=True)
    jr.todo_write(
        [
            {"text": "read the loader", "status": "completed"},
            {"text": "make two-digit years parse as 19xx", "status": "in_progress"},
            "add a regression test",
        ]
    )
    out = run(loaded, capsys, "recap")
    assert out.startswith("✦ recap · offline\nTask: Fix the CSV loader's date parsing.")
    assert out.rstrip().endswith("Next: Make two-digit years parse as 19xx (1 of 3 tasks done).")


def test_resuming_a_session_brings_its_task_list(loaded: Any, capsys: Any) -> None:
    from jupyter_recap.record.transcript import Transcript
    from jupyter_recap.stores.sessions import SessionWriter

    stored = Transcript()
    writer = SessionWriter(stored, notebook="/elsewhere/other.ipynb")
    stored.user("tidy the plotting helpers", model="offline")
    stored.assistant("Split plots.py in two.")
    stored.outcome("ok")
    writer.set_tasks([{"text": "move the colour maps out", "status": "in_progress"}])
    writer.close()
    jr.todo_write(["this notebook's own plan"])
    out = run(loaded, capsys, "recap", f"resume {writer.id[:8]}")
    assert out.startswith(f"recap: resumed session {writer.id[:8]}: tidy the plotting helpers")
    assert out.rstrip().endswith("Next: Move the colour maps out (0 of 1 tasks done).")
    assert run(loaded, capsys, "todos") == "tasks ............ 0/1\n[~] move the colour maps out\n"
