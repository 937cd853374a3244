"""What many open notebooks cost: one JupyterLab page with 0, 10, 30 and 70 notebooks open, in
three modes, measured in a real lab + chromium, printed as Markdown tables.

    .venv/bin/python benchmarks/bench_scale.py                 # about 30 min
    .venv/bin/python benchmarks/bench_scale.py --quick         # 0/10/30, 20 s windows, ~10 min
    .venv/bin/python benchmarks/bench_scale.py --counts 70 --window 60

Needs the built labextension and /usr/bin/chromium. Modes:

- **not installed**: jupyter_recap's server extension and labextension off;
- **installed, not loaded**: both on, no kernel runs ``%load_ext jupyter_recap``;
- **loaded**: every notebook's kernel runs it.

For each mode and count: the page opens every notebook (each with its own kernel), waits until
all kernels are idle, loads the extension in each (loaded), saves every notebook (opening one
marks it changed, and JupyterLab's autosave would save them all during the window), lets
start-up traffic settle, then, over a window in which nobody touches anything, measures:

- requests per minute the page sends to the server (all of them, and jupyter_recap's);
- the Jupyter server's CPU (user + system time over the window), its RSS and file descriptors;
- each kernel's RSS and OS threads (medians over the kernels);

and, loaded with 30 notebooks (or the largest count run), agent turns in a background
notebook: turn end → its Agents row updated, p50/p95 (as ``bench_agents.py`` measures it).

Everything of one configuration is measured in one run on this machine; the figures to compare
are the ratios between modes, printed after the tables, with the machine's load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from bench_agents import SHOW_PANEL, background_turns, percentile  # noqa: E402
from browser import launch  # noqa: E402
from figurelib import figure  # noqa: E402
from labfocus import LabPage  # noqa: E402
from labserver import LabServer, running_lab  # noqa: E402

MODES = ("not installed", "installed, not loaded", "loaded")
LOAD = "%load_ext jupyter_recap"
SETTLE_SECONDS = 15.0
"""Quiet after the set-up before the window starts (start-up requests, first reports)."""


@dataclass
class Sample:
    """One configuration's figures."""

    mode: str
    count: int
    requests_per_minute: float = 0.0
    recap_requests_per_minute: float = 0.0
    server_cpu_percent: float = 0.0
    server_rss_mb: float = 0.0
    server_fds: int = 0
    kernel_rss_mb: float | None = None
    kernel_threads: float | None = None
    turn_ms: list[float] = field(default_factory=list)
    reload_s: float | None = None
    """Loaded: page reload → every row back in the Agents panel."""


def server_process(lab: LabServer) -> psutil.Process:
    """The lab's server process, from the runtime file it wrote."""
    runtime = lab.root.parent / "runtime"
    for info in runtime.glob("jpserver-*.json"):
        data = json.loads(info.read_text())
        if str(data.get("port")) in lab.url:
            return psutil.Process(int(data["pid"]))
    raise RuntimeError("the lab's runtime file was not found")


def kernels_of(server: psutil.Process) -> list[psutil.Process]:
    return [
        child
        for child in server.children(recursive=True)
        if any("ipykernel" in part for part in child.cmdline())
    ]


def open_page(browser: Any, lab: LabServer, names: list[str]) -> LabPage:
    """One page with every notebook of ``names`` open and its kernel idle (none: an empty
    workspace)."""
    if names:
        tab = LabPage.open(browser, lab, names[0], width=1400, height=900)
    else:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        tab = LabPage(page, lab)
        page.on("request", tab._on_request)
        page.goto(f"{lab.url}lab/workspaces/empty?reset&token={lab.token}", wait_until="commit")
        page.wait_for_function("() => !!window.jupyterapp?.shell", timeout=120_000)
        page.wait_for_timeout(3000)
        return tab
    tab.page.evaluate(
        """async (names) => {
          for (const path of names) {
            await window.jupyterapp.commands.execute('docmanager:open', {path});
          }
        }""",
        names[1:],
    )
    tab.page.wait_for_function(
        """(count) => {
          const panels = [...window.jupyterapp.shell.widgets('main')]
            .filter(w => w.sessionContext);
          return panels.length === count && panels.every(
            w => w.sessionContext.session?.kernel?.status === 'idle');
        }""",
        arg=len(names),
        timeout=600_000,
        polling=500,
    )
    return tab


def save_all(tab: LabPage) -> None:
    """Save every notebook now: opening one marks it changed (its kernel's language_info), and
    JupyterLab's autosave would otherwise save them all during the window."""
    dirty = "() => [...window.jupyterapp.shell.widgets('main')].some(w => w.context?.model.dirty)"
    if tab.page.evaluate(dirty):
        tab.page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save-all')")
        tab.page.wait_for_function(f"() => !({dirty})()", timeout=300_000, polling=500)


