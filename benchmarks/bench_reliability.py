"""Measure what loading, unloading and a stuck model cost a real kernel; print Markdown tables.

    .venv/bin/python benchmarks/bench_reliability.py            # about a minute
    .venv/bin/python benchmarks/bench_reliability.py --quick    # fewer cycles and cells

1. ``%load_ext jupyter_recap`` / ``%unload_ext jupyter_recap`` cycles in a real kernel (an agent
   cell every tenth cycle): live threads, open comms and widgets, open file descriptors, RSS and
   ``tracemalloc``'s traced memory, before and after; the same cells without the extension as a
   control (IPython keeps something of every cell).
2. Latency of trivial cells in a real kernel while an automatic recap is in flight against a
   model server that accepts the connection and never answers, against the same kernel before
   the extension was loaded. A kernel-side thread reports the person away again whenever no
   draft is in flight (as the server's focus feed would, through the extension's API), so every
   measured cell starts with a draft waiting on the stuck server and cancels it.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import threading
import time
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "kernel" / "reliability")]
os.environ["JUPYTER_RECAP_LOG"] = "0"
for _name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "JUPYTER_RECAP_MODEL", "JUPYTER_RECAP_AUTO"):
    os.environ.pop(_name, None)

from figurelib import figure  # noqa: E402
from kernelutil import execute, running_kernel, stream_text  # noqa: E402
from test_load_cycles import cycling_kernel, measure  # noqa: E402


class HangingServer:
    """Accepts connections on 127.0.0.1 and never answers (reads and discards what comes)."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self._stop = threading.Event()
        self._open: list[socket.socket] = []
        self.accepted = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            self._open.append(conn)  # held open, never answered

    def __enter__(self) -> HangingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        for conn in self._open:
            conn.close()
        self._listener.close()


# -- 1. load/unload cycles -------------------------------------------------------------------


def cycle_figures(cycles: int) -> None:
    with TemporaryDirectory() as tmp, cycling_kernel(Path(tmp)) as kc:
        control = measure(kc, cycles, extension=False)
        loaded = measure(kc, cycles)
    print(f"## {cycles} `%load_ext` / `%unload_ext` cycles in a real kernel\n")
    print("| measure | before | after | control (same cells, no extension): growth |")
    print("|---|---|---|---|")
    before, after = loaded
    for key, label in (("threads", "live threads"), ("fds", "open file descriptors")):
        grown = len(control[1][key]) - len(control[0][key])
        print(f"| {label} | {len(before[key])} | {len(after[key])} | {grown:+d} |")
    for key, label in (("comms", "open comms"), ("widgets", "live widgets")):
        grown = control[1][key] - control[0][key]
        print(f"| {label} | {before[key]} | {after[key]} | {grown:+d} |")
    for key, label in (("rss", "RSS (KiB)"), ("traced", "traced Python memory (KiB)")):
        grown = (control[1][key] - control[0][key]) // 1024
        print(f"| {label} | {before[key] // 1024:,} | {after[key] // 1024:,} | {grown:+,} |")
    kept = (after["traced"] - before["traced"]) - (control[1]["traced"] - control[0]["traced"])
    print(f"\ntraced memory kept beyond the control: {kept / 1024:+.1f} KiB over {cycles} cycles")
    print()
    counts = "; ".join(
        f"{name} {size(before[key])} → {size(after[key])}"
        for key, name in (
            ("threads", "threads"),
            ("fds", "descriptors"),
            ("comms", "comms"),
            ("widgets", "widgets"),
        )
    )
    figure(
        "cycles",
        counts,
        unit="",
        label=f"{cycles} `%load_ext` / `%unload_ext` cycles in a real kernel, before → after",
        target="equal (the same threads and descriptors)",
        met=all(before[key] == after[key] for key in LEAK_KEYS),
    )
    figure(
        "cycles_memory",
        f"{kept / 1024:+.1f} KiB traced; RSS {(after['rss'] - before['rss']) / 2**20:+.1f} MiB",
        unit="",
        label=f"… Python memory kept beyond a control run of the same cells without the "
        f"extension (tracemalloc), and the RSS growth over the {cycles} cycles",
    )


LEAK_KEYS = ("threads", "fds", "comms", "widgets")


def size(value: Any) -> int:
    """A measure's count: the length of a list of threads or descriptors, or a number."""
    return len(value) if isinstance(value, (list, set, tuple, dict)) else int(value)


# -- 2. cell latency with a stuck provider -----------------------------------------------------

PROBE = """
import threading, time
from jupyter_recap.ipython.extension import extension_for

_recap_in_flight = []


def _note_in_flight(info):
    # Registered before the extension: runs before its hook cancels the draft.
    ext = extension_for(get_ipython())
    _recap_in_flight.append(ext is not None and ext.schedule.in_flight is not None)


get_ipython().events.register("pre_run_cell", _note_in_flight)
"""

LOAD = """
%load_ext jupyter_recap
%config Recap.model = "openai:gpt-4o-mini"
%config Recap.away_seconds = 0.005
%config Recap.post_turn_seconds = 0.005
# Every draft must reach the stuck server: past the default budget of 100 automatic calls a
# day, the rest would be written offline and never be in flight.
%config Recap.daily_budget = 100000
"""

