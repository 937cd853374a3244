"""Per-project memory: rules, limits, locking, corruption, compaction."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fakellm import FakeLLM, answer, status

from jupyter_recap.errors import InputError, ProviderTimeout
from jupyter_recap.pipeline.compaction import (
    COMPACT_MIN,
    CompactResult,
    compact_memory,
    compact_notes,
)
from jupyter_recap.pipeline.providers.base import CancelToken
from jupyter_recap.pipeline.service import RecapStats
from jupyter_recap.settings import Recap
from jupyter_recap.stores import memory
from jupyter_recap.stores.memory import Entry, MemoryStore, project_dir_for


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("JUPYTER_RECAP_HOME", str(path))
    return path


@pytest.fixture
def store(home: Path, tmp_path: Path) -> MemoryStore:
    project = tmp_path / "project"
    project.mkdir()
    return MemoryStore(project)


def fill(store: MemoryStore, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        store.remember("fact", f"note number {i}")


def test_file_layout_and_permissions(store: MemoryStore, home: Path) -> None:
    store.remember("fact", "  the data lives in data/raw  ")
    assert store.path.parent == home / "memory"
    assert len(store.path.stem) == 16
    assert (store.path.stat().st_mode & 0o777) == 0o600
    assert ((home / "memory").stat().st_mode & 0o777) == 0o700
    assert (store.lock_path.stat().st_mode & 0o777) == 0o600
    data = json.loads(store.path.read_text())
    assert data["project"] == str(store.project_dir)
    assert data["entries"][0]["text"] == "the data lives in data/raw"
    # the same project (another spelling of the path) shares the file; another does not
    assert MemoryStore(str(store.project_dir) + "/.").path == store.path
    assert MemoryStore(store.project_dir.parent).path != store.path


def test_remember_fields(store: MemoryStore) -> None:
    entry = store.remember("Decision", "use polars, not pandas")
    assert entry is not None
    assert (entry.kind, entry.text, entry.hits, entry.last_hit) == (
        "decision",
        "use polars, not pandas",
        0,
        None,
    )
    assert entry.created > 0
    assert store.entries() == [entry]


@pytest.mark.parametrize(
    ("kind", "text", "message"),
    [
        ("idea", "x", "unknown kind 'idea': use one of fact, decision, gotcha, command"),
        ("fact", "   ", "a note needs some text"),
        ("fact", "two\nlines", "a note must be one self-contained line (no newlines)"),
        ("fact", "x" * 401, "a note is at most 400 characters (this one has 401)"),
    ],
)
def test_bad_input(store: MemoryStore, kind: str, text: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        store.remember(kind, text)
    assert str(info.value) == message
    assert "\n" not in str(info.value)
    assert store.entries() == []


def test_limits_accepted(store: MemoryStore) -> None:
    store.remember("gotcha", "x" * 400)
    store.remember("command", "y")
    assert len(store.entries()) == 2


def test_duplicates_refused(store: MemoryStore) -> None:
    store.remember("fact", "Tests run with   pytest -q.")
    for text in (
        "tests run with pytest -q",
        "TESTS RUN WITH PYTEST -Q!!",
        " tests  run with pytest -q;",
    ):
        with pytest.raises(InputError, match=r"already remembered: \[fact\] Tests run"):
            store.remember("command", text)
    assert len(store.entries()) == 1


def test_the_301st_entry_is_refused(store: MemoryStore) -> None:
    fill(store, 300)
    with pytest.raises(InputError) as info:
        store.remember("fact", "one too many")
    assert "300" in str(info.value)
    assert "%recap compact-memory" in str(info.value) and "%forget" in str(info.value)
    assert len(store.entries()) == 300


def test_recall_and_hits(store: MemoryStore) -> None:
    store.remember("fact", "The API key lives in .env")
    store.remember("gotcha", "the api rate limit is 10/s")
    store.remember("command", "make api-docs builds the docs")
    found = store.recall("API")
    assert [e.text for e in found] == [
        "make api-docs builds the docs",
        "the api rate limit is 10/s",
        "The API key lives in .env",
    ]
    # every term must match (AND), over text and kind
    assert [e.text for e in store.recall("api GOTCHA")] == ["the api rate limit is 10/s"]
    assert store.recall("api nothing-like-this") == []
    hits = {e.text: (e.hits, e.last_hit is not None) for e in store.entries()}
    assert hits == {
        "The API key lives in .env": (1, True),
        "the api rate limit is 10/s": (2, True),
        "make api-docs builds the docs": (1, True),
    }
    with pytest.raises(InputError, match="at least one search term"):
        store.recall("  ")


def test_recall_returns_the_15_newest(store: MemoryStore) -> None:
    fill(store, 20)
    found = store.recall("note")
    assert [e.text for e in found] == [f"note number {i}" for i in range(19, 4, -1)]
    assert sum(e.hits for e in store.entries()) == 15


def test_forget(store: MemoryStore) -> None:
    store.remember("fact", "cache lives in /tmp/cache")
    store.remember("fact", "the cache is cleared nightly")
    store.remember("decision", "use duckdb")
    with pytest.raises(InputError) as info:
        store.forget("CACHE")
    assert str(info.value) == (
        "2 notes match 'CACHE' ([fact] cache lives in /tmp/cache; [fact] the cache is cleared"
        " nightly): be more specific, or forget them all"
    )
    assert len(store.entries()) == 3
    assert [e.text for e in store.forget("nightly")] == ["the cache is cleared nightly"]
    assert store.forget("no such note") == []
    store.remember("fact", "the cache is cleared nightly")
    gone = store.forget("cache", all_matches=True)
    assert len(gone) == 2
    assert [e.text for e in store.entries()] == ["use duckdb"]
    with pytest.raises(InputError):
        store.forget("")


def test_top_prompt_block_and_context_lines(store: MemoryStore) -> None:
    assert store.prompt_block() == ""
    assert store.context_lines() == []
    store.remember("fact", "alpha is old")
    store.remember("decision", "beta wins")
    store.remember("gotcha", "gamma is newest")
    store.recall("beta")
    store.recall("beta")
    store.recall("alpha")
    assert [e.text for e in store.top()] == ["beta wins", "alpha is old", "gamma is newest"]
    assert [e.text for e in store.top(1)] == ["beta wins"]
    block = store.prompt_block().splitlines()
    assert block[1:4] == [
        "- [decision] beta wins",
        "- [fact] alpha is old",
        "- [gotcha] gamma is newest",
    ]
    assert "verify" in block[-1] and "code" in block[-1]
    assert store.context_lines(limit=40) == ["[decision] beta wins", "[fact] alpha is old"]
    assert store.context_lines(limit=5) == []
    assert sum(len(line) for line in store.context_lines()) <= 300


def test_prompt_block_has_at_most_20(store: MemoryStore) -> None:
    fill(store, 25)
    lines = store.prompt_block().splitlines()
    assert sum(line.startswith("- [fact]") for line in lines) == 20


def test_corrupt_file_is_moved_aside(store: MemoryStore, isolated_env: Path) -> None:
    store.remember("fact", "will be kept in the backup")
    store.path.write_text("{not json")
    assert store.entries() == []
    backups = list(store.path.parent.glob(store.path.name + ".corrupt-*"))
    assert len(backups) == 1 and backups[0].read_text() == "{not json"
    assert "corrupt" in isolated_env.read_text()
    store.remember("fact", "fresh start")
    assert [e.text for e in store.entries()] == ["fresh start"]


def test_bad_entry_counts_as_corrupt(store: MemoryStore) -> None:
    store.remember("fact", "ok")
    data = json.loads(store.path.read_text())
    data["entries"].append({"kind": "nope", "text": "x", "created": 1.0})
    store.path.write_text(json.dumps(data))
    assert store.entries() == []
    assert len(list(store.path.parent.glob("*.corrupt-*"))) == 1


def test_disabled(store: MemoryStore) -> None:
    store.remember("fact", "stored before")
    off = MemoryStore(store.project_dir, disabled=True)
    assert off.entries() == [] and off.top() == [] and off.recall("stored") == []
    assert off.prompt_block() == "" and off.context_lines() == []
    assert off.forget("stored") == []
    assert off.remember("bogus", "") is None
    assert not compact_notes(off, lambda _: "[]").changed
    assert [e.text for e in store.entries()] == ["stored before"]
    assert store.entries()[0].hits == 0


def test_two_processes_write_at_once(store: MemoryStore, home: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        from jupyter_recap.stores.memory import MemoryStore
        store = MemoryStore(sys.argv[1])
        for i in range(50):
            store.remember("fact", f"writer {sys.argv[2]} note {i}")
        """
    )
    env = {**os.environ, "JUPYTER_RECAP_HOME": str(home)}
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(store.project_dir), name], env=env)
        for name in ("a", "b")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    assert len(store.entries()) == 100


