"""The session routes through a real jupyter_server: listing, recaps, errors, auth, hang-ups.

As in test_server.py: the prefixed base URL (``/a%40b/``) and
``allow_unauthenticated_access=False``. The store is a temporary ``JUPYTER_RECAP_HOME``.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fakellm import FakeLLM, hang, slow
from server_fixtures import *  # noqa: F403 - pytest-jupyter's fixtures, for this module only
from server_fixtures import asynctest
from tornado.httpclient import HTTPClientError

from jupyter_recap.record.transcript import Transcript
from jupyter_recap.stores.sessions import SessionWriter

API = ("jupyter-recap", "api")
NO_AUTH = {"Authorization": ""}


def make_session(
    prompt: str, notebook: str | None = "a.ipynb", *, prompts: int = 1, recap: str | None = None
) -> str:
    """Write a stored session whose first prompt is ``prompt`` (then ``recap``, if given);
    returns its id."""
    transcript = Transcript()
    for index in range(prompts):
        transcript.user(prompt if index == 0 else f"{prompt} (again {index})")
        transcript.assistant("Changed loader.py; the tests pass now.")
    if recap is not None:
        transcript.recap(recap, model="offline")
    writer = SessionWriter(transcript, notebook=notebook, kernel_id="k1", delay=60)
    writer.close()
    time.sleep(0.01)  # distinct ``updated`` times, so the listing order is well defined
    return writer.id


def recap_post(body: Any = "", **kwargs: Any) -> dict[str, Any]:
    return {"method": "POST", "body": body, "allow_nonstandard_methods": True, **kwargs}


# -- recap ------------------------------------------------------------------------------------


@asynctest
async def test_recap_with_the_offline_engine(api: Any) -> None:
    session = make_session("fix the flaky CSV loader in utils")
    code, answer = await api("sessions", session, "recap", **recap_post())
    assert code == 200
    assert set(answer) == {"session_id", "recap", "model", "reason"}
    assert (answer["session_id"], answer["model"], answer["reason"]) == (session, "offline", "ok")
    assert "CSV loader" in answer["recap"]

    # a unique prefix works, and the answer names the full id
    code, answer = await api("sessions", session[:30], "recap", **recap_post({}))
    assert (code, answer["session_id"]) == (200, session)
    code, answer = await api("sessions", session, "recap", **recap_post({"model": "offline"}))
    assert (code, answer["model"]) == (200, "offline")


@asynctest
async def test_recap_uses_the_stored_task_list(api: Any) -> None:
    transcript = Transcript()
    transcript.user("fix the flaky CSV loader in utils")
    transcript.assistant("I read utils/loader.py.")  # names no next step
    writer = SessionWriter(transcript, notebook="a.ipynb", kernel_id="k1", delay=60)
    writer.set_tasks(
        [
            {"text": "read utils/loader.py", "status": "completed", "note": ""},
            {"text": "pin the date format", "status": "in_progress", "note": ""},
        ]
    )
    writer.close()
    code, answer = await api("sessions", writer.id, "recap", **recap_post())
    assert code == 200
    assert answer["recap"].endswith("Next: Pin the date format (1 of 2 tasks done).")


@asynctest
async def test_no_recap_is_a_200_with_the_reason(api: Any) -> None:
    session = make_session("tune the model")
    body = {"model": "openai:gpt-4o-mini"}  # no OPENAI_API_KEY in the tests' environment
    code, answer = await api("sessions", session, "recap", **recap_post(body))
    assert code == 200
    assert answer["session_id"] == session
    assert answer["recap"] is None
    assert answer["model"] == "openai:gpt-4o-mini"
    assert "OPENAI_API_KEY" in answer["reason"]


@asynctest
async def test_recap_errors(api: Any, store: Path) -> None:
    first, second = make_session("one"), make_session("two")
    ghost = "0" * 8 + first[8:]
    code, answer = await api("sessions", ghost, "recap", **recap_post())
    assert (code, list(answer)) == (404, ["message"])
    assert "no session" in answer["message"]

    for bad in ["zzz", "..%2Fetc", "ZZZ-1", "a" * 40]:
        code, answer = await api("sessions", bad, "recap", **recap_post())
        assert (code, list(answer)) == (400, ["message"]), bad
        assert "not a session id" in answer["message"]

    shared = os.path.commonprefix([first, second])  # noqa: RUF071 - ids, not paths
    assert shared  # UUIDv7 ids written a moment apart share their timestamp's head
    code, answer = await api("sessions", shared, "recap", **recap_post())
    assert (code, list(answer)) == (400, ["message"])
    assert "ambiguous" in answer["message"]

    for body in ["{nope", "[1]", {"model": 3}, {"model": ""}]:
        code, answer = await api("sessions", first, "recap", **recap_post(body))
        assert (code, list(answer)) == (400, ["message"]), body


@asynctest
async def test_a_hang_up_aborts_the_model_call(
    api: Any, jp_fetch: Any, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    session = make_session("slow model please")
    fake_llm.respond(slow(30))
    body = {"model": "openai:gpt-4o-mini"}
    started = time.monotonic()
    with pytest.raises(HTTPClientError) as gave_up:
        hurried = recap_post(json.dumps(body), request_timeout=1.0)
        await jp_fetch(*API, "sessions", session, "recap", **hurried)
    assert gave_up.value.code == 599  # the client timed out and closed its connection
    while not fake_llm.disconnects and time.monotonic() - started < 6:
        await asyncio.sleep(0.05)
    assert fake_llm.disconnects, "the model call went on after the client hung up"
    assert fake_llm.disconnects[0] - started < 6
    assert len(fake_llm.requests) == 1
    # the server is fine afterwards
    fake_llm.respond()
    code, answer = await api("sessions", session, "recap", **recap_post(body))
    assert (code, answer["model"], answer["reason"]) == (200, "openai:gpt-4o-mini", "ok")
    assert "CSV loader" in answer["recap"]


def our_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("jupyter-recap")]


@asynctest
async def test_the_server_shutdown_stops_a_draft_and_our_threads(
    api: Any, jp_serverapp: Any, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """jupyter_server's own shutdown stops the extension: a model call that never answers is
    aborted, not waited for, and no thread of ours outlives the server (the interpreter would
    wait for a pool thread at exit)."""
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    session = make_session("a model that never answers")
    fake_llm.respond(hang())
    body = json.dumps({"model": "openai:gpt-4o-mini"})
    post = asyncio.ensure_future(api("sessions", session, "recap", **recap_post(body)))
    deadline = time.monotonic() + 10
    while not fake_llm.requests and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert fake_llm.requests, "the draft never reached the model"
    assert our_threads()  # positive control: the draft runs on a thread of ours

    started = time.monotonic()
    await jp_serverapp.cleanup_extensions()  # the first step of the server's shutdown
    assert time.monotonic() - started < 3, "the hanging model call held up the shutdown"
    while our_threads() and time.monotonic() - started < 3:
        await asyncio.sleep(0.05)
    assert our_threads() == []
    # The model call was aborted (the fake never answers): the draft ended as cancelled.
    code, answer = await asyncio.wait_for(post, 5)
    assert (code, answer["recap"], answer["reason"]) == (200, None, "cancelled")
    # Stopped means stopped: no new draft starts, and the answer says why.
    code, answer = await api("sessions", session, "recap", **recap_post(body))
    assert code == 503 and "shutting down" in answer["message"]


# -- listing ----------------------------------------------------------------------------------


@asynctest
async def test_listing_order_limit_and_notebook(api: Any) -> None:
    assert await api("sessions") == (200, {"sessions": []})  # no store directory yet
    old = make_session("first task", "a.ipynb", prompts=2)
    mid = make_session("second task", "b.ipynb")
    new = make_session("third task", "sub/../a.ipynb")

    code, answer = await api("sessions")
    assert code == 200
    items = answer["sessions"]
    assert [item["id"] for item in items] == [new, mid, old]
    assert set(items[0]) == {
        "id",
        "updated",
        "title",
        "turns",
        "notebook",
        "last_recap",
        "progress",
        "first_prompt",
    }
    assert (items[2]["title"], items[2]["turns"], items[2]["notebook"]) == (
        "first task",
        2,
        "a.ipynb",
    )
    assert items[0]["updated"] >= items[1]["updated"] >= items[2]["updated"]

    code, answer = await api("sessions", params={"limit": 2})
    assert [item["id"] for item in answer["sessions"]] == [new, mid]
    code, answer = await api("sessions", params={"notebook": "a.ipynb"})
    assert [item["id"] for item in answer["sessions"]] == [new, old]
    code, answer = await api("sessions", params={"notebook": "./a.ipynb", "limit": 1})
    assert [item["id"] for item in answer["sessions"]] == [new]
    code, answer = await api("sessions", params={"notebook": "nope.ipynb"})
    assert (code, answer) == (200, {"sessions": []})

    for limit in ["x", "0", "-1", "1001", "2.5"]:
        code, answer = await api("sessions", params={"limit": limit})
        assert (code, list(answer)) == (400, ["message"]), limit
    assert (await api("sessions", params={"limit": 1000}))[0] == 200


@asynctest
async def test_the_default_limit_is_15(api: Any) -> None:
    for index in range(17):
        make_session(f"task {index}")
    code, answer = await api("sessions")
    assert (code, len(answer["sessions"])) == (200, 15)
    assert answer["sessions"][0]["title"] == "task 16"


@asynctest
async def test_listing_has_the_living_title_and_the_first_prompt(api: Any) -> None:
    asked = "the CSV loader drops rows, can you look"
    session = make_session(asked, recap="Task: strip the BOM in utils.load_csv. Next: rerun.")
    kept = make_session("plot churn by cohort")
    code, answer = await api("sessions")
    assert code == 200
    by_id = {item["id"]: item for item in answer["sessions"]}
    assert (by_id[session]["title"], by_id[session]["first_prompt"]) == (
        "Strip the BOM in utils.load_csv",
        asked,
    )
    assert by_id[session]["last_recap"] == "Task: strip the BOM in utils.load_csv. Next: rerun."
    assert by_id[kept]["title"] == by_id[kept]["first_prompt"] == "plot churn by cohort"


# -- auth and capabilities --------------------------------------------------------------------


@asynctest
async def test_the_session_routes_need_authentication(api: Any) -> None:
    session = make_session("secret work")
    for parts, kwargs in [
        (("sessions",), {}),
        (("sessions", session, "recap"), recap_post()),
    ]:
        code, answer = await api(*parts, headers=dict(NO_AUTH), **kwargs)
        assert (code, list(answer)) == (403, ["message"]), parts
        token = {"Authorization": "token not-the-token"}
        assert (await api(*parts, headers=token, **kwargs))[0] == 403, parts


@asynctest
async def test_capabilities_announce_the_session_routes(api: Any) -> None:
    code, answer = await api("capabilities")
    assert code == 200
    assert {"session_recap", "sessions"} <= set(answer["features"])
