"""``%load_ext`` / ``%unload_ext`` a hundred times in a real kernel: nothing is left behind.

Unloading must remove every hook and stop every thread (a DESIGN contract); this also holds it
to closing every widget comm it opened, every file it opened, and to giving its memory back.
Counted inside the kernel, before and after, once a few warm-up cycles have done the one-time
work (imports, caches, the debug log's file):

- live threads (by name), open comms (the kernel's comm manager), live widgets and open file
  descriptors: exactly equal;
- memory: ``tracemalloc``'s net growth of Python allocations, which is deterministic where RSS
  is not (the allocator keeps freed arenas; RSS is only reported, by the benchmark). The kernel
  itself keeps something of every cell (IPython's input history, ``_iN`` names, message
  digests), so the same cells are first run as a control without the extension (``pass`` in
  place of each load and unload) and the extension's cycles may grow by at most
  :data:`TRACED_BOUND` more than the control did.

The bound: the ten agent turns in between are meant to stay (they are the session's
transcript), about a kilobyte each. A closed banner that is never freed costs about 30 KB a
cycle (3 MB over the run, when anywidget held every banner); 128 KB over 100 cycles leaves room
for the transcript and interpreter noise, and none for any per-cycle leak of an object graph.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from kernelutil import execute, running_kernel, stream_text

pytestmark = pytest.mark.timeout(300)

CYCLES = 100
WARM_UP = 5
AGENT_EVERY = 10
#: Traced growth allowed beyond the control's over the 100 cycles (see the module docstring).
TRACED_BOUND = 128 * 1024

PROBE = '''
import gc, json, os, threading, tracemalloc
import comm, psutil
import agentmagic
from ipywidgets.widgets import widget as _widget_module

agent = agentmagic.install(get_ipython())


def _fd_target(fd):
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # the directory's own descriptor, closed by now
        return "(gone)"


def recap_probe():
    """What the kernel holds now (after a full collection)."""
    gc.collect()
    return {
        "threads": sorted(t.name for t in threading.enumerate()),
        "comms": len(comm.get_comm_manager().comms),
        "widgets": len(_widget_module._instances),
        # "(gone)": closed between listing and reading it (the listing's own descriptor)
        "fds": sorted(t for t in map(_fd_target, os.listdir("/proc/self/fd")) if t != "(gone)"),
        "rss": psutil.Process().memory_info().rss,
        "traced": tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0,
    }
'''

AGENT = "%%agent\nreconcile the ledger export with the bank statement"


def probe(kc: Any) -> dict[str, Any]:
    messages = execute(kc, "print(json.dumps(recap_probe()))")
    return dict(json.loads(stream_text(messages)))


def settled(kc: Any, reference: dict[str, Any]) -> dict[str, Any]:
    """The probe, taken again for up to 3 s while it differs from ``reference``.

    The kernel's own threads open and close things at their own pace (a socket of the IOPub
    machinery, for one); a leak stays, a transient does not.
    """
    for _ in range(6):
        now = probe(kc)
        if all(now[key] == reference[key] for key in ("threads", "comms", "widgets", "fds")):
            break
        time.sleep(0.5)
    return now


def run(kc: Any, code: str) -> None:
    messages = execute(kc, code)
    errors = [m["content"] for m in messages if m["msg_type"] == "error"]
    assert not errors, (code, errors)
    assert "Traceback" not in stream_text(messages, "stderr"), code


def cycle(kc: Any, n: int, *, extension: bool = True) -> None:
    """One load/unload cycle (``pass`` for each with ``extension=False``, as a control)."""
    run(kc, "%load_ext jupyter_recap" if extension else "pass")
    if n % AGENT_EVERY == 0:
        run(kc, AGENT)  # a turn: the recorder, the session writer and the engine all work
    run(kc, "%unload_ext jupyter_recap" if extension else "pass")


def measure(kc: Any, cycles: int, *, extension: bool = True) -> tuple[dict[str, Any], ...]:
    """The probe before and after ``cycles`` cycles."""
    before = probe(kc)
    for n in range(cycles):
        cycle(kc, n, extension=extension)
    return before, settled(kc, before)


@contextmanager
def cycling_kernel(tmp: Path) -> Iterator[Any]:
    """A real kernel whose IPython keeps its history in memory (no sqlite files coming and
    going among the descriptors), with the probe installed and the one-time work done."""
    profile = tmp / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_kernel_config.py").write_text('c.HistoryManager.hist_file = ":memory:"\n')
    env = {"JUPYTER_RECAP_MODEL": "offline", "IPYTHONDIR": str(tmp / "ipython")}
    with running_kernel(env) as kc:
        run(kc, PROBE)
        for n in range(WARM_UP):
            cycle(kc, n)
        run(kc, "tracemalloc.start()")
        yield kc


def test_load_unload_cycles_leak_nothing(tmp_path: Path) -> None:
    with cycling_kernel(tmp_path) as kc:
        control = measure(kc, CYCLES, extension=False)
        before, after = measure(kc, CYCLES)
    assert after["threads"] == before["threads"]
    assert (after["comms"], after["widgets"]) == (before["comms"], before["widgets"])
    assert after["fds"] == before["fds"]
    kept = (after["traced"] - before["traced"]) - (control[1]["traced"] - control[0]["traced"])
    assert kept < TRACED_BOUND, f"{kept:,} bytes more than the control kept over {CYCLES} cycles"
