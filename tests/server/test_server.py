"""The server extension through a real jupyter_server: routes, auth, the feed, kernels.

The server runs under the prefixed base URL pytest-jupyter uses (``/a%40b/``), which catches
URL joins that only work at ``/``, and with ``allow_unauthenticated_access=False``.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import warnings
from collections.abc import Iterator
from http.cookies import SimpleCookie
from types import SimpleNamespace
from typing import Any
from unittest.mock import ANY
from urllib.parse import urlencode

import pytest
from jupyter_client.jsonutil import json_default
from jupyter_client.session import Session
from server_fixtures import *  # noqa: F403 - pytest-jupyter's fixtures, for this module only
from server_fixtures import asynctest
from tornado.httpclient import HTTPClientError

from jupyter_recap.focus.hub import FocusHub
from jupyter_recap.server import SECRET_ENV, URL_ENV, kernel_facing_url
from jupyter_recap.server.watcher import ExecutionWatcher, next_state
from jupyter_recap.wire import KERNEL_HEADER, kernel_proof

API = ("jupyter-recap", "api")
NO_AUTH = {"Authorization": ""}
FAST_HEARTBEAT = {"heartbeat_timeout": 0.3, "reconcile_interval": 0.1}


def focus(kernel: str, focused: bool, client: str = "tab1", path: str = "a.ipynb") -> Any:
    return {"kernel_id": kernel, "path": path, "focused": focused, "client_id": client}


def post(body: Any, **kwargs: Any) -> dict[str, Any]:
    return {"method": "POST", "body": body, **kwargs}


def put(body: Any, **kwargs: Any) -> dict[str, Any]:
    return {"method": "PUT", "body": body, **kwargs}


def events(since: int = 0, timeout: float = 0, **kwargs: Any) -> dict[str, Any]:
    return {"params": {"since": since, "timeout": timeout}, **kwargs}


# -- routes ---------------------------------------------------------------------------------


@asynctest
async def test_capabilities(api: Any) -> None:
    from jupyter_recap import __version__

    features = [
        "focus",
        "focus_batch",
        "input",
        "feed",
        "banner",
        "session_recap",
        "sessions",
        "agents",
        "usage",
        "changes",
    ]
    answer = {"version": __version__, "features": features, "heartbeat_seconds": 15.0}
    assert await api("capabilities") == (200, answer)


@asynctest
async def test_focus_input_banner_and_kernel_state(api: Any, kernel_id: str) -> None:
    assert await api("kernels", kernel_id) == (
        200,
        {
            "kernel_id": kernel_id,
            "focused": None,
            "banner_model_id": None,
            "execution_state": ANY,
            "idle_seconds": ANY,
        },
    )
    answer = {
        "kernel_id": kernel_id,
        "focused": True,
        "banner_model_id": None,
        "agents_version": 0,
        "recapped": False,
    }
    assert await api("focus", **post(focus(kernel_id, True))) == (200, answer)
    assert await api("kernels", kernel_id, "banner", **put({"model_id": "m7"})) == (200, {})
    answer = {
        "kernel_id": kernel_id,
        "focused": False,
        "banner_model_id": "m7",
        "agents_version": 0,
        "recapped": False,
    }
    assert await api("focus", **post(focus(kernel_id, False))) == (200, answer)
    assert await api("input", **post({"kernel_id": kernel_id, "client_id": "tab1"})) == (200, {})

    code, feed = await api("kernels", kernel_id, "events", **events())
    assert code == 200
    assert [(e["seq"], e["type"], e.get("focused")) for e in feed["events"]] == [
        (1, "focus", True),
        (2, "focus", False),
        (3, "input", None),
    ]
    assert abs(feed["events"][0]["at"] - time.time()) < 60
    assert (feed["seq"], feed["focused"], feed["focus_supported"]) == (3, False, True)
    assert set(feed) == {
        "seq",
        "events",
        "focused",
        "focus_supported",
        "execution_state",
        "idle_seconds",
    }
    code, state = await api("kernels", kernel_id)
    assert (state["focused"], state["banner_model_id"]) == (False, "m7")
    assert await api("kernels", kernel_id, "banner", **put({"model_id": None})) == (200, {})
    assert (await api("kernels", kernel_id))[1]["banner_model_id"] is None


@asynctest
async def test_two_tabs_and_two_notebooks_aggregate(api: Any, kernel_id: str) -> None:
    async def report(*args: Any) -> bool:
        code, answer = await api("focus", **post(focus(kernel_id, *args)))
        assert code == 200
        return bool(answer["focused"])

    assert await report(True, "tab1", "a.ipynb") is True
    assert await report(False, "tab2", "a.ipynb") is True  # another tab, not focused
    assert await report(True, "tab2", "b.ipynb") is True  # the same kernel in a second notebook
    assert await report(False, "tab1", "a.ipynb") is True
    assert await report(False, "tab2", "b.ipynb") is False
    code, feed = await api("kernels", kernel_id, "events", **events())
    assert code == 200
    assert [e["focused"] for e in feed["events"]] == [True, False]


@asynctest
async def test_a_page_reports_every_notebook_in_one_request(api: Any, kernel_id: str) -> None:
    """A page's batch: each report answered in order, a kernel that is gone answered with its
    404 while the others count, and ``recapped`` once the kernel's extension polled its feed."""
    gone = "0" * 32
    batch = {
        "client_id": "tab1",
        "reports": [
            {"kernel_id": kernel_id, "path": "a.ipynb", "focused": True},
            {"kernel_id": gone, "path": "old.ipynb", "focused": False},
            {"chat": "dir/churn.chat", "focused": False},
        ],
    }
    code, answer = await api("focus", **post(batch))
    assert code == 200
    first, missing, chat = answer["answers"]
    assert (first["kernel_id"], first["focused"], first["recapped"]) == (kernel_id, True, False)
    assert (missing["kernel_id"], missing["status"]) == (gone, 404)
    assert "no running kernel" in missing["error"]
    assert (chat["id"], chat["focused"]) == ("chat:dir/churn.chat", False)
    assert answer["agents_version"] == 0
    code, feed = await api("kernels", kernel_id, "events", **events())
    assert [e["focused"] for e in feed["events"]] == [True]  # the batch's report counted
    # The kernel polled its feed (just now): its notebook's answers say so from now on.
    batch["reports"] = [{"kernel_id": kernel_id, "path": "a.ipynb", "focused": False}]
    code, answer = await api("focus", **post(batch))
    assert answer["answers"][0]["recapped"] is True
    assert (await api("kernels", kernel_id, "events", **events(since=1)))[1]["focused"] is False


