"""Under a real JupyterHub, every user's recap works and no user reaches another's.

One hub for the module (``tests/hubutil.py``): ``DummyAuthenticator``, ``SimpleLocalProcessSpawner``
and the npm-installed ``configurable-http-proxy``, two users, each with a real single-user
server (JupyterHub's ``jupyterhub-singleuser`` extension on jupyter_server, jupyter_recap
enabled by installation) and a session store under their own home. Each user comes in twice:
with an API token the hub's REST API issued, and as a browser (a cookie session from the login
form, with the XSRF header JupyterLab sends). Kernels are driven over their websocket through
the proxy, as JupyterLab does.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import websocket
from hubutil import (
    MISSING_PROXY,
    PROXY,
    Hub,
    KernelSocket,
    Login,
    browser_login,
    errors,
    running_hub,
    start_server,
    stream_text,
    token_login,
    wait_ready,
)
from kernelutil import widget_states
from refusals import refused

pytestmark = pytest.mark.timeout(240)

USERS = ("alice", "bob")
NOTEBOOK = "agent.ipynb"
#: Each user's agent turn: a prompt and a reply whose words only that user's recap may contain.
TURNS = {
    "alice": (
        "Why does invoices.ts fail its FK constraint after the v2 migration?",
        "The FK on line 142 points at customers_v1. "
        "Next: repoint invoices.customer_id to customers_v2.",
    ),
    "bob": (
        "Parse the pricing tables of the crawled pages into prices.csv",
        "Parsed 3 of 12 pages; pricing.html has rowspan cells. "
        "Next: handle rowspan in parse_table().",
    ),
}
#: A word of each user's session that must never show up in the other user's answers.
MARKER = {"alice": "invoices.ts", "bob": "rowspan"}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@dataclass
class Deployment:
    hub: Hub
    logins: dict[str, dict[str, Login]]  # user -> "token" / "cookie" -> login
    kernels: dict[str, str]  # user -> the notebook's kernel id
    sockets: dict[str, KernelSocket]  # user -> that kernel's websocket, through the proxy

    def login(self, user: str, kind: str) -> Login:
        return self.logins[user][kind]


def owner_api(user: str, *parts: str) -> str:
    return "/".join(["user", user, "jupyter-recap", "api", *parts])


def run(socket: KernelSocket, code: str) -> list[dict[str, Any]]:
    messages = socket.execute(code)
    assert not errors(messages), (code, errors(messages))
    return messages


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """The hub, both users' servers, a notebook kernel each with one agent turn recorded."""
    if not PROXY.exists():
        pytest.fail(MISSING_PROXY)
    tmp: Path = tmp_path_factory.mktemp("hub")
    with running_hub(tmp, USERS) as hub:
        logins: dict[str, dict[str, Login]] = {user: {} for user in USERS}
        kernels: dict[str, str] = {}
        sockets: dict[str, KernelSocket] = {}
        try:
            for user in USERS:  # both servers spawn at once
                logins[user]["token"] = token_login(hub, user)
                start_server(hub, logins[user]["token"])
            for user in USERS:
                wait_ready(hub, logins[user]["token"])
                logins[user]["cookie"] = browser_login(hub, user)
            # alice works from her browser session, bob with his token
            drivers = {"alice": logins["alice"]["cookie"], "bob": logins["bob"]["token"]}
            for user, login in drivers.items():
                body = {"path": NOTEBOOK, "name": NOTEBOOK, "type": "notebook"}
                answer = login.request(
                    "POST", f"user/{user}/api/sessions", {**body, "kernel": {"name": "python3"}}
                )
                assert answer.status_code == 201, answer.text
                kernels[user] = answer.json()["kernel"]["id"]
                sockets[user] = login.kernel_socket(user, kernels[user])
            for user, socket in sockets.items():
                prompt, reply = TURNS[user]
                run(socket, "import agentmagic; agent = agentmagic.install(get_ipython())")
                run(socket, f"agent.script.append(lambda prompt: print({reply!r}))")
                run(socket, "%load_ext jupyter_recap")
                assert reply in stream_text(run(socket, f"%%agent\n{prompt}"))
                run(socket, "%recap save")
            yield Deployment(hub, logins, kernels, sockets)
        finally:
            for socket in sockets.values():
                socket.close()
            for pair in logins.values():
                for login in pair.values():
                    login.client.close()


# -- 1. the routes answer their owner -------------------------------------------------------


