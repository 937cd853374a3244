"""The agent API: jr.todo_write, tasks_prompt, remember, recall, forget, memory_prompt."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import jupyter_recap as jr
from jupyter_recap.stores import workstate
from jupyter_recap.stores.memory import MemoryStore
from jupyter_recap.stores.tasks import Task
from jupyter_recap.stores.workstate import MemoryWarning, WorkState


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A git project with a notebook in a subfolder; the kernel serves that notebook."""
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / "analysis").mkdir()
    monkeypatch.setenv("JUPYTER_RECAP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("JPY_SESSION_NAME", str(root / "analysis" / "loader.ipynb"))
    monkeypatch.delenv("JUPYTER_RECAP_MEMORY", raising=False)
    workstate.set_current_state(None)
    yield root
    workstate.set_current_state(None)


def test_todo_write_replaces_the_list_and_warns(project: Path) -> None:
    assert jr.tasks_prompt() == ""
    assert jr.todo_write(["read the loader", "fix the parser"]) == [
        "no task is in progress while work remains; mark the next one in_progress"
    ]
    warned = jr.todo_write(
        [
            {"text": "read the loader", "status": "completed"},
            {"text": "fix the parser", "status": "in_progress"},
            {"text": "write the test", "status": "in_progress"},
        ]
    )
    assert warned == ["2 tasks are in progress; keep one at a time"]
    assert (
        jr.todo_write(
            [
                jr.Task("read the loader", "completed"),
                jr.Task("fix the parser", "in_progress"),
                {"text": "publish", "status": "blocked", "note": "no token"},
            ]
        )
        == []
    )
    assert jr.tasks_prompt() == (
        "tasks ####........ 1/3  1 blocked\n"
        "[x] read the loader\n"
        "[~] fix the parser\n"
        "[!] publish — no token\n"
        "Now: fix the parser"
    )


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ([{"text": "publish", "status": "blocked"}], "task 1: blocked task 'publish' needs a note"),
        ([{"text": "x", "status": "done"}], "task 1: unknown task status 'done'"),
        (["ok", ""], "task 2: task text is empty"),
        (["x" * 401], "task 1: task text is 401 characters; the limit is 400"),
        ("fix the parser", "takes a list of tasks"),
        ([42], "task 1: a task must be a string or a dict, not int"),
    ],
)
def test_bad_tasks_are_refused_and_change_nothing(project: Path, bad: object, message: str) -> None:
    jr.todo_write([{"text": "keep me", "status": "in_progress"}])
    with pytest.raises(ValueError, match=message) as caught:
        jr.todo_write(bad)  # type: ignore[arg-type]
    assert isinstance(caught.value, jr.InputError)
    assert jr.tasks_prompt().endswith("Now: keep me")


def test_memory_lives_with_the_git_project(project: Path) -> None:
    entry = jr.remember("gotcha", "the loader drops rows with a BOM")
    assert entry is not None and entry.line == "[gotcha] the loader drops rows with a BOM"
    # another notebook anywhere in the same repository sees the same notes
    other = MemoryStore(project)
    assert [e.text for e in other.entries()] == ["the loader drops rows with a BOM"]
    assert [e.text for e in jr.recall("BOM loader")] == ["the loader drops rows with a BOM"]
    assert jr.recall("BOM parquet") == []  # AND: every term must match
    block = jr.memory_prompt()
    assert "- [gotcha] the loader drops rows with a BOM" in block
    assert block.splitlines()[-1].startswith("Trust these notes but verify them")
    assert [e.text for e in jr.forget("BOM")] == ["the loader drops rows with a BOM"]
    assert jr.memory_prompt() == ""


@pytest.mark.parametrize(
    ("kind", "text", "message"),
    [
        ("opinion", "x", "unknown kind 'opinion': use one of fact, decision, gotcha, command"),
        ("fact", "   ", "a note needs some text"),
        ("fact", "a" * 401, "a note is at most 400 characters (this one has 401)"),
        ("fact", "two\nlines", "one self-contained line"),
    ],
)
def test_bad_notes_are_refused(project: Path, kind: str, text: str, message: str) -> None:
    with pytest.raises(jr.InputError, match=re.escape(message)):
        jr.remember(kind, text)
    assert jr.memory_prompt() == ""


def test_duplicates_and_the_301st_note(project: Path) -> None:
    jr.remember("fact", "Data lives in data/raw.")
    with pytest.raises(jr.InputError, match="already remembered: \\[fact\\] Data lives"):
        jr.remember("decision", "  data lives in DATA/RAW  ")
    for i in range(299):
        jr.remember("fact", f"note {i}")
    with pytest.raises(jr.InputError, match="memory is full \\(300 notes\\)"):
        jr.remember("fact", "one too many")
    assert len(workstate.current_state().memory.entries()) == 300


def test_memory_off_by_environment(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jr.remember("fact", "kept before memory was turned off")
    monkeypatch.setenv("JUPYTER_RECAP_MEMORY", "0")
    workstate.set_current_state(None)
    assert jr.remember("fact", "never stored") is None
    assert jr.recall("kept") == [] and jr.memory_prompt() == "" and jr.forget("kept") == []
    store = MemoryStore(project)
    assert [e.text for e in store.entries()] == ["kept before memory was turned off"]
    assert store.entries()[0].hits == 0  # recall with memory off counted nothing


def test_a_corrupt_file_is_moved_aside_with_a_warning(project: Path) -> None:
    jr.remember("fact", "soon lost to a bad editor")
    path = workstate.current_state().memory.path
    path.write_text("{ not json")
    with pytest.warns(MemoryWarning, match="corrupt.*moved to .*corrupt-"):
        assert jr.recall("lost") == []
    backups = list(path.parent.glob(path.name + ".corrupt-*"))
    assert len(backups) == 1 and backups[0].read_text() == "{ not json"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # told once, not on every call
        assert jr.remember("fact", "a fresh start") is not None


def test_recap_framing_of_the_state(project: Path) -> None:
    state = WorkState()
    state.todo_write([{"text": "fix the parser", "status": "in_progress"}, "write the test"])
    state.remember("command", "pytest -x tests/test_loader.py")
    framing = state.framing()
    assert framing.open_task == "fix the parser" and framing.progress == (0, 2)
    assert framing.extras == (
        "Tasks 0/2 done; in progress: fix the parser; next: write the test",
        "Project notes: [command] pytest -x tests/test_loader.py",
    )
    state.memory_enabled = False
    assert state.framing().extras == framing.extras[:1]


def test_listeners_see_every_change(project: Path) -> None:
    state = WorkState()
    seen: list[int] = []
    unsubscribe = state.subscribe(lambda tasks: seen.append(len(tasks)))

    def broken(tasks: tuple[Task, ...]) -> None:
        raise ZeroDivisionError("division by zero")

    state.subscribe(broken)  # a broken listener is logged, never raised
    state.todo_write(["a", "b"])
    state.restore_tasks([{"text": "c"}, {"bogus": 1}, "not a dict"])
    assert [t.text for t in state.tasks] == ["c"]
    unsubscribe()
    state.todo_write([])
    assert seen == [2, 1]


def test_two_processes_remember_at_once(project: Path, tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        import jupyter_recap as jr
        for i in range(40):
            jr.remember("fact", f"process {sys.argv[1]} learned fact {i}")
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, name], cwd=project / "analysis")
        for name in ("a", "b")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    texts = {e.text for e in MemoryStore(project).entries()}
    assert len(texts) == 80 and "process b learned fact 39" in texts
