"""The session store: round trips, prefixes, crash safety, permissions, debounce, concurrency."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from jupyter_recap.errors import StoreError
from jupyter_recap.record.transcript import Transcript
from jupyter_recap.stores import sessionfiles
from jupyter_recap.stores.sessions import (
    SessionStore,
    SessionWriter,
    latest_for,
    list_sessions,
    load,
)
from jupyter_recap.stores.titles import first_sentence, title_from_recap

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home" / "recap"
    monkeypatch.setenv("JUPYTER_RECAP_HOME", str(path))
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    return path


def _session(prompt: str = "fix the foreign key", *, notebook: str | None = None) -> SessionWriter:
    t = Transcript()
    writer = SessionWriter(t, notebook=notebook, kernel_id="k1")
    with t.turn(prompt, model="openai:gpt-4o-mini"):
        t.tool_call("sql", {"q": "select 1"})
        t.tool_result("sql", "1")
        t.assistant("done")
    t.code("df.head()", count=3)
    writer.flush()
    return writer


def test_round_trip(home: Path) -> None:
    writer = _session("  a long\nprompt " + "x" * 200, notebook="/nb/a.ipynb")
    t = writer._transcript
    t.recap("you were fixing the FK")
    writer.add_tokens(10, 5)
    writer.set_tasks([{"title": "x", "status": "pending"}])
    writer.close()
    record, loaded = load(writer.id)
    assert [e.to_dict() for e in loaded] == t.to_list()
    assert record.id == writer.id and record.notebook == "/nb/a.ipynb"
    assert record.kernel_id == "k1" and record.model == "openai:gpt-4o-mini"
    assert record.first_prompt.startswith("a long prompt xxx") and len(record.first_prompt) == 80
    assert "\n" not in record.first_prompt
    assert record.title == "Fixing the FK"  # the recap's, not the first prompt's
    assert (record.turns, record.recaps, record.tokens_in, record.tokens_out) == (1, 1, 10, 5)
    assert record.tasks == [{"title": "x", "status": "pending"}]
    assert record.cwd == os.getcwd() and record.created <= record.updated


def test_resume_appends_without_rewriting(home: Path) -> None:
    first = _session()
    first.close()
    size = (home / f"{first.id}.jsonl").stat().st_size
    record, t = load(first.id[:8])
    writer = SessionWriter(t, record=record)
    t.user("next")
    writer.close()
    data = (home / f"{first.id}.jsonl").read_bytes()
    assert data.count(b"\n") == len(t) and len(data) > size
    record2, t2 = load(first.id)
    assert t2.to_list() == t.to_list() and record2.turns == 2


def test_notebook_from_env_and_listing(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JPY_SESSION_NAME", "/projects/x.ipynb")
    a = _session("first")
    b = _session("second", notebook="/projects/y.ipynb")
    c = _session("third")
    for w in (a, b, c):
        w.close()
    assert [s.id for s in list_sessions()] == [c.id, b.id, a.id]
    assert [s.id for s in list_sessions("/projects/x.ipynb")] == [c.id, a.id]
    assert [s.id for s in list_sessions(limit=1)] == [c.id]
    summary = list_sessions()[0]
    assert summary.title == "third" and summary.turns == 1 and summary.age >= 0
    found = latest_for("/projects/x.ipynb")
    assert found is not None and found.id == c.id
    assert latest_for("/projects/none.ipynb") is None


def _header(home: Path, session_id: str) -> dict[str, object]:
    """The header as it is on disk."""
    data: dict[str, object] = json.loads((home / f"{session_id}.json").read_text())
    return data


def test_a_recap_retitles_the_session_and_the_first_prompt_stays(home: Path) -> None:
    prompt = "I have orders.csv with columns id, customer_id, total; load it"
    writer = _session(prompt)
    assert _header(home, writer.id)["title"] == _header(home, writer.id)["first_prompt"] == prompt
    t = writer._transcript
    t.recap("You were fixing the foreign key on orders. Next: rerun the migration.")
    writer.flush()
    header = _header(home, writer.id)
    assert header["title"] == "Fixing the foreign key on orders"
    assert header["first_prompt"] == prompt
    # the title keeps following the work; the latest recap wins
    t.user("now plot the totals by month")
    t.recap("Task: plot the monthly totals. Next: label the axes.")
    writer.close()
    (summary,) = list_sessions()
    assert (summary.title, summary.first_prompt) == ("Plot the monthly totals", prompt)
    assert summary.to_dict()["first_prompt"] == prompt
    record, transcript = load(writer.id)
    assert (record.title, record.first_prompt) == ("Plot the monthly totals", prompt)
    # resumed, the session keeps its first prompt however many prompts follow
    resumed = SessionWriter(transcript, record=record)
    transcript.user("one more thing")
    resumed.close()
    assert _header(home, writer.id)["first_prompt"] == prompt


@pytest.mark.parametrize("useless", ["...", "Ok.", "[redacted].", "Task: [redacted]. Next: x", " "])
def test_a_recap_with_nothing_usable_keeps_the_title(home: Path, useless: str) -> None:
    writer = _session("fix the foreign key")
    t = writer._transcript
    t.recap(useless)
    writer.flush()
    assert _header(home, writer.id)["title"] == "fix the foreign key"
    t.recap("You're cleaning the invoices table.")
    t.recap(useless)
    writer.close()
    assert _header(home, writer.id)["title"] == "Cleaning the invoices table"
    assert _header(home, writer.id)["recaps"] == 3


def test_a_secret_in_a_recap_never_reaches_the_title(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WAREHOUSE_DB_PASSWORD", "correct-horse-battery")  # no shape: the env says
    writer = _session()
    # The secret straddles the title's length limit: a cut first could leave half of it behind.
    lead = "You were rotating the credentials of the warehouse database, now "
    writer._transcript.recap(
        lead + "correct-horse-battery, and postgresql://admin:Tr0ub4dor-and-3@db/billing. Next."
    )
    writer.close()
    stored = b"".join(p.read_bytes() for p in home.iterdir())
    for fragment in (b"correct-h", b"horse", b"Tr0ub4dor"):
        assert fragment not in stored
    title = str(_header(home, writer.id)["title"])
    assert title.startswith("Rotating the credentials") and "[redacted]" in title


def test_a_header_of_an_older_version_reads_its_title_as_the_first_prompt(home: Path) -> None:
    old, bad = _session("tune the model"), _session("plot churn")
    for writer in (old, bad):
        writer.close()
        header = _header(home, writer.id)
        del header["first_prompt"]  # as older versions wrote it
        if writer is bad:
            header["first_prompt"] = ["not", "text"]  # a hand edit
        (home / f"{writer.id}.json").write_text(json.dumps(header))
    by_id = {s.id: s for s in list_sessions()}
    assert (by_id[old.id].title, by_id[old.id].first_prompt) == ("tune the model",) * 2
    assert (by_id[bad.id].title, by_id[bad.id].first_prompt) == ("plot churn",) * 2
    assert "ignoring malformed first_prompt" in Path(os.environ["JUPYTER_RECAP_LOG"]).read_text()
    # continued by this version: the living title moves on, the first prompt is kept
    record, transcript = load(old.id)
    writer = SessionWriter(transcript, record=record)
    transcript.recap("You are tuning the learning rate of the churn model.")
    writer.close()
    header = _header(home, old.id)
    assert (header["title"], header["first_prompt"]) == (
        "Tuning the learning rate of the churn model",
        "tune the model",
    )


@pytest.mark.parametrize(
    ("recap", "title"),
    [
        # the first sentence, without its period
        ("Fix the loader. Next: rerun it.", "Fix the loader"),
        ("Fix the loader! Then rerun it.", "Fix the loader"),
        ("Why does the loader drop rows? Next: look at the BOM.", "Why does the loader drop rows?"),
        ("Load orders.csv with pandas 2.2 into df", "Load orders.csv with pandas 2.2 into df"),
        # no sentence ends at an abbreviation
        (
            "Compare models, e.g. the baseline vs. XGBoost. Next: plot.",
            "Compare models, e.g. the baseline vs. XGBoost",
        ),
        ("注文データを整理する。次に集計を確認する。", "注文データを整理する"),
        ("整理する！次に確認する", "整理する"),
        # a short label goes, in any language
        ("Task: plot churn by cohort. Next: label the axes.", "Plot churn by cohort"),
        ("Aufgabe: die Rechnungen bereinigen.", "Die Rechnungen bereinigen"),
        ("Tâche : nettoyer les factures.", "Nettoyer les factures"),
        ("タスク：注文データを整理する。", "注文データを整理する"),
        ("Recap: Task: fix the FK.", "Fix the FK"),
        # ... but not what only looks like one
        ("http://intranet/status is down. Next: ask IT.", "http://intranet/status is down"),
        ("Meeting at 12:30 about the loader.", "Meeting at 12:30 about the loader"),
        ("Last cell run: df.head().", "Last cell run: df.head()"),
        # the lead-ins of model-written recaps
        ("You were fixing the foreign key on orders.", "Fixing the foreign key on orders"),
        ("You are investigating slow joins.", "Investigating slow joins"),
        ("You're building a CSV loader.", "Building a CSV loader"),
        ("You’re building a CSV loader.", "Building a CSV loader"),
        ("We were migrating billing.", "Migrating billing"),
        ("The agent was refactoring loader.py.", "Refactoring loader.py"),
        ("You asked the agent to clean up the invoices.", "Clean up the invoices"),
        ("You asked to clean up the invoices.", "Clean up the invoices"),
        ("You've been tuning the churn model.", "Tuning the churn model"),
        ("You were working on the churn plot.", "The churn plot"),
        ("In this session, you are profiling the ETL job.", "Profiling the ETL job"),
        ("Task: you were fixing the FK.", "Fixing the FK"),
        # names keep their case
        ("Task: df.head() fails with KeyError.", "df.head() fails with KeyError"),
        ("Task: iPhone exports are empty.", "iPhone exports are empty"),
        ("task: orders.csv has duplicate ids.", "orders.csv has duplicate ids"),
        # nothing useful: the title stays
        ("", None),
        ("  \n ", None),
        ("...", None),
        ("Ok.", None),
        ("[redacted].", None),
        ("Task: [redacted]. Next: rotate it.", None),
        ("You were.", "You were"),
    ],
)
def test_title_from_recap(recap: str, title: str | None) -> None:
    assert title_from_recap(recap) == title


def test_a_title_is_one_short_line() -> None:
    long = "You were fixing " + "the very long foreign key problem " * 6 + ". Next: rerun."
    title = title_from_recap(long)
    assert title is not None and len(title) <= sessionfiles.TITLE_CHARS and title.endswith("…")
    assert title.startswith("Fixing the very long")
    assert title_from_recap("You were\tfixing\n\nthe   FK.") == "Fixing the FK"
    # a long sentence is cut where a clause ends rather than mid-thought
    clauses = (
        "You've been tuning the churn model; accuracy is at 0.91 and the next step is a "
        "learning-rate schedule with warm-up and a larger batch."
    )
    assert title_from_recap(clauses) == "Tuning the churn model"
    roomy = title_from_recap(clauses, limit=200)
    assert roomy == "Tuning" + first_sentence(clauses)[len("You've been tuning") :]
    assert roomy.endswith("with warm-up and a larger batch")


def test_prefix_resolution(home: Path) -> None:
    writers = [_session(str(i)) for i in range(3)]
    store = SessionStore()
    for w in writers:
        w.close()
        assert store.resolve(w.id) == w.id
        assert store.resolve(w.id[:30].upper()) == w.id
    with pytest.raises(StoreError, match=r"ambiguous: 3 sessions match") as info:
        store.resolve(writers[0].id[:4])
    assert "\n" not in str(info.value)
    with pytest.raises(StoreError, match="no session"):
        store.resolve("ffffffff")


@pytest.mark.parametrize(
    "bad", ["../etc/passwd", "/etc/passwd", "..", "abc/../def", "abc.json", "", "a\x00b", "zz"]
)
def test_path_traversal_rejected(home: Path, bad: str) -> None:
    _session().close()
    (home.parent / "outside.json").write_text(json.dumps({"id": "x"}))
    with pytest.raises(StoreError, match="not a session id"):
        load(bad)
    with pytest.raises(StoreError):
        SessionStore().list(notebook_path="a\x00b")


def test_empty_session_not_written(home: Path) -> None:
    t = Transcript()
    writer = SessionWriter(t, delay=0.01)
    t.code("1 + 1")
    t.meta("opened")
    time.sleep(0.1)
    assert not writer.flush()
    writer.close()
    assert not home.exists() or list(home.iterdir()) == []
    assert writer.writes == 0


def test_permissions(home: Path) -> None:
    old = os.umask(0)
    try:
        writer = _session()
        writer.close()
    finally:
        os.umask(old)
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    files = list(home.iterdir())
    assert len(files) == 2
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_corrupt_truncated_and_foreign_files_skipped(home: Path) -> None:
    good, torn, broken = _session("good"), _session("torn"), _session("broken")
    for w in (good, torn, broken):
        w.close()
    (home / f"{broken.id}.json").write_text("{not json")
    entries = home / f"{torn.id}.jsonl"
    data = entries.read_bytes()
    entries.write_bytes(data[: len(data) - 10])  # cut mid-line
    (home / "notes.txt").write_text("hello")
    (home / "0190aaaa.json").write_text("{}")
    (home / "0190aaaa-0000-7000-8000-000000000000.json").write_text("[1, 2]")
    (home / "subdir").mkdir()
    assert {s.id for s in list_sessions()} == {good.id, torn.id}
    record, t = load(torn.id)
    assert len(t) == torn.record.entries - 1 and record.entries == len(t)
    # a resumed session starts its next line cleanly after the torn one
    writer = SessionWriter(t, record=record)
    t.user("after the tear")
    writer.close()
    assert load(torn.id)[1].to_list() == t.to_list()
    with pytest.raises(StoreError, match="cannot be read"):
        load(broken.id)
    log = Path(os.environ["JUPYTER_RECAP_LOG"]).read_text()
    assert "unreadable" in log


def test_write_failure_keeps_entries(home: Path) -> None:
    home.parent.mkdir(parents=True)
    home.write_text("a file where the directory should be")
    t = Transcript()
    writer = SessionWriter(t, delay=10)
    t.user("hello")
    assert writer.flush() is False  # logged, not raised
    home.unlink()
    t.assistant("hi")
    writer.close()
    assert load(writer.id)[1].to_list() == t.to_list()
    assert "could not write" in Path(os.environ["JUPYTER_RECAP_LOG"]).read_text()


def test_debounce_burst_is_one_write(home: Path) -> None:
    t = Transcript()
    writer = SessionWriter(t, delay=0.15)
    calls: list[int] = []
    writer.on_write = calls.append
    t.user("go")
    for i in range(50):
        t.code(f"x = {i}")
    assert writer.writes == 0
    time.sleep(0.6)
    assert writer.writes == 1 and calls == [1]
    assert len(load(writer.id)[1]) == 51
    writer.close()
    assert writer.writes == 1  # nothing new to write


def test_uuid7_sorts_by_creation() -> None:
    ids = [sessionfiles.uuid7() for _ in range(5000)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(sessionfiles.is_session_id(i) for i in ids)
    ms = int(ids[0].replace("-", "")[:12], 16)
    assert abs(ms / 1000 - time.time()) < 5
    time.sleep(0.002)
    assert sessionfiles.uuid7() > ids[-1]


_WRITER = textwrap.dedent(
    """
    import sys
    from jupyter_recap.stores.sessions import SessionWriter
    from jupyter_recap.record.transcript import Transcript
    t = Transcript()
    w = SessionWriter(t, delay=60)
    t.user("prompt " + sys.argv[1])
    w.flush()
    print(w.id, flush=True)
    n = int(sys.argv[2])
    i = 0
    while n < 0 or i < n:
        t.code(sys.argv[1] + ":" + str(i) + " " + "y" * (i % 3000))
        w.flush()
        i += 1
    w.close()
    """
)


def _spawn(tag: str, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _WRITER, tag, str(count)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=os.environ.copy(),
    )


def _check_sequence(tag: str, t: Transcript) -> int:
    codes = [e.text.split(" ")[0] for e in t if e.kind == "code"]
    assert codes == [f"{tag}:{i}" for i in range(len(codes))]
    return len(codes)


def test_sigkill_mid_write_leaves_readable_record(home: Path) -> None:
    proc = _spawn("k", -1)
    assert proc.stdout is not None
    session_id = proc.stdout.readline().strip()
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    record, t = load(session_id)
    assert t[0].text == "prompt k" and record.turns == 1
    written = _check_sequence("k", t)
    assert written > 10
    assert record.entries == written + 1
    assert [s.id for s in list_sessions()] == [session_id]


def test_two_processes_write_concurrently(home: Path) -> None:
    procs = [_spawn(tag, 300) for tag in ("a", "b")]
    ids = []
    for proc in procs:
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0
        ids.append(out.strip())
    for tag, session_id in zip(("a", "b"), ids, strict=True):
        record, t = load(session_id)
        assert _check_sequence(tag, t) == 300 and record.entries == 301
    assert {s.id for s in list_sessions()} == set(ids)
    assert not [p for p in home.iterdir() if p.name.endswith(".tmp")]


def test_temporary_files_of_killed_writes_are_swept(home: Path) -> None:
    """A kill between a header's temp write and its rename leaves a hidden file; the next
    session clears those that are old, never one being written right now."""
    home.mkdir(parents=True, exist_ok=True)
    stale = home / ".0190a1b2-0000-7000-8000-000000000001.json.4242.1.tmp"
    fresh = home / ".0190a1b2-0000-7000-8000-000000000002.json.4343.1.tmp"
    for path in (stale, fresh):
        path.write_bytes(b"{")
    an_hour_ago = time.time() - 3600
    os.utime(stale, (an_hour_ago, an_hour_ago))
    _session().close()
    assert not stale.exists() and fresh.exists()
    assert len(list_sessions()) == 1
