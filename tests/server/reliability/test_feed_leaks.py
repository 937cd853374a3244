"""A kernel's focus feed connects and disconnects 100 times without leaking anything.

A kernel's feed is stopped and started again on every ``%unload_ext``/``%load_ext`` and loses its
connection whenever the network or the server hiccups. Over a long-running kernel these add up:
a thread, a socket or a server-side waiter left behind each time would grow without bound. The
server runs in this process (pytest-jupyter), so the descriptor and thread counts cover both
ends of every connection.
"""

from __future__ import annotations

import asyncio
import gc
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psutil
import pytest
from server_fixtures import *  # noqa: F403 - pytest-jupyter's fixtures, for this module only
from server_fixtures import asynctest

from jupyter_recap.ipython import link as link_module
from jupyter_recap.ipython.feed import FocusFeed
from jupyter_recap.ipython.link import ServerInfo

pytestmark = pytest.mark.timeout(240)

CYCLES = 100
WARM_UP = 3
#: Stops feeds (``FocusFeed.stop`` joins its thread, so not on the event loop). One worker:
#: asyncio's default executor adds a thread whenever a call comes before the last one's worker
#: is idle again, which on a loaded machine grew the thread count mid-test (a pool, not a leak).
STOPPER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="feed-stopper")


async def stop(feed: FocusFeed) -> None:
    await asyncio.get_running_loop().run_in_executor(STOPPER, feed.stop)


def new_feed(recap: Any, jp_serverapp: Any, jp_base_url: str, kernel_id: str) -> FocusFeed:
    """The feed a kernel started by this server would run, with that kernel's own key."""
    key = recap.kernel_manager.get_kernel(kernel_id).session.key
    url = f"http://127.0.0.1:{jp_serverapp.port}{jp_base_url}"
    return FocusFeed(
        ServerInfo(url, {}, "environment"),
        kernel_id,
        key=key,
        on_focus=lambda focused, at: None,
        on_input=lambda: None,
        banner_model_id="banner-model",
    )


def counts(recap: Any) -> dict[str, int]:
    process = psutil.Process()
    return {
        "threads": threading.active_count(),
        "os threads": process.num_threads(),
        "descriptors": process.num_fds(),
        "polls": recap.polls.count(),
        "kernels with polls": len(recap.polls.kernel_ids()),
        "hub kernels": len(recap.hub.kernel_ids()),
    }


def descriptor_kinds() -> dict[str, int]:
    """How many of this process's descriptors are sockets, pipes, eventfds... (for a failure)."""
    kinds: dict[str, int] = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the listing's own descriptor, closed already
            continue
        kind = target.split(":")[0] if ":" in target else "file"
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def thread_names() -> list[str]:
    return sorted(thread.name for thread in threading.enumerate())


async def until(predicate: Any, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.005)


async def steady(recap: Any, seconds: float = 1.0) -> dict[str, int]:
    """The counts once they have not changed for ``seconds`` (the baseline).

    The first request for a kernel makes the server subscribe to the kernel's IOPub, whose
    ZMQ sockets open their descriptors a moment later: the baseline waits for those. Servers of
    earlier tests in this process may still be collected, and the idle worker threads of their
    executors end only then: collect them first, so they do not end in the middle.
    """
    gc.collect()
    now = counts(recap)
    stable_since = time.monotonic()
    deadline = stable_since + 15
    while time.monotonic() - stable_since < seconds and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        latest = counts(recap)
        if latest != now:
            now, stable_since = latest, time.monotonic()
    return now


async def settled(recap: Any, before: dict[str, int], seconds: float = 30) -> dict[str, int]:
    """The counts, once they are back at ``before`` (or the last ones after ``seconds``).

    Closing is asynchronous on both ends (a thread exits after its join, the server notices a
    closed socket on its next loop turn), so the counts are given a moment to come back.
    """
    deadline = time.monotonic() + seconds
    collected = time.monotonic()
    now = counts(recap)
    while now != before and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        if time.monotonic() - collected > 1:
            # A closed connection's objects can sit in a reference cycle (a callback holding its
            # stream) until the collector runs; on a loaded machine that may be a while.
            gc.collect()
            collected = time.monotonic()
        now = counts(recap)
    return now


async def one_cycle(recap: Any, feed: FocusFeed, kernel_id: str) -> None:
    feed.start()
    # Connected and waiting in a long poll: the steady state of a kernel's feed.
    await until(lambda: feed.connected and recap.polls.count(kernel_id) == 1)
    await stop(feed)
    await until(lambda: recap.polls.count(kernel_id) == 0)


@asynctest
async def test_100_starts_and_stops_leak_nothing(
    recap: Any, jp_serverapp: Any, jp_base_url: str, kernel_id: str
) -> None:
    # One cycle first: imports, the SSL context, the stopper's worker thread.
    await one_cycle(recap, new_feed(recap, jp_serverapp, jp_base_url, kernel_id), kernel_id)
    before = await steady(recap, seconds=2.0)
    kinds_before = descriptor_kinds()
    assert before["polls"] == 0
    for _ in range(CYCLES):
        await one_cycle(recap, new_feed(recap, jp_serverapp, jp_base_url, kernel_id), kernel_id)
    after = await settled(recap, before)
    assert after == before, (
        f"descriptors were {kinds_before}, now {descriptor_kinds()}; threads {thread_names()}"
    )
    # Each feed announced its banner and, stopping (the extension unloaded), took it off again.
    assert recap.hub.snapshot(kernel_id).banner_model_id is None