@asynctest
async def test_a_bad_report_in_a_batch_is_named_in_the_400(api: Any, kernel_id: str) -> None:
    good = {"kernel_id": kernel_id, "path": "a.ipynb", "focused": True}
    for reports, message in [
        ("all", "reports: must be a list"),
        ([good, 3], "reports.1: must be an object"),
        ([good, {**good, "focused": "yes"}], "reports.1.focused: must be true or false"),
        ([{"chat": "notes.txt", "focused": True}], "reports.0.chat: not the path of a .chat file"),
        ([{"chat": "a.chat", "focused": True}] * 257, "reports: more than 256 reports"),
    ]:
        code, answer = await api("focus", **post({"client_id": "tab1", "reports": reports}))
        assert (code, answer) == (400, {"message": message})
    code, answer = await api("focus", **post({"reports": [good]}))
    assert (code, answer) == (400, {"message": "client_id: missing"})
    # Nothing of a refused batch counted.
    assert (await api("kernels", kernel_id))[1]["focused"] is None


# -- errors ---------------------------------------------------------------------------------

BAD_BODIES = [
    ("focus", "{not json"),
    ("focus", "[1, 2]"),
    ("focus", {"kernel_id": "K", "path": "a", "focused": True}),  # no client_id
    ("focus", {**focus("K", True), "focused": "yes"}),
    ("focus", {**focus("K", True), "focused": 1}),  # a number is not a bool
    ("focus", {**focus("K", True), "kernel_id": 5}),
    ("focus", {**focus("K", True), "path": None}),
    ("input", {"kernel_id": "K"}),
    ("input", {"kernel_id": "K", "client_id": None}),
    ("kernels/K/banner", {"model_id": 3}),
    ("kernels/K/banner", {"model_id": True}),
    ("kernels/K/banner", ""),
]