def test_project_dir_for(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "a" / "b").mkdir(parents=True)
    assert project_dir_for(repo / "a" / "b" / "nb.ipynb") == repo.resolve()
    (tmp_path / "wt" / "sub").mkdir(parents=True)
    (tmp_path / "wt" / ".git").write_text("gitdir: elsewhere")  # a worktree's .git file
    assert project_dir_for(tmp_path / "wt" / "sub" / "nb.ipynb") == (tmp_path / "wt").resolve()
    plain = tmp_path / "plain" / "x"
    plain.mkdir(parents=True)
    if not any((p / ".git").exists() for p in tmp_path.parents):
        assert project_dir_for(str(plain / "nb.ipynb")) == plain.resolve()


# -- compaction ------------------------------------------------------------------------------


def never_called(_: list[Entry]) -> str:
    raise AssertionError("the model must not be called")


def test_compact_noop_when_small(store: MemoryStore) -> None:
    fill(store, 60)
    result = compact_notes(store, never_called)
    assert result == CompactResult(
        False, "nothing to compact: 60 notes (compaction starts past 60)", 60, 60
    )


def test_compact_noop_without_unused(store: MemoryStore) -> None:
    fill(store, 61)
    store.recall("note")  # hits the 15 newest
    for i in range(46):
        store.recall(f"note number {i}")
    store.forget("note number 0", all_matches=True)  # removes 0 (and no other: exact prefix)
    store.remember("fact", "the only unused")
    assert sum(e.hits == 0 for e in store.entries()) == 1
    result = compact_notes(store, never_called)
    assert not result.changed and "fewer than two" in result.message


