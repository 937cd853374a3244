"""Where the test suite's time goes: work (CPU) or waiting, by module and by tier.

    JUPYTER_RECAP_TEST_COSTS=/tmp/costs.jsonl scripts/test      # or any pytest run
    .venv/bin/python benchmarks/bench_test_costs.py /tmp/costs.jsonl [--top 25]

The root conftest appends one JSON line per test when ``JUPYTER_RECAP_TEST_COSTS`` names a
file: its wall time (setup, call and teardown) and the CPU seconds its worker spent meanwhile,
its own and those of the children it reaped (kernels, lab servers, browsers: a module's shared
kernel or lab is counted at the test that stopped it, so a module's total is right while one
test's share of it is not). This prints a Markdown table per tier and the modules that wait
most: wall minus CPU is time a worker sat waiting (a kernel or a page starting, a timer of the
product running down, a fixed sleep) while the other core could have worked. On a machine
busy with anything else it also holds the time spent waiting for a core: measure on a quiet one.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path


def load(path: Path) -> list[dict[str, object]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rows.append(json.loads(line))
    if not rows:
        raise SystemExit(f"{path}: no test costs recorded (was JUPYTER_RECAP_TEST_COSTS set?)")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("costs", type=Path, help="the file JUPYTER_RECAP_TEST_COSTS named")
    parser.add_argument("--top", type=int, default=20, help="modules listed by waiting time")
    parser.add_argument(
        "--env",
        default=".venv",
        help="the environment whose rows count (scripts/test-latest's are '.venv-latest'); "
        "'all' for every row",
    )
    args = parser.parse_args()
    rows = [
        row
        for row in load(args.costs)
        if args.env == "all" or row.get("env", args.env) == args.env  # older rows: no env
    ]
    if not rows:
        raise SystemExit(f"{args.costs}: no rows of the environment {args.env!r}")

    modules = summed(rows, lambda test: test.split("::", 1)[0])
    tiers = summed(rows, lambda test: test.split("/")[1] if test.count("/") > 1 else "?")

    total_wall = sum(wall for _, wall, _ in tiers.values())
    total_cpu = sum(cpu for _, _, cpu in tiers.values())
    print("| tier | tests | wall (summed) | CPU | waiting |")
    print("| --- | --- | --- | --- | --- |")
    for tier, (count, wall, cpu) in sorted(tiers.items(), key=lambda item: -item[1][1]):
        print(f"| {tier} | {int(count)} | {wall:.0f} s | {cpu:.0f} s | {_share(wall, cpu)} |")
    print(
        f"| all | {len(rows)} | {total_wall:.0f} s | {total_cpu:.0f} s "
        f"| {_share(total_wall, total_cpu)} |"
    )
    print()
    print(f"The {args.top} modules that wait longest (wall − CPU):")
    print()
    print("| module | tests | wall | CPU | waiting |")
    print("| --- | --- | --- | --- | --- |")
    waiting = sorted(modules.items(), key=lambda item: -(item[1][1] - item[1][2]))
    for module, (count, wall, cpu) in waiting[: args.top]:
        print(f"| `{module}` | {int(count)} | {wall:.1f} s | {cpu:.1f} s | {_share(wall, cpu)} |")
    workers(rows)


def workers(rows: list[dict[str, object]]) -> None:
    """When each worker ran its last test, and which module: the run's tail, where one worker
    still works while the others are done (records without a worker or end time are older)."""
    timed = [row for row in rows if "end" in row and "worker" in row]
    if not timed:
        return
    first = min(float(str(row["end"])) - float(str(row["wall"])) for row in timed)
    last: dict[str, dict[str, object]] = {}
    for row in timed:
        worker = str(row["worker"])
        if worker not in last or float(str(row["end"])) > float(str(last[worker]["end"])):
            last[worker] = row
    print()
    print("When each worker ended (seconds from the first test's start), and its last module:")
    print()
    print("| worker | ended | last module |")
    print("| --- | --- | --- |")
    for worker, row in sorted(last.items(), key=lambda item: float(str(item[1]["end"]))):
        module = str(row["test"]).split("::", 1)[0]
        print(f"| {worker} | {float(str(row['end'])) - first:.0f} s | `{module}` |")


def summed(rows: list[dict[str, object]], key: Callable[[str], str]) -> dict[str, list[float]]:
    """[tests, wall, CPU] summed over the tests that ``key`` (of the test's node id) groups."""
    groups: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for row in rows:
        group = groups[key(str(row["test"]))]
        group[0] += 1
        group[1] += float(str(row["wall"]))
        group[2] += float(str(row["cpu"]))
    return groups


def _share(wall: float, cpu: float) -> str:
    idle = max(wall - cpu, 0.0)
    return f"{idle:.0f} s ({idle / wall:.0%})" if wall else "–"


if __name__ == "__main__":
    main()