def measure(browser: Any, tmp: Path, mode: str, count: int, window: float, turns: int) -> Sample:
    sample = Sample(mode, count)
    folder = tmp / f"{mode.replace(' ', '').replace(',', '-')}-{count}"
    folder.mkdir()
    env = {"JUPYTER_RECAP_MODEL": "offline"}
    with running_lab(folder, env, recap=mode != "not installed") as lab:
        names = [f"nb{n:02}.ipynb" for n in range(count)]
        for name in names:
            lab.write_notebook(name, [LOAD if mode == "loaded" else "# agent notebook", "x = 1"])
        tab = open_page(browser, lab, names)
        if mode == "loaded":
            for name in names:
                tab.run_as_cell(name, LOAD, "cell-0")
        save_all(tab)
        server = server_process(lab)
        tab.page.wait_for_timeout(SETTLE_SECONDS * 1000)

        requests: list[str] = []
        listener = lambda request: requests.append(request.url)  # noqa: E731
        tab.page.on("request", listener)
        cpu = server.cpu_times()
        started = time.monotonic()
        # Playwright delivers page events only while it is called: wait inside it.
        tab.page.wait_for_timeout(window * 1000)
        elapsed = time.monotonic() - started
        spent = server.cpu_times()
        tab.page.remove_listener("request", listener)

        sample.requests_per_minute = len(requests) * 60 / elapsed
        recap = [url for url in requests if "/jupyter-recap/api/" in url]
        sample.recap_requests_per_minute = len(recap) * 60 / elapsed
        busy = (spent.user - cpu.user) + (spent.system - cpu.system)
        sample.server_cpu_percent = 100 * busy / elapsed
        sample.server_rss_mb = server.memory_info().rss / 2**20
        sample.server_fds = server.num_fds()
        kernels = kernels_of(server)
        if kernels:
            sample.kernel_rss_mb = statistics.median(k.memory_info().rss / 2**20 for k in kernels)
            sample.kernel_threads = statistics.median(k.num_threads() for k in kernels)
        if mode == "loaded" and turns and count >= 2:
            tab.activate(names[0])  # the agent works in a notebook the person is not looking at
            sample.turn_ms = background_turns(tab, names[-1], turns)
        if mode == "loaded" and count:
            sample.reload_s = reload_rows(tab, min(count, MAX_ROWS))
        tab.page.close()
    return sample


MAX_ROWS = 64
"""The Agents panel's rows at most (``c.RecapServer.max_agents``)."""


def reload_rows(tab: LabPage, rows: int) -> float:
    """Reload the page with the Agents panel shown: seconds until all ``rows`` rows are back."""
    tab.page.evaluate(SHOW_PANEL)
    tab.page.wait_for_function(
        "(n) => document.querySelectorAll('.jp-RecapAgents-row').length >= n",
        arg=rows,
        timeout=120_000,
    )
    tab.page.wait_for_timeout(2000)  # the workspace saves the panel as shown
    started = time.monotonic()
    tab.page.reload(wait_until="commit")
    tab.page.wait_for_function(
        "(n) => document.querySelectorAll('.jp-RecapAgents-row').length >= n",
        arg=rows,
        timeout=120_000,
        polling=50,
    )
    return time.monotonic() - started