@asynctest
async def test_a_feed_without_news_waits_instead_of_spinning(
    recap: Any,
    jp_serverapp: Any,
    jp_base_url: str,
    kernel_id: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No browser has reported on this kernel (VS Code, a closed tab): its seq stays 0."""
    reads = []
    events_since = recap.hub.events_since

    def counted(kernel: str, since: int) -> Any:
        reads.append(since)
        return events_since(kernel, since)

    monkeypatch.setattr(recap.hub, "events_since", counted)
    feed = new_feed(recap, jp_serverapp, jp_base_url, kernel_id)
    feed.start()
    try:
        await until(lambda: feed.connected and recap.polls.count(kernel_id) == 1)
        reads.clear()
        await asyncio.sleep(1.0)
        assert len(reads) <= 2, f"{len(reads)} feed reads in 1 s"  # one poll, held
        assert recap.polls.count(kernel_id) == 1
    finally:
        await stop(feed)


@asynctest
async def test_the_first_news_of_a_quiet_kernel_is_news(
    recap: Any, jp_serverapp: Any, jp_base_url: str, kernel_id: str, jp_fetch: Any
) -> None:
    """Events that end a long wait at seq 0 are delivered, not taken for old history."""
    calls: list[Any] = []
    key = recap.kernel_manager.get_kernel(kernel_id).session.key
    feed = FocusFeed(
        ServerInfo(f"http://127.0.0.1:{jp_serverapp.port}{jp_base_url}", {}, "environment"),
        kernel_id,
        key=key,
        on_focus=lambda focused, at: calls.append(("focus", focused)),
        on_input=lambda: calls.append(("input",)),
    )
    feed.start()
    try:
        await until(lambda: feed.connected and recap.polls.count(kernel_id) == 1)
        # One request, two events: the poll that was waiting at seq 0 gets both at once.
        recap.hub.report(kernel_id, "tab", "a.ipynb", True)
        recap.hub.input(kernel_id, "tab")
        await until(lambda: len(calls) >= 2)
        await asyncio.sleep(0.2)
        assert calls == [("focus", True), ("input",)]
    finally:
        await stop(feed)


class DroppingProxy:
    """A TCP proxy in front of the server whose connections can be cut, like a flaky network."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.listen_port = 0
        self.writers: list[asyncio.StreamWriter] = []
        self.server: asyncio.Server | None = None

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.listen_port = self.server.sockets[0].getsockname()[1]

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writers += [writer, up_writer]

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                sink.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        for closed in (writer, up_writer):
            if closed in self.writers:
                self.writers.remove(closed)

    def drop(self) -> int:
        """Cut every connection now (both ends see it closed); how many there were."""
        cut = len(self.writers) // 2
        for writer in self.writers:
            writer.transport.abort()
        return cut

    async def close(self) -> None:
        self.drop()
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


@asynctest
async def test_100_dropped_connections_leak_nothing(
    recap: Any,
    jp_serverapp: Any,
    jp_base_url: str,
    kernel_id: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The connection under a waiting poll is cut; the feed reconnects every time."""
    monkeypatch.setattr(link_module, "MIN_BACKOFF", 0.01)  # reconnect at once, not after 1 s
    proxy = DroppingProxy(jp_serverapp.port)
    await proxy.start()
    key = recap.kernel_manager.get_kernel(kernel_id).session.key
    feed = FocusFeed(
        ServerInfo(f"http://127.0.0.1:{proxy.listen_port}{jp_base_url}", {}, "environment"),
        kernel_id,
        key=key,
        on_focus=lambda focused, at: None,
        on_input=lambda: None,
    )
    feed.start()
    try:
        await until(lambda: feed.connected and recap.polls.count(kernel_id) == 1)
        # A few drops first, as the other test runs one cycle first: whatever a reconnect opens
        # once (the server's IOPub sockets for the kernel, late on a loaded machine) is then in
        # the baseline, and only what grows with the drops is counted.
        for n in range(WARM_UP):
            assert proxy.drop() == 1
            await until(lambda n=n: feed.connects == n + 2 and recap.polls.count(kernel_id) == 1)
        before = await steady(recap, seconds=2.0)
        kinds_before = descriptor_kinds()
        for n in range(WARM_UP, WARM_UP + CYCLES):
            assert proxy.drop() == 1
            await until(lambda n=n: feed.connects == n + 2 and recap.polls.count(kernel_id) == 1)
        after = await settled(recap, before)
        assert after == before, (
            f"descriptors were {kinds_before}, now {descriptor_kinds()}; threads {thread_names()}"
        )
    finally:
        await stop(feed)
        await proxy.close()
    await until(lambda: recap.polls.count() == 0)
