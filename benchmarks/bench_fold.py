"""Measure what folding a session into its state costs per entry, and print the figure.

    .venv/bin/python benchmarks/bench_fold.py            # a few seconds
    .venv/bin/python benchmarks/bench_fold.py --quick    # fewer samples

A generated session (``tests/sessiongen.py``, fixed seed) of about 2,000 entries — prompts,
replies, tool calls and results, cells, failures, a correction, an accepted proposal — is
folded entry by entry with :class:`~jupyter_recap.record.statefold.StateFolder`, timing each
``add``. The figure is the median time per entry over all entries and samples, beside the 95th
percentile and the mean, and the time of a whole fold (the target: a median of at most 20 µs
per entry). Figures are from this one process, on this machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from figurelib import figure  # noqa: E402
from sessiongen import generate  # noqa: E402

from jupyter_recap.record.statefold import StateFolder, fold  # noqa: E402
from jupyter_recap.record.transcript import Entry  # noqa: E402

SEED = 36
TARGET_US = 20.0
ENTRIES = 2000


def session_of(size: int) -> list[Entry]:
    """The entries of the generated session of about ``size`` entries."""
    rounds = 10
    while True:
        entries = list(generate(SEED, rounds=rounds, traffic=12).entries)
        if len(entries) >= size:
            return entries[:size]
        rounds += 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    args = parser.parse_args()
    samples = 5 if args.quick else 25
    entries = session_of(ENTRIES)
    clock = time.perf_counter_ns
    per_entry: list[float] = []
    whole: list[float] = []
    for _ in range(samples):
        folder = StateFolder()
        for entry in entries:
            start = clock()
            folder.add(entry)
            per_entry.append((clock() - start) / 1000)
        start = clock()
        fold(entries)
        whole.append((clock() - start) / 1e6)
    median = statistics.median(per_entry)
    p95 = statistics.quantiles(per_entry, n=20)[-1]
    verdict = "met" if median <= TARGET_US else "NOT MET"
    print(f"fold: {len(entries)} entries, {samples} samples")
    print("| figure | value |")
    print("|---|---|")
    print(f"| median per entry | {median:.1f} µs (target ≤ {TARGET_US:.0f} µs: {verdict}) |")
    print(f"| 95th percentile per entry | {p95:.1f} µs |")
    print(f"| mean per entry | {statistics.fmean(per_entry):.1f} µs |")
    print(f"| whole fold of the session | {statistics.median(whole):.1f} ms |")
    figure(
        "fold_median",
        round(median, 1),
        unit="µs",
        label=f"session state: folding one entry, median over a generated {len(entries):,}-entry "
        f"session (95th percentile {p95:.1f} µs)",
        target=f"<= {TARGET_US:.0f} µs",
        met=median <= TARGET_US,
    )


if __name__ == "__main__":
    main()
