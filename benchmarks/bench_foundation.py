"""Measure the foundation's costs in one run and print a Markdown table.

    .venv/bin/python benchmarks/bench_foundation.py            # full run (about a minute)
    .venv/bin/python benchmarks/bench_foundation.py --quick    # smaller N, for a smoke check
    .venv/bin/python benchmarks/bench_foundation.py --rounds 25  # a steadier overhead ratio

Figures are medians of several rounds taken in this one process, and the recording overhead is a
ratio against the same shell without the extension, so a busy machine shifts both sides alike.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jupyter_recap.record.transcript import Transcript

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from figurelib import figure  # noqa: E402

os.environ.setdefault("JUPYTER_RECAP_LOG", "0")
for _name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "JUPYTER_RECAP_MODEL"):
    os.environ.pop(_name, None)


def median_seconds(action: Callable[[], object], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


# -- recording overhead --------------------------------------------------------------------


def _shell() -> Any:
    """A terminal-less shell; ``Any``, as most of IPython's shell API is unannotated."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    return InteractiveShell.instance(config=config)


def recording_overhead(
    cells: int,
    rounds: int,
    setup: Callable[[object], object] | None = None,
    teardown: Callable[[object], object] | None = None,
) -> tuple[float, float, list[float]]:
    """Median seconds per trivial cell without and with the extension loaded, and each round's
    ratio (their spread is the run's own noise).

    ``setup``/``teardown`` replace loading/unloading the extension, to measure a variant.
    """
    shell = _shell()

    def batch() -> None:
        for _ in range(cells):
            shell.run_cell("x = 1", store_history=True)

    batch()  # warm up caches and the compiler
    plain, loaded = [], []
    for _ in range(rounds):
        # interleave so that drift in machine load hits both sides equally
        plain.append(median_seconds(batch, 1))
        (setup or _load)(shell)
        loaded.append(median_seconds(batch, 1))
        (teardown or _unload)(shell)
        from jupyter_recap.record import transcript

        transcript.current().clear()
    ratios = [with_ / without for without, with_ in zip(plain, loaded, strict=True)]
    return statistics.median(plain) / cells, statistics.median(loaded) / cells, ratios


def _load(shell: Any) -> None:
    shell.run_line_magic("load_ext", "jupyter_recap")


def _unload(shell: Any) -> None:
    shell.run_line_magic("unload_ext", "jupyter_recap")


def _no_op(info: object) -> None:
    pass


def _load_without_code_cells(shell: Any) -> None:
    _load(shell)
    shell.run_line_magic("config", "Recap.record_code_cells = False")


def _noop_hooks(shell: Any) -> None:
    shell.events.register("pre_run_cell", _no_op)
    shell.events.register("post_run_cell", _no_op)


def _remove_noop_hooks(shell: Any) -> None:
    shell.events.unregister("pre_run_cell", _no_op)
    shell.events.unregister("post_run_cell", _no_op)


def hooks_alone(calls: int) -> float:
    """Seconds per cell of the recorder's two hooks called back to back, outside ``run_cell``."""
    from IPython.core.interactiveshell import ExecutionInfo, ExecutionResult

    from jupyter_recap.ipython.extension import extension_for
    from jupyter_recap.record import transcript

    shell = _shell()
    _load(shell)
    ext = extension_for(shell)
    assert ext is not None
    recorder = ext.recorder
    # IPython leaves these two constructors unannotated
    info = ExecutionInfo("x = 1", True, False, False, None)  # type: ignore[no-untyped-call]
    result = ExecutionResult(info)  # type: ignore[no-untyped-call]
    result.execution_count = 1

    def both() -> None:
        for _ in range(calls):
            recorder.pre_run_cell(info)
            recorder.post_run_cell(result)

    seconds = min(median_seconds(both, 1) for _ in range(5)) / calls
    _unload(shell)
    transcript.current().clear()
    return seconds


# -- context building and size ----------------------------------------------------------------

TOOL_OUTPUT = "\n".join(f"line {n}: " + "SELECT * FROM invoices WHERE id = ?" for n in range(120))


