"""A corrupt record never crashes ``%load_ext``, and a load that fails leaves nothing behind.

What used to happen: a header with ``"turns": "1"``, ``"title": null``, an entry whose text is a
number, or deeply nested JSON in a session or memory file raised a traceback from
``%load_ext jupyter_recap``, and the failed load left its cell hooks and timer thread running
where ``%unload_ext`` could not remove them.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from storeutil import plant_notes, plant_session

from jupyter_recap.stores.memory import MemoryStore
from jupyter_recap.stores.sessions import SessionStore

NESTED = b"[" * 200_000 + b"]" * 200_000


def _edit_header(store: Path, session_id: str, **changes: Any) -> None:
    path = store / f"{session_id}.json"
    header = json.loads(path.read_text())
    header.update(changes)
    path.write_text(json.dumps(header))


def _recap_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("jupyter-recap")]


def _our_hooks(shell: Any) -> list[Any]:
    return [
        cb
        for name in ("pre_run_cell", "post_run_cell")
        for cb in shell.events.callbacks[name]
        if "jupyter_recap" in getattr(cb, "__module__", "")
    ]


@pytest.fixture
def notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    path = str(tmp_path / "nb.ipynb")
    monkeypatch.setenv("JPY_SESSION_NAME", path)
    return path


@pytest.fixture
def store() -> Path:
    return Path(os.environ["JUPYTER_RECAP_HOME"])


@pytest.mark.parametrize(
    "changes",
    [{"turns": "1"}, {"title": None}, {"tasks": {"not": "a list"}}, {"entries": -4}],
    ids=["turns-is-text", "title-is-null", "tasks-not-a-list", "negative-count"],
)
def test_a_header_with_a_wrong_field_still_resumes(
    shell: Any, notebook: str, store: Path, changes: dict[str, Any], capsys: Any
) -> None:
    session_id = plant_session(store, notebook, prompt="fix the loader")
    _edit_header(store, session_id, **changes)
    shell.run_line_magic("load_ext", "jupyter_recap")
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    assert "ignoring malformed" in Path(os.environ["JUPYTER_RECAP_LOG"]).read_text()
    # Still listed, and its story comes back whole (the counters are recounted from it).
    assert session_id in [r.id for r in SessionStore(store).records(notebook)]
    shell.run_line_magic("recap", f"resume {session_id[:8]}")
    import jupyter_recap as jr

    assert [e.text for e in jr.current()][:2] == ["fix the loader", "ok"]


@pytest.mark.parametrize(
    "line",
    [
        {"kind": "assistant", "text": 42},
        {"kind": "user", "text": "x", "time": "yesterday"},
        {"kind": "nonsense", "text": "x"},
        {"kind": ["user"]},
        {"kind": "outcome", "outcome": {"ok": True}},
        {"kind": "code", "text": "x", "count": True},
    ],
    ids=[
        "text-is-a-number",
        "time-is-text",
        "unknown-kind",
        "kind-is-a-list",
        "bad-outcome",
        "bool-count",
    ],
)
def test_a_bad_entry_is_skipped_and_the_rest_resumes(
    shell: Any, notebook: str, store: Path, line: dict[str, Any], capsys: Any
) -> None:
    session_id = plant_session(store, notebook, prompt="fix the loader")
    with (store / f"{session_id}.jsonl").open("a") as f:
        f.write(json.dumps(line) + "\n")
    shell.run_line_magic("load_ext", "jupyter_recap")
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    import jupyter_recap as jr

    assert [e.kind for e in jr.current()] == ["user", "assistant"]
    assert "skipping a malformed entry" in Path(os.environ["JUPYTER_RECAP_LOG"]).read_text()


def test_deeply_nested_json_in_a_session_is_skipped(
    shell: Any, notebook: str, store: Path, capsys: Any
) -> None:
    nested_header = plant_session(store, notebook, prompt="nested header")
    (store / f"{nested_header}.json").write_bytes(NESTED)
    good = plant_session(store, notebook, prompt="fix the loader")
    with (store / f"{good}.jsonl").open("ab") as f:
        f.write(NESTED + b"\n")
    shell.run_line_magic("load_ext", "jupyter_recap")
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    import jupyter_recap as jr

    assert [e.text for e in jr.current()] == ["fix the loader", "ok"]
    assert [r.id for r in SessionStore(store).records()] == [good]


def test_deeply_nested_json_in_memory_is_moved_aside(tmp_path: Path, store: Path) -> None:
    path = plant_notes(store, tmp_path)
    path.write_bytes(NESTED)
    memory = MemoryStore(tmp_path, root=store / "memory")
    assert memory.prompt_block() == ""
    (warning,) = memory.take_warnings()
    assert "corrupt" in warning and "nested too deeply" in warning
    moved = [p for p in path.parent.iterdir() if ".corrupt-" in p.name]
    assert len(moved) == 1 and moved[0].read_bytes() == NESTED  # kept, not lost
    assert memory.remember("fact", "the loader reads CSV") is not None


def test_a_load_that_fails_takes_back_everything_it_registered(
    shell: Any, notebook: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """Whatever breaks half-way through a load, the person gets one line and the shell is as
    it was: no cell hook, no magic, no thread; %reload_ext then loads it for real."""

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the disk caught fire")

    threads_before = _recap_threads()
    monkeypatch.setattr(SessionStore, "latest_for", broken)
    shell.run_line_magic("load_ext", "jupyter_recap")
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    (line,) = captured.err.strip().splitlines()
    assert "could not load (RuntimeError: the disk caught fire)" in line
    assert "%reload_ext jupyter_recap" in line
    assert _our_hooks(shell) == []
    assert "recap" not in shell.magics_manager.magics["line"]
    assert _recap_threads() == threads_before
    shell.run_line_magic("unload_ext", "jupyter_recap")  # harmless

    monkeypatch.undo()
    monkeypatch.setenv("JPY_SESSION_NAME", notebook)
    shell.run_line_magic("load_ext", "jupyter_recap")
    assert len(_our_hooks(shell)) == 2 and "recap" in shell.magics_manager.magics["line"]
    shell.run_line_magic("unload_ext", "jupyter_recap")
    assert _our_hooks(shell) == [] and _recap_threads() == threads_before