@pytest.mark.parametrize("kind", ["token", "cookie"])
@pytest.mark.parametrize("user", USERS)
def test_capabilities_answer_the_owner(deployment: Deployment, user: str, kind: str) -> None:
    answer = deployment.login(user, kind).request("GET", owner_api(user, "capabilities"))
    assert answer.status_code == 200, (
        f"{answer.text[:300]}\n(the servers log to {deployment.hub.log})"
    )
    assert {"focus", "feed", "sessions", "session_recap"} <= set(answer.json()["features"])


# -- 2. a recap in the notebook and over HTTP, of the owner's own session -------------------


def banner_state(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The merged state of the banner widget that ``messages`` display."""
    (model_id,) = {
        m["content"]["data"][WIDGET_VIEW]["model_id"]
        for m in messages
        if m["msg_type"] == "display_data" and WIDGET_VIEW in m["content"]["data"]
    }
    state: dict[str, Any] = {}
    for update in widget_states(messages, model_id):
        state.update(update)
    return state


def shown(messages: list[dict[str, Any]]) -> bool:
    return banner_state(messages).get("state") == "shown"


@pytest.mark.parametrize("user", USERS)
def test_recap_in_the_notebook_and_over_http(deployment: Deployment, user: str) -> None:
    socket = deployment.sockets[user]
    other = next(u for u in USERS if u != user)
    messages = run(socket, "%recap --model offline")
    if not shown(messages):  # the banner may be filled in just after the cell went idle
        messages += socket.collect(10, until=lambda more: shown(messages + more))
    banner = banner_state(messages)
    assert banner["state"] == "shown" and banner["model"] == "offline", banner
    assert MARKER[user] in banner["text"] and MARKER[other] not in banner["text"]
    assert stream_text(messages) == ""

    status = stream_text(run(socket, "%recap status"))
    store = deployment.hub.homes[user] / "recap-store"
    live = re.search(r"session:\s+(\w{8}) \(.*\) in (\S+)", status)
    assert live is not None, status
    assert Path(live.group(2)) == store  # the user's own store, under their own home

    # The same session over HTTP, once with each of the owner's credentials.
    listing = deployment.login(user, "token").request("GET", owner_api(user, "sessions"))
    assert listing.status_code == 200, listing.text
    (record,) = [s for s in listing.json()["sessions"] if s["id"].startswith(live.group(1))]
    assert record["title"] == TURNS[user][0] and record["notebook"].endswith(NOTEBOOK)
    answer = deployment.login(user, "cookie").request(
        "POST", owner_api(user, "sessions", record["id"], "recap"), {"model": "offline"}
    )
    assert answer.status_code == 200, answer.text
    recap = answer.json()
    assert recap["session_id"] == record["id"] and recap["model"] == "offline"
    assert MARKER[user] in recap["recap"] and MARKER[other] not in recap["recap"]


# -- 3. nobody reaches another user's server -----------------------------------------------


def owner_routes(
    owner: str, kernel_id: str, session_id: str, focused: bool
) -> list[tuple[str, str, Any]]:
    """Every jupyter-recap route of ``owner``'s server, aimed at their kernel and session
    (``focused``: the focus to report, the opposite of the kernel's)."""
    client = str(uuid.uuid4())
    return [
        ("GET", owner_api(owner, "capabilities"), None),
        (
            "POST",
            owner_api(owner, "focus"),
            {"kernel_id": kernel_id, "path": NOTEBOOK, "focused": focused, "client_id": client},
        ),
        ("POST", owner_api(owner, "input"), {"kernel_id": kernel_id, "client_id": client}),
        ("GET", owner_api(owner, "kernels", kernel_id), None),
        ("GET", owner_api(owner, "sessions") + "?limit=1000", None),
        ("POST", owner_api(owner, "sessions", session_id, "recap"), {"model": "offline"}),
        ("GET", owner_api(owner, "kernels", kernel_id, "events") + "?since=0&timeout=0", None),
        ("PUT", owner_api(owner, "kernels", kernel_id, "banner"), {"model_id": "stolen"}),
        ("GET", f"user/{owner}/api/kernels", None),
        ("GET", f"user/{owner}/api/sessions", None),
    ]


def session_id(deployment: Deployment, user: str) -> str:
    listing = deployment.login(user, "token").request("GET", owner_api(user, "sessions"))
    (record,) = listing.json()["sessions"]
    sid: str = record["id"]
    return sid


def forged(attacker: Login, owner: str) -> Login:
    """A client replaying the attacker's browser cookies, their server's also under the owner's
    cookie name, with the attacker's own XSRF token."""
    own = {c.name: c.value for c in attacker.client.cookies.jar if c.path != "/hub/"}
    cookies = {**own, f"jupyterhub-user-{owner}": own[f"jupyterhub-user-{attacker.user}"]}
    client = httpx.Client(
        base_url=attacker.client.base_url,
        timeout=30,
        headers={"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())},
    )
    for cookie in attacker.client.cookies.jar:  # Login.xsrf reads its _xsrf from the jar
        if cookie.name == "_xsrf" and cookie.path.startswith(f"/user/{attacker.user}"):
            client.cookies.jar.set_cookie(cookie)
    return Login(attacker.user, "cookie", client, label=f"{attacker.user}'s forged cookie")


@pytest.mark.parametrize(("attacker", "owner"), [("alice", "bob"), ("bob", "alice")])
def test_no_user_reaches_another_users_routes(
    deployment: Deployment, attacker: str, owner: str
) -> None:
    kernel_id, sid = deployment.kernels[owner], session_id(deployment, owner)
    owners_view = owner_api(owner, "kernels", kernel_id)
    before = deployment.login(owner, "token").request("GET", owners_view).json()
    # As a browser would first: open the owner's JupyterLab with the attacker's hub login.
    browser = deployment.login(attacker, "cookie")
    page = browser.client.get(
        f"/user/{owner}/lab", headers={"Sec-Fetch-Mode": "navigate"}, follow_redirects=True
    )
    refused(page.status_code, (403,), page.url)
    token = deployment.login(attacker, "token")
    attempts = [token, browser, forged(browser, owner)]
    for login in attempts:  # each way in is a working one: it opens the attacker's own server
        own = login.request("GET", owner_api(attacker, "capabilities"))
        assert own.status_code == 200, (str(login), own.status_code)

    answers = []
    for login in attempts:
        for method, path, body in owner_routes(owner, kernel_id, sid, not before["focused"]):
            answer = login.request(method, path, body)
            answers.append((str(login), method, path, answer.status_code))
            refused(answer.status_code, (403, 404), answers[-1])
            assert sid not in answer.text and MARKER[owner] not in answer.text
    assert len(answers) == 3 * 10

    # The kernel's websocket is refused as well, with a token or with the browser's cookies.
    for login in (token, browser):
        with pytest.raises(websocket.WebSocketBadStatusException) as denied:
            login.kernel_socket(owner, kernel_id)
        refused(denied.value.status_code, (403, 404), "kernel websocket")

    # Nothing the attempts sent landed: the owner's kernel has the focus it had and no banner
    # of the attacker's (its own kernel may have announced its banner meanwhile, when a test
    # before this one loaded the extension there), and the attacker's own server knows
    # neither the owner's kernel nor their session.
    after = deployment.login(owner, "token").request("GET", owners_view).json()
    assert after["focused"] == before["focused"]
    assert after["banner_model_id"] != "stolen"
    listing = token.request("GET", owner_api(attacker, "sessions") + "?limit=1000")
    assert listing.status_code == 200
    assert sid not in listing.text and MARKER[owner] not in listing.text
    assert token.request("GET", owner_api(attacker, "kernels", kernel_id)).status_code == 404
    recap = token.request("POST", owner_api(attacker, "sessions", sid, "recap"))
    assert recap.status_code == 404, recap.text


# -- 4. focus reported through the hub reaches the user's kernel ---------------------------


def status_until(socket: KernelSocket, pattern: str, seconds: float = 20) -> str:
    """``%recap status`` once ``pattern`` matches it (or the last one, failing)."""
    deadline = time.monotonic() + seconds
    while True:
        status = stream_text(run(socket, "%recap status"))
        if re.search(pattern, status) or time.monotonic() > deadline:
            assert re.search(pattern, status), status
            return status
        time.sleep(0.2)


def test_focus_reported_through_the_hub_reaches_the_kernel(deployment: Deployment) -> None:
    socket, kernel_id = deployment.sockets["alice"], deployment.kernels["alice"]
    status_until(socket, r"server:\s+focus feed connected to http://127\.0\.0\.1:\d+/user/alice/")
    report = {"kernel_id": kernel_id, "path": NOTEBOOK, "client_id": str(uuid.uuid4())}
    for kind, focused, word in (("cookie", True, "here"), ("token", False, "away")):
        login = deployment.login("alice", kind)
        answer = login.request("POST", owner_api("alice", "focus"), {**report, "focused": focused})
        assert answer.status_code == 200, answer.text
        assert answer.json()["focused"] is focused
        status_until(socket, rf"focus:\s+{word} for \d+ s; source: browser")
        seen = login.request("GET", owner_api("alice", "kernels", kernel_id))
        assert seen.status_code == 200 and seen.json()["focused"] is focused
