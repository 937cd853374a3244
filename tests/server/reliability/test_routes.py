"""Every route of the server extension, attacked the same way, against a real jupyter server.

The routes are not listed here: they are read off the running web application (every handler
class of ours it dispatches to), so a route added later is attacked too. The server runs with
``allow_unauthenticated_access=False`` under pytest-jupyter's prefixed base URL. Each check has a
positive control beside it (the same request with valid credentials is let in), so a route that
answered 403 to everything could not pass.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from fakellm import FakeLLM, slow
from refusals import refused
from server_fixtures import *  # noqa: F403 - pytest-jupyter's fixtures, for this module only
from server_fixtures import asynctest
from tornado import web
from tornado.httpclient import AsyncHTTPClient, HTTPResponse

from jupyter_recap.record.transcript import Transcript
from jupyter_recap.server.handlers import RecapHandler
from jupyter_recap.stores.sessions import SessionWriter

pytestmark = pytest.mark.timeout(120)

_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
_GROUP = re.compile(r"\(\?P<(?P<name>\w+)>[^)]*\)")
GHOST_KERNEL = "00000000-0000-4000-8000-000000000000"
GHOST_SESSION = "0190aaaa-bbbb-7ccc-8ddd-eeeeffff0000"


@dataclass(frozen=True)
class Route:
    """One (path pattern, method) our extension answers."""

    pattern: str
    handler: type[RecapHandler]
    method: str

    @property
    def groups(self) -> list[str]:
        return [m.group("name") for m in _GROUP.finditer(self.pattern)]

    def path(self, **values: str) -> str:
        """The pattern with its groups filled (already percent-encoded values)."""
        path = _GROUP.sub(lambda m: values[m.group("name")], self.pattern)
        return path.rstrip("$")

    @property
    def writes(self) -> bool:
        return self.method in ("POST", "PUT", "PATCH", "DELETE")

    def __str__(self) -> str:
        return f"{self.method} {self.pattern} ({self.handler.__name__})"


def _rules(router: Any) -> Iterator[Any]:
    rules = router.default_router.rules if hasattr(router, "default_router") else router.rules
    for rule in rules:
        if hasattr(rule.target, "rules"):
            yield from _rules(rule.target)
        else:
            yield rule


def _own_methods(handler: type[RecapHandler]) -> list[str]:
    """The HTTP methods a handler of ours implements itself (not jupyter_server's OPTIONS)."""
    methods = []
    for method in _METHODS:
        for cls in handler.__mro__:
            if method.lower() in vars(cls):
                if issubclass(cls, RecapHandler):
                    methods.append(method)
                break
    return methods


def registered_routes(web_app: Any) -> list[Route]:
    """Every (pattern, method) the web application dispatches to a handler of ours."""
    found: list[Route] = []
    for rule in _rules(web_app):
        target = rule.target
        if isinstance(target, type) and issubclass(target, RecapHandler):
            pattern = rule.matcher.regex.pattern
            found.extend(Route(pattern, target, method) for method in _own_methods(target))
    return found


@pytest.fixture
def routes(jp_serverapp: Any) -> list[Route]:
    found = registered_routes(jp_serverapp.web_app)
    # The contract routes must be among them, or the walk itself is broken.
    text = " ".join(str(route) for route in found)
    for needle in ("GET ", "capabilities", "POST ", "focus", "sessions/(?P<session_id>"):
        assert needle in text
    return found


@pytest.fixture
def http(http_server_client: Any) -> Any:
    """``await http(route_path, method, body=…, headers=…)`` → the response, never raising."""

    async def fetch(
        path: str, method: str, *, body: bytes | str | None = None, headers: Any = None
    ) -> HTTPResponse:
        if body is None and method in ("POST", "PUT", "PATCH"):
            body = b"{}"
        response: HTTPResponse = await http_server_client.fetch(
            path,
            method=method,
            body=body,
            headers=headers or {},
            raise_error=False,
            allow_nonstandard_methods=True,
            follow_redirects=False,
            request_timeout=30,
        )
        return response

    return fetch


@pytest.fixture
def token(jp_serverapp: Any) -> dict[str, str]:
    return {"Authorization": f"token {jp_serverapp.identity_provider.token}"}


def sample_path(route: Route) -> str:
    """The route's path with harmless ids (an unknown kernel, an unknown session)."""
    values = {"kernel_id": GHOST_KERNEL, "session_id": GHOST_SESSION}
    return route.path(**{name: values.get(name, "x") for name in route.groups})


def with_timeout(path: str, route: Route) -> str:
    # A long poll must answer at once, whatever it answers.
    return path + "?timeout=0" if route.method == "GET" else path


def assert_json_error(response: HTTPResponse, codes: tuple[int, ...], what: Any) -> str:
    refused(response.code, codes, (what, response.body[:300]))
    assert response.headers.get("Content-Type", "").startswith("application/json"), what
    answer = json.loads(response.body)
    assert isinstance(answer, dict) and isinstance(answer.get("message"), str), what
    assert answer["message"] and "\n" not in answer["message"], what
    return str(answer["message"])


# -- every handler is guarded -----------------------------------------------------------------


def test_every_handler_method_is_authenticated_and_authorized(jp_serverapp: Any) -> None:
    from jupyter_server.auth.decorator import authorized

    authenticated_code = web.authenticated(lambda self: None).__code__
    authorized_code = authorized(lambda self: None).__code__
    routes = registered_routes(jp_serverapp.web_app)
    assert len(routes) >= 8
    for route in routes:
        function = getattr(route.handler, route.method.lower())
        codes = set()
        while function is not None:
            codes.add(function.__code__)
            function = getattr(function, "__wrapped__", None)
        assert authenticated_code in codes, f"{route} lacks @web.authenticated"
        assert authorized_code in codes, f"{route} lacks @authorized"
        assert route.handler.auth_resource == "jupyter_recap", route


# -- credentials ------------------------------------------------------------------------------


@asynctest
async def test_no_credentials_is_a_json_403(
    http: Any, routes: list[Route], token: dict[str, str]
) -> None:
    for route in routes:
        path = with_timeout(sample_path(route), route)
        assert_json_error(await http(path, route.method), (403,), route)
        # positive control: the same request with the server's token is let in
        allowed = await http(path, route.method, headers=token)
        assert allowed.code != 403, (route, allowed.code)


@asynctest
async def test_a_wrong_credential_is_a_json_403(http: Any, routes: list[Route]) -> None:
    wrong = [
        {"Authorization": "token not-the-token"},
        {"Authorization": "bearer not-the-token"},
        {"X-Jupyter-Recap-Kernel": "0" * 64},
        {"X-Jupyter-Recap-Secret": "not-the-secret"},
        {"Cookie": "_xsrf=abc; username-localhost-1=forged"},
    ]
    for route in routes:
        path = with_timeout(sample_path(route), route)
        for headers in wrong:
            assert_json_error(await http(path, route.method, headers=headers), (403,), route)


async def login(http: Any, jp_base_url: str, password: str) -> tuple[str, str]:
    """Log in like a browser: (the Cookie header value, the XSRF token)."""
    page = await http(f"{jp_base_url}login", "GET")
    jar: SimpleCookie = SimpleCookie()
    for header in page.headers.get_list("Set-Cookie"):
        jar.load(header)
    xsrf = jar["_xsrf"].value
    form = urlencode({"_xsrf": xsrf, "password": password})
    answer = await http(
        f"{jp_base_url}login", "POST", body=form, headers={"Cookie": f"_xsrf={xsrf}"}
    )
    assert answer.code == 302, answer.code
    for header in answer.headers.get_list("Set-Cookie"):
        jar.load(header)
    return "; ".join(f"{name}={morsel.value}" for name, morsel in jar.items()), xsrf


@asynctest
async def test_a_cookie_write_without_the_xsrf_header_is_403(
    http: Any, routes: list[Route], jp_base_url: str, jp_serverapp: Any
) -> None:
    cookie, xsrf = await login(http, jp_base_url, jp_serverapp.identity_provider.token)
    writes = [route for route in routes if route.writes]
    assert {route.method for route in writes} >= {"POST", "PUT"}
    for route in writes:
        path = sample_path(route)
        answer = await http(path, route.method, headers={"Cookie": cookie})
        assert_json_error(answer, (403,), route)
        with_header = {"Cookie": cookie, "X-XSRFToken": xsrf}
        allowed = await http(path, route.method, headers=with_header)
        assert allowed.code != 403, (route, allowed.code)  # the cookie itself is good
    for route in routes:
        if not route.writes:  # reads need no XSRF header: the cookie alone is enough
            path = with_timeout(sample_path(route), route)
            answer = await http(path, route.method, headers={"Cookie": cookie})
            assert answer.code != 403, (route, answer.code)


@asynctest
async def test_a_foreign_origin_is_refused(
    http: Any, routes: list[Route], jp_base_url: str, jp_serverapp: Any
) -> None:
    """jupyter_server refuses a cross-origin browser request (its allow_origin is unset)."""
    cookie, xsrf = await login(http, jp_base_url, jp_serverapp.identity_provider.token)
    browser = {"Cookie": cookie, "X-XSRFToken": xsrf}
    foreign = {**browser, "Origin": "https://evil.example"}
    for route in routes:
        path = with_timeout(sample_path(route), route)
        assert_json_error(await http(path, route.method, headers=foreign), (403, 404), route)
        anonymous = {"Origin": "https://evil.example"}
        assert_json_error(await http(path, route.method, headers=anonymous), (403, 404), route)


# -- hostile input ----------------------------------------------------------------------------

HOSTILE_IDS = [
    "x" * 6000,  # long, but within the request line tornado reads
    "..",
    ".",
    "%2e%2e",
    "a%2Fb",  # a percent-encoded slash stays inside the id
    "%2F..%2F..%2Fetc%2Fpasswd",
    quote("ключ-😀-\u202e", safe=""),
    "%00",
    "%FF%FE",  # not UTF-8
    "%20",
    quote("<script>alert(1)</script>", safe=""),
    quote("$(rm -rf ~)", safe=""),
]


@asynctest
async def test_hostile_ids_are_a_json_400_or_404(
    http: Any, routes: list[Route], token: dict[str, str]
) -> None:
    with_ids = [route for route in routes if route.groups]
    assert {name for route in with_ids for name in route.groups} >= {"kernel_id", "session_id"}
    for route in with_ids:
        for hostile in HOSTILE_IDS:
            path = with_timeout(route.path(**dict.fromkeys(route.groups, hostile)), route)
            body = json.dumps({"model_id": None}) if route.method == "PUT" else None
            answer = await http(path, route.method, body=body, headers=token)
            message = assert_json_error(answer, (400, 404), (route, hostile[:40]))
            assert len(message) <= 200, (route, message[:300])  # a long id is not echoed back
    for route in routes:
        if route.method != "POST" or route.groups:
            continue
        if route.pattern.endswith("/seen$"):  # a notebook's path is its id
            for hostile in ["x" * 6000 + ".ipynb", "../../etc/a.ipynb", "/etc/a.ipynb", "a.py", ""]:
                seen = {"path": hostile, "client_id": "c"}
                answer = await http(route.path(), "POST", body=json.dumps(seen), headers=token)
                assert_json_error(answer, (400,), (route, hostile[:40]))
            continue
        for hostile in ["x" * 6000, "..", "/", "\x00", "ключ\u202e", ""]:  # focus, input
            data = {"kernel_id": hostile, "path": "a.ipynb", "focused": True, "client_id": "c"}
            answer = await http(route.path(), "POST", body=json.dumps(data), headers=token)
            assert_json_error(answer, (400, 404), (route, hostile[:40]))


def reads_body(route: Route) -> bool:
    return route.method in ("POST", "PUT", "PATCH")


@pytest.mark.parametrize(
    "nested",
    ["[" * 10_000, '{"a":' * 2000 + "1" + "}" * 2000, "[" * 5000 + "]" * 5000],
    ids=["open-arrays", "closed-objects", "closed-arrays"],
)
@asynctest
async def test_deeply_nested_json_is_a_json_400(
    http: Any, routes: list[Route], token: dict[str, str], nested: str
) -> None:
    with_body = [route for route in routes if reads_body(route)]
    assert len(with_body) >= 4
    for route in with_body:
        answer = await http(sample_path(route), route.method, body=nested, headers=token)
        assert_json_error(answer, (400,), route)


@asynctest
async def test_a_body_over_the_limit_is_a_json_413(
    http: Any, routes: list[Route], token: dict[str, str], jp_serverapp: Any
) -> None:
    limit = jp_serverapp.web_app.settings["jupyter_recap"].max_body_bytes
    big = json.dumps({"model": "x" * limit})
    for route in routes:
        if reads_body(route):
            answer = await http(sample_path(route), route.method, body=big, headers=token)
            message = assert_json_error(answer, (413,), route)
            assert str(limit) in message


@asynctest
async def test_oversized_fields_are_a_json_400(
    http: Any, token: dict[str, str], jp_base_url: str
) -> None:
    """Each field the hub remembers per kernel has a cap, so a kernel's state stays small."""
    api = f"{jp_base_url}jupyter-recap/api/"
    good = {"kernel_id": GHOST_KERNEL, "path": "a.ipynb", "focused": True, "client_id": "tab"}
    for field, size in [("client_id", 300), ("path", 5000)]:
        body = json.dumps({**good, field: "x" * size})
        answer = await http(f"{api}focus", "POST", body=body, headers=token)
        message = assert_json_error(answer, (400,), field)
        assert field in message
    body = json.dumps({"kernel_id": GHOST_KERNEL, "client_id": "c" * 300})
    assert_json_error(await http(f"{api}input", "POST", body=body, headers=token), (400,), "input")
    banner = f"{api}kernels/{GHOST_KERNEL}/banner"
    body = json.dumps({"model_id": "m" * 300})
    assert_json_error(await http(banner, "PUT", body=body, headers=token), (400,), "banner")
    # positive control: ordinary sizes reach the kernel check (an unknown kernel here)
    answer = await http(f"{api}focus", "POST", body=json.dumps(good), headers=token)
    assert_json_error(answer, (404,), "focus")


# -- bounded work -----------------------------------------------------------------------------

DEFAULT_EXECUTOR_WORKERS = min(32, (os.cpu_count() or 1) + 4)  # asyncio's default executor


@pytest.mark.parametrize("recap_config", [{"max_recap_drafts": DEFAULT_EXECUTOR_WORKERS + 2}])
@asynctest
async def test_recap_drafts_are_bounded_and_never_starve_the_server(
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    token: dict[str, str],
    jp_serverapp: Any,
    jp_base_url: str,
    http_server: Any,
) -> None:
    """Slow model calls run on threads of their own: saving a notebook never waits for them.

    jupyter_server does its file work on the event loop's default executor; drafts that took
    its threads would hold up every notebook save for as long as a model call lasts.
    """
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    transcript = Transcript()
    transcript.user("fix the flaky CSV loader")
    writer = SessionWriter(transcript, notebook="a.ipynb", kernel_id="k1", delay=60)
    writer.close()
    bound = jp_serverapp.web_app.settings["jupyter_recap"].max_recap_drafts
    fake_llm.respond(*[slow(20) for _ in range(bound)])
    client = AsyncHTTPClient(force_instance=True, max_clients=bound + 5)
    url = f"http://127.0.0.1:{jp_serverapp.port}{jp_base_url}jupyter-recap/api/"
    body = json.dumps({"model": "openai:gpt-4o-mini"})

    def draft(timeout: float = 60) -> Any:
        return client.fetch(
            f"{url}sessions/{writer.id}/recap",
            method="POST",
            body=body,
            headers=token,
            raise_error=False,
            request_timeout=timeout,
        )

    try:
        drafts = [asyncio.ensure_future(draft(timeout=8)) for _ in range(bound)]
        loop = asyncio.get_running_loop()
        arrived = await loop.run_in_executor(None, fake_llm.wait_for_requests, bound, 10)
        assert arrived, f"{len(fake_llm.requests)} of {bound} drafts reached the model"
        # The server's own threads are free while every draft waits for the model.
        started = time.monotonic()
        await asyncio.wait_for(loop.run_in_executor(None, time.sleep, 0), 5)
        assert time.monotonic() - started < 1
        answer = await draft()
        message = assert_json_error(answer, (429,), "one draft too many")
        assert int(answer.headers["Retry-After"]) >= 1 and str(bound) in message
        for task in drafts:
            task.cancel()
    finally:
        client.close()
