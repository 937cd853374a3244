"""Measure the long-poll bounds of the kernel feed and print a Markdown table.

    .venv/bin/python benchmarks/bench_polls.py               # about a minute
    .venv/bin/python benchmarks/bench_polls.py --polls 1100 --rounds 20 --skip-unbounded

Against a real ``jupyter server`` on 127.0.0.1 (token auth, one running kernel) whose
descriptor limit is set to 1,024, the common default:

1. Server bound: ``--polls`` concurrent ``GET …/kernels/{id}/events`` long polls at once, from raw
   sockets (the per-kernel bound lifted, so the per-server one is what holds). How many the
   server holds (must equal ``max_polls``), how the rest are answered, the server's open
   descriptors before, during and after.
2. Wake-up with the bound reached: the server holding ``max_polls`` polls (and refusing more),
   a ``POST …/focus`` that changes the kernel's focus; time from sending it to each waiting
   poll's answer, over ``--rounds`` rounds (p50/p95 over every poll of every round).
3. Per-kernel bound (defaults): 50 polls of one kernel at once: how many are held, how the
   others are answered.
4. For contrast, the same flood with the bounds lifted (``--skip-unbounded`` skips it): what
   a server without them does at 1,024 descriptors.

Loopback only; every phase is bounded in time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from figurelib import figure  # noqa: E402

FD_LIMIT = 1024


def _limit_descriptors() -> None:
    """In the server's process: a hard limit of 1,024 descriptors (jupyter_server raises the
    soft limit itself, up to the hard one, so the hard limit is what counts)."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


@contextmanager
def running_server(tmp: Path, options: Sequence[str]) -> Iterator[tuple[str, str, int]]:
    """bench_server's server, in a directory of its own, limited to 1,024 descriptors."""
    from bench_server import running_server as server

    with server(Path(tempfile.mkdtemp(dir=tmp)), options, _limit_descriptors) as running:
        yield running


def start_kernel(url: str, token: str) -> str:
    headers = {"Authorization": f"token {token}"}
    answer = httpx.post(f"{url}api/kernels", json={"name": "python3"}, headers=headers)
    answer.raise_for_status()
    # Let the kernel process finish starting, so that its start-up does not load any phase.
    time.sleep(3)
    return str(answer.json()["id"])


def descriptors(pid: int) -> int:
    return int(psutil.Process(pid).num_fds())


class Poller:
    """Raw-socket long polls: one connection each, ``Connection: close``."""

    def __init__(self, url: str, token: str, kernel_id: str) -> None:
        parts = httpx.URL(url)
        self.host, self.port = str(parts.host), int(parts.port or 80)
        self.path = f"{parts.raw_path.decode()}jupyter-recap/api/kernels/{kernel_id}/events"
        self.token = token

    async def poll(self, since: int, timeout: float = 30) -> tuple[int, float]:
        """(status, perf_counter when the answer was complete); status 0: no answer."""
        request = (
            f"GET {self.path}?since={since}&timeout={timeout:g} HTTP/1.1\r\n"
            f"Host: {self.host}:{self.port}\r\nAuthorization: token {self.token}\r\n"
            "Connection: close\r\n\r\n"
        ).encode()
        try:
            reader, writer = await asyncio.open_connection(self.host, self.port)
        except OSError:
            return 0, time.perf_counter()
        try:
            writer.write(request)
            await writer.drain()
            data = await reader.read()  # the server closes after its answer
        except OSError:
            data = b""
        finally:
            writer.close()  # also when cancelled: the server then sees the hang-up
        done = time.perf_counter()
        try:
            return int(data.split(b" ", 2)[1]), done
        except (IndexError, ValueError):
            return 0, done


async def open_polls(poller: Poller, count: int, since: int) -> list[asyncio.Task[Any]]:
    """``count`` polls, opened in batches so the listen backlog does not drop connections."""
    tasks = []
    for start in range(0, count, 100):
        tasks += [asyncio.ensure_future(poller.poll(since)) for _ in range(min(100, count - start))]
        await asyncio.sleep(0.05)
    return tasks


async def settle(tasks: list[asyncio.Task[Any]], seconds: float = 2.0) -> None:
    """Wait until no poll has been answered for a while: the rest are held."""
    done = -1
    while done != sum(task.done() for task in tasks):
        done = sum(task.done() for task in tasks)
        await asyncio.sleep(seconds / 4)
    await asyncio.sleep(seconds / 2)


def statuses(tasks: list[asyncio.Task[Any]]) -> Counter[int]:
    return Counter(task.result()[0] for task in tasks if task.done())


def describe(counter: Counter[int]) -> str:
    names = {0: "no answer", 200: "200 (answered at once)", 429: "429 + Retry-After"}
    return ", ".join(f"{n} × {names.get(code, str(code))}" for code, n in sorted(counter.items()))


async def current_seq(url: str, token: str, kernel_id: str) -> int:
    async with httpx.AsyncClient() as client:
        answer = await client.get(
            f"{url}jupyter-recap/api/kernels/{kernel_id}/events?timeout=0",
            headers={"Authorization": f"token {token}"},
        )
        return int(answer.json()["seq"])


