"""The jupyter_server extension: focus hub, kernel feed, execution watcher and agents board.

jupyter_server runs it as an extension app, :class:`RecapExtension`, so that it stops with the
server. Loading creates one :class:`RecapServer` (settings ``c.RecapServer.*`` in
``jupyter_server_config.py``), registers the routes of docs/focus-protocol.md, and exports
``JUPYTER_RECAP_SERVER_URL`` into the server's environment, which every kernel started
afterwards inherits. No credential travels that way: a kernel proves which kernel it is with its
own connection key (see :mod:`.handlers`). When the server shuts down,
:meth:`RecapServer.shutdown` stops the periodic reconcile and the IOPub subscriptions, cancels
the session recaps being drafted (their model calls are aborted, not waited for) and lets the
threads that drafted them end. A periodic reconcile expires silent browser tabs,
watches new kernels and drops the state of kernels that were shut down or culled; kernel start,
restart and shutdown events make those changes at once. Every change of the agents board is
announced on jupyter_server's event bus (which row changed, never what it says).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import urllib.parse
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from jupyter_server.extension.application import ExtensionApp
from tornado.ioloop import IOLoop, PeriodicCallback
from traitlets import Float, Int, List, Unicode
from traitlets.config import LoggingConfigurable

from ..changes.touches import Touches
from ..focus.board import MAX_AGENTS, AgentBoard, RowChange, chat_row_id
from ..focus.hub import HEARTBEAT_SECONDS, HEARTBEAT_TIMEOUT, CellRun, FocusHub
from ..hooks.sessions import SILENCE_SECONDS
from ..pipeline.providers.base import CancelToken
from ..settings import LONG_CELL_SECONDS, Recap
from ..wire import CHAT_ROW_PREFIX, OutsideActivity
from .handlers import ShuttingDown
from .outside.changes import NotebookChanges
from .outside.chats import ChatSource
from .outside.plugins import make_sources
from .outside.running import SourceList
from .outside.sink import ServerSink
from .polls import LongPolls
from .pool import DaemonPool
from .routes import routes
from .watcher import ExecutionWatcher

URL_ENV = "JUPYTER_RECAP_SERVER_URL"
SECRET_ENV = "JUPYTER_RECAP_SECRET"
"""Where earlier versions handed every kernel one server-wide secret; removed at export, so a
kernel never inherits one (e.g. from an outer server this one was started under)."""
KERNEL_ACTIONS = "https://events.jupyter.org/jupyter_server/kernel_actions/v1"
AGENTS_SCHEMA = "urn:jupyter-recap:events:agents:v1"
"""The event-bus schema of agents-board changes (docs/focus-protocol.md)."""
_AGENTS_EVENT = {
    "$id": AGENTS_SCHEMA,
    "version": "1",
    "title": "jupyter_recap agents board change",
    "description": (
        "A row of the agents panel changed or went away. Only which row: the page reads the "
        "row itself from jupyter-recap/api/agents/{id}, behind that route's "
        "authorization, so nothing a notebook holds is broadcast or written to an event log."
    ),
    "type": "object",
    "required": ["id", "action", "version"],
    "properties": {
        "id": {
            "title": "row id",
            "description": (
                "The row's kernel id; chat: and the chat's path; or cli: and a digest of a "
                "CLI agent's session."
            ),
            "type": "string",
        },
        "action": {
            "title": "action",
            "description": "update: read the row again; remove: drop it.",
            "enum": ["update", "remove"],
        },
        "version": {
            "title": "board version",
            "description": "The board's change counter after this change.",
            "type": "integer",
        },
    },
}

SHUTDOWN_GRACE = 5.0
"""Seconds the server's shutdown waits for cancelled drafts to end (they end at once: a
cancelled model call is aborted, its socket shut down)."""

log = logging.getLogger(__name__)

_T = TypeVar("_T")


class RecapServer(LoggingConfigurable):
    """Server-side settings and state of jupyter_recap (one per server process)."""

    heartbeat_timeout = Float(
        HEARTBEAT_TIMEOUT,
        help=f"""Seconds after which a browser tab that stopped reporting a notebook's focus is
        forgotten, which counts as the person being away. Pages report three times as often
        (every {HEARTBEAT_SECONDS:g} s at the default), in one request per page.""",
    ).tag(config=True)

    max_body_bytes = Int(
        16384, help="Largest request body accepted, in bytes; larger bodies get HTTP 413."
    ).tag(config=True)

    max_poll_timeout = Float(
        300.0,
        help="""Longest a kernel's event long poll is held open, in seconds (kernels ask for
        290). Shorter makes every idle kernel's poll come back more often: each renewal costs
        the server a request.""",
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

    max_agents = Int(
        MAX_AGENTS,
        help="""Rows of the agents panel (kernels with jupyter_recap loaded) kept; beyond it
        the row updated least recently is dropped.""",
    ).tag(config=True)

    max_chats = Int(
        64,
        help="""Jupyter AI chats followed at once (their messages read, their recaps drafted);
        beyond it the chat changed least recently is no longer followed and its row goes. Each
        costs the server about 50 KiB.""",
    ).tag(config=True)

    mcp_otel_file = Unicode(
        "",
        help="""The OpenTelemetry span file (JSON lines) of a jupyter-mcp-server that runs as
        its own process: the file its JUPYTER_MCP_OTEL_FILE names. The notebook changes its tool
        calls make in this server are attributed to it. Empty: the file JUPYTER_MCP_OTEL_FILE
        names in this server's environment, if any.""",
    ).tag(config=True)

    long_cell_seconds = Float(
        LONG_CELL_SECONDS,
        help="""A cell that runs at least this long is shown in the agents panel when it
        finishes or fails, with its duration.""",
    ).tag(config=True)

    hook_silence_seconds = Float(
        SILENCE_SECONDS,
        help="""Seconds after which a CLI agent's turn told by its hooks (``jupyter-recap
        hook``) that heard nothing more is ended in its notebooks as "no stop received
        (interrupted?)". Claude Code sends no Stop hook when you interrupt it; without this the
        turn would hold the kernel's automatic recaps and count on in the agents panel until the
        next prompt. A tool call or a stop that comes later still reaches the notebook.""",
    ).tag(config=True)

    disabled_sources = List(
        Unicode(),
        help="""Outside sources not to load, by name (the names of the ``jupyter_recap.outside``
        entry points: ``hooks``, ``oneshot``, ``mcp-hooks``, ``mcp-spans``, ``server-mcp``, or a
        plugin's). The server log lists each source it loaded, with its distribution and
        version.""",
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
            notify=self._hub_changed,
        )
        self.board = AgentBoard(
            facts=lambda kernel_id: (
                self.hub.focused(kernel_id),
                self.hub.execution_state(kernel_id),
            ),
            on_change=self._board_changed,
            max_agents=self.max_agents,
        )
        self.watcher = ExecutionWatcher(
            self.kernel_manager,
            self.hub,
            on_cell_end=self._cell_ended,
            on_restarter=self._restarter_fired,
            on_cell_input=lambda *args: self.changes.cell_input(*args),
            on_cell_error=lambda *args: self.changes.cell_error(*args),
        )
        # Not the loop's default executor: jupyter_server saves notebooks on that one, and a
        # few minute-long model calls would queue every save behind them. Daemon threads: a
        # call stuck in one must not keep the process alive once the server has stopped.
        self.drafts = DaemonPool(max(1, self.max_recap_drafts), name="jupyter-recap-draft")
        self._crashed: set[str] = set()
        """Kernels the auto-restarter is restarting (its restart then emits a kernel action
        too, which must not count as a second restart)."""
        self._drafts_cancel: set[CancelToken] = set()
        """The cancel tokens of the session recaps being drafted now."""
        self._pending: set[Future[Any]] = set()
        """Work given to the drafts pool and not finished yet."""
        self.stopped = False
        self._recap_settings: Recap | None = None
        self.url = ""
        self._periodic: PeriodicCallback | None = None
        self.chats = ChatSource(ServerSink(self, ChatSource.name), self)
        """Jupyter AI chats (started once every extension is loaded: see RecapExtension)."""
        self.touches = Touches()
        """Who worked on which notebook, when (the attribution of a change line)."""
        self.changes = NotebookChanges(
            ServerSink(self, NotebookChanges.name), self.touches, lambda: self.event_bus
        )
        """What changed in the notebooks the person looked at, while they were away."""
        self.sources = SourceList(make_sources(self, self.disabled_sources))
        """Every outside source (CLI agents' hooks, MCP servers, personas, chats, the
        notebooks' changes), started once every extension is loaded (see RecapExtension)."""

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Export the environment, watch kernels, start the periodic reconcile."""
        self.export_environment()
        event_logger = getattr(self.serverapp, "event_logger", None)
        if event_logger is not None:
            event_logger.add_listener(schema_id=KERNEL_ACTIONS, listener=self._on_kernel_action)
            # Before the server serves: the bus hands a new socket the schemas known then.
            if AGENTS_SCHEMA not in event_logger.schemas:
                event_logger.register_event_schema(_AGENTS_EVENT)
        interval_ms = max(0.05, self.reconcile_interval) * 1000
        self._periodic = PeriodicCallback(self.reconcile, interval_ms)
        self._periodic.start()
        self.reconcile()

    def start_sources(self) -> None:
        """Start the outside sources (:mod:`.outside`): Jupyter AI's chats and the rest need
        every extension of the server loaded."""
        if self.stopped:
            return
        self.sources.start()
        if self.chats.enabled:
            log.info("jupyter_recap: following Jupyter AI chats")

    def stop(self) -> None:
        """Stop the reconcile and every IOPub subscription; cancel every draft (a model call
        in flight is aborted) and let the drafts' threads end. Safe to call twice."""
        if self.stopped:
            return
        self.stopped = True
        if self._periodic is not None:
            self._periodic.stop()
            self._periodic = None
        event_logger = getattr(self.serverapp, "event_logger", None)
        if event_logger is not None:
            event_logger.remove_listener(schema_id=KERNEL_ACTIONS, listener=self._on_kernel_action)
        self.watcher.close()
        self.sources.stop()
        for token in list(self._drafts_cancel):
            token.cancel()
        self.drafts.shutdown(cancel_futures=True)

    async def shutdown(self, grace: float = SHUTDOWN_GRACE) -> None:
        """:meth:`stop`, then wait at most ``grace`` seconds for the drafts' threads to end."""
        self.stop()
        pending = [asyncio.wrap_future(future) for future in list(self._pending)]
        if pending:
            _, late = await asyncio.wait(pending, timeout=grace)
            if late:
                log.warning("jupyter_recap: %d recap drafts did not end in time", len(late))

    # -- attribution -------------------------------------------------------------------------

    def publish_outside(self, source: str, lines: dict[str, OutsideActivity]) -> None:
        """One source's lines of what happened in notebooks while the person was away (the
        chats' agents, the notebooks' changes), merged with the others' by the precedence each
        source declares."""
        self.board.set_outside(self.sources.publish(source, lines))

    def notebook_touched(
        self,
        path: str,
        who: str,
        at: float | None = None,
        *,
        edited: int = 0,
        ran: int = 0,
        failed: int = 0,
    ) -> None:
        """An agent outside the person's page worked on the notebook at ``path`` (relative to
        the server's root): every attribution source reports here."""
        self.touches.note(
            path, who, time.time() if at is None else at, edited=edited, ran=ran, failed=failed
        )

    @property
    def event_bus(self) -> Any:
        """jupyter_server's event logger, None in a server without one."""
        return getattr(self.serverapp, "event_logger", None)

    def recap_settings(self) -> Recap:
        """``c.Recap.*`` of the server's configuration (read once): what recaps drafted in the
        server (a chat's) are drafted with."""
        if self._recap_settings is None:
            self._recap_settings = Recap(parent=self)
        return self._recap_settings

    # -- session recaps ----------------------------------------------------------------------

    @property
    def drafting(self) -> int:
        """Session recaps being drafted now (at most ``max_recap_drafts``)."""
        return len(self._drafts_cancel)

    def open_draft(self) -> CancelToken:
        """The cancel token of one more session recap (give it back with :meth:`close_draft`).

        Raises :class:`ShuttingDown` once the server stops; the caller checks the limit.
        """
        if self.stopped:
            raise ShuttingDown("the server is shutting down")
        token = CancelToken()
        self._drafts_cancel.add(token)
        return token

    def close_draft(self, token: CancelToken) -> None:
        self._drafts_cancel.discard(token)

    async def in_pool(self, function: Callable[[], _T]) -> _T:
        """``function()`` on a thread of the drafts pool, counted until it ends."""
        if self.stopped:
            raise ShuttingDown("the server is shutting down")
        future = self.drafts.submit(function)
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)
        return await asyncio.wrap_future(future)

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
            for kernel_id in _kernels_only(self.hub.kernel_ids()) - running:
                self.hub.forget(kernel_id)
            self.hub.forget_silent_chats()
            for kernel_id in _kernels_only(self.board.kernel_ids()) - running:
                # A dead kernel's row stays (bounded like every row) to say it died, until the
                # notebook's next kernel reports.
                if not self.board.is_dead(kernel_id):
                    self.board.forget(kernel_id)
            self.board.keep_left_out(running | {chat_row_id(p) for p in self.chats.chats})
            self.watcher.sync(running)
            self.hub.expire()
            for kernel_id in self.board.kernel_ids():
                if self.hub.execution_state(kernel_id) in ("idle", "busy"):
                    self.board.kernel_up(kernel_id)  # an auto-restarted kernel answers again
        except Exception:  # a reconcile must never stop the periodic callback
            log.warning("jupyter_recap: reconcile failed", exc_info=True)

    async def _on_kernel_action(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        kernel_id = data.get("kernel_id")
        if not kernel_id or data.get("status") != "success":
            return
        action = data.get("action")
        if action == "shutdown":
            self._crashed.discard(kernel_id)
            self.watcher.detach(kernel_id)
            self.hub.forget(kernel_id)
            self.board.forget(kernel_id)
            self.changes.forget_kernel(kernel_id)
        elif action == "start" and kernel_id in self.kernel_manager:
            self.watcher.attach(kernel_id)
        elif action == "restart" and kernel_id in self.kernel_manager:
            # Whatever ran has ended; the new process may listen on new ports.
            self.hub.set_execution(kernel_id, "idle")
            self.watcher.attach(kernel_id, replace=True)
            if kernel_id in self._crashed:
                self._crashed.discard(kernel_id)  # already told, as a crash
            else:
                self.hub.kernel_event(kernel_id, "restarted")
                self.board.kernel_event(kernel_id, "restarted", crashed=False)
            self.board.kernel_up(kernel_id)

    # -- the agents board --------------------------------------------------------------------

    def _hub_changed(self, kernel_id: str) -> None:
        """A kernel's feed has news: wake its polls; looking at a notebook ends its absence.
        A chat's focus goes to its recap schedule too."""
        focused = self.hub.focused(kernel_id)
        if kernel_id.startswith(CHAT_ROW_PREFIX):
            self.chats.focus(kernel_id[len(CHAT_ROW_PREFIX) :], focused)
        else:
            self.polls.notify(kernel_id)
            row = self.board.row(kernel_id)
            if row is not None and row["path"]:
                self.notebook_looked_at(kernel_id, row["path"])  # e.g. the tab closed
        self.board.focus(kernel_id, focused)

    def notebook_looked_at(self, kernel_id: str, path: str) -> None:
        """The one rule of whether the person looks at the notebook at ``path`` (served by
        ``kernel_id``): when any of their tabs looks at it, the hub's focus of the kernel (a
        tab that stopped reporting counts as gone). Told to the sources that care: the chats'
        lines (an agent's work in a notebook looked at is no news) and the change tracker."""
        looking = self.hub.focused(kernel_id) is True
        self.chats.looked_at(path, looking)
        self.changes.looked_at(path, looking, kernel_id)

    def _board_changed(self, kernel_id: str, action: RowChange, version: int) -> None:
        """Push which row changed on the event bus (the page then reads the row)."""
        event_logger = getattr(self.serverapp, "event_logger", None)
        if event_logger is None:
            return
        try:
            event_logger.emit(
                schema_id=AGENTS_SCHEMA,
                data={"id": kernel_id, "action": action, "version": version},
            )
        except Exception:  # a push that fails is caught up by the next focus heartbeat
            log.warning("jupyter_recap: could not push an agents change", exc_info=True)

    def _cell_ended(self, kernel_id: str, run: CellRun) -> None:
        if run.seconds >= self.long_cell_seconds:
            self.board.kernel_event(
                kernel_id, "long_cell", seconds=round(run.seconds, 1), failed=run.failed
            )

    def _restarter_fired(self, kernel_id: str, event: str) -> None:
        """The auto-restarter found the kernel process dead: restarting it (or giving up)."""
        if event == "dead":
            self.hub.set_execution(kernel_id, "dead")
            self.hub.kernel_event(kernel_id, "died")
            self.board.kernel_event(kernel_id, "died", state="dead")
        else:
            self._crashed.add(kernel_id)
            self.hub.set_execution(kernel_id, "restarting")
            self.hub.kernel_event(kernel_id, "crashed")
            self.board.kernel_event(kernel_id, "restarted", state="restarting", crashed=True)


def _kernels_only(ids: set[str]) -> set[str]:
    """The kernel ids among row or hub ids (chats have none)."""
    return {key for key in ids if not key.startswith(CHAT_ROW_PREFIX)}


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


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """The extension app jupyter_server loads, starts and stops (the package's
    ``_jupyter_server_extension_points`` names the same)."""
    return [{"module": "jupyter_recap.server", "app": RecapExtension}]


class RecapExtension(ExtensionApp):
    """jupyter_recap as jupyter_server runs it: created when the server loads its extensions,
    stopped (:meth:`stop_extension`) when the server shuts down.

    Its state and settings are :class:`RecapServer`'s (``c.RecapServer.*``); this app only ties
    them to the server's life. It serves no page and no static files of its own.
    """

    name = "jupyter_recap"
    load_other_extensions = True

    recap: RecapServer | None = None

    def initialize(self) -> None:  # type: ignore[override]
        """Create the hub, register the routes, export the environment for kernels."""
        serverapp = self.serverapp
        assert serverapp is not None
        recap = RecapServer(serverapp)
        web_app: Any = serverapp.web_app  # untyped in jupyter_server
        web_app.add_handlers(".*$", routes(web_app.settings["base_url"]))
        # Published only once the routes exist: the start hook exports the server's address to
        # kernels when it finds this, and a half-loaded extension must not send them to routes
        # that are not there.
        web_app.settings["jupyter_recap"] = self.recap = recap
        recap.start()
        # Once the loop runs: every extension has loaded then, jupyterlab-chat's ChatManager too.
        IOLoop.current().add_callback(recap.start_sources)
        serverapp.log.info("jupyter_recap: focus hub loaded")

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        """The server listens now: its port is final (it was 0, or the configured one was
        taken)."""
        if self.recap is not None:
            self.recap.export_environment()
            serverapp.log.info("jupyter_recap: kernels reach this server at %s", self.recap.url)

    async def stop_extension(self) -> None:
        """The server shuts down: stop everything :class:`RecapServer` runs."""
        if self.recap is not None:
            await self.recap.shutdown()