AGENT = """%%agent
reconcile the ledger export with the bank statement"""

KEEP_AWAY = """
_ext = extension_for(get_ipython())
_stop_away = threading.Event()


def _keep_away(ext=_ext, stop=_stop_away):
    # What the server's focus feed does from its thread: the person is away (again).
    while not stop.wait(0.002):
        if ext.schedule.in_flight is None and ext.schedule.away_deadline is None:
            ext.report_focus(True)
            ext.report_focus(False)


threading.Thread(target=_keep_away, name="bench-keep-away", daemon=True).start()
_recap_in_flight.clear()
"""

UNLOAD = """
_stop_away.set()
_c = _ext.schedule.counters
_round = {"in_flight": _recap_in_flight[:], "started": _c.drafts_started,
          "cancelled": _c.cancelled}
%unload_ext jupyter_recap
"""

REPORT = """
time.sleep(0.5)  # the keep-away thread's last wait
print(json.dumps({**_round, "threads": threading.active_count()}))
"""


def run(kc: Any, code: str) -> list[dict[str, Any]]:
    messages = execute(kc, code)
    failed = [m["content"] for m in messages if m["msg_type"] == "error"]
    assert not failed, failed
    return messages


def timed_cells(kc: Any, count: int, gap: float) -> list[float]:
    """Seconds from sending each trivial cell to its kernel going idle again."""
    samples = []
    for n in range(count):
        time.sleep(gap)  # time for the next draft to start and reach the stuck server
        started = time.perf_counter()
        execute(kc, f"x = {n}")
        samples.append(time.perf_counter() - started)
    return samples


def percentile(samples: list[float], q: int) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[q - 1]


def latency_figures(cells: int, rounds: int, gap: float) -> None:
    """Blocks of cells without and with the extension, alternating in one kernel (a shared,
    noisy machine drifts; alternating spreads the drift over both)."""
    without: list[float] = []
    loaded: list[float] = []
    flights: list[bool] = []
    started = cancelled = 0
    with HangingServer() as server:
        env = {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "sk-bench-0123456789abcdef"}
        with running_kernel(env) as kc:
            run(kc, "import agentmagic, json\nagentmagic.install(get_ipython())\n" + PROBE)
            base_threads = json.loads(stream_text(run(kc, "print(threading.active_count())")))
            timed_cells(kc, 20, gap)  # warm-up
            for n in range(rounds):
                without += timed_cells(kc, cells // rounds, gap)
                run(kc, LOAD)
                if n == 0:
                    run(kc, AGENT)  # the session's one turn: drafts need a finished turn
                run(kc, KEEP_AWAY)
                timed_cells(kc, 5, gap)  # the first drafts of a load import httpx & co
                run(kc, "_recap_in_flight.clear()")
                loaded += timed_cells(kc, cells // rounds, gap)
                run(kc, UNLOAD)
                counts = json.loads(stream_text(run(kc, REPORT)))
                flights += counts["in_flight"][:-1]  # the last: the UNLOAD cell itself
                started += counts["started"]
                cancelled += counts["cancelled"]
            end_threads = counts["threads"]
    share = 100 * sum(flights) / max(len(flights), 1)
    print("## Trivial cells while a recap waits on a model server that never answers\n")
    print(
        f"{len(loaded)} cells `x = n` each way, {gap * 1000:.0f} ms apart, in {rounds} "
        "alternating blocks; time from sending the cell to the kernel's idle.\n"
    )
    print("| kernel | p50 | p95 | max |")
    print("|---|---|---|---|")
    for label, samples in (("without the extension", without), ("recap in flight", loaded)):
        print(
            f"| {label} | {statistics.median(samples) * 1000:.2f} ms "
            f"| {percentile(samples, 95) * 1000:.2f} ms | {max(samples) * 1000:.2f} ms |"
        )
    p50 = statistics.median(loaded) / statistics.median(without)
    p95 = percentile(loaded, 95) / percentile(without, 95)
    print(f"\nratio with / without: p50 {p50:.2f}×, p95 {p95:.2f}×")
    figure(
        "hanging_model",
        f"{statistics.median(loaded) * 1000:.1f} / {percentile(loaded, 95) * 1000:.1f} against "
        f"{statistics.median(without) * 1000:.1f} / {percentile(without, 95) * 1000:.1f} "
        f"ms (ratio {p50:.2f} / {p95:.2f})",
        unit="",
        label=f"trivial cells while an automatic recap waits on a model server that never "
        f"answers, p50 / p95, against no extension ({len(loaded)} cells each way)",
    )
    figure(
        "hanging_in_flight",
        f"{sum(flights)} of {len(flights)}",
        unit="cells",
        label="… cells that started with a draft in flight (each cancelled by the cell)",
    )
    print(
        f"cells that started with a draft in flight: {share:.0f} % ({sum(flights)} of "
        f"{len(flights)}); drafts started {started}, cancelled {cancelled}; connections the "
        f"stuck server accepted: {server.accepted}; kernel threads before loading "
        f"{base_threads}, after the last unload {end_threads}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer cycles and cells")
    args = parser.parse_args()
    cycles, cells = (30, 60) if args.quick else (100, 300)
    cycle_figures(cycles)
    latency_figures(cells, rounds=3, gap=0.04)


if __name__ == "__main__":
    main()
