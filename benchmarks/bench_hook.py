"""Measure ``jupyter recap hook`` from start to exit, as a CLI agent's hook runs it.

    .venv/bin/python benchmarks/bench_hook.py            # 30 runs of each form, about 10 s
    .venv/bin/python benchmarks/bench_hook.py --quick    # 10 runs of each

Claude Code, Codex and VS Code run the hook command on every prompt, every tool call and every
stop, and wait for it: its whole life (the interpreter's start, the imports, reading the
payload, the store's trust checks, the appended line, the exit) is added to every tool call.
Each run starts the command as a subprocess with a recorded Claude Code ``NotebookEdit`` payload
on stdin and times it until it exits, for both forms an agent's configuration may name:
``jupyter recap hook`` (through the ``jupyter`` launcher, which starts a second interpreter)
and ``jupyter-recap hook`` (the console script alone). The spool goes to a temporary folder
found the way it is by default (``$XDG_DATA_HOME/jupyter/recap``, no ``JUPYTER_RECAP_HOME``).
Median and p95 are printed; the target is a median under 150 ms for ``jupyter recap hook``,
the slower form (its p95 says how much a loaded machine adds).
"""

from __future__ import annotations

import argparse
import json
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

VENV_BIN = Path(sys.executable).parent
TARGET_MS = 150.0
PAYLOAD = {
    "session_id": "7d3c1a52-90b4-4e1f-a8f2-3c5d9e0b6a11",
    "transcript_path": "/home/someone/.claude/projects/-work/7d3c1a52.jsonl",
    "cwd": "/srv/project",
    "permission_mode": "default",
    "hook_event_name": "PostToolUse",
    "tool_name": "NotebookEdit",
    "tool_input": {
        "notebook_path": "/home/ana/projects/churn.ipynb",
        "cell_id": "cell-1",
        "new_source": "df['region'] = df['region'].fillna('unknown')",
        "edit_mode": "replace",
    },
    "tool_response": {"cell_id": "cell-1", "edit_mode": "replace", "error": ""},
    "tool_use_id": "toolu_01Edit000000000000000000",
}


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def start_to_exit(command: list[str], env: dict[str, str]) -> float:
    """Milliseconds from starting ``command`` with the payload on stdin to its exit."""
    start = time.perf_counter()
    done = subprocess.run(
        command, input=json.dumps(PAYLOAD).encode(), capture_output=True, env=env, timeout=60
    )
    took = (time.perf_counter() - start) * 1000
    if (done.returncode, done.stdout, done.stderr) != (0, b"", b""):
        raise SystemExit(f"{' '.join(command)} did not exit 0 silently: {done}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 runs of each form")
    parser.add_argument("--runs", type=int, default=30, help="runs of each form (default: 30)")
    args = parser.parse_args()
    runs = 10 if args.quick else max(1, args.runs)
    forms = {  # the figure's key → the command
        "launcher": [str(VENV_BIN / "jupyter"), "recap", "hook"],
        "script": [str(VENV_BIN / "jupyter-recap"), "hook"],
    }
    with tempfile.TemporaryDirectory(prefix="bench-hook-") as tmp:
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("JUPYTER_RECAP_HOME", "JUPYTER_DATA_DIR", "JUPYTER_PLATFORM_DIRS")
        }
        env.update(
            XDG_DATA_HOME=tmp,
            JUPYTER_RECAP_LOG="0",
            PATH=os.pathsep.join([str(VENV_BIN), env.get("PATH", "")]),
        )
        # One run of each first: the interpreter's caches (the .pyc files) are then warm, as
        # they are for an agent's hook from its second call on.
        for command in forms.values():
            start_to_exit(command, env)
        results: dict[str, list[float]] = {key: [] for key in forms}
        for _ in range(runs):  # interleaved: a busy machine slows both forms alike
            for key, command in forms.items():
                results[key].append(start_to_exit(command, env))
        spooled = (Path(tmp) / "jupyter" / "recap" / "hooks" / "events.jsonl").read_text()
        assert spooled.count("\n") == 2 * (runs + 1), "every run spools its event"
    print(f"| command ({runs} runs each) | median | p95 | target |")
    print("| --- | --- | --- | --- |")
    for key, times in results.items():
        name = " ".join(Path(forms[key][0]).name.split() + forms[key][1:])
        median, p95 = statistics.median(times), percentile(times, 0.95)
        target = f"median < {TARGET_MS:.0f} ms" if key == "launcher" else ""
        met = median < TARGET_MS if target else None
        verdict = "" if met is None else (" PASS" if met else " MISS")
        print(f"| `{name}` | {median:.0f} ms | {p95:.0f} ms | {target}{verdict} |")
        figure(
            f"hook_{key}",
            f"{median:.0f} / {p95:.0f}",
            unit="ms",
            label=f"`{name}` start to exit (a NotebookEdit payload), median / p95 of {runs} runs",
            target=target or None,
            met=met,
        )


if __name__ == "__main__":
    main()
