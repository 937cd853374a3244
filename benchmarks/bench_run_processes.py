"""Which processes a whole run's CPU went to: kernels, lab servers, chromium, the workers.

    python benchmarks/bench_run_processes.py sample /tmp/procs.jsonl &   # before the run
    CI=true bash .ci/run                                                # in a clean clone
    kill %1                                                             # writes the file
    python benchmarks/bench_run_processes.py report /tmp/procs.jsonl

``bench_test_costs.py`` sees a test's CPU only through the children its worker reaped, so a
kernel a lab server started, or a chromium renderer (chromium re-parents its zygote to init),
lands nowhere or on the wrong test. This samples every process instead
(psutil), twice a second: its CPU so far (its own user and system time), keeping the last
value seen of each. The report files each process under the step of ``scripts/test`` that started it
(pytest, test-latest, the checks, the wheel check, setup) and, within it, by what it is. A
process that lived less than half a second may be missed; renderers are given to the newest
chromium started before their zygote.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import time
from collections import defaultdict
from pathlib import Path
from types import FrameType
from typing import NamedTuple

import psutil

#: Processes sampled, by pid and creation time.
Seen = dict[tuple[int, float], "Process"]


class Process(NamedTuple):
    pid: int
    start: float  # when it was created: with pid, names one process
    ppid: int
    cpu: float  # its own user and system time: the children it reaped are seen themselves
    cmd: str


def _sample_once(seen: Seen) -> None:
    for found in psutil.process_iter(["pid", "ppid", "create_time", "cmdline", "cpu_times"]):
        info = found.info
        if info["ppid"] == 2 or info["cpu_times"] is None:  # kernel threads; gone meanwhile
            continue
        times = info["cpu_times"]
        command = " ".join(info["cmdline"] or [])
        merge(
            seen,
            Process(
                info["pid"], info["create_time"], info["ppid"], times.user + times.system, command
            ),
        )


def sample(out: Path, every: float) -> None:
    """Sample until SIGTERM or SIGINT, then write one JSON line per process."""
    seen: Seen = {}
    stop = False

    def finish(signum: int, frame: FrameType | None) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, finish)
    signal.signal(signal.SIGINT, finish)
    while not stop:
        _sample_once(seen)
        time.sleep(every)
    with out.open("w", encoding="utf-8") as file:
        for process in seen.values():
            file.write(json.dumps(process._asdict()) + "\n")


def merge(seen: Seen, process: Process) -> Seen:
    """Keep ``process``'s newest sample in ``seen``, with the command line of an earlier one
    when it has none left (a zombie's)."""
    earlier = seen.get((process.pid, process.start))
    if earlier is not None and not process.cmd:
        process = process._replace(cmd=earlier.cmd)
    seen[(process.pid, process.start)] = process
    return seen


def load(path: Path) -> list[Process]:
    return [Process(**json.loads(line)) for line in path.read_text().splitlines() if line]


_KINDS = (
    ("ipykernel_launcher", "kernel"),
    ("sys.stdin.readline", "pytest worker"),  # how pytest-xdist starts its workers
    ("-m jupyterlab", "lab server"),
    ("-m notebook", "lab server"),
    ("jupyterhub", "hub"),
    ("configurable-http-proxy", "hub"),
    ("playwright/driver", "playwright driver"),
    ("pytest", "pytest"),
    ("jupyter_recap", "jupyter_recap CLI"),
    ("mypy", "mypy"),
    ("sphinx", "sphinx"),
    ("jest", "jest"),
    ("eslint", "eslint"),
    ("prettier", "prettier"),
    ("yarn", "yarn"),
    ("node", "node"),
    ("uv", "uv"),
    ("pip", "pip"),
)
_STEPS = (
    ("test-latest", "test-latest"),
    ("pytest -n", "pytest"),
    ("check-wheel", "check-wheel"),
    ("scripts/setup", "setup"),
)


def kind(process: Process) -> str:
    if "/chromium" in process.cmd:
        found = re.search(r"--type=(\S+)", process.cmd)
        return f"chromium {found.group(1) if found else 'browser'}"
    for needle, name in _KINDS:
        if needle in process.cmd:
            return name
    return "other"


def report(path: Path) -> None:
    processes = load(path)
    by_pid = {p.pid: p for p in processes}
    browsers = sorted(
        (p for p in processes if p.cmd.startswith("/usr/lib/chromium/chromium ") and p.ppid != 1),
        key=lambda p: p.start,
    )

    def parent(process: Process) -> Process | None:
        found = by_pid.get(process.ppid)
        if found is not None and found.ppid == 1 and "/chromium/" in found.cmd:
            # chromium's zygote and crash handler are re-parented to init: give them to the
            # newest browser started before them
            earlier = [b for b in browsers if b.start <= found.start]
            return earlier[-1] if earlier else None
        return found

    totals: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0, 0.0]))
    for process in processes:
        ancestors, current, seen = [], parent(process), {process.pid}
        while current is not None and current.pid not in seen:
            seen.add(current.pid)
            ancestors.append(current.cmd)
            current = parent(current)
        commands = [process.cmd, *ancestors]
        if not any("scripts/test" in command for command in commands):
            continue  # not the run's
        step = next(
            (name for needle, name in _STEPS if any(needle in c for c in commands)), "checks"
        )
        row = totals[step][kind(process)]
        row[0] += 1
        row[1] += process.cpu

    def cpu_of(kinds: dict[str, list[float]]) -> float:
        return sum(cpu for _, cpu in kinds.values())

    for step, kinds in sorted(totals.items(), key=lambda item: -cpu_of(item[1])):
        print(f"\n{step}: {cpu_of(kinds):.0f} CPU-s\n")
        print("| processes | kind | CPU |")
        print("| --- | --- | --- |")
        for name, (count, cpu) in sorted(kinds.items(), key=lambda item: -item[1][1]):
            if cpu >= 0.5:
                print(f"| {int(count)} | {name} | {cpu:.1f} s |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    take = commands.add_parser("sample", help="sample /proc until stopped (SIGTERM, SIGINT)")
    take.add_argument("out", type=Path)
    take.add_argument("--every", type=float, default=0.5, help="seconds between samples")
    show = commands.add_parser("report", help="the CPU by step and kind of process")
    show.add_argument("file", type=Path)
    args = parser.parse_args()
    if args.command == "sample":
        sample(args.out, args.every)
    else:
        report(args.file)


if __name__ == "__main__":
    main()
