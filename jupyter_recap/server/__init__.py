"""The jupyter_server extension: focus hub, kernel feed and execution watcher.

Loading it creates one :class:`RecapServer` (settings ``c.RecapServer.*`` in
``jupyter_server_config.py``), registers the routes of docs/focus-protocol.md, and exports
``JUPYTER_RECAP_SERVER_URL`` into the server's environment, which every kernel started
afterwards inherits. No credential travels that way: a kernel proves which kernel it is with its
own connection key (see :mod:`.handlers`). A periodic reconcile expires silent browser tabs,
watches new kernels and drops the state of kernels that were shut down or culled; kernel start,
restart and shutdown events make those changes at once.
"""

from __future__ import annotations

import logging
import os
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tornado.ioloop import PeriodicCallback
from traitlets import Float, Int
from traitlets.config import LoggingConfigurable

from ..focushub import FocusHub
from .handlers import routes
from .polls import LongPolls
from .watcher import ExecutionWatcher

URL_ENV = "JUPYTER_RECAP_SERVER_URL"
SECRET_ENV = "JUPYTER_RECAP_SECRET"
"""Where earlier versions handed every kernel one server-wide secret; removed at export, so a
kernel never inherits one (e.g. from an outer server this one was started under)."""
KERNEL_ACTIONS = "https://events.jupyter.org/jupyter_server/kernel_actions/v1"

log = logging.getLogger(__name__)


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "jupyter_recap.server"}]