def cell(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def table(samples: list[Sample], count: int) -> list[str]:
    row = {s.mode: s for s in samples if s.count == count}
    modes = [mode for mode in MODES if mode in row]
    lines = [
        f"| {count} open notebooks | " + " | ".join(modes) + " |",
        "| --- | " + " | ".join("---" for _ in modes) + " |",
    ]

    def line(label: str, values: list[str]) -> None:
        lines.append(f"| {label} | " + " | ".join(values) + " |")

    line("requests per minute, idle page", [cell(row[m].requests_per_minute, 0) for m in modes])
    line("… of them jupyter_recap's", [cell(row[m].recap_requests_per_minute, 0) for m in modes])
    line("Jupyter server CPU, idle (%)", [cell(row[m].server_cpu_percent, 2) for m in modes])
    line("server RSS (MB)", [cell(row[m].server_rss_mb, 0) for m in modes])
    line("server file descriptors", [str(row[m].server_fds) for m in modes])
    line("kernel RSS, median (MB)", [cell(row[m].kernel_rss_mb) for m in modes])
    line("kernel threads, median", [cell(row[m].kernel_threads, 0) for m in modes])
    return lines


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def summary(samples: list[Sample]) -> list[str]:
    """The ratios the targets are about, at the largest count run in every mode."""
    counts = sorted({s.count for s in samples})
    lines: list[str] = []
    for count in reversed(counts):
        row = {s.mode: s for s in samples if s.count == count}
        if set(MODES) <= set(row):
            break
    else:
        return lines
    bare, idle, loaded = (row[m] for m in MODES)
    for mode, sample in (("installed, not loaded", idle), ("loaded", loaded)):
        value = ratio(sample.requests_per_minute, bare.requests_per_minute)
        key = "requests_" + ("installed" if sample is idle else "loaded")
        lines.append(
            f"- {count} notebooks, requests of an idle page, {mode} / not installed: "
            f"{cell(value, 2)}× (target ≤ 1.2×)"
        )
        if value is not None:
            figure(
                key,
                round(value, 2),
                unit="×",
                target="≤ 1.2×",
                met=value <= 1.2,
                label=f"idle page requests at {count} notebooks, {mode} / not installed",
            )
    cpu = ratio(loaded.server_cpu_percent, idle.server_cpu_percent)
    cpu_bare = ratio(loaded.server_cpu_percent, bare.server_cpu_percent)
    lines.append(
        f"- {count} notebooks, idle server CPU, loaded / installed not loaded: "
        f"{cell(cpu, 2)}× (target ≤ 1.3×); loaded / not installed: {cell(cpu_bare, 2)}×"
    )
    if cpu is not None:
        figure(
            "cpu_loaded",
            round(cpu, 2),
            unit="×",
            target="≤ 1.3×",
            met=cpu <= 1.3,
            label=f"idle server CPU at {count} notebooks, loaded / installed, not loaded",
        )
    if loaded.kernel_rss_mb is not None and idle.kernel_rss_mb is not None:
        rss = loaded.kernel_rss_mb - idle.kernel_rss_mb
        lines.append(f"- kernel RSS, loaded − not loaded: {rss:+.1f} MB (target ≤ +5 MB)")
        figure(
            "kernel_rss",
            round(rss, 1),
            unit="MB",
            target="≤ +5 MB",
            met=rss <= 5,
            label=f"median kernel RSS, loaded − not loaded, {count} notebooks",
        )
    if loaded.kernel_threads is not None and idle.kernel_threads is not None:
        threads = loaded.kernel_threads - idle.kernel_threads
        lines.append(f"- kernel threads, loaded − not loaded: {threads:+.0f} (target ≤ +2)")
        figure(
            "kernel_threads",
            threads,
            unit="threads",
            target="≤ +2",
            met=threads <= 2,
            label=f"median kernel OS threads, loaded − not loaded, {count} notebooks",
        )
    fds = loaded.server_fds - bare.server_fds
    lines.append(f"- server file descriptors, loaded − not installed: {fds:+d}")
    for sample in samples:
        if sample.reload_s is not None:
            lines.append(
                f"- page reload → every Agents row back, {sample.count} notebooks loaded: "
                f"{sample.reload_s:.1f} s"
            )
            figure(
                f"reload_{sample.count}",
                round(sample.reload_s, 1),
                unit="s",
                label=f"page reload → all Agents rows back, {sample.count} loaded notebooks",
            )
        if sample.turn_ms:
            p50, p95 = percentile(sample.turn_ms, 0.5), percentile(sample.turn_ms, 0.95)
            lines.append(
                f"- turn end → Agents row, {sample.count} notebooks loaded: "
                f"p50 {p50:.0f} ms / p95 {p95:.0f} ms ({len(sample.turn_ms)} turns)"
            )
            figure(
                f"turn_row_{sample.count}",
                f"{p50:.0f} / {p95:.0f}",
                unit="ms p50 / p95",
                label=f"turn end → Agents row at {sample.count} loaded notebooks",
            )
    return lines


def run_all(
    browser: Any,
    tmp: Path,
    counts: list[int],
    modes: tuple[str, ...],
    window: float,
    turns: int,
    samples: list[Sample],
) -> None:
    """Every configuration, one after the other (one lab at a time)."""
    turn_count = 30 if 30 in counts else max(counts)
    for count in counts:
        for mode in modes:
            sample = measure(browser, tmp, mode, count, window, turns if count == turn_count else 0)
            samples.append(sample)
            print(f"  {mode}, {count}: {sample}", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="0/10/30 notebooks, 20 s windows")
    parser.add_argument("--counts", type=int, nargs="+", help="numbers of open notebooks")
    parser.add_argument("--modes", nargs="+", choices=MODES, help="modes to run")
    parser.add_argument("--window", type=float, help="seconds of idle measured per configuration")
    parser.add_argument("--turns", type=int, default=20, help="background turns (loaded, 30)")
    args = parser.parse_args()
    counts = args.counts or ([0, 10, 30] if args.quick else [0, 10, 30, 70])
    window = args.window or (20.0 if args.quick else 60.0)
    samples: list[Sample] = []
    with tempfile.TemporaryDirectory() as tmp:
        for browser in launch():
            run_all(browser, Path(tmp), counts, args.modes or MODES, window, args.turns, samples)
    print(
        f"# Many open notebooks ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
        f"load average {' / '.join(f'{x:.1f}' for x in os.getloadavg())}, "
        f"{window:.0f} s idle windows)\n"
    )
    for count in counts:
        print("\n".join(table(samples, count)))
        print()
    print("\n".join(summary(samples)))


if __name__ == "__main__":
    main()
