"""Measure the server extension and print a Markdown table.

    .venv/bin/python benchmarks/bench_server.py            # about 20 s
    .venv/bin/python benchmarks/bench_server.py --seconds 2

1. Sustained ``POST jupyter-recap/api/focus`` per second against a real ``jupyter server`` on
   127.0.0.1 (token auth, one running kernel), from client processes, each keeping a few
   keep-alive connections busy with requests that alternate focused/unfocused over 20 client
   ids (across 3 notebook paths).
2. Focus change → answer of a kernel's waiting long poll, on the same server.
3. Memory per tracked kernel: tracemalloc around a hub holding 1,000 kernels.

Loopback only; every phase is bounded in time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from figurelib import figure  # noqa: E402

CLIENT_IDS = 20


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_server(
    tmp: Path, options: Sequence[str] = (), preexec: Callable[[], None] | None = None
) -> Iterator[tuple[str, str, int]]:
    """A ``jupyter server`` with the extension on 127.0.0.1: (URL with base URL, token, pid).

    ``options`` are more command-line settings; ``preexec`` runs in the server's process before
    it starts (to set resource limits).
    """
    port, token = _free_port(), secrets.token_hex(16)
    root = tmp / "root"
    root.mkdir()
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
        "IPYTHONDIR": str(tmp / "ipython"),
    }
    command = [
        sys.executable,
        "-m",
        "jupyter_server",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        "--ServerApp.base_url=/user/bench/",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.allow_root=True",
        "--ServerApp.log_level=WARN",
        *options,
    ]
    from labserver import stop_server, wait_until_up

    log = (tmp / "server.log").open("w")
    process = subprocess.Popen(
        command, env=env, stdout=log, stderr=subprocess.STDOUT, preexec_fn=preexec
    )
    url = f"http://127.0.0.1:{port}/user/bench/"
    try:
        # Probe our own route: the server is up and the extension loaded.
        wait_until_up(url, token, process, tmp / "server.log", "jupyter-recap/api/capabilities")
        yield url, token, process.pid
    finally:
        stop_server(process, log)


# -- 1. focus POSTs per second --------------------------------------------------------------


class _Connection:
    """A bare HTTP/1.1 keep-alive connection: httpx spends ~1.5 ms of CPU per request, which
    on a small machine measures the client instead of the server."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, url: str) -> _Connection:
        parts = httpx.URL(url)
        reader, writer = await asyncio.open_connection(parts.host, parts.port)
        return cls(reader, writer)

    async def post(self, target: str, host: str, headers: str, body: bytes) -> int:
        head = (
            f"POST {target} HTTP/1.1\r\nHost: {host}\r\n{headers}"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        status_line = await self.reader.readline()
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        await self.reader.readexactly(length)
        return int(status_line.split()[1])


async def _hammer(url: str, token: str, kernel_id: str, seconds: float, concurrency: int) -> Any:
    parts = httpx.URL(url)
    target, host = f"{parts.raw_path.decode()}jupyter-recap/api/focus", f"{parts.host}:{parts.port}"
    headers = f"Authorization: token {token}\r\n"
    latencies: list[float] = []
    errors = 0
    stop = time.perf_counter() + seconds

    async def worker(offset: int) -> None:
        nonlocal errors
        connection = await _Connection.open(url)
        n = offset
        while time.perf_counter() < stop:
            body = {
                "kernel_id": kernel_id,
                "path": f"nb{n % 3}.ipynb",
                "focused": n % 2 == 0,
                "client_id": f"client-{n % CLIENT_IDS}",
            }
            started = time.perf_counter()
            status = await connection.post(target, host, headers, json.dumps(body).encode())
            latencies.append(time.perf_counter() - started)
            errors += status != 200
            n += concurrency
        connection.writer.close()

    await asyncio.gather(*(worker(k) for k in range(concurrency)))
    return latencies, errors


def _client_process(args: tuple[str, str, str, float, int]) -> Any:
    return asyncio.run(_hammer(*args))


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def focus_throughput(
    url: str, token: str, pid: int, kernel_id: str, seconds: float, processes: int, concurrency: int
) -> dict[str, float]:
    args = (url, token, kernel_id, seconds, concurrency)
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        pool.map(_client_process, [(url, token, kernel_id, 0.5, concurrency)])  # warm up
        cpu = _cpu_seconds(pid)
        results = pool.map(_client_process, [args] * processes)
        cpu = _cpu_seconds(pid) - cpu
    latencies = sorted(lat for lats, _ in results for lat in lats)
    return {
        "requests": len(latencies),
        "errors": sum(errors for _, errors in results),
        "per_second": len(latencies) / seconds,
        "server_cpu_ms": 1000 * cpu / max(1, len(latencies)),
        "p50_ms": 1000 * latencies[len(latencies) // 2],
        "p95_ms": 1000 * latencies[int(len(latencies) * 0.95)],
    }


# -- 2. focus change -> waiting long poll ---------------------------------------------------


def poll_latency(url: str, token: str, kernel_id: str, rounds: int) -> list[float]:
    """Seconds from sending a focus change to a long poll (already waiting) answering."""
    headers = {"Authorization": f"token {token}"}
    feed = f"{url}jupyter-recap/api/kernels/{kernel_id}/events"

    async def run() -> list[float]:
        samples = []
        async with httpx.AsyncClient(headers=headers, timeout=30) as client:
            seq = (await client.get(feed, params={"since": 0, "timeout": 0})).json()["seq"]
            for n in range(rounds):
                poll = asyncio.ensure_future(client.get(feed, params={"since": seq, "timeout": 20}))
                await asyncio.sleep(0.02)  # the poll is parked on the server now
                # the only tab of this kernel: every report flips its aggregate
                body: dict[str, Any] = {
                    "kernel_id": kernel_id,
                    "path": "p.ipynb",
                    "client_id": "solo",
                }
                body["focused"] = n % 2 == 0
                sent = time.perf_counter()
                await client.post(f"{url}jupyter-recap/api/focus", json=body)
                answer = (await poll).json()
                samples.append(time.perf_counter() - sent)
                seq = answer["seq"]
        return samples

    return asyncio.run(run())


# -- 3. memory per kernel -------------------------------------------------------------------


def hub_memory(kernels: int, clients: int, events: int) -> float:
    """Bytes per kernel of a hub tracking ``kernels`` kernels (clients and events each)."""
    from jupyter_recap.focus.hub import FocusHub

    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    hub = FocusHub(clock=time.time)
    for k in range(kernels):
        kernel_id = f"{k:08d}-0000-4000-8000-{k:012d}"  # uuid-shaped, like real ids
        hub.set_execution(kernel_id, "idle")
        hub.set_banner(kernel_id, f"{k:032x}")
        for c in range(clients):
            hub.report(kernel_id, f"{c:08x}-client-{k}", f"work/notebook-{c}.ipynb", False)
        for n in range(events):
            hub.input(kernel_id)
            if n % 2:
                hub.report(kernel_id, f"{0:08x}-client-{k}", "work/notebook-0.ipynb", n % 4 == 1)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    used = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert len(hub.kernel_ids()) == kernels
    return used / kernels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="length of the POST phase")
    parser.add_argument("--processes", type=int, default=1, help="client processes")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight each")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp, running_server(Path(tmp)) as (url, token, pid):
        headers = {"Authorization": f"token {token}"}
        kernels = [
            httpx.post(f"{url}api/kernels", json={}, headers=headers, timeout=60).json()["id"]
            for _ in range(2)
        ]
        throughput = focus_throughput(
            url, token, pid, kernels[0], args.seconds, args.processes, args.concurrency
        )
        poll = poll_latency(url, token, kernels[1], rounds=40)
        for kernel_id in kernels:
            httpx.delete(f"{url}api/kernels/{kernel_id}", headers=headers, timeout=30)

    typical = hub_memory(1000, clients=3, events=10)
    worst = hub_memory(1000, clients=64, events=100)

    inflight = args.processes * args.concurrency
    print("## Server extension\n")
    print("| measure | result | target |")
    print("|---|---|---|")
    print(
        f"| `POST focus`, {args.seconds:g} s, {args.processes} client "
        f"process{'es' if args.processes != 1 else ''} × "
        f"{args.concurrency} connections ({inflight} in flight), {CLIENT_IDS} client ids "
        f"| **{throughput['per_second']:,.0f} req/s** ({throughput['requests']:,.0f} requests, "
        f"{throughput['errors']:.0f} errors) | ≥ 1,000 req/s |"
    )
    print(
        f"| `POST focus` latency under that load | p50 {throughput['p50_ms']:.1f} ms, "
        f"p95 {throughput['p95_ms']:.1f} ms | |"
    )
    cpu_ms = throughput["server_cpu_ms"]
    print(
        f"| server CPU per `POST focus` (whole jupyter_server request path) | {cpu_ms:.2f} ms "
        f"→ ≈ {1000 / cpu_ms:,.0f} req/s per server core | ≥ 1,000 req/s |"
    )
    print(
        f"| focus change → waiting long poll answers ({len(poll)} rounds) "
        f"| p50 {statistics.median(poll) * 1000:.1f} ms, max {max(poll) * 1000:.1f} ms | |"
    )
    print(
        f"| memory per tracked kernel, 1,000 kernels × 3 tabs, 10 events "
        f"| {typical / 1024:.1f} KiB | |"
    )
    print(
        f"| memory per tracked kernel, worst case (64 tabs, 100 events) "
        f"| {worst / 1024:.1f} KiB | |"
    )
    figure(
        "post_rate",
        f"{throughput['per_second']:,.0f} req/s (p50 {throughput['p50_ms']:.1f} ms, "
        f"p95 {throughput['p95_ms']:.1f} ms, {throughput['errors']:.0f} errors)",
        unit="",
        label=f"sustained focus POSTs, {inflight} connections × {args.seconds:g} s, loopback",
        target="≥ 1,000 req/s",
        met=throughput["per_second"] >= 1000 and throughput["errors"] == 0,
    )
    figure(
        "post_cpu",
        round(cpu_ms, 2),
        unit="ms",
        label="server CPU per focus POST (the whole jupyter_server request path)",
    )
    figure(
        "poll_wakeup",
        f"{statistics.median(poll) * 1000:.1f} / {max(poll) * 1000:.1f}",
        unit="ms",
        label=f"focus POST → a waiting long poll answers, p50 / max of {len(poll)}",
    )
    figure(
        "hub_memory",
        f"{typical / 1024:.1f} / {worst / 1024:.1f}",
        unit="KiB",
        label="server memory per tracked kernel: 3 tabs and 10 events / 64 tabs and 100 events",
    )


if __name__ == "__main__":
    main()
