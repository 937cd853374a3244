"""Measure what the task list and project memory cost, and print a Markdown table.

    .venv/bin/python benchmarks/bench_state.py            # a few seconds
    .venv/bin/python benchmarks/bench_state.py --quick    # fewer samples

1. ``todo_write`` of a 20-task list (validation, warnings, listeners), in µs.
2. ``remember`` into a store of 299 notes and ``recall`` of one term over 300 notes: a locked
   read-modify-write of the JSON file each, in ms.
3. What a recap pays for the framing: ``WorkState.framing()`` with 300 notes when the file is
   unchanged (its parse is cached by inode, size and mtime) and right after another process
   changed it, and ``build_context`` of a 100,000-entry session with and without the framing
   lines (the ratio is the overhead; the framing's budget is fixed, so it does not grow).

Figures are medians over several samples in this one process, in a temporary store on the same
filesystem as this checkout.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_foundation import median_seconds  # noqa: E402
from figurelib import figure  # noqa: E402

from jupyter_recap.pipeline.context import build_context  # noqa: E402
from jupyter_recap.record.transcript import Transcript  # noqa: E402
from jupyter_recap.stores.memory import MemoryStore  # noqa: E402
from jupyter_recap.stores.workstate import WorkState  # noqa: E402

PLAN = [
    {"text": f"step {i}: " + "refactor the loader module " * 3, "status": status}
    for i, status in enumerate(["completed"] * 8 + ["in_progress"] + ["pending"] * 11)
]


def long_session(entries: int) -> Transcript:
    t = Transcript()
    t.user("fix the CSV loader's date parsing", model="openai:gpt-4o-mini")
    for i in range((entries - 2) // 2):
        t.tool_call("run", f"pytest -k case_{i}")
        t.tool_result("run", f"case {i} ok " + "." * 80)
    t.assistant("The parser now accepts ISO dates. Next: add the regression test.")
    return t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    args = parser.parse_args()
    samples = 15 if args.quick else 61

    with tempfile.TemporaryDirectory(dir=ROOT) as tmp:
        os.environ["JUPYTER_RECAP_HOME"] = str(Path(tmp) / "home")
        project = Path(tmp) / "project"
        project.mkdir()
        state = WorkState(str(project))
        rows: list[tuple[str, str]] = []

        write = median_seconds(lambda: state.todo_write(PLAN), samples)
        rows.append(("todo_write, 20 tasks", f"{write * 1e6:.0f} µs"))
        figure("todo_write", round(write * 1e6), unit="µs", label="`todo_write` of a 20-task list")

        store = state.memory
        for i in range(299):
            store.remember("fact", f"module {i} owns the {i}th loader stage " + "detail " * 20)
        counter = iter(range(10**6))

        def remember_and_forget() -> None:
            store.remember("gotcha", f"a transient note {next(counter)}")
            store.forget("a transient note")

        pair = median_seconds(remember_and_forget, samples)
        store.remember("gotcha", "the 300th note")
        recall = median_seconds(lambda: store.recall("loader stage"), samples)
        rows.append(("remember + forget, 299 notes stored", f"{pair * 1e3:.2f} ms"))
        rows.append(("recall one term over 300 notes (15 hits)", f"{recall * 1e3:.2f} ms"))
        figure(
            "remember_forget",
            round(pair * 1e3, 1),
            unit="ms",
            label="`remember` + `forget` (two locked, fsynced rewrites of the memory file), "
            "299 notes stored",
        )
        figure(
            "recall",
            round(recall * 1e3, 1),
            unit="ms",
            label="`recall` of one term over 300 notes (counting its hits rewrites the file)",
        )

        cached = median_seconds(state.framing, samples)
        other = MemoryStore(store.project_dir)  # another kernel of the same project

        after_change = []
        for _ in range(samples):
            other.recall("the 300th note")  # rewrites the file: the next read parses it
            start = time.perf_counter()
            state.framing()
            after_change.append(time.perf_counter() - start)
        changed = statistics.median(after_change)
        rows.append(("framing, 300 notes, file unchanged", f"{cached * 1e3:.3f} ms"))
        rows.append(("framing, 300 notes, file just rewritten", f"{changed * 1e3:.2f} ms"))
        figure(
            "framing",
            f"{cached * 1e3:.2f} / {changed * 1e3:.2f}",
            unit="ms",
            label="a recap's framing from 300 notes: file unchanged / just rewritten by another "
            "kernel",
        )

        t = long_session(100_000)
        extras = state.framing().extras
        build_context(t)  # warm up
        # Alternated, so that drift on a shared machine hits both sides alike.
        bare_times, framed_times = [], []
        for _ in range(samples):
            bare_times.append(median_seconds(lambda: build_context(t), 1))
            framed_times.append(median_seconds(lambda: build_context(t, extras=extras), 1))
        bare, framed = statistics.median(bare_times), statistics.median(framed_times)
        rows.append(
            (
                "build_context, 100,000 entries: bare / with framing",
                f"{bare * 1e3:.2f} / {framed * 1e3:.2f} ms (ratio {framed / bare:.2f})",
            )
        )
        figure(
            "framing_ratio",
            f"{bare * 1e3:.2f} / {framed * 1e3:.2f} ms (ratio {framed / bare:.2f})",
            unit="",
            label="`build_context` of a 100,000-entry session: bare / with the framing lines",
        )
        rows.append(
            ("framing lines sent", f"{sum(len(e) for e in extras)} chars ({len(extras)} lines)")
        )

    print("| measure | median |\n| --- | --- |")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
