"""Measure what ``%load_ext jupyter_recap`` costs an idle kernel and print a Markdown table.

    .venv/bin/python benchmarks/bench_footprint.py            # 5 kernels, about 1.5 min
    .venv/bin/python benchmarks/bench_footprint.py --quick    # 2 kernels, about 40 s

Starts a real ``jupyter lab`` (the extension's server side running, so a kernel's focus feed
connects), then N fresh kernels through the server's REST API, one after the other. In each:

1. before: the kernel's RSS and OS threads (``/proc/self/status``) and ``len(sys.modules)``,
   read with the standard library only, so measuring adds nothing to what is measured;
2. the first ``%load_ext jupyter_recap`` of the kernel, timed inside it around
   ``get_ipython().run_line_magic('load_ext', 'jupyter_recap')`` (wall clock, and the main
   thread's CPU time printed beside it per kernel), bytecode cached as after an
   install (the bench compiles the package first: with ``PYTHONDONTWRITEBYTECODE`` set, an
   edited module would otherwise be compiled again in every kernel);
3. after: the same figures once the feed connected to the server and the kernel then sat
   idle for ``--idle`` seconds (5 by default).

The table gives the medians over the kernels, before (the same kernel without the extension),
after, and the delta, with the targets of issue 27 (RSS ≤ +5 MB, ≤ +2 threads, load ≤ 30 ms),
then the threads and the packages the load added in the last kernel, and the machine's load
average (the machine is shared: a busy one slows the load time most).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from figurelib import figure  # noqa: E402
from kernelutil import execute, feed_ready, stream_text  # noqa: E402
from labserver import LabServer, running_lab  # noqa: E402

#: Prints one JSON line: RSS (kB), OS threads, module count, thread names, module names.
PROBE = """\
def _recap_probe():
    import json, sys, threading
    status = {}
    with open('/proc/self/status') as f:
        for line in f:
            key, _, value = line.partition(':')
            status[key] = value.split()[0] if value.split() else ''
    print(json.dumps({
        'rss': int(status['VmRSS']), 'threads': int(status['Threads']),
        'modules': len(sys.modules), 'names': sorted(sys.modules),
        'thread_names': [t.name for t in threading.enumerate()],
    }))
