"""Files nobody vouched for: a FIFO, a link to ``/dev/zero``, a growing or deeply nested file.

An agent working in the person's folder can replace a notebook or a chat with any of them. What
used to happen: ``jupyter recap X.chat`` and ``jupyter recap X.ipynb`` hung on a FIFO, read
``/dev/zero`` until memory ran out, and answered "internal error: RecursionError" on a file
nested 100,000 deep. Every reader now goes through :mod:`jupyter_recap.untrusted`: regular
files only (checked on the open descriptor), opened non-blocking, at most the cap plus one byte
read, JSON nesting bounded; a refusal is one line saying what the file is.
"""

from __future__ import annotations

import fcntl
import os
import resource
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cliutil import offline_env

from jupyter_recap import untrusted
from jupyter_recap.errors import NotebookError, RefusedFile
from jupyter_recap.stores import privatefs

pytestmark = pytest.mark.timeout(120)

DEEP = 100_000
"""Levels of nesting of the deep documents (the parser's recursion stops at about 1,000)."""
CLI_SECONDS = 10.0


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    """A FIFO; at teardown any reader still blocked on it is released (a writer comes and
    goes), so a test that fails on old code does not leave a thread stuck."""
    path = tmp_path / "fifo"
    os.mkfifo(path)
    yield path
    release(path)