def synthetic_session(entries: int) -> tuple[Transcript, list[tuple[str, str]]]:
    """A tool-heavy agent session: prompts, tool calls with large results, replies, cells.

    Returns the transcript and the raw (unclipped) message texts a peer strategy would send.
    Turns are always complete, so the size is ``entries`` rounded up to a whole turn.
    """
    import jupyter_recap as jr

    t = jr.Transcript()
    raw: list[tuple[str, str]] = []  # (role, text) as an agent's message list would hold them
    n = 0
    turn = 0
    while n < entries:
        prompt = f"Step {turn}: migrate table {turn} of the billing schema and fix its FK"
        t.user(prompt)
        raw.append(("user", prompt))
        n += 1
        for call in range(4):
            args = {"path": f"tables/t{turn}_{call}.ts"}
            t.tool_call("read_file", args)
            raw.append(("tool_call", json.dumps(args)))
            t.tool_result("read_file", TOOL_OUTPUT)
            raw.append(("tool_result", TOOL_OUTPUT))
            n += 2
        reply = f"Table {turn} migrated; the FK now points at customers_v2. Next: table {turn + 1}."
        t.assistant(reply)
        raw.append(("assistant", reply))
        t.outcome("ok")
        n += 2
        turn += 1
    return t, raw


LONG_REPLY = ("The migration touches customers, invoices and payments. " * 60).strip()