class RecapServer(LoggingConfigurable):
    """Server-side settings and state of jupyter_recap (one per server process)."""

    heartbeat_timeout = Float(
        30.0,
        help="""Seconds after which a browser tab that stopped reporting a notebook's focus is
        forgotten, which counts as the person being away. Tabs report every 10 s.""",
    ).tag(config=True)

    max_body_bytes = Int(
        16384, help="Largest request body accepted, in bytes; larger bodies get HTTP 413."
    ).tag(config=True)

    max_poll_timeout = Float(
        30.0, help="Longest a kernel's event long poll is held open, in seconds."
    ).tag(config=True)

    max_polls_per_kernel = Int(
        2,
        help="""Waiting event long polls held per kernel. A kernel's feed holds one; one more
        than this answers the kernel's oldest waiting poll at once, so a kernel that reconnects
        while its old connection is still half-open is never locked out.""",
    ).tag(config=True)

    max_polls = Int(
        128,
        help="""Waiting event long polls held by this server in all. Each holds a socket (a
        file descriptor); beyond this, a poll that would wait gets HTTP 429 with Retry-After
        and the kernel tries again later. Keep it well below the process's descriptor limit
        (often 1024).""",
    ).tag(config=True)

    max_clients_per_kernel = Int(
        64,
        help="""Browser (tab, notebook) pairs remembered per kernel; beyond it the one heard
        from least recently is dropped.""",
    ).tag(config=True)

    max_recap_drafts = Int(
        4,
        help="""Session recaps (POST sessions/{id}/recap) drafted at the same time; more get
        HTTP 429. Drafts run on threads of their own, so slow model calls never hold up the
        threads the server uses for files and kernels.""",
    ).tag(config=True)

    reconcile_interval = Float(
        10.0,
        help="""Seconds between two passes that expire silent tabs and notice kernels that
        started or went away without an event.""",
    ).tag(config=True)

    def __init__(self, serverapp: Any, **kwargs: Any) -> None:
        super().__init__(parent=serverapp, **kwargs)
        self.serverapp = serverapp
        self.kernel_manager = serverapp.kernel_manager
        self.polls = LongPolls(per_kernel=self.max_polls_per_kernel, total=self.max_polls)
        self.hub = FocusHub(
            heartbeat_timeout=self.heartbeat_timeout,
            max_clients=self.max_clients_per_kernel,
            notify=self.polls.notify,
        )
        self.watcher = ExecutionWatcher(self.kernel_manager, self.hub)
        # Not the loop's default executor: jupyter_server saves notebooks on that one, and a
        # few minute-long model calls would queue every save behind them.
        self.drafts = ThreadPoolExecutor(
            max_workers=max(1, self.max_recap_drafts), thread_name_prefix="jupyter-recap-draft"
        )
        self.drafting = 0
        """Session recaps being drafted now (at most ``max_recap_drafts``)."""
        self.url = ""
        self._periodic: PeriodicCallback | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Export the environment, watch kernels, start the periodic reconcile."""
        self.export_environment()
        event_logger = getattr(self.serverapp, "event_logger", None)
        if event_logger is not None:
            event_logger.add_listener(schema_id=KERNEL_ACTIONS, listener=self._on_kernel_action)
        interval_ms = max(0.05, self.reconcile_interval) * 1000
        self._periodic = PeriodicCallback(self.reconcile, interval_ms)
        self._periodic.start()
        self.reconcile()

    def stop(self) -> None:
        """Stop the reconcile and every IOPub subscription."""
        if self._periodic is not None:
            self._periodic.stop()
            self._periodic = None
        event_logger = getattr(self.serverapp, "event_logger", None)
        if event_logger is not None:
            event_logger.remove_listener(schema_id=KERNEL_ACTIONS, listener=self._on_kernel_action)
        self.watcher.close()
        self.drafts.shutdown(wait=False, cancel_futures=True)

    def export_environment(self) -> None:
        """Put the server's URL where kernels started from now on find it."""
        self.url = kernel_facing_url(self.serverapp)
        os.environ[URL_ENV] = self.url
        os.environ.pop(SECRET_ENV, None)

    # -- keeping up with kernels -------------------------------------------------------------

    def ensure_watched(self, kernel_id: str) -> None:
        """Watch a running kernel now rather than at the next reconcile (cheap when watched)."""
        self.watcher.attach(kernel_id)
        self.watcher.settle(kernel_id)

    def reconcile(self) -> None:
        """Expire silent tabs; watch new kernels; forget kernels that are gone."""
        try:
            running = set(self.kernel_manager.list_kernel_ids())
            for kernel_id in self.hub.kernel_ids() - running:
                self.hub.forget(kernel_id)
            self.watcher.sync(running)
            self.hub.expire()
        except Exception:  # a reconcile must never stop the periodic callback
            log.warning("jupyter_recap: reconcile failed", exc_info=True)

    async def _on_kernel_action(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        kernel_id = data.get("kernel_id")
        if not kernel_id or data.get("status") != "success":
            return
        action = data.get("action")
        if action == "shutdown":
            self.watcher.detach(kernel_id)
            self.hub.forget(kernel_id)
        elif action == "start" and kernel_id in self.kernel_manager:
            self.watcher.attach(kernel_id)
        elif action == "restart" and kernel_id in self.kernel_manager:
            # Whatever ran has ended; the new process may listen on new ports.
            self.hub.set_execution(kernel_id, "idle")
            self.watcher.attach(kernel_id, replace=True)


def kernel_facing_url(serverapp: Any) -> str:
    """The server's URL with base URL, as a local kernel reaches it (ends with ``/``).

    A wildcard bind address becomes loopback: kernels are local children of the server, and the
    host name ``connection_url`` puts there does not always resolve (containers).
    """
    parts = urllib.parse.urlsplit(serverapp.connection_url)
    if serverapp.ip in ("0.0.0.0", "::", "") and parts.scheme in ("http", "https"):
        host = "[::1]" if serverapp.ip == "::" else "127.0.0.1"
        parts = parts._replace(netloc=f"{host}:{serverapp.port}")
    path = parts.path if parts.path.endswith("/") else parts.path + "/"
    url: str = urllib.parse.urlunsplit(parts._replace(path=path, query="", fragment=""))
    return url


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Create the hub, register the routes, export the environment for kernels."""
    recap = RecapServer(serverapp)
    web_app = serverapp.web_app
    web_app.add_handlers(".*$", routes(web_app.settings["base_url"]))
    # Published only once the routes exist: the start hook exports the server's address to
    # kernels when it finds this, and a half-loaded extension must not send them to routes
    # that are not there.
    web_app.settings["jupyter_recap"] = recap
    recap.start()
    serverapp.log.info("jupyter_recap: focus hub loaded")


async def _start_jupyter_server_extension(serverapp: Any) -> None:
    """The server listens now: its port is final (it was 0, or the configured one was taken)."""
    recap = serverapp.web_app.settings.get("jupyter_recap")
    if recap is not None:
        recap.export_environment()
        serverapp.log.info("jupyter_recap: kernels reach this server at %s", recap.url)