@asynctest
async def test_malformed_bodies_are_400(api: Any, kernel_id: str) -> None:
    for route, bad in BAD_BODIES:
        body = bad if isinstance(bad, str) else json.dumps(bad).replace('"K"', f'"{kernel_id}"')
        method = "PUT" if route.endswith("banner") else "POST"
        parts = route.replace("K", kernel_id).split("/")
        code, answer = await api(*parts, method=method, body=body)
        assert code == 400, (route, bad)
        assert list(answer) == ["message"]
        assert answer["message"] and "\n" not in answer["message"]


@asynctest
async def test_a_bad_field_is_named_in_the_400(api: Any, kernel_id: str) -> None:
    """The same ``<field>: <why>`` lines as an agent report's ``ignored`` (one set of readers)."""
    for route, method, body, message in [
        (
            "focus",
            "POST",
            {**focus(kernel_id, True), "focused": 1},
            "focused: must be true or false",
        ),
        (
            "focus",
            "POST",
            {"kernel_id": kernel_id, "path": "a", "focused": True},
            "client_id: missing",
        ),
        (
            "focus",
            "POST",
            focus(kernel_id, True, path="p" * 5000),
            "path: longer than 4096 characters",
        ),
        ("input", "POST", {"kernel_id": 5, "client_id": "t"}, "kernel_id: must be a string"),
        (f"kernels/{kernel_id}/banner", "PUT", {"model_id": 3}, "model_id: must be a string"),
    ]:
        code, answer = await api(*route.split("/"), method=method, body=json.dumps(body))
        assert (code, answer) == (400, {"message": message}), route
    code, answer = await api("kernels", kernel_id, "events", params={"since": 1.5})
    assert (code, answer) == (400, {"message": "since: must be an integer"})


@asynctest
async def test_malformed_feed_parameters_are_400(api: Any, kernel_id: str) -> None:
    for params in [
        {"since": "abc"},
        {"since": -1},
        {"since": 1.5},
        {"timeout": "soon"},
        {"timeout": "nan"},
        {"timeout": -2},
    ]:
        code, answer = await api("kernels", kernel_id, "events", params=params)
        assert (code, list(answer)) == (400, ["message"]), params


@asynctest
async def test_oversized_bodies_are_413(api: Any, kernel_id: str) -> None:
    big = {**focus(kernel_id, True), "path": "x" * 17_000}
    assert (await api("focus", **post(big)))[0] == 413
    big_input = {"kernel_id": kernel_id, "client_id": "x" * 17_000}
    assert (await api("input", **post(big_input)))[0] == 413
    code, answer = await api("kernels", kernel_id, "banner", **put({"model_id": "m" * 17_000}))
    assert code == 413
    assert "16384" in answer["message"]
    assert (await api("focus", **post(focus(kernel_id, True))))[0] == 200  # 16 KiB is plenty


@pytest.mark.parametrize("recap_config", [{"max_body_bytes": 64}])
@asynctest
async def test_the_body_limit_is_a_setting(api: Any, kernel_id: str) -> None:
    code, _ = await api("focus", **post(focus(kernel_id, True, client="c" * 40)))
    assert code == 413