def setup_compactable(store: MemoryStore) -> list[Entry]:
    fill(store, 58)
    store.remember("gotcha", "recalled one: kernel restarts lose state")
    store.remember("decision", "recalled two: keep notebooks small")
    store.remember("fact", "unused a")
    store.remember("fact", "unused b")
    for i in range(58):
        store.recall(f"note number {i}")
    store.recall("recalled")
    recalled = [e for e in store.entries() if e.hits > 0]
    assert len(recalled) == 60 and len(store.entries()) == 62
    return recalled


def test_compact_good_merge(store: MemoryStore) -> None:
    recalled = setup_compactable(store)
    seen: list[list[Entry]] = []

    def merge(entries: list[Entry]) -> str:
        seen.append(entries)
        return '```json\n[{"kind": "fact", "text": "unused a and b"}]\n```'

    result = compact_notes(store, merge)
    assert result.changed and (result.before, result.after) == (62, 61)
    assert [e.text for e in seen[0]] == ["unused a", "unused b"]
    after = store.entries()
    assert after[:60] == recalled
    assert (after[60].kind, after[60].text, after[60].hits) == ("fact", "unused a and b", 0)


def test_compact_merge_is_deduplicated(store: MemoryStore) -> None:
    setup_compactable(store)
    reply = json.dumps(
        [
            {"kind": "fact", "text": "merged"},
            {"kind": "fact", "text": "Merged."},
        ]
    )
    assert compact_notes(store, lambda _: reply).changed
    assert [e.text for e in store.entries()][60:] == ["merged"]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("I merged them for you!", "not JSON"),
        ('{"kind": "fact", "text": "x"}', "non-empty list"),
        ("[]", "non-empty list"),
        ('[{"kind": "opinion", "text": "x"}]', "unknown kind"),
        ('[{"kind": "fact", "text": "two\\nlines"}]', "one self-contained line"),
        ('[{"kind": "fact", "text": "' + "x" * 401 + '"}]', "at most 400"),
        ('["just text"]', "not an object"),
        (json.dumps([{"kind": "fact", "text": f"n{i}"} for i in range(3)]), "more than the 2"),
    ],
)
def test_compact_garbage_reply_leaves_store(store: MemoryStore, reply: str, reason: str) -> None:
    setup_compactable(store)
    before = store.path.read_bytes()
    result = compact_notes(store, lambda _: reply)
    assert not result.changed
    assert result.message.startswith("memory unchanged:") and reason in result.message
    assert store.path.read_bytes() == before


