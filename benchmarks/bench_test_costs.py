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
    args = parser.parse_args()
    rows = load(args.costs)

    modules: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for row in rows:
        module = str(row["test"]).split("::", 1)[0]
        cost = modules[module]
        cost[0] += 1
        cost[1] += float(str(row["wall"]))
        cost[2] += float(str(row["cpu"]))
    tiers: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for module, (count, wall, cpu) in modules.items():
        parts = module.split("/")
        tier = parts[1] if len(parts) > 2 else "?"
        tiers[tier][0] += count
        tiers[tier][1] += wall
        tiers[tier][2] += cpu

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


def _share(wall: float, cpu: float) -> str:
    idle = max(wall - cpu, 0.0)
    return f"{idle:.0f} s ({idle / wall:.0%})" if wall else "–"


if __name__ == "__main__":
    main()
