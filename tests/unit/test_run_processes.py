"""benchmarks/bench_run_processes.py files each process under the step that started it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_run_processes as procs


def write(path: Path, rows: list[tuple[int, int, int, float, str]]) -> None:
    path.write_text(
        "".join(
            json.dumps({"pid": p, "start": s, "ppid": pp, "cpu": c, "cmd": cmd}) + "\n"
            for p, s, pp, c, cmd in rows
        )
    )


def test_renderers_count_for_the_step_whose_chromium_they_serve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chromium = "/usr/lib/chromium/chromium"
    write(
        tmp_path / "run.jsonl",
        [
            (10, 1, 1, 0.0, "bash scripts/test"),
            (11, 2, 10, 5.0, ".venv/bin/python .venv/bin/pytest -n 3 --dist loadfile"),
            (12, 3, 11, 40.0, "python -u -c import sys;exec(eval(sys.stdin.readline()))"),
            (13, 4, 12, 1.5, "python -m ipykernel_launcher -f kernel.json"),
            (14, 5, 12, 2.0, f"{chromium} --headless --no-sandbox"),
            # chromium's zygote is re-parented to init; its renderers still belong to the run
            (15, 6, 1, 0.1, f"{chromium} --type=zygote --no-sandbox"),
            (16, 7, 15, 3.0, f"{chromium} --type=renderer"),
            (20, 8, 10, 7.0, "bash scripts/test-latest -q -n 1"),
            (21, 9, 20, 4.0, "python -m ipykernel_launcher -f kernel-2.json"),
            (30, 9, 1, 99.0, "something else on the machine"),
        ],
    )
    procs.report(tmp_path / "run.jsonl")
    shown = capsys.readouterr().out
    pytest_part, latest_part = shown.split("test-latest:")
    assert "pytest: 52 CPU-s" in pytest_part
    assert "| 1 | chromium renderer | 3.0 s |" in pytest_part
    assert "| 1 | kernel | 1.5 s |" in pytest_part
    assert latest_part.startswith(" 11 CPU-s")
    assert "| 1 | kernel | 4.0 s |" in latest_part
    assert "99" not in shown  # not the run's


def test_sampling_keeps_a_command_line_a_zombie_lost(tmp_path: Path) -> None:
    first = procs.Process(5, 1, 1, 1.0, "python -m jupyterlab")
    later = procs.Process(5, 1, 1, 2.0, "")
    kept = procs.merge({}, first)
    kept = procs.merge(kept, later)
    assert kept[(5, 1)] == procs.Process(5, 1, 1, 2.0, "python -m jupyterlab")
