"""A real JupyterHub on 127.0.0.1 for the multi-user tests, and clients that act as its users.

The hub runs with ``DummyAuthenticator`` (a shared password), ``SimpleLocalProcessSpawner``
(each user a home directory of their own under the temporary directory, every single-user
server running as this OS user) and the ``configurable-http-proxy`` that ``scripts/setup``
installs into ``tests/hub/node_modules``. A user talks to it either with an API token the hub's
REST API issued, or like a browser: a cookie session from the hub's login form, with the XSRF
header JupyterLab sends on writes, and the kernel's websocket through the proxy.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
import psutil
import websocket
from labserver import START_WITHIN, isolation_config

TESTS = Path(__file__).parent
ROOT = TESTS.parent
PROXY = TESTS / "hub" / "node_modules" / ".bin" / "configurable-http-proxy"
MISSING_PROXY = (
    f"configurable-http-proxy is not installed at {PROXY.relative_to(ROOT)}; "
    "run scripts/setup (it runs `npm ci` in tests/hub)"
)


@dataclass
class Hub:
    """A running hub: its public URL (the proxy's), the shared password and each user's home."""

    url: str
    password: str
    homes: dict[str, Path]
    log: Path


@dataclass
class Login:
    """One user's way in: an API token, or a browser-like cookie session.

    ``request`` sends what that kind of client sends: the token in ``Authorization`` ("token"),
    or the cookies of its jar plus the ``X-XSRFToken`` header that JupyterLab's
    ``ServerConnection`` adds to every request, read from the ``_xsrf`` cookie of the user's own
    server ("cookie").
    """

    user: str
    kind: str  # "token" or "cookie"
    client: httpx.Client
    token: str = ""
    label: str = ""

    def __str__(self) -> str:
        return self.label or f"{self.user}'s {self.kind}"

    def headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.kind == "token":
            headers["Authorization"] = f"token {self.token}"
        elif self.kind == "cookie":
            # What fetch() from a JupyterLab page sends. The single-user server checks XSRF on
            # every cookie-authenticated request that is not a plain navigation, GETs included.
            headers["Sec-Fetch-Mode"] = "cors"
            headers["Sec-Fetch-Site"] = "same-origin"
            headers["X-XSRFToken"] = self.xsrf()
        return headers

    def xsrf(self) -> str:
        """The ``_xsrf`` cookie the user's own server set (what JupyterLab's JS reads)."""
        for cookie in self.client.cookies.jar:
            if cookie.name == "_xsrf" and cookie.path.rstrip("/") == f"/user/{self.user}":
                return str(cookie.value)
        return ""

    def request(
        self, method: str, path: str, body: Any = None, timeout: float = 30
    ) -> httpx.Response:
        """``method path`` (relative to the hub's URL) as this user; redirects not followed."""
        return self.client.request(
            method,
            path,
            content=None if body is None else json.dumps(body),
            headers=self.headers(),
            timeout=timeout,
        )

    def cookie_header(self) -> str:
        """Every cookie of the jar as one ``Cookie`` header (for the kernel's websocket)."""
        return "; ".join(f"{c.name}={c.value}" for c in self.client.cookies.jar)

    def kernel_socket(self, owner: str, kernel_id: str) -> KernelSocket:
        """The kernel's channels websocket on ``owner``'s server, through the proxy."""
        base = str(self.client.base_url).replace("http://", "ws://", 1)
        url = f"{base}user/{owner}/api/kernels/{kernel_id}/channels?session_id={uuid.uuid4()}"
        if self.kind == "token":
            header = [f"Authorization: token {self.token}"]
            return KernelSocket(url, header=header, cookie=None, user=self.user)
        return KernelSocket(url, header=[], cookie=self.cookie_header(), user=self.user)


class KernelSocket:
    """A kernel's websocket (Jupyter's JSON message protocol): run code, collect IOPub."""

    def __init__(self, url: str, header: list[str], cookie: str | None, user: str) -> None:
        self.session = uuid.uuid4().hex
        self.user = user
        self.ws = websocket.create_connection(url, header=header, cookie=cookie, timeout=60)
        self.stray: list[dict[str, Any]] = []  # IOPub messages of no execution we waited for

    def close(self) -> None:
        self.ws.close()

    def _receive(self, deadline: float) -> dict[str, Any] | None:
        """The next IOPub message, or None once ``deadline`` (monotonic) has passed."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self.ws.settimeout(remaining)
            try:
                raw = self.ws.recv()
            except websocket.WebSocketTimeoutException:
                return None
            if isinstance(raw, bytes):
                continue  # binary frames carry widget buffers, which nothing here needs
            msg: dict[str, Any] = json.loads(raw)
            if msg.get("channel") == "iopub":
                return msg

    def execute(self, code: str, timeout: float = 60) -> list[dict[str, Any]]:
        """Run ``code``; every IOPub message of that execution up to idle."""
        msg_id = uuid.uuid4().hex
        header = {
            "msg_id": msg_id,
            "msg_type": "execute_request",
            "username": self.user,
            "session": self.session,
            "version": "5.3",
            "date": datetime.now(timezone.utc).isoformat(),
        }
        content = {
            "code": code,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": True,
        }
        message = {"header": header, "parent_header": {}, "metadata": {}, "content": content}
        self.ws.send(json.dumps({**message, "channel": "shell", "buffers": []}))
        deadline = time.monotonic() + timeout
        messages: list[dict[str, Any]] = []
        while True:
            msg = self._receive(deadline)
            if msg is None:
                raise AssertionError(f"no idle after {code!r}: {messages}")
            if msg["parent_header"].get("msg_id") != msg_id:
                self.stray.append(msg)
                continue
            messages.append(msg)
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return messages

    def collect(
        self, seconds: float, until: Callable[[list[dict[str, Any]]], bool]
    ) -> list[dict[str, Any]]:
        """IOPub messages sent between executions, until ``until(messages)`` or ``seconds``."""
        messages, self.stray = self.stray, []
        deadline = time.monotonic() + seconds
        while not until(messages):
            msg = self._receive(deadline)
            if msg is None:
                break
            messages.append(msg)
        return messages


def stream_text(messages: list[dict[str, Any]]) -> str:
    return "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")


def errors(messages: list[dict[str, Any]]) -> list[str]:
    return [
        f"{m['content']['ename']}: {m['content']['evalue']}"
        for m in messages
        if m["msg_type"] == "error"
    ]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _config(tmp: Path, users: Sequence[str], password: str, ports: dict[str, int]) -> str:
    """The hub's ``jupyterhub_config.py``: everything local, in ``tmp``, on free ports."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    pythonpath = os.pathsep.join([str(ROOT), str(TESTS)])
    return f"""
c = get_config()
c.JupyterHub.bind_url = "http://127.0.0.1:{ports["public"]}/"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {ports["hub"]}
c.JupyterHub.db_url = "sqlite:///{tmp / "jupyterhub.sqlite"}"
c.JupyterHub.cookie_secret_file = {str(tmp / "cookie_secret")!r}
c.ConfigurableHTTPProxy.command = [{str(PROXY)!r}]
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{ports["proxy_api"]}"
c.ConfigurableHTTPProxy.pid_file = {str(tmp / "proxy.pid")!r}
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = {password!r}
c.Authenticator.allowed_users = {set(users)!r}
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {str(tmp / "home" / "{username}")!r}
c.Spawner.ip = "127.0.0.1"
c.Spawner.cmd = [{sys.executable!r}, "-m", "jupyterhub.singleuser"]
# Every single-user server runs as this OS user, which is root in CI.
c.Spawner.args = ["--ServerApp.allow_root=True", "--ServerApp.port_retries=0"]
c.Spawner.start_timeout = 60
c.Spawner.http_timeout = 60
c.Spawner.environment = {{
    "PATH": {path!r},
    "PYTHONPATH": {pythonpath!r},
    # Jupyter AI, collaboration and the MCP servers installed as test extras stay off.
    "JUPYTER_CONFIG_DIR": {str(tmp / "user-config")!r},
    # Each user's session records and debug log under their own home.
    "JUPYTER_RECAP_HOME": lambda spawner: spawner.home_dir + "/recap-store",
    "JUPYTER_RECAP_LOG": lambda spawner: spawner.home_dir + "/recap-debug.log",
}}
"""


@contextmanager
def running_hub(tmp: Path, users: Sequence[str]) -> Iterator[Hub]:
    """Start JupyterHub in ``tmp``; stop it, its proxy and every server it spawned afterwards."""
    if not PROXY.exists():
        raise FileNotFoundError(MISSING_PROXY)
    ports = {"public": free_port(), "hub": free_port(), "proxy_api": free_port()}
    password = secrets.token_urlsafe(12)
    homes = {user: tmp / "home" / user for user in users}
    for home in homes.values():
        home.mkdir(parents=True)
    isolation_config(tmp / "user-config", chat=False, collaboration=False)
    config = tmp / "jupyterhub_config.py"
    config.write_text(_config(tmp, users, password, ports), encoding="utf-8")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "OLLAMA_", "JUPYTER_RECAP_", "JPY_"))
    }
    log_path = tmp / "hub.log"
    log = log_path.open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyterhub", "-f", str(config)],
        cwd=tmp,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{ports['public']}/"
    try:
        _wait_until_up(f"{url}hub/api/", process, log_path)
        yield Hub(url, password, homes, log_path)
    finally:
        _stop(process)
        log.close()