_recap_probe()
del _recap_probe
"""

#: Loads the extension and prints how long the load took inside the kernel, wall clock and the
#: main thread's CPU time (ms): when they agree, a slow load was work, not waiting.
LOAD = """\
import time as _t
_t0, _c0 = _t.perf_counter(), _t.thread_time()
get_ipython().run_line_magic('load_ext', 'jupyter_recap')
print((_t.perf_counter() - _t0) * 1000, (_t.thread_time() - _c0) * 1000)
del _t, _t0, _c0
"""

#: Waits until the loaded extension's feed is connected; prints "connected" or why not.
CONNECTED = feed_ready(load=False)


def probe(kc: Any) -> dict[str, Any]:
    out = stream_text(execute(kc, PROBE, store_history=False))
    result: dict[str, Any] = json.loads(out)
    return result


def measure(lab: LabServer, idle: float) -> dict[str, Any]:
    """One fresh kernel: the figures before and after the load, and the load time."""
    kernel_id = lab.api("POST", "api/kernels", {"name": "python3"})["id"]
    kc = lab.connect(kernel_id)
    try:
        time.sleep(1.0)  # the kernel's own start-up settles
        before = probe(kc)
        wall, cpu = stream_text(execute(kc, LOAD, store_history=False)).split()
        state = stream_text(execute(kc, CONNECTED, store_history=False)).strip()
        if state != "connected":
            raise RuntimeError(f"the feed did not connect: {state}")
        time.sleep(idle)
        after = probe(kc)
    finally:
        kc.stop_channels()
        lab.api("DELETE", f"api/kernels/{kernel_id}")
    return {"before": before, "after": after, "load_ms": float(wall), "load_cpu_ms": float(cpu)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=5, help="fresh kernels to measure")
    parser.add_argument("--idle", type=float, default=5.0, help="idle seconds after connecting")
    parser.add_argument("--quick", action="store_true", help="2 kernels, 2 s idle")
    args = parser.parse_args()
    kernels, idle = (2, 2.0) if args.quick else (args.kernels, args.idle)
    compileall.compile_dir(str(ROOT / "jupyter_recap"), quiet=1)
    load_average = os.getloadavg()[0]
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-footprint-") as tmp:
        env = {"JUPYTER_RECAP_MODEL": "offline"}
        with running_lab(Path(tmp), env) as lab:
            for n in range(kernels):
                runs.append(measure(lab, idle))
                run = runs[-1]
                print(
                    f"kernel {n + 1}/{kernels}: load {run['load_ms']:.1f} ms "
                    f"(main thread CPU {run['load_cpu_ms']:.1f} ms)",
                    flush=True,
                )

    def med(side: str, key: str) -> float:
        return statistics.median(float(run[side][key]) for run in runs)

    rss = (med("before", "rss") / 1024, med("after", "rss") / 1024)
    threads = (med("before", "threads"), med("after", "threads"))
    modules = (med("before", "modules"), med("after", "modules"))
    load_ms = statistics.median(run["load_ms"] for run in runs)
    d_rss = statistics.median((r["after"]["rss"] - r["before"]["rss"]) / 1024 for r in runs)
    d_threads = statistics.median(r["after"]["threads"] - r["before"]["threads"] for r in runs)
    d_modules = statistics.median(r["after"]["modules"] - r["before"]["modules"] for r in runs)
    print()
    print(f"Medians over {kernels} fresh kernels of a real `jupyter lab`, {idle:g} s idle after")
    print(f"the feed connected; 1-minute load average {load_average:.2f} when it started.")
    print()
    print("| figure | without | with | delta | target |")
    print("| --- | --- | --- | --- | --- |")
    print(f"| RSS | {rss[0]:.1f} MB | {rss[1]:.1f} MB | {d_rss:+.1f} MB | ≤ +5 MB |")
    print(f"| OS threads | {threads[0]:g} | {threads[1]:g} | {d_threads:+g} | ≤ +2 |")
    print(f"| modules imported | {modules[0]:g} | {modules[1]:g} | {d_modules:+g} | |")
    print(f"| `%load_ext jupyter_recap` (first, in the kernel) | | {load_ms:.1f} ms | | ≤ 30 ms |")
    last = runs[-1]
    new_threads = Counter(last["after"]["thread_names"]) - Counter(last["before"]["thread_names"])
    print()
    print("Threads the load added (last kernel):", ", ".join(sorted(new_threads)) or "none")
    added = set(last["after"]["names"]) - set(last["before"]["names"])
    packages = Counter(name.split(".", 1)[0] for name in added)
    print(
        "Modules the load added (last kernel), by package:",
        ", ".join(f"{name} {count}" for name, count in packages.most_common()),
    )
    what = f"{kernels} fresh kernels of a real lab, {idle:g} s idle after the feed connected"
    figure(
        "rss",
        f"{rss[0]:.1f} → {rss[1]:.1f} MB ({d_rss:+.1f})",
        unit="",
        label=f"idle kernel RSS without → with the extension, median of {what}",
        target="≤ +5 MB",
        met=d_rss <= 5,
    )
    figure(
        "threads",
        f"{threads[0]:g} → {threads[1]:g} ({d_threads:+g})",
        unit="",
        label=f"idle kernel OS threads without → with the extension, median of {what}",
        target="≤ +2",
        met=d_threads <= 2,
    )
    figure(
        "load",
        round(load_ms, 1),
        unit="ms",
        label=f"`%load_ext jupyter_recap`, first load in a fresh kernel, median of {what}",
        target="≤ 30 ms",
        met=load_ms <= 30,
    )
    figure(
        "modules",
        f"{d_modules:+g}",
        unit="modules",
        label=f"modules `%load_ext jupyter_recap` imports, median of {what}",
    )


if __name__ == "__main__":
    main()