def chatty_session(entries: int) -> tuple[Transcript, list[tuple[str, str]]]:
    """A conversation without tools but with long replies and a long-running last turn."""
    import jupyter_recap as jr

    t = jr.Transcript()
    raw: list[tuple[str, str]] = []
    for n in range(entries // 2):
        prompt = f"Question {n}: why does invoices.ts fail its FK constraint in case {n}?"
        t.user(prompt)
        t.assistant(LONG_REPLY)
        raw += [("user", prompt), ("assistant", LONG_REPLY)]
    for _ in range(40):  # the latest turn keeps talking: the recent tier must be capped
        t.assistant(LONG_REPLY)
        raw.append(("assistant", LONG_REPLY))
    return t, raw


def peer_raw_30(raw: list[tuple[str, str]]) -> int:
    """One agent CLI's strategy: the last 30 messages, tool traffic included, unfiltered."""
    return sum(len(text) for _, text in raw[-30:])


def peer_dialog_30(raw: list[tuple[str, str]]) -> int:
    """Another CLI's strategy: the last 30 user/assistant text messages, tools dropped."""
    dialog = [text for role, text in raw if role in ("user", "assistant")]
    return sum(len(text) for text in dialog[-30:])


def context_figures(
    sizes: list[int],
    rounds: int,
    make: Callable[[int], tuple[Transcript, list[tuple[str, str]]]] = synthetic_session,
) -> list[dict[str, float]]:
    from jupyter_recap.pipeline.context import build_context

    rows = []
    for size in sizes:
        transcript, raw = make(size)
        seconds = median_seconds(functools.partial(build_context, transcript), rounds)
        ours = len(build_context(transcript))
        rows.append(
            {
                "entries": size,
                "build_ms": seconds * 1000,
                "ours": ours,
                "raw30": peer_raw_30(raw),
                "dialog30": peer_dialog_30(raw),
            }
        )
    return rows


# -- import and load time --------------------------------------------------------------------


def subprocess_seconds(code: str, rounds: int) -> float:
    """Median of what ``code`` prints, each round in a fresh interpreter.

    Bytecode caches are allowed (and written by a first, unmeasured round), as in any
    installed environment; otherwise every import would include compiling the source.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    samples = []
    for _ in range(rounds + 1):
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            env=env,
        ).stdout
        samples.append(float(out.strip().splitlines()[-1]))
    return statistics.median(samples[1:])


IMPORT_CODE = """
import time
t = time.perf_counter()
import jupyter_recap
print(time.perf_counter() - t)
"""

# In a kernel IPython (and with it typing, re, traitlets) is already imported; this is the
# cost jupyter_recap itself adds there.
IMPORT_IN_KERNEL_CODE = """
import time
import IPython.core.interactiveshell
t = time.perf_counter()
import jupyter_recap
print(time.perf_counter() - t)
"""

LOAD_CODE = """
import time
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config
c = Config(); c.HistoryManager.hist_file = ":memory:"
shell = InteractiveShell.instance(config=c)
t = time.perf_counter()
shell.run_line_magic("load_ext", "jupyter_recap")
print(time.perf_counter() - t)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer rounds")
    parser.add_argument(
        "--rounds",
        type=int,
        metavar="N",
        help="rounds of the recording overhead (default 7; more steadies it on a busy machine)",
    )
    args = parser.parse_args()
    cells, rounds = (300, 3) if args.quick else (2000, 7)
    rounds = args.rounds or rounds
    sizes = [10, 1_000, 10_000] if args.quick else [10, 1_000, 100_000]

    plain, loaded, spread = recording_overhead(cells, rounds)
    ratio = loaded / plain
    settings = f"{cells:,} trivial cells × {rounds} rounds"
    print("## Recording overhead (trivial cells through a real InteractiveShell)\n")
    print("| cells × rounds | without | with extension | ratio (target ≤ 1.05) | rounds' ratios |")
    print("|---|---|---|---|---|")
    print(
        f"| {cells} × {rounds} | {plain * 1e6:.1f} µs/cell | {loaded * 1e6:.1f} µs/cell "
        f"| {ratio:.3f} | {min(spread):.3f}–{max(spread):.3f} |\n"
    )
    figure(
        "overhead",
        round(ratio, 3),
        unit="",
        label=f"recording overhead, ratio with / without the extension, {settings}",
        target="≤ 1.05",
        met=ratio <= 1.05,
    )
    figure(
        "overhead_rounds",
        f"{min(spread):.3f}–{max(spread):.3f}",
        unit="",
        label="… the same ratio in single rounds, lowest–highest (the run's own noise)",
    )
    figure(
        "overhead_cells",
        f"{plain * 1e6:.1f} → {loaded * 1e6:.1f}",
        unit="µs per cell",
        label="… a trivial cell without → with the extension",
    )
    print("Where it goes (ratios against the same shell without anything):\n")
    print("| variant | ratio or cost |")
    print("|---|---|")
    base, quiet, _ = recording_overhead(cells, rounds, _load_without_code_cells, _unload)
    print(f"| extension loaded, `record_code_cells = False` | {quiet / base:.3f} |")
    figure(
        "overhead_quiet",
        round(quiet / base, 3),
        unit="",
        label=f"… the same ratio with `record_code_cells = False`, {settings}",
    )
    base, noop, _ = recording_overhead(cells, rounds, _noop_hooks, _remove_noop_hooks)
    print(f"| two no-op `pre/post_run_cell` hooks, no extension | {noop / base:.3f} |")
    hooks = hooks_alone(20_000)
    print(f"| our two hooks called alone, outside `run_cell` | {hooks * 1e6:.1f} µs |\n")
    figure(
        "hooks_alone",
        round(hooks * 1e6, 1),
        unit="µs per cell",
        label="the recorder's two hooks called alone, outside `run_cell`",
    )

    for title, make, kind in (
        ("Context building and characters sent per recap (tool-heavy session)", None, "tool-heavy"),
        ("Characters sent per recap (long replies, no tools)", chatty_session, "long replies"),
    ):
        print(f"## {title}\n")
        print("| entries | build_context (median) | ours (chars) | last 30 raw | last 30 dialog |")
        print("|---|---|---|---|---|")
        rows = context_figures(sizes, rounds, make or synthetic_session)
        for row in rows:
            print(
                f"| {row['entries']:,} | {row['build_ms']:.2f} ms | {row['ours']:,} "
                f"| {row['raw30']:,} | {row['dialog30']:,} |"
            )
            figure(
                f"chars_{kind}_{row['entries']}",
                f"{row['ours']:,} / {row['raw30']:,} / {row['dialog30']:,}",
                unit="characters",
                label=f"characters sent per recap, {kind} session of {row['entries']:,} entries: "
                "ours / last 30 raw messages / last 30 dialog-only messages",
            )
        figure(
            f"build_context_{kind}",
            " / ".join(f"{row['build_ms']:.2f}" for row in rows),
            unit="ms",
            label=f"`build_context`, {kind} session of "
            + " / ".join(f"{row['entries']:,}" for row in rows)
            + " entries",
            target="flat",
        )
        print()

    print("## Start-up (fresh interpreter, median)\n")
    print("| step | time |")
    print("|---|---|")
    cold = subprocess_seconds(IMPORT_CODE, rounds) * 1000
    warm = subprocess_seconds(IMPORT_IN_KERNEL_CODE, rounds) * 1000
    load = subprocess_seconds(LOAD_CODE, rounds) * 1000
    print(f"| `import jupyter_recap` (bare interpreter) | {cold:.1f} ms |")
    print(f"| `import jupyter_recap` (IPython already loaded, as in a kernel) | {warm:.1f} ms |")
    print(f"| `%load_ext jupyter_recap` | {load:.1f} ms |")
    figure(
        "import",
        f"{warm:.1f} / {cold:.1f}",
        unit="ms",
        label="`import jupyter_recap` in a kernel (IPython loaded) / a bare interpreter",
    )
    figure(
        "load_ext",
        round(load, 1),
        unit="ms",
        label="`%load_ext jupyter_recap` (checks and opens the session store; bytecode cached)",
    )


if __name__ == "__main__":
    main()