def _wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    # Generous: a loaded machine (a run beside other work) took over a minute to start a hub;
    # a server that exits is seen at once, so only a real hang waits this long.
    deadline = time.monotonic() + START_WITHIN
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the hub exited early:\n{log.read_text()[-3000:]}")
        with suppress(httpx.TransportError):
            if httpx.get(url, timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"the hub did not start:\n{log.read_text()[-3000:]}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the hub, which stops the proxy and the servers; kill whatever it left behind.

    Single-user servers run in sessions of their own, so they are found as the hub's
    descendants (by pid) before it goes, not by process group.
    """
    try:
        started = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        started = []
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    for child in started:
        with suppress(psutil.NoSuchProcess):
            child.terminate()
    _, alive = psutil.wait_procs(started, timeout=10)
    for child in alive:
        with suppress(psutil.NoSuchProcess):
            child.kill()


# -- acting as a user ------------------------------------------------------------------------


def issue_token(hub: Hub, user: str) -> str:
    """A token for ``user`` from the hub's REST API, asked for with the user's password."""
    body = {"auth": {"username": user, "password": hub.password}, "note": "hub tests"}
    response = httpx.post(f"{hub.url}hub/api/users/{user}/tokens", json=body, timeout=30)
    assert response.status_code in (200, 201), response.text
    token: str = response.json()["token"]
    return token


def token_login(hub: Hub, user: str) -> Login:
    client = httpx.Client(base_url=hub.url, timeout=30)
    return Login(user, "token", client, token=issue_token(hub, user))


def start_server(hub: Hub, login: Login) -> None:
    """Ask the hub to spawn ``login.user``'s server (returns at once)."""
    response = login.request("POST", f"hub/api/users/{login.user}/server")
    assert response.status_code in (201, 202), response.text


def wait_ready(hub: Hub, login: Login, timeout: float = 60) -> None:
    """Wait until the hub says the user's server is ready."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        model = login.request("GET", f"hub/api/users/{login.user}").json()
        server = model.get("servers", {}).get("")
        if server and server.get("ready"):
            return
        time.sleep(0.25)
    raise AssertionError(f"{login.user}'s server not ready:\n{hub.log.read_text()[-3000:]}")


def browser_login(hub: Hub, user: str) -> Login:
    """Log in through the hub's form and open the user's JupyterLab, as a browser would.

    The navigation to ``/user/<name>/lab`` runs the OAuth round trip between the single-user
    server and the hub, which leaves the server's own cookie and its ``_xsrf`` cookie in the jar.
    """
    navigate = {"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Site": "same-origin"}
    client = httpx.Client(base_url=hub.url, timeout=30, headers={"User-Agent": f"{user}-browser"})
    page = f"/user/{user}/lab"
    form = client.get("hub/login", params={"next": page}, headers=navigate)
    assert form.status_code == 200, form.text[:500]
    xsrf = next(c.value for c in client.cookies.jar if c.name == "_xsrf")
    landed = client.post(
        "hub/login",
        params={"next": page},
        data={"username": user, "password": hub.password, "_xsrf": xsrf},
        headers=navigate,
        follow_redirects=True,
    )
    assert landed.status_code == 200, (landed.status_code, landed.text[:500])
    assert landed.url.path == page, landed.url
    login = Login(user, "cookie", client)
    assert login.xsrf(), "no _xsrf cookie from the single-user server"
    return login
