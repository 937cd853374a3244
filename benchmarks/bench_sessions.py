"""Measure the session store's costs and print a Markdown table.

    .venv/bin/python benchmarks/bench_sessions.py            # a few seconds
    .venv/bin/python benchmarks/bench_sessions.py --quick    # fewer samples

1. Per-turn persistence: with a session already N entries long (N = 10, 1,000, 10,000), the time
   to append one more entry and flush it (entries line + header, both fsynced). Target: flat in N,
   under 1 ms. Measured with the two fsyncs per flush (disk-bound, noisy) and with fsync
   skipped (our own cost).
2. Listing 1,000 stored sessions (``SessionStore.list``, headers only). Target: under 200 ms.

Figures are medians over several samples in this one process, in a temporary directory on the
same filesystem as this checkout.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from figurelib import figure  # noqa: E402

from jupyter_recap.record.transcript import Transcript  # noqa: E402
from jupyter_recap.stores.sessions import SessionStore, SessionWriter  # noqa: E402

TEXT = "df = pd.read_csv('orders.csv').merge(customers, on='customer_id')  # " + "x" * 200


def _grown(store: SessionStore, size: int) -> tuple[Transcript, SessionWriter]:
    t = Transcript()
    writer = SessionWriter(t, store=store, delay=3600)
    t.user("fix the foreign key between orders and customers")
    for i in range(size - 1):
        t.code(f"{TEXT} {i}", count=i)
    writer.flush()
    return t, writer


def per_turn(store: SessionStore, size: int, samples: int) -> float:
    """Median ms to append and flush one entry to a session of ``size`` entries."""
    t, writer = _grown(store, size)
    times = []
    for i in range(samples):
        start = time.perf_counter()
        t.code(f"{TEXT} extra {i}")
        writer.flush()
        times.append(time.perf_counter() - start)
    writer.close()
    return statistics.median(times) * 1000


def listing(store: SessionStore, count: int, rounds: int) -> float:
    """Median ms to list ``count`` stored sessions (each 20 entries long)."""
    for _ in range(count):
        t = Transcript()
        writer = SessionWriter(t, store=store, delay=3600, notebook="/projects/nb.ipynb")
        t.user("a prompt")
        for i in range(19):
            t.code(f"{TEXT} {i}")
        writer.close()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        found = store.list(limit=15)
        times.append(time.perf_counter() - start)
        assert len(found) == 15
    return statistics.median(times) * 1000


def front_doors(root: Path, rounds: int) -> tuple[float, float]:
    """Median ms of ``jupyter recap --sessions --all`` (whole process, interpreter start
    included) and of ``%recap sessions --all`` in a loaded shell, over the same store."""
    env = {**os.environ, "JUPYTER_RECAP_HOME": str(root)}
    cli = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "jupyter_recap.cli", "--sessions", "--all"],
            env=env,
            capture_output=True,
            check=True,
        )
        cli.append(time.perf_counter() - start)
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    os.environ["JUPYTER_RECAP_HOME"] = str(root)
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    shell.run_line_magic("load_ext", "jupyter_recap")
    magic = []
    with contextlib.redirect_stdout(io.StringIO()):
        for _ in range(rounds):
            start = time.perf_counter()
            shell.run_line_magic("recap", "sessions --all")
            magic.append(time.perf_counter() - start)
    shell.run_line_magic("unload_ext", "jupyter_recap")
    return statistics.median(cli) * 1000, statistics.median(magic) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    args = parser.parse_args()
    samples = 20 if args.quick else 100
    with tempfile.TemporaryDirectory(dir=ROOT) as tmp:
        os.environ["JUPYTER_RECAP_LOG"] = "0"
        rows = []
        real_fsync = os.fsync
        for fsync, label in ((real_fsync, ""), (lambda fd: None, ", fsync skipped")):
            os.fsync = fsync  # the second pass shows our own cost without the disk's
            for size in (10, 1_000, 10_000):
                store = SessionStore(Path(tmp) / f"turns-{size}{label and '-nosync'}")
                ms = per_turn(store, size, samples)
                name = f"append + flush one entry, session of {size:,} entries{label}"
                rows.append((name, ms, "< 1 ms, flat"))
        os.fsync = real_fsync
        store = SessionStore(Path(tmp) / "listing")
        ms = listing(store, 1_000, 5 if args.quick else 15)
        rows.append(("list 1,000 stored sessions (store)", ms, "< 200 ms"))
        cli_ms, magic_ms = front_doors(store.root, 5 if args.quick else 11)
        rows.append(
            ("`jupyter recap --sessions --all`, 1,000 sessions, whole process", cli_ms, "< 200 ms")
        )
        rows.append(("`%recap sessions --all`, 1,000 sessions", magic_ms, "< 200 ms"))
    print("| measurement | median (ms) | target |")
    print("|---|---:|---|")
    for name, value, target in rows:
        print(f"| {name} | {value:.3f} | {target} |")
    for key, label, part in (
        ("append", "", rows[:3]),
        ("append_nosync", ", the fsyncs skipped (our own cost)", rows[3:6]),
    ):
        figure(
            key,
            " / ".join(f"{ms:.2f}" for _, ms, _ in part),
            unit="ms",
            label=f"append and flush one entry to a session of 10 / 1,000 / 10,000 entries{label}",
            target="< 1 ms, flat" if not label else None,
            met=max(ms for _, ms, _ in part) < 1 if not label else None,
        )
    listed = rows[6:]
    figure(
        "listing",
        " / ".join(f"{ms:.0f}" for _, ms, _ in (listed[0], listed[2], listed[1])),
        unit="ms",
        label="list 1,000 stored sessions: in the store / `%recap sessions --all` / "
        "the whole `jupyter recap --sessions --all` process",
        target="< 200 ms",
        met=max(ms for _, ms, _ in listed) < 200,
    )


if __name__ == "__main__":
    main()
