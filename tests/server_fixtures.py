"""pytest-jupyter's server fixtures for one test module, not for the whole session.

Registering ``pytest_jupyter.jupyter_server`` as a plugin (``pytest_plugins``, in a conftest or
a test module) makes its autouse fixtures global: every test then gets a fresh asyncio loop that
is closed afterwards, which breaks the Playwright (browser) tests. Star-importing the fixtures
into a test module instead keeps them, the autouse ones included, local to that module:

    from server_fixtures import *  # noqa: F403
    from server_fixtures import asynctest

The plugin's hook that runs ``async def`` tests is then absent too; :func:`asynctest` does its job
for one test.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_jupyter import jupyter_server as _plugin
from pytest_jupyter.jupyter_server import *  # noqa: F403 - the fixtures, by name

# Only the fixtures travel on to the test module (not the plugin's hooks and imports).
_FIXTURE_TYPE = type(_plugin.jp_fetch)
__all__ = [name for name, value in vars(_plugin).items() if isinstance(value, _FIXTURE_TYPE)]
__all__ += ["api", "asynctest", "jp_server_cleanup", "jp_server_config", "recap_config"]
__all__ += ["recap_environment", "store"]
__all__ += ["kernel_id", "recap", "recap_fetch", "start_kernel"]

API = ("jupyter-recap", "api")

_LOOP = "jp_asyncio_loop"


def asynctest(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an ``async def`` test on pytest-jupyter's event loop, as its plugin hook would."""
    signature = inspect.signature(test)
    wants_loop = _LOOP in signature.parameters
    parameters = list(signature.parameters.values())
    if not wants_loop:
        parameters.append(inspect.Parameter(_LOOP, inspect.Parameter.KEYWORD_ONLY))

    @functools.wraps(test)
    def run(**kwargs: Any) -> None:
        loop = kwargs[_LOOP] if wants_loop else kwargs.pop(_LOOP)
        loop.run_until_complete(test(**kwargs))

    # pytest reads the fixtures to pass from the signature: the test's own, plus the loop.
    del run.__wrapped__
    run.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return run


@pytest.fixture(autouse=True)
def recap_environment() -> Iterator[None]:
    """Kernels started by later tests must not inherit a test server's URL and secret."""
    from jupyter_recap.server import SECRET_ENV, URL_ENV

    saved = {name: os.environ.get(name) for name in (URL_ENV, SECRET_ENV)}
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(autouse=True)
def store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A private session store for the server under test."""
    root = tmp_path / "recap-store"
    monkeypatch.setenv("JUPYTER_RECAP_HOME", str(root))
    return root


@pytest.fixture
def recap_config() -> dict[str, Any]:
    """``RecapServer`` settings; a test overrides it with ``parametrize``."""
    return {}


# Replaces pytest-jupyter's fixture of this name (star-imported above) on purpose.
@pytest.fixture  # type: ignore[no-redef]
def jp_server_config(recap_config: dict[str, Any]) -> Any:
    """Our extension on, authentication required (pytest-jupyter's prefixed base URL stays)."""
    from traitlets.config import Config

    return Config(
        {
            "ServerApp": {
                # terminals off: pytest-jupyter adds them otherwise, with an auth warning of theirs
                "jpserver_extensions": {"jupyter_recap": True, "jupyter_server_terminals": False},
                "allow_unauthenticated_access": False,
            },
            "RecapServer": recap_config,
        }
    )


# Replaces pytest-jupyter's fixture of this name (star-imported above) on purpose.
@pytest.fixture(autouse=True)  # type: ignore[no-redef]
def jp_server_cleanup(jp_asyncio_loop: Any) -> Iterator[None]:
    """The plugin's tear-down of the test's server, without waiting on the kernels' sockets.

    The plugin destroys the kernel manager's ZMQ context with each socket's own linger
    (jupyter_client sets one second), so a test whose kernel still had messages queued
    waited up to a second after its server had stopped: most of the server tier's wall time.
    Nothing reads those messages any more; ``linger=0`` drops them.
    """
    from jupyter_server.serverapp import ServerApp

    yield
    app = ServerApp.instance()
    try:
        jp_asyncio_loop.run_until_complete(app._cleanup())
    except (RuntimeError, SystemExit) as error:
        print("ignoring cleanup error", error)
    if hasattr(app, "kernel_manager"):
        app.kernel_manager.context.destroy(linger=0)
    ServerApp.clear_instance()


@pytest.fixture
def api(jp_fetch: Any) -> Any:
    """``await api("focus", method=..., body=...)`` → (status, JSON answer), never raising."""
    from tornado.httpclient import HTTPClientError

    async def call(*parts: str, body: Any = None, **kwargs: Any) -> tuple[int, Any]:
        if body is not None and not isinstance(body, (str, bytes)):
            body = json.dumps(body)
        try:
            response = await jp_fetch(*API, *parts, body=body, **kwargs)
        except HTTPClientError as error:
            assert error.response is not None
            return error.code, json.loads(error.response.body)
        return response.code, json.loads(response.body)

    return call


@pytest.fixture
def recap(jp_serverapp: Any) -> Any:
    """The server extension's ``RecapServer`` (its hub, polls and settings)."""
    return jp_serverapp.web_app.settings["jupyter_recap"]


def start_kernel(jp_fetch: Any, loop: Any) -> str:
    """A real kernel started through the REST API; its id."""
    response = loop.run_until_complete(jp_fetch("api", "kernels", method="POST", body="{}"))
    return str(json.loads(response.body)["id"])


@pytest.fixture
def kernel_id(jp_fetch: Any, jp_asyncio_loop: Any) -> str:
    """A real kernel started through the REST API (pytest-jupyter runs no async fixtures)."""
    return start_kernel(jp_fetch, jp_asyncio_loop)


@pytest.fixture
def recap_fetch(http_server_client: Any, jp_base_url: str) -> Any:
    """``await recap_fetch(method, route, headers=…, body=…)`` → the response of a jupyter-recap
    route, never raising: no credentials unless given; a body is sent as JSON (POST and PUT
    send ``{}`` when none is given)."""
    from tornado.httpclient import HTTPResponse

    async def fetch(
        method: str, route: str, *, headers: dict[str, str] | None = None, body: Any = None
    ) -> HTTPResponse:
        if body is None and method in ("POST", "PUT"):
            body = {}
        response: HTTPResponse = await http_server_client.fetch(
            f"{jp_base_url}{'/'.join(API)}/{route}",
            method=method,
            body=None if body is None else json.dumps(body),
            headers=headers or {},
            raise_error=False,
            request_timeout=60,
        )
        return response

    return fetch