def release(path: Path) -> None:
    """Open ``path`` (a FIFO) for writing and close it: a blocked reader reads end of file."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # no reader waits on it (ENXIO), or it is gone
        return
    os.close(fd)


def deep_document(kind: str) -> bytes:
    if kind == "list":
        return b"[" * DEEP + b"]" * DEEP
    return b'{"cells": ' + b'{"a": ' * DEEP + b"1" + b"}" * DEEP + b"}"


# -- the reader ------------------------------------------------------------------------------------


def test_a_fifo_with_a_writer_is_refused_before_any_read(fifo: Path) -> None:
    """A FIFO a writer keeps full: refused on its descriptor, not one byte taken from it."""
    keeper = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # lets the writer in, reads nothing
    written = [0]
    fed = threading.Event()

    def writer() -> None:
        fd = os.open(fifo, os.O_WRONLY)
        try:
            while True:  # until the pipe is full; then blocked until every reader is gone
                written[0] += os.write(fd, b"x" * 4096)
                fed.set()
        except OSError:  # EPIPE: the keeper closed
            pass
        finally:
            os.close(fd)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        assert fed.wait(5)
        time.sleep(0.2)  # the pipe fills, the writer blocks
        started = time.monotonic()
        with pytest.raises(RefusedFile) as caught:
            untrusted.load_json(fifo, cap=1 << 20, shown="work.ipynb")
        assert time.monotonic() - started < 1
        assert str(caught.value) == "work.ipynb: not a regular file (a FIFO)"
        assert caught.value.kind == "not regular"
        waiting = struct.unpack("i", fcntl.ioctl(keeper, termios.FIONREAD, b"\0" * 4))[0]
        assert waiting == written[0] > 0  # everything written is still in the pipe
    finally:
        os.close(keeper)
        thread.join(5)
    assert not thread.is_alive()


def test_a_fifo_without_a_writer_does_not_block(fifo: Path) -> None:
    started = time.monotonic()
    with pytest.raises(RefusedFile, match=r"not a regular file \(a FIFO\)$"):
        untrusted.read_file(fifo, cap=100)
    assert time.monotonic() - started < 1


def test_a_link_to_dev_zero_is_refused_unread(tmp_path: Path) -> None:
    link = tmp_path / "zero.ipynb"
    link.symlink_to("/dev/zero")
    with pytest.raises(RefusedFile, match=r"zero.ipynb: not a regular file \(a device\)$"):
        untrusted.read_file(link, cap=100)


def test_a_link_is_not_followed_where_the_store_says_so(tmp_path: Path) -> None:
    (tmp_path / "real.json").write_text("{}")
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    assert untrusted.load_json(tmp_path / "link.json", cap=10)[1] == {}
    with pytest.raises(OSError, match="link"):
        untrusted.load_json(tmp_path / "link.json", cap=10, follow=False)


def test_a_stream_is_read_no_further_than_its_cap() -> None:
    """A stream that never ends (a pipe fed by a writer, as a growing file is): at most
    ``cap + 1`` bytes are taken from it before the refusal."""
    read_end, write_end = os.pipe()
    taken = 0
    cap = 3 * untrusted.CHUNK_BYTES + 17

    def writer() -> None:
        chunk = b"y" * 65536
        try:
            while True:
                os.write(write_end, chunk)
        except OSError:  # the reader closed its end
            pass

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        with pytest.raises(RefusedFile, match=r"over 3145745 bytes$"):
            untrusted.read_open(read_end, cap=cap, shown="spool")
        # What is left in the pipe was never read: the writer blocks on a full pipe buffer.
        os.set_blocking(read_end, False)
        while True:
            try:
                more = os.read(read_end, 1 << 20)
            except BlockingIOError:
                break
            taken += len(more)
            if taken > 1 << 20:
                break
        assert taken > 0  # the writer was still going: the reader stopped, not the stream
    finally:
        os.close(read_end)
        thread.join(5)
        os.close(write_end)


def test_a_file_larger_than_its_cap_is_refused_by_its_size(tmp_path: Path) -> None:
    path = tmp_path / "big.ipynb"
    path.write_bytes(b" " * (2 << 20))
    with pytest.raises(RefusedFile) as caught:
        untrusted.read_file(path, cap=1 << 20, shown="big.ipynb")
    assert str(caught.value) == "big.ipynb: over 1 MiB"


@pytest.mark.parametrize("kind", ["list", "object"])
def test_a_document_nested_100k_deep_is_refused_like_a_malformed_one(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "deep.ipynb"
    path.write_bytes(deep_document(kind))
    with pytest.raises(RefusedFile) as caught:
        untrusted.load_json(path, cap=1 << 20, shown="deep.ipynb")
    assert str(caught.value) == "deep.ipynb: nested too deep"


@pytest.mark.parametrize(
    ("data", "what"),
    [
        (b"{not json", "not JSON (Expecting property name"),
        (b"\xff\xfe\x00", "not UTF-8 text"),
        (b"", "not JSON (Expecting value"),
    ],
)
def test_what_is_not_json_says_so_in_one_line(data: bytes, what: str) -> None:
    with pytest.raises(RefusedFile) as caught:
        untrusted.parse_json(data, shown="x")
    assert caught.value.what.startswith(what)
    assert "\n" not in str(caught.value)


def test_the_private_store_reader_refuses_a_fifo_through_the_same_reader(fifo: Path) -> None:
    """``privatefs.read_bytes`` (session records, memory) shares the reader: a FIFO planted in
    the store is ignored at once, not waited on."""
    started = time.monotonic()
    with pytest.raises(privatefs.IgnoredFile):
        privatefs.read_bytes(fifo)
    assert time.monotonic() - started < 1


def test_a_refusal_is_a_notebook_error() -> None:
    """The command line and the readers that caught NotebookError catch a refusal too."""
    assert issubclass(RefusedFile, NotebookError)


# -- every reader ---------------------------------------------------------------------------------


def _changes_reader(path: Path) -> object:
    from outsidekit import FakeSink

    from jupyter_recap.changes.touches import Touches
    from jupyter_recap.server.outside.changes import NotebookChanges

    return NotebookChanges(FakeSink(path.parent), Touches())._read_file(path.name)


def _labels_reader(path: Path) -> object:
    from jupyter_recap.server.outside.chat_labels import CellLabels

    labels = CellLabels(str(path.parent))
    labels.refresh([path.name])
    return labels(path.name, "c1")


def _chat_files_reader(path: Path) -> object:
    from jupyter_recap.server.outside.chat_log import read_chat_files

    return read_chat_files(str(path.parent), [path.name], {})[path.name][1]


def _span_reader(path: Path) -> object:
    from jupyter_recap.outside.mcp import SpanTail

    return SpanTail(str(path)).read_lines()


def _spool_reader(path: Path) -> object:
    from jupyter_recap.stores.hookspool import _parse, _read_lines

    lines = _read_lines(path, 0, None)[0]
    return [event for event in map(_parse, lines) if event is not None]


def _notebook_reader(path: Path) -> object:
    from jupyter_recap.record.notebookfile import read_notebook

    return read_notebook(path)


def _chat_reader(path: Path) -> object:
    from jupyter_recap.cli.chat import read_chat_file

    return read_chat_file(str(path))


#: Every reader of a file an agent or another process could replace, and what it answers
#: when it will not read one: an empty answer, or one of the project's one-line errors.
READERS: dict[str, Callable[[Path], object]] = {
    "notebook changes (server)": _changes_reader,
    "a chat's cell labels (server)": _labels_reader,
    "chat files, the fallback (server)": _chat_files_reader,
    "span file (server)": _span_reader,
    "hook spool": _spool_reader,
    "private store": lambda path: privatefs.read_bytes(path),
    "jupyter recap NOTEBOOK": _notebook_reader,
    "jupyter recap CHAT": _chat_reader,
}
EMPTY: tuple[object, ...] = (None, [], {})


#: The private store's reader hands bytes to its callers, whose parsing of deep records
#: test_store_corrupt.py covers: only the FIFO is its to refuse.
CASES_OF_READERS = [
    (reader, case)
    for reader in sorted(READERS)
    for case in ("fifo", "deep")
    if (reader, case) != ("private store", "deep")
]


@pytest.mark.parametrize(("reader", "case"), CASES_OF_READERS)
def test_every_reader_refuses_a_fifo_and_a_deep_file_at_once(
    tmp_path: Path, reader: str, case: str
) -> None:
    """Each reader, on a FIFO with no writer (a blocking open waited for one for ever) and on a
    file nested 100k deep (a RecursionError escaped): an answer within 2 s, empty or a
    one-line refusal, never another exception."""
    path = tmp_path / "trap.ipynb"
    if case == "fifo":
        os.mkfifo(path)
    else:
        path.write_bytes(deep_document("object"))
    outcome: list[object] = []

    def read() -> None:
        try:
            outcome.append(READERS[reader](path))
        except (NotebookError, privatefs.IgnoredFile) as refusal:
            outcome.append(refusal)
        except BaseException as error:  # noqa: BLE001 - reported below
            outcome.append(("unexpected", error))

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(2)
    in_time = not thread.is_alive()
    if case == "fifo":
        release(path)  # a reader that blocked (a regression) ends, and the test with it
        thread.join(5)
    assert in_time, f"{reader} did not answer within 2 s"
    assert len(outcome) == 1
    (answer,) = outcome
    if isinstance(answer, Exception):
        assert "\n" not in str(answer)
    else:
        assert answer in EMPTY, answer


# -- the command line: one line, at once -----------------------------------------------------------


def _limit_memory() -> None:
    # A reader that takes /dev/zero whole (as the old one did) fails inside the child instead
    # of taking the machine's memory.
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def run_cli(path: Path) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "jupyter_recap.cli", path.name],
            capture_output=True,
            text=True,
            encoding="utf-8",
            cwd=path.parent,
            env=offline_env(),
            timeout=CLI_SECONDS,
            preexec_fn=_limit_memory,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"jupyter recap {path.name} did not answer within {CLI_SECONDS:g} s")
    assert time.monotonic() - started < CLI_SECONDS
    return result


def make_fifo(path: Path) -> None:
    os.mkfifo(path)


def make_zero_link(path: Path) -> None:
    path.symlink_to("/dev/zero")


def make_deep(path: Path) -> None:
    path.write_bytes(deep_document("object"))


CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "fifo": (make_fifo, "not a regular file (a FIFO)"),
    "zero": (make_zero_link, "not a regular file (a device)"),
    "deep": (make_deep, "nested too deep"),
}


@pytest.mark.parametrize("suffix", [".ipynb", ".chat"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_cli_answers_one_line_at_once(tmp_path: Path, case: str, suffix: str) -> None:
    """A FIFO, a link to ``/dev/zero`` and a 100k-deep file, as a notebook and as a chat: one
    line on stderr, within 10 s, exit 2 (a file that is not a notebook is bad usage, as a
    corrupt one is)."""
    make, what = CASES[case]
    path = tmp_path / f"work{suffix}"
    make(path)
    try:
        result = run_cli(path)
    finally:
        if case == "fifo":
            release(path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    kind = "notebook" if suffix == ".ipynb" else "chat file"
    article = "a readable" if suffix == ".ipynb" else "a"
    assert lines[0] == f"jupyter recap: {path.name} is not {article} {kind}: {what}"
