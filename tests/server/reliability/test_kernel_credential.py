"""A kernel's credential opens that kernel's own routes and nothing else.

Before, every kernel inherited one per-server secret and with it could read any other kernel's
focus feed and overwrite its banner id (and so could every subprocess of every kernel, which
inherits the environment). Now a kernel proves who it is with an HMAC keyed by its own ZMQ
connection key over its kernel id; the server checks it against the kernel id in the URL.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import KernelManager
from kernelutil import ROOT, TESTS, execute, stream_text
from labserver import LabServer, running_lab
from refusals import refused
from server_fixtures import *  # noqa: F403 - pytest-jupyter's fixtures, for this module only
from server_fixtures import asynctest, start_kernel

from jupyter_recap.server import SECRET_ENV, URL_ENV
from jupyter_recap.server.handlers import KernelRouteHandler
from jupyter_recap.server.routes import routes
from jupyter_recap.wire import KERNEL_HEADER, kernel_proof

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def kernels(jp_fetch: Any, jp_asyncio_loop: Any) -> tuple[str, str]:
    return start_kernel(jp_fetch, jp_asyncio_loop), start_kernel(jp_fetch, jp_asyncio_loop)


@pytest.fixture
def http(recap_fetch: Any) -> Any:
    """``await http(method, route, headers, body)`` without the server's token, never raising."""
    return lambda method, route, headers, body=None: recap_fetch(
        method, route, headers=headers, body=body
    )


def proof_of(recap: Any, kernel_id: str) -> dict[str, str]:
    """What the kernel itself sends: the proof made with its own connection key."""
    key = recap.kernel_manager.get_kernel(kernel_id).session.key
    return {KERNEL_HEADER: kernel_proof(key, kernel_id)}


def browser_routes(kernel_id: str) -> list[tuple[str, str]]:
    """(method, route) of every route that is not a kernel route, from the route table."""
    found = []
    for pattern, handler in routes("/"):
        if issubclass(handler, KernelRouteHandler):
            continue
        route = pattern.split("/jupyter-recap/api/", 1)[1]
        route = route.replace("(?P<kernel_id>[^/]+)", kernel_id)
        route = route.replace("(?P<session_id>[^/]+)", "0190aaaa-bbbb-7ccc-8ddd-eeeeffff0000")
        found += [(m, route) for m in ("GET", "POST", "PUT") if m.lower() in vars(handler)]
    assert len(found) >= 6
    return found


# -- what kernels inherit ---------------------------------------------------------------------


@pytest.fixture
def stale_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """A secret in the server's own environment (a server started from another's terminal)."""
    monkeypatch.setenv(SECRET_ENV, "a-secret-of-an-outer-server-0123456789")


@asynctest
async def test_kernels_inherit_the_url_and_no_server_wide_secret(
    stale_secret: None, jp_serverapp: Any, recap: Any
) -> None:
    assert os.environ[URL_ENV] == recap.url
    assert SECRET_ENV not in os.environ  # neither ours nor one handed down to this server
    assert not hasattr(recap, "secret")


# -- the proof, checked by a real server ------------------------------------------------------


@asynctest
async def test_a_kernel_proof_opens_its_own_kernel_routes_only(
    http: Any, kernels: tuple[str, str], recap: Any
) -> None:
    mine, other = kernels
    proof = proof_of(recap, mine)
    assert (await http("GET", f"kernels/{mine}/events?timeout=0", proof)).code == 200
    assert (await http("PUT", f"kernels/{mine}/banner", proof, {"model_id": "m1"})).code == 200
    assert recap.hub.snapshot(mine).banner_model_id == "m1"

    for method, route, body in [
        ("GET", f"kernels/{other}/events?timeout=0", None),
        ("PUT", f"kernels/{other}/banner", {"model_id": "hijacked"}),
    ]:
        answer = await http(method, route, proof, body)
        refused(answer.code, (403,), route)
        assert list(json.loads(answer.body)) == ["message"]
    assert recap.hub.snapshot(other).banner_model_id is None

    for method, route in browser_routes(mine):
        answer = await http(method, route, proof)
        refused(answer.code, (403,), (method, route))

    # The proof for another kernel's id cannot be made without that kernel's key.
    key = recap.kernel_manager.get_kernel(mine).session.key
    forged = {KERNEL_HEADER: kernel_proof(key, other)}
    refused((await http("GET", f"kernels/{other}/events?timeout=0", forged)).code, (403,), "forged")
    # A page that somehow learnt the proof still cannot use it cross-origin.
    foreign = {**proof, "Origin": "https://evil.example"}
    answer = await http("GET", f"kernels/{mine}/events?timeout=0", foreign)
    refused(answer.code, (403, 404), "foreign origin")


@asynctest
async def test_the_proof_survives_a_kernel_restart(
    http: Any, jp_fetch: Any, kernels: tuple[str, str], recap: Any
) -> None:
    mine, _ = kernels
    proof = proof_of(recap, mine)
    await jp_fetch("api", "kernels", mine, "restart", method="POST", body="{}")
    assert (await http("GET", f"kernels/{mine}/events?timeout=0", proof)).code == 200