async def flood(url: str, token: str, pid: int, kernel_id: str, polls: int) -> dict[str, Any]:
    poller = Poller(url, token, kernel_id)
    seq = await current_seq(url, token, kernel_id)
    before = descriptors(pid)
    tasks = await open_polls(poller, polls, seq)
    await settle(tasks)
    during = descriptors(pid)
    held = sum(not task.done() for task in tasks)
    answered = statuses(tasks)
    # Is the server still serving everyone else?
    started = time.perf_counter()
    status: int | str
    try:
        status = httpx.get(
            f"{url}api/status", headers={"Authorization": f"token {token}"}, timeout=5
        ).status_code
    except httpx.HTTPError as error:
        status = type(error).__name__
    other = f"{status} in {(time.perf_counter() - started) * 1000:.0f} ms"
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.sleep(1.0)
    after = descriptors(pid)
    return {
        "held": held,
        "answered": answered,
        "fds": (before, during, after),
        "other": other,
    }


async def wake_up(url: str, token: str, kernel_id: str, bound: int, rounds: int) -> list[float]:
    poller = Poller(url, token, kernel_id)
    latencies: list[float] = []
    async with httpx.AsyncClient() as client:
        for round_ in range(rounds):
            seq = await current_seq(url, token, kernel_id)
            tasks = await open_polls(poller, bound + 20, seq)  # 20 beyond the bound: 429
            while sum(task.done() for task in tasks) < 20:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.2)
            held = [task for task in tasks if not task.done()]
            assert len(held) == bound, (len(held), bound)
            body = {
                "kernel_id": kernel_id,
                "path": "bench.ipynb",
                "focused": round_ % 2 == 0,
                "client_id": "bench-tab",
            }
            sent = time.perf_counter()
            answer = await client.post(
                f"{url}jupyter-recap/api/focus",
                content=json.dumps(body),
                headers={"Authorization": f"token {token}"},
            )
            answer.raise_for_status()
            for status, done in await asyncio.gather(*held):
                assert status == 200, status
                latencies.append((done - sent) * 1000)
    return latencies


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--polls", type=int, default=1100, help="concurrent polls to open")
    parser.add_argument("--rounds", type=int, default=20, help="wake-up rounds")
    parser.add_argument("--skip-unbounded", action="store_true", help="skip phase 4")
    args = parser.parse_args()
    # This process holds every client socket: lift its own soft limit.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4 * args.polls + 256)), hard))
    from jupyter_recap.server import RecapServer

    max_polls = RecapServer.max_polls.default_value
    per_kernel = RecapServer.max_polls_per_kernel.default_value
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="bench-polls-") as tmp:
        lifted = ["--RecapServer.max_polls_per_kernel=1000000"]
        with running_server(Path(tmp), lifted) as (url, token, pid):
            kernel_id = start_kernel(url, token)
            result = asyncio.run(flood(url, token, pid, kernel_id, args.polls))
            latencies = asyncio.run(wake_up(url, token, kernel_id, max_polls, args.rounds))
        before, during, after = result["fds"]
        refused = result["answered"].get(429, 0)
        figure(
            "flood",
            f"{result['held']} held, {refused} answered 429, {during} descriptors, "
            f"other requests answered: {result['other']}",
            unit="",
            label=f"{args.polls:,} long polls opened at once, server limited to {FD_LIMIT:,} "
            f"descriptors (bound {max_polls})",
            target=f"{max_polls} held, the rest 429",
            met=result["held"] == max_polls and refused == args.polls - max_polls,
        )
        figure(
            "wakeup",
            f"{statistics.median(latencies):.1f} / {percentile(latencies, 0.95):.1f}",
            unit="ms",
            label=f"focus change → each of the {max_polls} waiting polls answered, p50 / p95 "
            f"({args.rounds} rounds)",
        )
        rows += [
            (
                f"{args.polls} polls at once (max_polls={max_polls}): held",
                f"{result['held']} (bound {max_polls})",
            ),
            ("… the others answered", describe(result["answered"])),
            ("… server descriptors before / during / after", f"{before} / {during} / {after}"),
            ("… GET api/status meanwhile", result["other"]),
            (
                f"wake-up, focus POST → waiting poll, {max_polls} held ({args.rounds} rounds)",
                f"p50 {statistics.median(latencies):.1f} ms, "
                f"p95 {percentile(latencies, 0.95):.1f} ms",
            ),
        ]
        with running_server(Path(tmp), []) as (url, token, pid):
            kernel_id = start_kernel(url, token)
            result = asyncio.run(flood(url, token, pid, kernel_id, 50))
        rows += [
            (
                f"50 polls of one kernel (max_polls_per_kernel={per_kernel}): held",
                str(result["held"]),
            ),
            ("… the others answered", describe(result["answered"])),
        ]
        if not args.skip_unbounded:
            unbounded = [
                "--RecapServer.max_polls_per_kernel=1000000",
                "--RecapServer.max_polls=1000000",
            ]
            with running_server(Path(tmp), unbounded) as (url, token, pid):
                kernel_id = start_kernel(url, token)
                result = asyncio.run(flood(url, token, pid, kernel_id, args.polls))
            before, during, after = result["fds"]
            figure(
                "unbounded",
                f"{result['held']} polls held open, {during} descriptors, other requests "
                f"answered: {result['other']}",
                unit="",
                label=f"… the same flood without the bounds (limit {FD_LIMIT:,} descriptors)",
            )
            rows += [
                (
                    f"without bounds, {args.polls} polls at once: not answered",
                    str(result["held"]),
                ),
                ("… answered", describe(result["answered"]) or "none"),
                (
                    "… server descriptors before / during / after",
                    f"{before} / {during} / {after} (limit {FD_LIMIT})",
                ),
                ("… GET api/status meanwhile", result["other"]),
            ]
    print(f"## Long polls (server descriptor limit {FD_LIMIT})\n")
    print("| measure | result |")
    print("|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