@asynctest
async def test_unknown_kernels_are_404(api: Any, kernel_id: str) -> None:
    ghost = "00000000-0000-0000-0000-000000000000"
    for parts, kwargs in [
        (("focus",), post(focus(ghost, True))),
        (("input",), post({"kernel_id": ghost, "client_id": "t"})),
        (("kernels", ghost), {}),
        (("kernels", ghost, "banner"), put({"model_id": "m"})),
        (("kernels", ghost, "events"), events()),
    ]:
        code, answer = await api(*parts, **kwargs)
        assert (code, list(answer)) == (404, ["message"]), parts
        assert ghost in answer["message"]


# -- authentication -------------------------------------------------------------------------


def kernel_headers(recap: Any, kernel_id: str) -> dict[str, str]:
    """What the kernel itself sends: the proof made with its own connection key."""
    key = recap.kernel_manager.get_kernel(kernel_id).session.key
    return {KERNEL_HEADER: kernel_proof(key, kernel_id)}


def every_route(kernel: str) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    return [
        (("capabilities",), {}),
        (("focus",), post(focus(kernel, True))),
        (("input",), post({"kernel_id": kernel, "client_id": "t"})),
        (("kernels", kernel), {}),
        (("kernels", kernel, "banner"), put({"model_id": "m"})),
        (("kernels", kernel, "events"), events()),
    ]


@asynctest
async def test_every_route_needs_authentication(api: Any, kernel_id: str) -> None:
    for parts, kwargs in every_route(kernel_id):
        code, answer = await api(*parts, headers=dict(NO_AUTH), **kwargs)
        assert (code, list(answer)) == (403, ["message"]), parts
        wrong = {**NO_AUTH, KERNEL_HEADER: "not-the-proof"}
        assert (await api(*parts, headers=wrong, **kwargs))[0] == 403, parts
        token = {"Authorization": "token not-the-token"}
        assert (await api(*parts, headers=token, **kwargs))[0] == 403, parts


@asynctest
async def test_the_kernel_proof_opens_kernel_routes_only(
    api: Any, kernel_id: str, recap: Any
) -> None:
    proof = {**NO_AUTH, **kernel_headers(recap, kernel_id)}
    for parts, kwargs in every_route(kernel_id):
        code, _ = await api(*parts, headers=dict(proof), **kwargs)
        kernel_route = parts[-1] in ("banner", "events")
        assert code == (200 if kernel_route else 403), parts


@asynctest
async def test_browser_posts_keep_xsrf_protection(
    jp_fetch: Any, api: Any, kernel_id: str, jp_serverapp: Any, recap: Any
) -> None:
    """A cookie-authenticated POST needs the XSRF header; the kernel's proven PUT does not."""
    page = await jp_fetch("login", headers=dict(NO_AUTH))
    jar: SimpleCookie = SimpleCookie()
    for header in page.headers.get_list("Set-Cookie"):
        jar.load(header)
    xsrf = jar["_xsrf"].value
    form = {"_xsrf": xsrf, "password": jp_serverapp.identity_provider.token}
    cookie = f"_xsrf={xsrf}"
    try:
        await jp_fetch(
            "login",
            method="POST",
            body=urlencode(form),
            headers={**NO_AUTH, "Cookie": cookie},
            follow_redirects=False,
        )
    except HTTPClientError as redirect:  # 302 to the app: logged in
        assert redirect.code == 302
        assert redirect.response is not None
        for header in redirect.response.headers.get_list("Set-Cookie"):
            jar.load(header)
    cookies = "; ".join(f"{name}={morsel.value}" for name, morsel in jar.items())
    browser = {**NO_AUTH, "Cookie": cookies}

    assert (await api("capabilities", headers=dict(browser)))[0] == 200  # the cookie works
    body = focus(kernel_id, True)
    assert (await api("focus", **post(body, headers=dict(browser))))[0] == 403
    with_xsrf = {**browser, "X-XSRFToken": xsrf}
    assert (await api("focus", **post(body, headers=with_xsrf)))[0] == 200
    kernel = {**NO_AUTH, **kernel_headers(recap, kernel_id)}  # no cookie, no XSRF header
    code, _ = await api("kernels", kernel_id, "banner", **put({"model_id": "m"}, headers=kernel))
    assert code == 200


