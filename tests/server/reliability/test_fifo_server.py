"""A real ``jupyter lab`` whose notebooks an agent replaced with FIFOs: its memory, its stop.

What used to happen: the server read a FIFO notebook to its end whatever its size (the 64 MiB
cap was checked against the size a FIFO reports, 0): 1 GB fed into one took the server from
98 to 1,038 MB. And a read blocked on a FIFO with no writer kept the process alive after
SIGTERM (the drafts pool's threads are joined at exit) until the FIFOs got a writer. Now a FIFO
is refused on its descriptor before any read, and the pool's threads end with the server.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from labserver import LabServer, running_lab

from jupyter_recap.server.outside.changes import POLL_SECONDS

pytestmark = pytest.mark.timeout(240)

GB = 1 << 30
MEMORY_GROWTH_LIMIT = 150 << 20
"""What the server's resident memory may grow by while a FIFO is fed (it read 1 GB before)."""
STOP_WITHIN = 10.0


def notebook() -> str:
    cell = {
        "cell_type": "code",
        "id": "c1",
        "source": "rows = [1, 2, 3]",
        "metadata": {},
        "outputs": [],
        "execution_count": 1,
    }
    meta = {"kernelspec": {"name": "python3", "display_name": "Python 3"}}
    return json.dumps({"cells": [cell], "metadata": meta, "nbformat": 4, "nbformat_minor": 5})


def server_pid(lab: LabServer) -> int:
    """The server's process id, from the file it writes in its runtime folder."""
    (info,) = (lab.root.parent / "runtime").glob("jpserver-*.json")
    return int(json.loads(info.read_text())["pid"])


def rss(pid: int) -> int:
    """Resident memory of ``pid`` in bytes (0 once it ended)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def ended(pid: int) -> bool:
    """Whether ``pid`` has exited (gone, or a zombie its parent has not reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] in ("Z", "X")


def release(path: Path) -> None:
    """A writer that comes and goes: a reader blocked on the FIFO (the old code's) reads EOF."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return
    os.close(fd)


def left_notebooks(lab: LabServer, names: list[str]) -> None:
    """Notebooks with a kernel, looked at and left by the person's page (with its save)."""
    for name in names:
        (lab.root / name).write_text(notebook())
    session = {"path": names[0], "type": "notebook", "name": "", "kernel": {"name": "python3"}}
    kernel_id = lab.api("POST", "api/sessions", session)["kernel"]["id"]
    for n, name in enumerate(names):
        look = {"kernel_id": kernel_id, "path": name, "client_id": f"tab-{n}"}
        lab.api("POST", "jupyter-recap/api/focus", {**look, "focused": True})
        lab.api("POST", "jupyter-recap/api/focus", {**look, "focused": False})
        lab.api("POST", "jupyter-recap/api/seen", {"path": name, "client_id": f"tab-{n}"})


def to_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[LabServer]:
    with running_lab(tmp_path, {"JUPYTER_RECAP_MODEL": "offline"}) as server:
        yield server


@pytest.fixture
def fifos(lab: LabServer) -> Iterator[list[Path]]:
    """The FIFOs a test makes in the lab; released before the lab stops, so a read the old
    code left blocked ends and the lab can stop."""
    made: list[Path] = []
    yield made
    for path in made:
        release(path)


def test_a_fifo_fed_a_gigabyte_leaves_the_server_memory_flat(
    lab: LabServer, fifos: list[Path]
) -> None:
    left_notebooks(lab, ["fed.ipynb"])
    pid = server_pid(lab)
    before = rss(pid)
    path = lab.root / "fed.ipynb"
    to_fifo(path)
    fifos.append(path)
    fed = [0]
    stop = threading.Event()

    def writer() -> None:
        chunk = b" " * (1 << 20)
        while fed[0] < GB and not stop.is_set():
            try:  # fails (ENXIO) until a reader has the FIFO open
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                time.sleep(0.002)
                continue
            os.set_blocking(fd, True)
            try:
                while fed[0] < GB and not stop.is_set():
                    fed[0] += os.write(fd, chunk)
            except OSError:  # the reader went away (EPIPE)
                pass
            finally:
                os.close(fd)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    peak = before
    deadline = time.monotonic() + POLL_SECONDS * 4
    try:
        while time.monotonic() < deadline and fed[0] < GB:
            peak = max(peak, rss(pid))
            time.sleep(0.02)
        for _ in range(50):  # what the last bytes cost, if they were read
            peak = max(peak, rss(pid))
            time.sleep(0.02)
    finally:
        stop.set()
        thread.join(10)
    assert peak - before < MEMORY_GROWTH_LIMIT, (
        f"the server grew by {(peak - before) >> 20} MB while {fed[0] >> 20} MB were fed"
    )
    assert lab.api("GET", "api/status") is not None  # and it still answers


def test_sigterm_ends_the_server_with_fifo_notebooks_open(
    lab: LabServer, fifos: list[Path]
) -> None:
    names = [f"trap-{n}.ipynb" for n in range(4)]
    left_notebooks(lab, names)
    for name in names:
        to_fifo(lab.root / name)
        fifos.append(lab.root / name)
    time.sleep(POLL_SECONDS * 2 + 0.5)  # every FIFO was polled and read
    pid = server_pid(lab)
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WITHIN
    while not ended(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ended(pid), f"the server still runs {STOP_WITHIN:g} s after SIGTERM"
