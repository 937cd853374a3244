"""Store faults: a full disk, a read-only store, a file replaced by a directory.

What used to happen on a full disk: a partly written append was retried in full (5 entries in
memory became 7 on disk; 40 turns past a full 64 KiB tmpfs left 26 duplicates and a torn line
in the middle of the file), ``%recap save`` said "saved" when the write had failed, and
``jr.remember`` raised a bare ``OSError``.

The disk is a real 64 KiB tmpfs where the test may mount one (root); elsewhere the same
scenarios run against an injected ``ENOSPC`` that lets a write through part-way, as a full
disk does.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import jupyter_recap.stores.sessionfiles as sessionfiles
from jupyter_recap.record.transcript import Transcript
from jupyter_recap.stores.memory import MemoryStore
from jupyter_recap.stores.sessions import SessionStore, SessionWriter

pytestmark = pytest.mark.timeout(120)

TEXT = "the loader still parses 02/03/04 as the wrong century; " * 5


class SmallDisk:
    """A 64 KiB disk to fill and free: a real tmpfs, or an injected ENOSPC."""

    def __init__(self, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.path = path
        path.mkdir()
        self.real = _mount(path, "size=64k,mode=0700")
        self._full = False
        if not self.real:
            original = sessionfiles._write_all

            def write_all(fd: int, data: bytes) -> None:
                if self._full:
                    os.write(fd, data[: len(data) // 2])  # a full disk takes what fits
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                original(fd, data)

            monkeypatch.setattr(sessionfiles, "_write_all", write_all)

    def fill(self) -> None:
        if self.real:
            fd = os.open(self.path / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                with contextlib.suppress(OSError):
                    while os.write(fd, b"x" * 256):
                        pass
            finally:
                os.close(fd)
        self._full = True

    def free(self) -> None:
        (self.path / "filler").unlink(missing_ok=True)
        self._full = False

    def close(self) -> None:
        if self.real:
            subprocess.run(["umount", "-l", str(self.path)], check=False)


def _mount(path: Path, options: str) -> bool:
    if os.geteuid() != 0:
        return False
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True
    )
    return done.returncode == 0


@pytest.fixture
def disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SmallDisk]:
    small = SmallDisk(tmp_path / "disk", monkeypatch)
    yield small
    small.close()


def _turn(t: Transcript, n: int) -> None:
    t.user(f"step {n}: {TEXT}")
    t.assistant(f"done with step {n}. {TEXT}")
    t.outcome("ok")


def _stored_lines(store: Path, session_id: str) -> list[dict[str, Any]]:
    raw = (store / f"{session_id}.jsonl").read_bytes()
    assert raw == b"" or raw.endswith(b"\n"), "a torn line was left at the end"
    return [json.loads(line) for line in raw.splitlines()]  # raises on a torn line inside


def _shape(items: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(x["kind"], x.get("text")) for x in items]


def test_a_full_disk_loses_nothing_and_duplicates_nothing(disk: SmallDisk) -> None:
    store = disk.path / "recap"
    t = Transcript()
    writer = SessionWriter(t, store=SessionStore(store), delay=3600)
    for n in range(2):
        _turn(t, n)
    assert writer.flush()
    disk.fill()
    for n in range(2, 42):  # 40 turns past a full disk, each flushed (and failing)
        _turn(t, n)
        assert writer.flush() is False
        assert writer.error is not None and "the disk is full" in writer.error
        lines = _stored_lines(store, writer.id)  # whole lines only: a cut write is cut back
        # In order and each once: the file is always a prefix of the transcript.
        assert _shape(lines) == _shape(t.to_list())[: len(lines)]
        header = json.loads((store / f"{writer.id}.json").read_text())
        assert header["entries"] <= len(lines)  # never claims what the file lacks
    assert writer.status().pending == len(t) - len(lines)
    disk.free()
    assert writer.flush()
    lines = _stored_lines(store, writer.id)
    assert _shape(lines) == _shape(t.to_list())
    loaded = SessionStore(store).load(writer.id)[1]
    assert [e.to_dict() for e in loaded] == [e.to_dict() for e in t]
    header = json.loads((store / f"{writer.id}.json").read_text())
    assert header["entries"] == len(lines) == len(t) and header["turns"] == 42
    writer.close()


def test_the_pending_tail_is_written_by_itself_when_space_returns(disk: SmallDisk) -> None:
    store = disk.path / "recap"
    t = Transcript()
    writer = SessionWriter(t, store=SessionStore(store), delay=0.05)
    _turn(t, 0)
    deadline = time.monotonic() + 10
    while writer.writes == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    disk.fill()
    _turn(t, 1)
    while writer.error is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert writer.error is not None
    disk.free()  # nobody calls flush: the writer's own retry finds the space
    # the writer's own thread clears the error; mypy keeps the assert's narrowing
    while writer.error is not None and time.monotonic() < deadline + 5:  # type: ignore[redundant-expr]
        time.sleep(0.05)
    assert writer.status().pending == 0 and writer.error is None
    assert len(_stored_lines(store, writer.id)) == len(t) == 6
    writer.close()


def test_save_and_remember_say_what_happened(
    shell: Any, disk: SmallDisk, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    store = disk.path / "recap"
    monkeypatch.setenv("JUPYTER_RECAP_HOME", str(store))
    monkeypatch.chdir(disk.path)
    shell.run_line_magic("load_ext", "jupyter_recap")
    import jupyter_recap as jr

    with jr.current().turn("fix the loader"):
        jr.current().assistant("Next: parse two-digit years as 19xx.")
    jr.remember("fact", "the loader reads CSV with a ; separator")
    shell.run_line_magic("recap", "save")
    assert "saved" in capsys.readouterr().out
    disk.fill()
    with jr.current().turn("and the tests"):
        jr.current().assistant(TEXT * 20)  # more than the slack of a page: the append fails
    shell.run_line_magic("recap", "save")
    out = capsys.readouterr().out
    assert "NOT saved" in out and "the disk is full" in out and "wait in memory" in out
    memory = MemoryStore(disk.path, root=store / "memory")
    before = memory.path.read_bytes()
    with pytest.raises(jr.StoreWriteError, match="the disk is full") as failed:
        jr.remember("gotcha", "dates before 1970 need the old parser")
    assert isinstance(failed.value, OSError)
    assert failed.value.errno == errno.ENOSPC
    assert memory.path.read_bytes() == before
    disk.free()
    shell.run_line_magic("recap", "save")
    assert "saved" in capsys.readouterr().out
    assert jr.remember("gotcha", "dates before 1970 need the old parser") is not None


def test_a_read_only_store_keeps_the_notebook_working(
    shell: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    store = tmp_path / "ro"
    store.mkdir()
    mounted = _mount(store, "size=1m,mode=0700")
    if not mounted and os.geteuid() == 0:
        pytest.fail(
            "root writes through file modes and could not mount a read-only tmpfs here "
            "(mount needs CAP_SYS_ADMIN): run the suite as another user, or where root can mount",
            pytrace=False,
        )
    notebook = str(tmp_path / "nb.ipynb")
    t = Transcript()
    writer = SessionWriter(t, store=SessionStore(store), notebook=notebook)
    _turn(t, 0)
    writer.close()
    before = sorted(p.name for p in store.iterdir())
    if mounted:
        subprocess.run(["mount", "-o", "remount,ro", str(store)], check=True)
    else:
        os.chmod(store, 0o500)  # only stops a non-root writer
    try:
        monkeypatch.setenv("JUPYTER_RECAP_HOME", str(store))
        monkeypatch.setenv("JPY_SESSION_NAME", notebook)
        shell.run_line_magic("load_ext", "jupyter_recap")
        import jupyter_recap as jr

        assert [e.text for e in jr.current()][:1] == [f"step 0: {TEXT}"]  # resumed from it
        with jr.current().turn("now the tests"):
            jr.current().assistant("Next: add a test for 1999.")
        shell.run_line_magic("recap", "save")
        out = capsys.readouterr().out
        assert "NOT saved" in out and out.endswith("\n") and out.count("\n") == 1
        shell.run_line_magic("recap", "--model offline")
        assert "Next: Add a test for 1999" in capsys.readouterr().out
        with pytest.raises(jr.StoreError):
            jr.remember("fact", "the tests run with pytest")
        assert sorted(p.name for p in store.iterdir()) == before
    finally:
        shell.run_line_magic("unload_ext", "jupyter_recap")
        if mounted:
            subprocess.run(["umount", "-l", str(store)], check=False)
        else:
            os.chmod(store, 0o700)


def test_a_file_replaced_by_a_directory_loses_nothing(tmp_path: Path) -> None:
    store = tmp_path / "recap"
    t = Transcript()
    writer = SessionWriter(t, store=SessionStore(store), delay=3600)
    _turn(t, 0)
    assert writer.flush()
    header = store / f"{writer.id}.json"
    header.unlink()
    header.mkdir()  # something put a directory where the header was
    _turn(t, 1)
    assert writer.flush() is False
    assert writer.error is not None and "a directory is in its place" in writer.error
    entries = store / f"{writer.id}.jsonl"
    entries.rename(tmp_path / "moved-away.jsonl")
    entries.mkdir()  # and one where the transcript was
    _turn(t, 2)
    assert writer.flush() is False
    header.rmdir()
    entries.rmdir()
    assert writer.flush()  # the whole story, written again into a new file
    loaded = SessionStore(store).load(writer.id)[1]
    assert [e.to_dict() for e in loaded] == [e.to_dict() for e in t]
    writer.close()
