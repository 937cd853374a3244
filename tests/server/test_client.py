"""The Python client (jupyter_recap.client) against a real server, and its error handling.

The server runs in-process on pytest-jupyter's loop, so the synchronous client is called from a
thread (``asyncio.to_thread``): calling it on the loop would block the server it talks to.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import httpx
import pytest
from server_fixtures import *  # noqa: F403 - pytest-jupyter's fixtures, for this module only
from server_fixtures import asynctest

from jupyter_recap.client import RecapClient, SessionRecap
from jupyter_recap.errors import RecapError, ServerError
from jupyter_recap.record.transcript import Transcript
from jupyter_recap.stores.sessions import SessionWriter

T = TypeVar("T")


@pytest.fixture
def server_url(http_server: Any, jp_http_port: int, jp_base_url: str) -> str:
    """The test server's URL with its (prefixed) base URL (``http_server`` makes it listen)."""
    return f"http://127.0.0.1:{jp_http_port}{jp_base_url}"


@pytest.fixture
def client(server_url: str, jp_serverapp: Any) -> Iterator[RecapClient]:
    with RecapClient(server_url, token=jp_serverapp.identity_provider.token) as recap_client:
        yield recap_client


async def off_loop(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    return await asyncio.to_thread(call, *args, **kwargs)


def make_session(prompt: str, notebook: str | None = "a.ipynb") -> str:
    transcript = Transcript()
    transcript.user(prompt)
    transcript.assistant("Changed loader.py; the tests pass now.")
    writer = SessionWriter(transcript, notebook=notebook, kernel_id="k1", delay=60)
    writer.close()
    return writer.id


# -- against the server -----------------------------------------------------------------------


@asynctest
async def test_capabilities_and_sessions(client: RecapClient) -> None:
    features = (await off_loop(client.capabilities))["features"]
    assert {"session_recap", "sessions"} <= set(features)

    assert await off_loop(client.sessions) == []
    ids = [make_session(f"task {i}", "a.ipynb" if i % 2 else "b.ipynb") for i in range(17)]
    listed = await off_loop(client.sessions)
    assert [s.id for s in listed] == ids[::-1][:15]
    assert (listed[0].title, listed[0].turns, listed[0].notebook) == ("task 16", 1, "b.ipynb")
    assert [s.id for s in await off_loop(client.sessions, all=True)] == ids[::-1]
    only_a = await off_loop(client.sessions, notebook="a.ipynb", all=True)
    assert [s.id for s in only_a] == [i for n, i in enumerate(ids) if n % 2][::-1]


@asynctest
async def test_recap_session(client: RecapClient) -> None:
    session = make_session("fix the flaky CSV loader in utils")
    result = await off_loop(client.recap_session, session[:20], timeout=30)
    assert isinstance(result, SessionRecap)
    assert (result.session_id, result.model, result.reason) == (session, "offline", "ok")
    assert result.recap is not None and "CSV loader" in result.recap
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.recap = "x"  # type: ignore[misc]

    none = await off_loop(client.recap_session, session, model="openai:gpt-4o-mini")
    assert (none.recap, none.model) == (None, "openai:gpt-4o-mini")
    assert "OPENAI_API_KEY" in none.reason


@asynctest
async def test_errors_become_server_errors(
    client: RecapClient, server_url: str, jp_serverapp: Any
) -> None:
    session = make_session("one")
    cases = [(session.replace(session[:8], "00000000"), 404), ("../etc", 400), ("zzz", 400)]
    for bad, status in cases:
        with pytest.raises(ServerError) as caught:
            await off_loop(client.recap_session, bad)
        assert caught.value.status == status, bad
        assert isinstance(caught.value, RecapError)
        assert str(status) in str(caught.value) and "\n" not in str(caught.value)

    for token in (None, "not-the-token"):
        with RecapClient(server_url, token=token) as stranger:
            with pytest.raises(ServerError) as caught:
                await off_loop(stranger.sessions)
            assert caught.value.status == 403
            with pytest.raises(ServerError) as caught:
                await off_loop(stranger.recap_session, session)
            assert caught.value.status == 403

    # the base URL works without its trailing slash too
    with RecapClient(server_url.rstrip("/"), token=jp_serverapp.identity_provider.token) as c:
        assert (await off_loop(c.recap_session, session)).session_id == session


# -- without a server ---------------------------------------------------------------------------


def mock_client(handler: Callable[[httpx.Request], httpx.Response], **kwargs: Any) -> RecapClient:
    return RecapClient(
        "http://example.invalid/base", transport=httpx.MockTransport(handler), **kwargs
    )


def test_requests_carry_the_token_and_the_model() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200, json={"session_id": "abc", "recap": "r", "model": "offline", "reason": "ok"}
        )

    with mock_client(handler, token="s3cret") as client:
        answer = client.recap_session("a/b", model="offline")
    assert answer == SessionRecap("abc", "r", "offline", "ok")
    request = seen[0]
    assert request.headers["Authorization"] == "token s3cret"
    assert request.method == "POST"
    assert request.url.raw_path == b"/base/jupyter-recap/api/sessions/a%2Fb/recap"
    assert json.loads(request.content) == {"model": "offline"}

    with mock_client(handler) as client:
        client.recap_session("abc")
    assert "Authorization" not in seen[1].headers
    assert json.loads(seen[1].content) == {}


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(200, text="<html>"),
        httpx.Response(200, json=[1]),
        httpx.Response(200, json={"session_id": "a", "recap": 3, "model": None, "reason": "x"}),
        httpx.Response(200, json={"recap": None, "model": None, "reason": "x"}),
        httpx.Response(500, text="boom"),
    ],
)
def test_malformed_answers_are_server_errors(response: httpx.Response) -> None:
    with mock_client(lambda request: response) as client, pytest.raises(ServerError):
        client.recap_session("abc")


def test_malformed_listings_are_server_errors() -> None:
    for data in [{"sessions": [{"id": "a"}]}, {}, {"sessions": 3}]:

        def answer(request: httpx.Request, data: object = data) -> httpx.Response:
            return httpx.Response(200, json=data)

        listing = mock_client(answer)
        with listing as client, pytest.raises(ServerError):
            client.sessions()
    capabilities = mock_client(lambda request: httpx.Response(200, json={"version": "1"}))
    with capabilities as client, pytest.raises(ServerError):
        client.capabilities()


def test_no_server_is_a_server_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    unreachable = RecapClient(f"http://127.0.0.1:{port}/", timeout=2)
    with unreachable as client, pytest.raises(ServerError) as caught:
        client.capabilities()
    assert caught.value.status == 0

    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("too slow", request=request)

    with mock_client(slow) as client, pytest.raises(ServerError, match="no answer in time"):
        client.recap_session("abc", timeout=0.1)