def test_compact_model_failure(store: MemoryStore) -> None:
    setup_compactable(store)
    before = store.path.read_bytes()

    def fail(_: list[Entry]) -> str:
        raise ProviderTimeout("timed out")

    result = compact_notes(store, fail)
    assert not result.changed and "timed out" in result.message
    assert store.path.read_bytes() == before


def test_compact_reply_dropping_recalled_entries(store: MemoryStore) -> None:
    recalled = setup_compactable(store)
    # a model that "helpfully" returns only a rewrite of a recalled note: it never saw it
    reply = json.dumps([{"kind": "gotcha", "text": "kernel restarts are fine"}])
    assert compact_notes(store, lambda _: reply).changed
    after = store.entries()
    assert after[:60] == recalled
    assert [e.text for e in after[60:]] == ["kernel restarts are fine"]
    assert not any(e.text.startswith("unused") for e in after)


def test_compact_keeps_notes_written_meanwhile(store: MemoryStore) -> None:
    setup_compactable(store)

    def merge(entries: list[Entry]) -> str:
        MemoryStore(store.project_dir).remember("fact", "written during the merge")
        return json.dumps([{"kind": "fact", "text": "ab"}])

    assert compact_notes(store, merge).changed
    assert [e.text for e in store.entries()][60:] == ["written during the merge", "ab"]


def openai_env(fake: FakeLLM) -> dict[str, str]:
    return {"OPENAI_BASE_URL": fake.url + "/v1", "OPENAI_API_KEY": "sk-test-key-0123456789"}


def test_compaction_asks_the_models_a_recap_would_in_turn(
    store: MemoryStore, fake_llm: FakeLLM
) -> None:
    # The same walk as a recap's: the fast model fails, the active model merges.
    setup_compactable(store)
    merged = [{"kind": "fact", "text": "caches are cleared nightly"}]
    fake_llm.respond(status(500), answer(json.dumps(merged)))
    stats = RecapStats()
    result = compact_memory(
        store,
        settings=Recap(fast_model="openai:gpt-4o-mini"),
        active_model="openai:gpt-4o",
        env=openai_env(fake_llm),
        stats=stats,
    )
    assert result.changed
    assert [r.body["model"] for r in fake_llm.requests] == ["gpt-4o-mini", "gpt-4o"]
    assert (stats.calls, stats.failures) == (2, 1)


def test_compaction_failure_names_the_model_and_leaves_the_store(
    store: MemoryStore, fake_llm: FakeLLM
) -> None:
    setup_compactable(store)
    before = store.path.read_bytes()
    fake_llm.respond(status(500))
    result = compact_memory(store, model="openai:gpt-4o-mini", env=openai_env(fake_llm))
    assert not result.changed
    assert result.message.startswith("memory unchanged: openai:gpt-4o-mini: ")
    no_key = compact_memory(store, model="openai:gpt-4o-mini", env={})
    assert no_key.message == (
        "memory unchanged: openai:gpt-4o-mini has no credentials: "
        "set OPENAI_API_KEY or OPENAI_BASE_URL"
    )
    cancel = CancelToken()
    cancel.cancel()
    cancelled = compact_memory(
        store, model="openai:gpt-4o-mini", env=openai_env(fake_llm), cancel=cancel
    )
    assert cancelled.message == "memory unchanged: cancelled"
    assert len(fake_llm.requests) == 1  # neither without a key nor once cancelled
    assert store.path.read_bytes() == before


def test_constants() -> None:
    assert memory.KINDS == ("fact", "decision", "gotcha", "command")
    assert (memory.MAX_ENTRIES, memory.MAX_TEXT, COMPACT_MIN) == (300, 400, 60)


def test_a_killed_writers_temporary_file_is_swept(store: MemoryStore) -> None:
    store.remember("fact", "first")
    leftover = store.path.with_name(f".{store.path.name}.999999.1.tmp")
    leftover.write_bytes(b"{ half a file")
    os.utime(leftover, (1.0, 1.0))
    fresh = MemoryStore(store.project_dir)  # another kernel, later
    fresh.remember("fact", "second")
    assert not leftover.exists()
    assert [e.text for e in fresh.entries()] == ["first", "second"]
