"""Long polls are bounded per kernel and per server, so no client can exhaust the server.

Each waiting ``GET …/kernels/{id}/events`` holds a socket (a file descriptor) and a task. Before
the bounds, ~1,100 of them took a server with the usual 1,024-descriptor limit down for every
user of it. Now a kernel holds at most ``max_polls_per_kernel`` (a new poll answers its oldest
one at once, so a reconnecting kernel never locks itself out) and the server at most
``max_polls`` (beyond it: 429 with ``Retry-After``, and the kernel's feed backs off).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from server_fixtures import *  # noqa: F403 - pytest-jupyter's fixtures, for this module only
from server_fixtures import asynctest
from tornado.httpclient import HTTPResponse

from jupyter_recap.ipython.feed import FocusFeed
from jupyter_recap.ipython.link import ServerInfo

pytestmark = pytest.mark.timeout(120)

#: How long an answer that must come may take: generous, since these run beside the browser
#: tests on a loaded two-core machine (a poll that should answer and never does still fails).
ANSWER_WITHIN = 90  # generous: a loaded machine is slower, never wrong


@pytest.fixture
def http(recap_fetch: Any, jp_serverapp: Any) -> Any:
    """``await http(method, "kernels/…/events?…", body)`` → the response, never raising."""
    token = {"Authorization": f"token {jp_serverapp.identity_provider.token}"}
    return lambda method, route, body=None: recap_fetch(method, route, headers=token, body=body)


def poll(http: Any, kernel_id: str, since: int = 0, timeout: float = 30) -> Any:
    """A waiting poll, as a task (``since`` must be the kernel's seq for it to wait)."""
    route = f"kernels/{kernel_id}/events?since={since}&timeout={timeout:g}"
    return asyncio.ensure_future(http("GET", route))


async def until(predicate: Any, seconds: float = ANSWER_WITHIN) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


def feed_of(response: HTTPResponse) -> dict[str, Any]:
    assert response.code == 200, (response.code, response.body)
    data: dict[str, Any] = json.loads(response.body)
    return data


async def focus(http: Any, kernel_id: str, focused: bool) -> None:
    body = {"kernel_id": kernel_id, "path": "a.ipynb", "focused": focused, "client_id": "t"}
    assert (await http("POST", "focus", body)).code == 200


@pytest.mark.parametrize("recap_config", [{"max_polls_per_kernel": 1}])
@asynctest
async def test_a_poll_beyond_the_kernel_bound_answers_the_oldest_at_once(
    http: Any, kernel_id: str, recap: Any
) -> None:
    await focus(http, kernel_id, True)
    first = poll(http, kernel_id, since=1)
    await until(lambda: recap.polls.count(kernel_id) == 1)
    started = time.monotonic()
    second = poll(http, kernel_id, since=1)
    answer = feed_of(await asyncio.wait_for(first, ANSWER_WITHIN))
    assert time.monotonic() - started < 2  # answered at once, not after its 30 s
    assert (answer["seq"], answer["events"], answer["focused"]) == (1, [], True)
    await until(lambda: recap.polls.count(kernel_id) == 1)
    assert not second.done()  # the newest poll is the one held
    await focus(http, kernel_id, False)
    answer = feed_of(await asyncio.wait_for(second, ANSWER_WITHIN))
    assert [(e["seq"], e["focused"]) for e in answer["events"]] == [(2, False)]
    await until(lambda: recap.polls.count() == 0)
    assert recap.polls.evicted == 1


@asynctest
async def test_a_reconnecting_kernel_is_never_locked_out_by_default(
    http: Any, kernel_id: str, recap: Any
) -> None:
    bound = recap.max_polls_per_kernel
    assert 1 <= bound <= 4  # a kernel needs one; a little slack for a reconnect
    waiting: list[Any] = []
    for n in range(1, bound + 4):  # a kernel that lost its connections several times
        waiting.append(poll(http, kernel_id))
        await until(lambda n=n: recap.polls.count(kernel_id) + recap.polls.evicted == n)
    assert recap.polls.count(kernel_id) == bound
    await until(lambda: sum(task.done() for task in waiting) == 3)
    assert [task.done() for task in waiting] == [True] * 3 + [False] * bound  # oldest first
    for task in waiting[:3]:
        assert feed_of(task.result())["events"] == []
    await focus(http, kernel_id, True)
    for task in waiting[3:]:
        assert len(feed_of(await asyncio.wait_for(task, ANSWER_WITHIN))["events"]) == 1


@pytest.mark.parametrize("recap_config", [{"max_polls": 3, "max_polls_per_kernel": 10}])
@asynctest
async def test_beyond_the_server_bound_a_poll_gets_429_with_retry_after(
    http: Any, kernel_id: str, recap: Any
) -> None:
    held = [poll(http, kernel_id) for _ in range(3)]
    await until(lambda: recap.polls.count() == 3)
    refused = [await http("GET", f"kernels/{kernel_id}/events?since=0&timeout=30") for _ in "ab"]
    for response in refused:
        assert response.code == 429
        assert int(response.headers["Retry-After"]) >= 1
        message = json.loads(response.body)["message"]
        assert "\n" not in message and "3" in message
    assert recap.polls.count() == 3 and recap.polls.refused == 2
    # A poll that does not wait is never refused: a kernel can always read the current state.
    assert feed_of(await http("GET", f"kernels/{kernel_id}/events?timeout=0"))["seq"] == 0
    await focus(http, kernel_id, True)
    for task in held:
        assert len(feed_of(await asyncio.wait_for(task, ANSWER_WITHIN))["events"]) == 1
    await until(lambda: recap.polls.count() == 0)
    again = poll(http, kernel_id, since=1)
    await until(lambda: recap.polls.count() == 1)  # room again: held, not refused
    await focus(http, kernel_id, False)
    feed_of(await asyncio.wait_for(again, ANSWER_WITHIN))


@pytest.mark.parametrize("recap_config", [{"max_polls": 2, "max_polls_per_kernel": 2}])
@asynctest
async def test_a_full_server_still_lets_a_kernel_replace_its_own_poll(
    http: Any, jp_fetch: Any, recap: Any
) -> None:
    a, b = [
        json.loads((await jp_fetch("api", "kernels", method="POST", body="{}")).body)["id"]
        for _ in "ab"
    ]
    # One at a time: two polls sent together reach the server in either order, and the test
    # needs to know which one is the oldest.
    held = [poll(http, a)]
    await until(lambda: recap.polls.count() == 1)
    held.append(poll(http, a))
    await until(lambda: recap.polls.count() == 2)
    assert (await http("GET", f"kernels/{b}/events?since=0&timeout=30")).code == 429
    again = poll(http, a)  # kernel a reconnects: its oldest poll answers, the new one waits
    feed_of(await asyncio.wait_for(held[0], ANSWER_WITHIN))
    await until(lambda: recap.polls.count(a) == 2)
    assert not held[1].done() and not again.done()
    await focus(http, a, True)
    await asyncio.wait_for(asyncio.gather(held[1], again), ANSWER_WITHIN)


@pytest.mark.parametrize("recap_config", [{"max_polls": 1, "max_polls_per_kernel": 10}])
@asynctest
async def test_the_feed_backs_off_when_the_server_is_full(
    http: Any, kernel_id: str, recap: Any, jp_serverapp: Any, jp_base_url: str
) -> None:
    holder = poll(http, kernel_id)  # someone else holds the server's only slot
    await until(lambda: recap.polls.count() == 1)
    token = {"Authorization": f"token {jp_serverapp.identity_provider.token}"}
    url = f"http://localhost:{jp_serverapp.port}{jp_base_url}"
    feed = FocusFeed(
        ServerInfo(url, token, "environment"),
        kernel_id,
        on_focus=lambda focused, at: None,
        on_input=lambda: None,
    )
    feed.start()
    try:
        # Its current-state read worked (never refused), then its waiting poll got 429.
        await until(lambda: "429" in (feed.last_error or ""))
        assert feed.connects == 1 and recap.polls.refused == 1
        await asyncio.sleep(3)
        assert recap.polls.refused == 1  # it waits for the server, not hammering it
        assert feed.stopped_because is None  # and it will try again later
    finally:
        await asyncio.to_thread(feed.stop)
    await focus(http, kernel_id, True)
    feed_of(await asyncio.wait_for(holder, ANSWER_WITHIN))