@asynctest
async def test_a_kernel_with_an_empty_key_is_not_believed(
    http: Any, kernels: tuple[str, str], recap: Any
) -> None:
    mine, _ = kernels
    session = recap.kernel_manager.get_kernel(mine).session
    key, session.key = session.key, b""
    try:
        # Anyone can compute an HMAC with an empty key: it proves nothing.
        empty = {KERNEL_HEADER: kernel_proof(b"", mine)}
        refused(
            (await http("GET", f"kernels/{mine}/events?timeout=0", empty)).code, (403,), "empty"
        )
    finally:
        session.key = key


# -- real kernels of a real jupyter lab -------------------------------------------------------

TRY_EVERY_CREDENTIAL = """
import json, os, urllib.error, urllib.request
url = os.environ["JUPYTER_RECAP_SERVER_URL"]
key = get_ipython().kernel.session.key
mine, other = {mine!r}, {other!r}
held = {{}}  # every credential this kernel can come by
if os.environ.get("JUPYTER_RECAP_SECRET"):
    held["inherited secret"] = {{"X-Jupyter-Recap-Secret": os.environ["JUPYTER_RECAP_SECRET"]}}
try:
    from jupyter_recap.wire import KERNEL_HEADER, kernel_proof
    held["own proof"] = {{KERNEL_HEADER: kernel_proof(key, mine)}}
    held["proof for the other id"] = {{KERNEL_HEADER: kernel_proof(key, other)}}
except ImportError:
    pass
opener = urllib.request.build_opener(urllib.request.ProxyHandler({{}}))
def status(method, route, headers):
    body = json.dumps({{"model_id": "hijacked"}}).encode() if method == "PUT" else None
    request = urllib.request.Request(url + "jupyter-recap/api/" + route, data=body,
                                     method=method, headers=headers)
    try:
        with opener.open(request, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code
routes = [("GET", f"kernels/{{mine}}/events?timeout=0"),
          ("GET", f"kernels/{{other}}/events?timeout=0"),
          ("PUT", f"kernels/{{other}}/banner"),
          ("GET", "capabilities"),
          ("GET", f"kernels/{{other}}"),
          ("GET", "sessions")]
print(json.dumps({{name: {{f"{{m}} {{r}}": status(m, r, h) for m, r in routes}}
                  for name, h in held.items()}}))
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabServer, Path]]:
    tmp = tmp_path_factory.mktemp("credential")
    with running_lab(tmp, {"JUPYTER_RECAP_MODEL": "offline"}) as server:
        yield server, tmp


def lab_api(lab: LabServer, method: str, path: str) -> Any:
    import urllib.request

    request = urllib.request.Request(
        f"{lab.url}{path}",
        method=method,
        data=b"{}" if method == "POST" else None,
        headers={"Authorization": f"token {lab.token}"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"null")


def test_a_real_kernel_cannot_reach_another_kernels_routes(
    lab: tuple[LabServer, Path],
) -> None:
    server, _ = lab
    mine = lab_api(server, "POST", "api/kernels")["id"]
    other = lab_api(server, "POST", "api/kernels")["id"]
    kc = server.connect(mine)
    try:
        messages = execute(kc, TRY_EVERY_CREDENTIAL.format(mine=mine, other=other))
        errors = [m["content"] for m in messages if m["msg_type"] == "error"]
        assert not errors, errors
        results = json.loads(stream_text(messages))
    finally:
        kc.stop_channels()
    assert "inherited secret" not in results  # nothing server-wide in the kernel's environment
    assert results["own proof"][f"GET kernels/{mine}/events?timeout=0"] == 200
    for credential, statuses in results.items():
        for route, code in statuses.items():
            if credential == "own proof" and route.startswith(f"GET kernels/{mine}/"):
                continue
            refused(code, (403,), (credential, route))
    assert lab_api(server, "GET", f"jupyter-recap/api/kernels/{other}")["banner_model_id"] is None


def test_a_kernel_with_an_empty_key_gets_no_feed_and_says_why(
    lab: tuple[LabServer, Path], tmp_path: Path
) -> None:
    """A kernel started elsewhere without a connection key has no way to prove which it is."""
    server, _ = lab
    log = tmp_path / "recap.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.update(
        {
            URL_ENV: server.url,
            "JUPYTER_RECAP_LOG": str(log),
            "JUPYTER_RECAP_HOME": str(tmp_path / "home"),
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS)]),
        }
    )
    env.pop(SECRET_ENV, None)
    km = KernelManager(
        kernel_name="python3", connection_file=str(tmp_path / f"kernel-{uuid.uuid4()}.json")
    )
    km.session.key = b""
    km.start_kernel(env=env, cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        # The feed starts on the extension's worker thread, just after the load: wait for
        # its verdict before reading it.
        code = (
            "%load_ext jupyter_recap\n"
            "import time\n"
            "from jupyter_recap.ipython.extension import extension_for\n"
            "ext = extension_for(get_ipython())\n"
            "deadline = time.monotonic() + 10\n"
            "while ext.feed_problem is None and time.monotonic() < deadline:\n"
            "    time.sleep(0.05)\n"
            "print(ext.feed, 'key is empty' in (ext.feed_problem or ''))"
        )
        assert stream_text(execute(kc, code)).strip() == "None True"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    deadline = time.monotonic() + 5
    while "key is empty" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, log.read_text() if log.exists() else "no log"
        time.sleep(0.05)