def test_no_handler_lacks_authentication(
    jp_environ: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The extension template's check_auth: no JupyterServerAuthWarning for our routes."""
    from jupyter_server.serverapp import ServerApp
    from jupyter_server.utils import JupyterServerAuthWarning

    monkeypatch.setattr(ServerApp, "init_signal", lambda self: None)
    app = ServerApp(
        allow_unauthenticated_access=False,
        jpserver_extensions={"jupyter_recap": True},
        reraise_server_extension_failures=True,
        root_dir=str(tmp_path),
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        app.initialize(argv=[], find_extensions=False, new_httpserver=False)
    recap = app.web_app.settings["jupyter_recap"]
    recap.stop()
    messages = [str(w.message) for w in caught if issubclass(w.category, JupyterServerAuthWarning)]
    assert messages == []
    assert any("jupyter-recap/api/kernels" in path for path in route_patterns(app.web_app))


def route_patterns(router: Any) -> Iterator[str]:
    """Every path pattern registered on a tornado application, host rules unwrapped."""
    for rule in router.default_router.rules if hasattr(router, "default_router") else router.rules:
        if hasattr(rule.target, "rules"):
            yield from route_patterns(rule.target)
        elif hasattr(rule.matcher, "regex"):
            yield str(rule.matcher.regex.pattern)


# -- the feed -------------------------------------------------------------------------------


@asynctest
async def test_a_waiting_poll_gets_a_focus_change_at_once(api: Any, kernel_id: str) -> None:
    await api("focus", **post(focus(kernel_id, True)))
    started = time.monotonic()
    poll = asyncio.ensure_future(api("kernels", kernel_id, "events", **events(since=1, timeout=20)))
    await asyncio.sleep(0.3)
    assert not poll.done()  # nothing new yet: it waits
    await api("focus", **post(focus(kernel_id, False)))
    code, feed = await asyncio.wait_for(poll, 5)
    assert time.monotonic() - started < 3
    assert code == 200
    assert [(e["seq"], e["type"], e["focused"]) for e in feed["events"]] == [(2, "focus", False)]
    assert (feed["seq"], feed["focused"]) == (2, False)


@asynctest
async def test_a_poll_without_news_answers_after_its_timeout(api: Any, kernel_id: str) -> None:
    started = time.monotonic()
    code, feed = await api("kernels", kernel_id, "events", **events(timeout=0.4))
    assert 0.35 < time.monotonic() - started < 5
    assert (code, feed["seq"], feed["events"], feed["focused"]) == (200, 0, [], None)
    assert feed["focus_supported"] is False


@pytest.mark.parametrize("recap_config", [{"max_poll_timeout": 0.2}])
@asynctest
async def test_the_poll_timeout_is_capped(api: Any, kernel_id: str) -> None:
    started = time.monotonic()
    code, _ = await api("kernels", kernel_id, "events", **events(timeout=600))
    assert code == 200
    assert time.monotonic() - started < 5


@asynctest
async def test_a_restarted_server_is_detected(api: Any, kernel_id: str) -> None:
    await api("focus", **post(focus(kernel_id, True)))
    started = time.monotonic()
    code, feed = await api("kernels", kernel_id, "events", **events(since=40, timeout=20))
    assert time.monotonic() - started < 3  # answers at once
    assert (code, feed["seq"], feed["events"], feed["focused"]) == (200, 1, [], True)


@pytest.mark.parametrize("recap_config", [FAST_HEARTBEAT])
@asynctest
async def test_a_tab_that_stops_reporting_counts_as_away(api: Any, kernel_id: str) -> None:
    await api("focus", **post(focus(kernel_id, True)))
    started = time.monotonic()
    code, feed = await api("kernels", kernel_id, "events", **events(since=1, timeout=10))
    assert code == 200
    assert 0.2 < time.monotonic() - started < 3  # the periodic reconcile noticed it
    assert [(e["type"], e["focused"]) for e in feed["events"]] == [("focus", False)]
    assert feed["focused"] is False


# -- kernels --------------------------------------------------------------------------------


@asynctest
async def test_shutting_a_kernel_down_drops_its_state(
    api: Any, jp_fetch: Any, kernel_id: str, recap: Any
) -> None:
    await api("focus", **post(focus(kernel_id, True)))
    assert recap.hub.has_kernel(kernel_id)
    poll = asyncio.ensure_future(api("kernels", kernel_id, "events", **events(since=1, timeout=20)))
    await asyncio.sleep(0.2)
    await jp_fetch("api", "kernels", kernel_id, method="DELETE")
    code, _ = await asyncio.wait_for(poll, 5)
    assert code == 404  # the waiting poll learns at once that its kernel is gone
    for _ in range(50):
        if not recap.hub.has_kernel(kernel_id):
            break
        await asyncio.sleep(0.05)
    assert recap.hub.kernel_ids() == set()
    assert kernel_id not in recap.watcher.kernel_ids
    assert (await api("kernels", kernel_id))[0] == 404
    assert (await api("focus", **post(focus(kernel_id, True))))[0] == 404


@asynctest
async def test_reconcile_forgets_kernels_that_vanished(
    api: Any, kernel_id: str, recap: Any
) -> None:
    await api("focus", **post(focus(kernel_id, True)))
    recap.hub.set_execution("ghost", "idle")  # as if its shutdown event had been missed
    recap.reconcile()
    assert recap.hub.kernel_ids() == {kernel_id}
    assert recap.watcher.kernel_ids == {kernel_id}


def ws_message(session: Session, msg_type: str, content: dict[str, Any]) -> tuple[str, str]:
    msg = session.msg(msg_type, content)
    msg["channel"] = "shell"
    return msg["header"]["msg_id"], json.dumps(msg, default=json_default)


async def until_idle(ws: Any, msg_id: str, timeout: float = 30) -> list[dict[str, Any]]:
    """Every message of the request ``msg_id`` up to its idle status."""
    messages = []
    deadline = time.monotonic() + timeout
    while True:
        raw = await asyncio.wait_for(ws.read_message(), max(0.1, deadline - time.monotonic()))
        assert raw is not None, "websocket closed"
        msg = json.loads(raw)
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        messages.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return messages


SELF_CHECK = """
import json, os, time, urllib.request
from jupyter_recap.wire import KERNEL_HEADER, kernel_proof
url = os.environ["JUPYTER_RECAP_SERVER_URL"]
proof = kernel_proof(get_ipython().kernel.session.key, "{kernel_id}")
request = urllib.request.Request(
    url + "jupyter-recap/api/kernels/{kernel_id}/events?timeout=0",
    headers={{KERNEL_HEADER: proof}},
)
opener = urllib.request.build_opener(urllib.request.ProxyHandler({{}}))
# The busy status travels on IOPub and may trail this request by a few ms: ask until it is in.
deadline = time.time() + 10
while True:
    feed = json.load(opener.open(request, timeout=10))
    if feed["execution_state"] == "busy" or time.time() > deadline:
        break
    time.sleep(0.02)
print(json.dumps({{"url": url, "feed": feed}}))
time.sleep(0.8)
"""


async def idle_state(api: Any, kernel_id: str) -> dict[str, Any]:
    for _ in range(100):
        state: dict[str, Any] = (await api("kernels", kernel_id))[1]
        if state["execution_state"] == "idle" and state["idle_seconds"] is not None:
            return state
        await asyncio.sleep(0.05)
    raise AssertionError(f"the kernel never became idle: {state}")


@asynctest
async def test_a_kernel_a_page_connected_to_reads_idle_before_any_cell(
    api: Any, jp_ws_fetch: Any, kernel_id: str
) -> None:
    ws = await jp_ws_fetch("api", "kernels", kernel_id, "channels")
    try:
        states = []
        for _ in range(300):  # a loaded machine can take a while to start a kernel
            states.append((await api("kernels", kernel_id))[1]["execution_state"])
            if states[-1] == "idle":
                break
            await asyncio.sleep(0.1)
        assert states[-1] == "idle", states
    finally:
        ws.close()


class _FakeKernel(SimpleNamespace):
    """What the watcher reads of a jupyter_server kernel, for the race it cannot stage."""

    def connect_iopub(self) -> Any:
        return SimpleNamespace(on_recv=lambda callback: None, close=lambda: None)


def test_a_missed_start_is_settled_from_the_servers_own_view() -> None:
    kernel = _FakeKernel(session=Session(), execution_state="starting")
    manager = SimpleNamespace(get_kernel=lambda kernel_id: kernel)
    hub = FocusHub()
    watcher = ExecutionWatcher(manager, hub)
    watcher.attach("k1")
    assert hub.execution_state("k1") == "starting"
    watcher.settle("k1")  # the server has not seen the kernel answer either: no change
    assert hub.execution_state("k1") == "starting"
    kernel.execution_state = "idle"  # it saw the kernel_info reply our subscription missed
    watcher.sync({"k1"})
    assert hub.execution_state("k1") == "idle"
    hub.set_execution("k1", "busy")  # a cell we saw start
    kernel.execution_state = "idle"
    watcher.settle("k1")  # only an unsettled state is taken over
    assert hub.execution_state("k1") == "busy"


@asynctest
async def test_execution_state_and_idle_seconds_follow_cells(
    api: Any, jp_ws_fetch: Any, jp_base_url: str, kernel_id: str
) -> None:
    """A real kernel calls the feed with the inherited URL and its proof while its cell runs."""
    ws = await jp_ws_fetch("api", "kernels", kernel_id, "channels")
    session = Session()
    try:
        # The watcher subscribes to the kernel's IOPub asynchronously; a status sent before
        # the subscription took effect is never seen. Run short cells until the watcher has
        # seen one busy: "idle" alone proves nothing, as it may be taken over from
        # jupyter_server's own tracking before our subscription receives anything.
        for _ in range(50):
            warm = {"code": "import time; time.sleep(0.3)", "silent": False}
            warm_id, raw = ws_message(session, "execute_request", warm)
            await ws.write_message(raw)
            seen_busy = False
            for _ in range(10):
                await asyncio.sleep(0.02)
                if (await api("kernels", kernel_id))[1]["execution_state"] == "busy":
                    seen_busy = True
                    break
            await until_idle(ws, warm_id)
            if seen_busy:
                break
        code = SELF_CHECK.format(kernel_id=kernel_id)
        msg_id, raw = ws_message(session, "execute_request", {"code": code, "silent": False})
        await ws.write_message(raw)
        outputs: list[dict[str, Any]] = []
        while not outputs:
            msg = json.loads(await asyncio.wait_for(ws.read_message(), 30))
            if msg["msg_type"] == "error":
                raise AssertionError("\n".join(msg["content"]["traceback"]))
            if msg["msg_type"] == "stream" and msg["parent_header"].get("msg_id") == msg_id:
                outputs.append(json.loads(msg["content"]["text"]))
        seen_by_kernel = outputs[0]
        assert seen_by_kernel["url"].endswith(jp_base_url)
        assert seen_by_kernel["url"].startswith("http://")
        assert seen_by_kernel["feed"]["execution_state"] == "busy"  # its own cell is running
        assert seen_by_kernel["feed"]["idle_seconds"] is None
        state = (await api("kernels", kernel_id))[1]
        assert (state["execution_state"], state["idle_seconds"]) == ("busy", None)
        await until_idle(ws, msg_id)

        first = (await idle_state(api, kernel_id))["idle_seconds"]
        await asyncio.sleep(0.3)
        second = (await idle_state(api, kernel_id))["idle_seconds"]
        assert second >= first + 0.25

        # Requests that are not cells (kernel_info, comm traffic) do not reset the idle clock.
        for msg_type, content in [
            ("kernel_info_request", {}),
            ("comm_open", {"comm_id": "c1", "target_name": "nobody", "data": {}}),
            ("comm_msg", {"comm_id": "c1", "data": {}}),
        ]:
            msg_id, raw = ws_message(session, msg_type, content)
            await ws.write_message(raw)
            await until_idle(ws, msg_id)
        await asyncio.sleep(0.1)
        third = (await idle_state(api, kernel_id))["idle_seconds"]
        assert third >= second + 0.1
    finally:
        ws.close()


@pytest.mark.parametrize(
    ("parent", "state", "current", "expected"),
    [
        ("execute_request", "busy", "idle", "busy"),
        ("execute_request", "idle", "busy", "idle"),
        ("comm_msg", "busy", "idle", None),
        ("comm_msg", "idle", "busy", None),  # widget traffic mid-cell does not end the cell
        ("kernel_info_request", "idle", "starting", "idle"),
        ("kernel_info_request", "busy", "unknown", "idle"),
        (None, "starting", "busy", "starting"),
        (None, "idle", "idle", None),
    ],
)
def test_only_cells_move_the_execution_state(
    parent: str | None, state: str, current: str, expected: str | None
) -> None:
    assert next_state(parent, state, current) == expected


# -- culling --------------------------------------------------------------------------------


@asynctest
async def test_our_routes_do_not_count_as_server_activity(
    api: Any, jp_fetch: Any, jp_serverapp: Any, kernel_id: str, recap: Any
) -> None:
    settings = jp_serverapp.web_app.settings
    await jp_fetch("api", "kernels")  # a core route: it does count
    before = settings["api_last_activity"]
    await asyncio.sleep(0.02)
    await api("capabilities")
    await api("focus", **post(focus(kernel_id, True)))
    await api("input", **post({"kernel_id": kernel_id, "client_id": "tab1"}))
    await api("kernels", kernel_id)
    await api("kernels", kernel_id, "banner", **put({"model_id": "m"}))
    await api("kernels", kernel_id, "events", **events())
    proof = {**NO_AUTH, **kernel_headers(recap, kernel_id)}
    await api("kernels", kernel_id, "events", **events(since=1, headers=proof))
    assert settings["api_last_activity"] == before
    await jp_fetch("api", "kernels")
    assert settings["api_last_activity"] > before  # the measurement itself works


# -- the URL kernels get --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ip", "connection_url", "expected"),
    [
        ("localhost", "http://localhost:8888/", "http://localhost:8888/"),
        ("127.0.0.1", "https://127.0.0.1:9/user/a%40b", "https://127.0.0.1:9/user/a%40b/"),
        ("0.0.0.0", "http://myhost:8888/user/alice/", "http://127.0.0.1:8888/user/alice/"),
        ("::", "http://myhost:8888/", "http://[::1]:8888/"),
        ("10.1.2.3", "http://10.1.2.3:8000/base/", "http://10.1.2.3:8000/base/"),
    ],
)
def test_kernel_facing_url(ip: str, connection_url: str, expected: str) -> None:
    port = int(connection_url.rsplit(":", 1)[1].split("/")[0])
    app = SimpleNamespace(ip=ip, port=port, connection_url=connection_url)
    assert kernel_facing_url(app) == expected


@asynctest
async def test_the_environment_names_this_server(jp_serverapp: Any, recap: Any) -> None:
    assert os.environ[URL_ENV] == recap.url
    assert recap.url == f"http://localhost:{jp_serverapp.port}/a%40b/"
    assert SECRET_ENV not in os.environ  # kernels prove who they are with their own key
